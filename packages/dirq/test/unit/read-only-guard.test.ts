import assert from "node:assert/strict";
import { test } from "node:test";
import { checkReadOnlyStatement } from "../../src/query/read-only-guard.js";
import { significantTokens } from "../../src/query/sql-tokens.js";

function codeOf(sql: string): string | null {
  try {
    checkReadOnlyStatement(sql);
    return null;
  } catch (error) {
    return (error as { code: string }).code;
  }
}

test("reads pass the guard", () => {
  for (const sql of [
    "SELECT 1",
    "  -- comment\n select * from './'",
    "WITH x AS (SELECT 1) SELECT * FROM x",
    "VALUES (1), (2)",
    "EXPLAIN QUERY PLAN SELECT 1",
    "PRAGMA table_info(t)",
    "PRAGMA main.user_version",
    "SELECT ';' AS semicolon;",
    "SELECT 1;;",
  ]) {
    assert.equal(codeOf(sql), null, sql);
  }
});

test("writes, attach, vacuum, pragma assignments and transactions are rejected", () => {
  for (const sql of [
    "INSERT INTO t VALUES (1)",
    "/* x */ DELETE FROM t",
    "ATTACH 'x.db' AS x",
    "DETACH x",
    "VACUUM INTO 'y.db'",
    "PRAGMA user_version = 3",
    "PRAGMA user_version(3)",
    "PRAGMA journal_mode",
    "BEGIN",
    "EXPLAIN DELETE FROM t",
  ]) {
    assert.equal(codeOf(sql), "QUERY_NOT_READONLY", sql);
  }
});

test("several statements, empty input and internal names are rejected", () => {
  assert.equal(codeOf("SELECT 1; SELECT 2"), "QUERY_MULTIPLE_STATEMENTS");
  assert.equal(codeOf("  -- nothing\n"), "QUERY_EMPTY");
  assert.equal(codeOf("SELECT * FROM _DIRQ_meta"), "QUERY_INTERNAL_TABLE");
  assert.equal(codeOf("SELECT * FROM pragma_table_info('_dirq_meta')"), "QUERY_INTERNAL_TABLE");
  assert.equal(codeOf("SELECT _dirq_file_path FROM posts"), null);
});

test("the tokenizer keeps strings, quoted identifiers and comments whole", () => {
  const tokens = significantTokens(`SELECT 'a;b', "x""y", [z] /* ; */ FROM t -- ;`);
  assert.deepEqual(
    tokens.map((token) => [token.kind, token.value]),
    [
      ["word", "SELECT"],
      ["string", "a;b"],
      ["punct", ","],
      ["identifier", 'x"y'],
      ["punct", ","],
      ["identifier", "z"],
      ["word", "FROM"],
      ["word", "t"],
    ],
  );
});
