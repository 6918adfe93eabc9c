import assert from "node:assert/strict";
import { test } from "node:test";
import { openSqlite } from "../../src/indexer/database.js";
import { jsonChunks } from "../../src/output/json.js";
import { columnPlan, executeStatement } from "../../src/query/execute.js";
import { jsonFromSqlite, strictTableNames, wrapForJson } from "../../src/server/sqlite-json.js";

/**
 * The server's SQLite-written answers against the JS way (the CLI's writer): the same bytes,
 * or `null` (then the server writes it the JS way). A STRICT table's whole-number column is
 * written by SQLite without a per-row type check, so its answers must never go the JS way.
 */
function answers(setup: string, sql: string): { sqlite: string | null; js: string } {
  const db = openSqlite(":memory:");
  db.exec(setup);
  const statement = db.prepare(sql);
  const plan = columnPlan(statement, sql);
  const wrapped = wrapForJson(db, statement, sql, plan, strictTableNames(db));
  assert.ok(wrapped !== null, sql);
  const bytes = jsonFromSqlite(wrapped, Number.MAX_SAFE_INTEGER, () => new Error("too large"));
  const result = executeStatement(statement, sql, plan);
  const js = [...jsonChunks(result.columns, result.rows)].join("");
  db.close();
  return { sqlite: bytes === null ? null : `${bytes.toString("utf8")}\n`, js };
}

const SETUP = `
  CREATE TABLE strict_t (n INTEGER, i INT, r REAL, t TEXT, a ANY, b BLOB) STRICT;
  INSERT INTO strict_t VALUES (1, -2, 3.0, 'x"y', 4.5, NULL), (9007199254740993, 0, 0.5, '', 'z', NULL);
  CREATE TABLE loose (n INTEGER, t TEXT);
  INSERT INTO loose VALUES (1, 'a'), (2.5, 'b');
`;

test("a STRICT table's INTEGER and INT columns are written by SQLite, byte for byte the CLI's", () => {
  for (const sql of [
    "SELECT n, i FROM strict_t",
    "SELECT t, n AS count FROM strict_t ORDER BY n",
  ]) {
    const { sqlite, js } = answers(SETUP, sql);
    assert.equal(sqlite, js, sql);
  }
  assert.ok(strictTableNames(openSqlite(":memory:")).size === 0);
});

test("REAL, ANY and loose INTEGER columns that hold a REAL go the JS way or match it", () => {
  for (const sql of [
    "SELECT r FROM strict_t",
    "SELECT a FROM strict_t",
    "SELECT n FROM loose",
    "SELECT n, t FROM loose WHERE n > 2",
  ]) {
    const { sqlite, js } = answers(SETUP, sql);
    if (sqlite !== null) assert.equal(sqlite, js, sql);
  }
  // 2.5 in a loose INTEGER column: SQLite would write it differently, so the JS way answers.
  assert.equal(answers(SETUP, "SELECT n FROM loose").sqlite, null);
});
