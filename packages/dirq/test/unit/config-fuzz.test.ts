import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import fc from "fast-check";
import { loadConfigFile } from "../../src/config/load-config.js";
import { isDirqError } from "../../src/errors.js";
import { harnessSeed } from "../differential.js";
import { removeTree } from "../helpers.js";

/*
 * Malformed configs, generated: a good config cut short, with characters swapped for ones TOML
 * cares about, or values of the wrong type for each key. Each loads, or fails with a config
 * error whose every line names the file, and the line and column (TOML) or the key (schema);
 * never another kind of error.
 */

const GOOD = `[dirq]
ignore = ["drafts/**", "tmp"]

[[dirq.extension]]
path = "./ext/vec0.so"
entrypoint = "sqlite3_vec_init"

[[dirq.function]]
name = "embed"
command = "node embed.js"
deterministic = true

[[table]]
name = "posts"
glob = "posts/**/*.json"
schema = { title = "TEXT", words = "INTEGER" }
on-file = "jq -c '[.]' {path}"
ddl = "CREATE INDEX posts_title ON posts(title)"
`;

const TOML_CHARACTERS = [..."[]{}=\"'.,#\n \t\\:-_0aZ\u00e9\u0000\u007f\ufffd"];

/** Each key with values of the wrong kinds. */
const KEYS = [
  "dirq.ignore",
  "table.name",
  "table.glob",
  "table.schema",
  "table.on-file",
  "table.ddl",
  "dirq.function.name",
  "dirq.function.deterministic",
  "dirq.extension.path",
];
const WRONG_VALUES = ["1", "true", "[]", "{}", '""', "1979-05-27", "[1, 2]", "{ a = 1 }", "-0.5"];

function withValue(key: string, value: string): string {
  const [section, ...rest] = key.split(".");
  const name = rest.pop() as string;
  if (section === "table") {
    return (
      `[[table]]\nname = "t"\nglob = "g"\non-file = "x"\n`.replace(
        new RegExp(`^${name} = .*$`, "m"),
        "",
      ) + `${name} = ${value}\n`
    );
  }
  if (rest.length === 0) return `[dirq]\n${name} = ${value}\n`;
  const table = `[[dirq.${rest[0]}]]\n`;
  const base = rest[0] === "function" ? `name = "f"\ncommand = "c"\n` : `path = "p"\n`;
  return table + base.replace(new RegExp(`^${name} = .*$`, "m"), "") + `${name} = ${value}\n`;
}

const dir = mkdtempSync(join(tmpdir(), "dirq-config-fuzz-"));
after(() => removeTree(dir));
let counter = 0;

/** Loads `text` as a config file; returns the error lines, or null when it loaded. */
function load(text: string): string[] | null {
  const name = `c${counter++}.toml`;
  writeFileSync(join(dir, name), text);
  try {
    loadConfigFile(name, dir);
    return null;
  } catch (error) {
    assert.ok(isDirqError(error), `not a config error for ${JSON.stringify(text)}: ${error}`);
    const lines = error.message.split("\n");
    for (const line of lines) {
      assert.ok(line.startsWith(`${name}:`), `${JSON.stringify(line)} names the file`);
      const where = line.slice(name.length + 1);
      assert.match(where, /^(\d+:\d+: invalid TOML|\s[\w.[\]-]+[:.])/, `names a place: ${line}`);
    }
    return lines;
  }
}

describe("malformed configs name the file and the place", () => {
  it("the good config loads", () => {
    assert.equal(load(GOOD), null);
  });

  it("cut short anywhere, and with characters swapped", () => {
    fc.assert(
      fc.property(
        fc.nat({ max: GOOD.length }),
        fc.array(fc.tuple(fc.nat({ max: GOOD.length - 1 }), fc.constantFrom(...TOML_CHARACTERS)), {
          maxLength: 4,
        }),
        (cut, swaps) => {
          const chars = [...GOOD.slice(0, cut)];
          for (const [at, char] of swaps) if (at < chars.length) chars[at] = char;
          load(chars.join(""));
        },
      ),
      { seed: harnessSeed(19), numRuns: 500 },
    );
  });

  it("a value of the wrong kind for each key names that key", () => {
    for (const key of KEYS) {
      for (const value of WRONG_VALUES) {
        const lines = load(withValue(key, value));
        if (lines === null) continue;
        const leaf = key.split(".").pop() as string;
        assert.ok(
          lines.some((line) => line.includes(leaf)),
          `${key} = ${value}: ${lines.join(" | ")}`,
        );
      }
    }
  });

  it("any ddl text loads or is refused naming table[0].ddl", () => {
    const words = [
      "CREATE",
      "INDEX",
      "VIEW",
      "TRIGGER",
      "TABLE",
      "ATTACH",
      "'x.db'",
      "VACUUM",
      "INTO",
      "PRAGMA",
      "user_version",
      "=",
      "1",
      "ON",
      "t",
      "(",
      ")",
      ";",
      "BEGIN",
      "END",
      "SELECT",
      "DROP",
      "_dirq_meta",
      "load_extension('x')",
      "--",
      "'",
      "AS",
      "x",
    ];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...words), { maxLength: 10 }), (tokens) => {
        const ddl = JSON.stringify(tokens.join(" "));
        const lines = load(`[[table]]\nname = "t"\nglob = "g"\non-file = "x"\nddl = ${ddl}\n`);
        for (const line of lines ?? []) assert.match(line, /: table\[0\]\.ddl: /);
      }),
      { seed: harnessSeed(19), numRuns: 300 },
    );
  });

  it("nesting deep enough to overflow a recursive parser is a TOML error", () => {
    const lines = load(`a = ${"[".repeat(100_000)}${"]".repeat(100_000)}\n`);
    assert.match(lines?.[0] ?? "", /invalid TOML/);
  });
});
