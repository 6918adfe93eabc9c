import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { makeTree, parseRows, removeTree, runOk } from "./helpers.js";

/** Prints the file's content verbatim: the file holds the hook output to test. */
const CAT_HOOK = `import { readFileSync } from "node:fs";
process.stdout.write(readFileSync(process.argv[2]));
`;

/** A small seeded generator (mulberry32), so every run checks the same cases. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function digits(next: () => number, count: number, leading = true): string {
  let text = leading ? String(1 + Math.floor(next() * 9)) : "";
  while (text.length < count) text += String(Math.floor(next() * 10));
  return text;
}

/** The literals Python's json.dumps and other programs write, and the edges of each range. */
const EDGES = [
  "3.0",
  "1e5",
  "-0.0",
  "-0",
  "0",
  "0.0",
  "1.5e300",
  "1e400",
  "-1e400",
  "1e-400",
  "2.5",
  "100.000",
  "1E2",
  "1e+2",
  "2.50e1",
  "9007199254740992",
  "9007199254740993",
  "-9007199254740993",
  "9007199254740993.0",
  "9223372036854775807",
  "9223372036854775808",
  "-9223372036854775808",
  "-9223372036854775809",
  "18446744073709551616",
  "123456789012345678901234567890",
  "1234567890123456",
  "1e15",
  "1e16",
  "4.0e-1",
];

/** A JSON number literal of a random shape. */
function literal(next: () => number): string {
  const sign = next() < 0.3 ? "-" : "";
  const whole = digits(next, 1 + Math.floor(next() * 24));
  switch (Math.floor(next() * 6)) {
    case 0:
      return `${sign}${whole}`;
    case 1:
      return `${sign}${whole}.${"0".repeat(1 + Math.floor(next() * 3))}`;
    case 2:
      return `${sign}${whole}.${digits(next, 1 + Math.floor(next() * 6), false)}`;
    case 3:
      return `${sign}${digits(next, 1 + Math.floor(next() * 3))}e${next() < 0.5 ? "-" : ""}${Math.floor(next() * 30)}`;
    case 4:
      return `${sign}${digits(next, 1 + Math.floor(next() * 3))}.${digits(next, 2, false)}E+${Math.floor(next() * 400)}`;
    default:
      return `${sign}0.${digits(next, 1 + Math.floor(next() * 4), false)}`;
  }
}

describe("numbers a hook prints are typed as SQLite's json_extract types them", () => {
  const root = makeTree({ "cat.mjs": CAT_HOOK });
  after(() => removeTree(root));

  /** Every literal as a hook prints it, next to SQLite's reading of the same text. */
  const compare = async (literals: readonly string[]) => {
    const rows = literals.map((text, i) => `{"i":${i},"raw":${JSON.stringify(text)},"v":${text}}`);
    writeFileSync(join(root, "numbers.json"), `[${rows.join(",\n")}]`);
    const stdout = await runOk(root, [
      "SELECT raw, typeof(v) AS stored_type, quote(v) AS stored, " +
        "typeof(json_extract(raw, '$')) AS sqlite_type, quote(json_extract(raw, '$')) AS sqlite " +
        "FROM './numbers.json' ORDER BY i",
      "--on-file",
      "node cat.mjs {path}",
      "--format",
      "json",
    ]);
    const answer = parseRows(stdout);
    assert.equal(answer.length, literals.length);
    for (const row of answer) {
      assert.deepEqual(
        { type: row.stored_type, value: row.stored },
        { type: row.sqlite_type, value: row.sqlite },
        `the hook printed ${String(row.raw)}`,
      );
    }
    return answer;
  };

  it("whole-valued REALs stay REAL: ratio / 2 is 1.5, not 1", async () => {
    writeFileSync(join(root, "ratio.json"), '[{"ratio":3.0,"n":3}]');
    const stdout = await runOk(root, [
      "SELECT typeof(ratio) AS t, ratio / 2 AS half, n / 2 AS whole FROM './ratio.json'",
      "--on-file",
      "node cat.mjs {path}",
    ]);
    assert.equal(stdout, '[{"t":"real","half":1.5,"whole":1}]\n');
  });

  it("the edges of each range", async () => {
    const answer = await compare(EDGES);
    const typeOf = (raw: string) => answer.find((row) => row.raw === raw)?.stored_type;
    assert.equal(typeOf("3.0"), "real");
    assert.equal(typeOf("1e5"), "real");
    assert.equal(typeOf("-0.0"), "real");
    assert.equal(typeOf("-0"), "integer");
    assert.equal(typeOf("9223372036854775807"), "integer");
    assert.equal(typeOf("9223372036854775808"), "real");
  });

  it("800 seeded literals of every shape", async () => {
    const next = random(30);
    await compare(Array.from({ length: 800 }, () => literal(next)));
  });

  it("agrees with the sqlite3 shell where it is installed", { skip: noSqlite3() }, async () => {
    const next = random(31);
    const literals = [...EDGES, ...Array.from({ length: 200 }, () => literal(next))];
    const answer = await compare(literals);
    // The shell's own SQLite (another version) reads each literal's type the same way.
    const sql = literals.map((text) => `SELECT typeof(json_extract('${text}', '$'));`).join("\n");
    const shell = spawnSync("sqlite3", [":memory:"], { input: sql, encoding: "utf8" });
    assert.equal(shell.status, 0, shell.stderr);
    assert.deepEqual(
      answer.map((row) => row.stored_type),
      shell.stdout.trimEnd().split("\n"),
    );
  });
});

function noSqlite3(): string | false {
  return spawnSync("sqlite3", ["-version"]).status === 0
    ? false
    : "the sqlite3 shell is not installed";
}
