import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { parse, TomlError } from "smol-toml";
import { tomlTable } from "../../src/parse/formats/toml-rows.js";

/**
 * dirq counts a TOML syntax error's line and column itself, from the offset smol-toml stops
 * at (`toml-rows.ts`: smol-toml's own error splits the whole text into lines): the message
 * must be the one smol-toml's error gives, line and column included, on every broken file of
 * toml-test.
 */

const INVALID = fileURLToPath(new URL("../../../test/fixtures/toml-test/invalid", import.meta.url));

/** `line L, column C: reason (not valid TOML)` from smol-toml's own error, or null. */
function smolTomlMessage(text: string): string | null {
  try {
    parse(text, { integersAsBigInt: true });
    return null;
  } catch (error) {
    assert.ok(error instanceof TomlError, String(error));
    const reason = error.message.split("\n")[0]?.replace(/^Invalid TOML document: /, "");
    return `line ${error.line}, column ${error.column}: ${reason} (not valid TOML)`;
  }
}

function dirqMessage(text: string): string | null {
  try {
    tomlTable(text);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

describe("TOML syntax errors: line and column counted from the offset", () => {
  it("every toml-test invalid file smol-toml refuses gets smol-toml's message", () => {
    const files = readdirSync(INVALID, { recursive: true, encoding: "utf8" });
    let compared = 0;
    for (const file of files.filter((name) => name.endsWith(".toml")).sort()) {
      const text = readFileSync(join(INVALID, file), "utf8").replace(/^\uFEFF/, "");
      const expected = smolTomlMessage(text);
      if (expected === null) continue;
      assert.equal(dirqMessage(text), expected, file);
      compared++;
    }
    assert.ok(compared > 400, `${compared} files compared`);
  });

  it("smol-toml's own errors are whole again after a read", () => {
    dirqMessage("a = 1\nb = [");
    assert.throws(
      () => parse("a = 1\nb = ["),
      (error: unknown) => {
        return error instanceof TomlError && error.line === 2 && error.codeblock.includes("^");
      },
    );
  });

  it("a line break of CR LF counts as one", () => {
    assert.equal(
      dirqMessage("a = 1\r\nb = 2\r\nc = [1,\r\n  2,, ]\r\n"),
      smolTomlMessage("a = 1\r\nb = 2\r\nc = [1,\r\n  2,, ]\r\n"),
    );
  });
});
