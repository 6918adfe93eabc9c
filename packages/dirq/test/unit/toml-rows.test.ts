import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { RowsError } from "../../src/parse/formats/document-rows.js";
import { tomlTable } from "../../src/parse/formats/toml-rows.js";
import { python3 } from "../helpers.js";

/** Texts where smol-toml alone and Python's tomllib disagreed on whether they are TOML. */
const CASES = [
  "d = 2100-02-29",
  "d = 2024-02-29",
  "d = 2023-02-30T10:00:00Z",
  "d = 2023-04-31 10:00:00",
  "d = 1979-05-27T07:32:00-08:00",
  'a = ["2100-02-29", 2024-12-31]',
  "a = [2021-13-01]",
  's = "2100-02-29"',
  "s = '''\n2100-02-29\n'''",
  "# 2100-02-29\nd = 2024-01-05",
  "2100-02-29 = 1",
  "\uFEFFa = 1",
];

/** Whether tomllib reads each text (true) or refuses it (false). */
function tomllibReads(texts: readonly string[]): boolean[] {
  const script =
    "import json, sys, tomllib\n" +
    "out = []\n" +
    "for text in json.load(sys.stdin):\n" +
    "    try:\n" +
    "        tomllib.loads(text); out.append(True)\n" +
    "    except Exception:\n" +
    "        out.append(False)\n" +
    "print(json.dumps(out))\n";
  const run = spawnSync(python3(), ["-c", script], {
    input: JSON.stringify(texts),
    encoding: "utf8",
  });
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout) as boolean[];
}

function dirqReads(text: string): boolean {
  try {
    tomlTable(text);
    return true;
  } catch (error) {
    assert.ok(error instanceof RowsError, String(error));
    return false;
  }
}

describe("TOML read as tomllib reads it", () => {
  it("dates that do not exist and a second byte-order mark are refused; others read", () => {
    // dirq strips the file's first byte-order mark before the parser; tomllib gets none.
    const reference = tomllibReads(CASES.map((text) => text.replace(/^\uFEFF/, "\uFEFF\uFEFF")));
    assert.deepEqual(
      CASES.map((text) => dirqReads(text)),
      reference,
      CASES.join("\n---\n"),
    );
  });

  it("the refusal names the line and the date", () => {
    assert.throws(
      () => tomlTable("a = 1\nb = 2\nd = 2100-02-29"),
      /^Error: line 3: 2100-02-29 is not a date \(not valid TOML\)$/,
    );
    assert.throws(() => tomlTable("\uFEFFa = 1"), /a second byte-order mark/);
  });
});
