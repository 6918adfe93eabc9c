import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import {
  hasStatementContent,
  isCompleteStatement,
  splitStatements,
} from "../../src/repl/statement-complete.js";
import { python3 } from "../helpers.js";

/** Input and what sqlite3_complete() answers for it (1 complete, 0 not). */
const CASES: [string, boolean][] = [
  ["", false],
  ["   \n\t", false],
  [";", true],
  ["SELECT 1", false],
  ["SELECT 1;", true],
  ["SELECT 1;  \n", true],
  ["SELECT 1; -- done", true],
  ["SELECT 1; /* done */", true],
  ["SELECT 1; SELECT 2", false],
  ["SELECT 1; SELECT 2;", true],
  // A `;` in a string, a quoted identifier or a comment does not end the statement.
  ["SELECT 'a;b'", false],
  ["SELECT 'a;b';", true],
  ["SELECT 'it''s;'", false],
  ["SELECT 'it''s;';", true],
  ['SELECT "col;umn"', false],
  ['SELECT "col;umn";', true],
  ["SELECT `x;y`", false],
  ["SELECT [x;y]", false],
  ["SELECT [x;y];", true],
  ["SELECT 1 -- not yet;", false],
  ["SELECT 1 -- not yet;\n;", true],
  ["SELECT 1 /* ; */", false],
  ["SELECT 1 /* ; */;", true],
  ["SELECT 1 / 2;", true],
  ["SELECT 1 - 2;", true],
  // Unterminated strings, identifiers and comments are never complete.
  ["SELECT 'abc;", false],
  ['SELECT "abc;', false],
  ["SELECT `abc;", false],
  ["SELECT [abc;", false],
  ["SELECT 1; /* open", false],
  // A trigger body: `;` inside BEGIN ... END does not end it; `END;` does.
  ["CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1;", false],
  ["CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; END", false],
  ["CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; END;", true],
  ["CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; SELECT 2; END;", true],
  ["create temp trigger t after insert on x begin select 1; end;", true],
  ["CREATE TEMPORARY TRIGGER t AFTER INSERT ON x BEGIN SELECT 1;\nEND ;", true],
  ["CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 'END;'; END", false],
  ["CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; END; SELECT 2", false],
  ["EXPLAIN CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1;", false],
  ["EXPLAIN CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; END;", true],
  // Not a trigger: CREATE TABLE, and the word trigger as an ordinary name.
  ["CREATE TABLE t(a);", true],
  ["SELECT trigger FROM t;", true],
  ["SELECT end FROM t;", true],
  ["CREATE VIEW trigger AS SELECT 1;", true],
  // Identifier characters: `$`, `_`, digits and anything beyond ASCII are part of a word.
  ["SELECT créate;", true],
  ["SELECT 1 AS end_;", true],
];

describe("isCompleteStatement (sqlite3_complete's state machine)", () => {
  for (const [sql, complete] of CASES) {
    it(`${JSON.stringify(sql)} → ${complete ? "complete" : "incomplete"}`, () => {
      assert.equal(isCompleteStatement(sql), complete);
    });
  }
});

describe("splitStatements", () => {
  it("splits at each ending semicolon and leaves out empty statements", () => {
    assert.deepEqual(splitStatements("SELECT 1; ; SELECT ';' ;\n-- tail"), [
      "SELECT 1;",
      "SELECT ';' ;",
    ]);
  });

  it("keeps a trigger whole", () => {
    const trigger = "CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; SELECT 2; END;";
    assert.deepEqual(splitStatements(`${trigger} SELECT 3;`), [trigger, "SELECT 3;"]);
  });
});

describe("hasStatementContent", () => {
  const cases: [string, boolean][] = [
    ["", false],
    ["  -- only a comment", false],
    ["/* c */ ;", false],
    ["SELECT 1", true],
    ["/* unterminated", true],
    ["'", true],
  ];
  for (const [sql, content] of cases) {
    it(`${JSON.stringify(sql)} → ${content}`, () => {
      assert.equal(hasStatementContent(sql), content);
    });
  }
});

/** sqlite3_complete() itself, through Python's sqlite3 module (the reference). */
function sqliteComplete(inputs: readonly string[]): boolean[] | null {
  const script =
    "import json, sqlite3, sys\n" +
    "print(json.dumps([sqlite3.complete_statement(s) for s in json.load(sys.stdin)]))";
  const result = spawnSync(python3(), ["-c", script], {
    input: JSON.stringify(inputs),
    encoding: "utf8",
  });
  if (result.status !== 0) return null;
  return JSON.parse(result.stdout) as boolean[];
}

/** A small seeded generator, so a failure reproduces. */
function mulberry32(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FRAGMENTS = [
  "SELECT",
  "x",
  "1",
  " ",
  "\n",
  ";",
  "'",
  '"',
  "`",
  "[",
  "]",
  "--",
  "/*",
  "*/",
  "/",
  "-",
  "CREATE",
  "create",
  "TEMP",
  "TEMPORARY",
  "TRIGGER",
  "trigger",
  "BEGIN",
  "END",
  "end",
  "EXPLAIN",
  "ON",
  "é",
  "$a",
  "_",
  "''",
];

describe("against SQLite's own sqlite3_complete()", () => {
  const reference = sqliteComplete(["SELECT 1;"]);
  const skip = reference === null ? "python3 with its sqlite3 module is not available" : false;

  it("agrees on the case table", { skip }, () => {
    const inputs = CASES.map(([sql]) => sql);
    const expected = sqliteComplete(inputs) as boolean[];
    inputs.forEach((sql, i) => {
      assert.equal(isCompleteStatement(sql), expected[i], JSON.stringify(sql));
    });
  });

  it("agrees on 3000 seeded random inputs", { skip }, () => {
    const random = mulberry32(13);
    const inputs = Array.from({ length: 3000 }, () => {
      const length = 1 + Math.floor(random() * 14);
      return Array.from(
        { length },
        () => FRAGMENTS[Math.floor(random() * FRAGMENTS.length)] as string,
      ).join(random() < 0.5 ? " " : "");
    });
    const expected = sqliteComplete(inputs) as boolean[];
    inputs.forEach((sql, i) => {
      assert.equal(isCompleteStatement(sql), expected[i], JSON.stringify(sql));
    });
  });
});
