import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { openSqlite, type SqliteDatabase } from "../../src/indexer/database.js";
import { jsonChunks } from "../../src/output/json.js";
import { columnPlan, executeStatement } from "../../src/query/execute.js";
import { analyzeStatement } from "../../src/query/statement-analysis.js";
import { jsonFromSqlite, wrapForJson } from "../../src/output/sqlite-json.js";

/**
 * The server's SQLite-written answers against the JS way (the CLI's writer): the same bytes,
 * or `null` (then the server writes it the JS way). A STRICT table's whole-number column is
 * written by SQLite without a per-row type check, so its answers must never go the JS way.
 */
function answers(db: SqliteDatabase, sql: string): { sqlite: string | null; js: string } {
  const statement = db.prepare(sql);
  const plan = columnPlan(statement, sql);
  const wrapped = wrapForJson(db, statement, analyzeStatement(sql), plan);
  assert.ok(wrapped !== null, sql);
  const bytes = jsonFromSqlite(wrapped, Number.MAX_SAFE_INTEGER, () => new Error("too large"));
  const result = executeStatement(statement, sql, plan);
  const js = [...jsonChunks(result.columns, result.rows)].join("");
  return { sqlite: bytes === null ? null : `${bytes.toString("utf8")}\n`, js };
}

function database(setup: string): SqliteDatabase {
  const db = openSqlite(":memory:");
  db.exec(setup);
  return db;
}

const SETUP = `
  CREATE TABLE strict_t (n INTEGER, i INT, r REAL, t TEXT, a ANY, b BLOB) STRICT;
  INSERT INTO strict_t VALUES
    (1, -2, 3.0, 'x"y\\', 4.5, NULL),
    (9007199254740993, 0, 0.5, '', 'z', NULL),
    (-9223372036854775808, NULL, NULL, char(0, 1, 8, 9, 10, 12, 13, 31, 127, 233, 8232, 128512), NULL, NULL);
  CREATE TABLE loose (n INTEGER, t TEXT);
  INSERT INTO loose VALUES (1, 'a'), (2.5, 'b');
`;

test("TEXT, NULL and a STRICT table's whole numbers are written by SQLite, byte for byte the CLI's", () => {
  const db = database(SETUP);
  for (const sql of [
    "SELECT n, i FROM strict_t",
    "SELECT t, n AS count FROM strict_t ORDER BY n DESC",
    'SELECT t AS "we""ird\\name", i FROM strict_t ORDER BY t',
    "SELECT t FROM strict_t WHERE 0",
    "SELECT n, t FROM loose WHERE n < 2",
  ]) {
    const { sqlite, js } = answers(db, sql);
    assert.equal(sqlite, js, sql);
  }
});

test("REAL, BLOB, ANY, JSON and invalid UTF-8 values go the JS way or match it", () => {
  const db = database(SETUP);
  for (const sql of [
    "SELECT r FROM strict_t",
    "SELECT a FROM strict_t",
    "SELECT b, x'00ff' AS raw FROM strict_t",
    "SELECT n FROM loose",
    "SELECT json('[1]') AS j, 'a' || 'b' AS s",
    "SELECT CAST(x'ff61' AS TEXT) AS bad, CAST(x'eda080' AS TEXT) AS surrogate",
  ]) {
    const { sqlite, js } = answers(db, sql);
    if (sqlite !== null) assert.equal(sqlite, js, sql);
  }
  // 2.5 in a loose INTEGER column: SQLite would write it differently, so the JS way answers.
  assert.equal(answers(db, "SELECT n FROM loose").sqlite, null);
});

test("generated text and whole numbers, byte for byte the CLI's (seeded)", () => {
  const db = database("CREATE TABLE g (t TEXT, n INTEGER) STRICT");
  const insert = db.prepare("INSERT INTO g VALUES (?, ?)");
  const rows = fc.sample(
    fc.tuple(
      fc.option(fc.string({ unit: "binary", maxLength: 20 })),
      fc.option(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })),
    ),
    { seed: 18, numRuns: 2000 },
  );
  for (const [text, number] of rows) insert.run(text, number);
  const { sqlite, js } = answers(db, "SELECT t, n FROM g");
  assert.equal(sqlite, js);
});

test("a one-column statement's rows (read plucked) equal that column read beside another", () => {
  const db = database(SETUP);
  for (const [table, columns] of [
    ["strict_t", ["n", "i", "r", "t", "a", "b"]],
    ["loose", ["n", "t"]],
  ] as const) {
    for (const column of columns) {
      const one = `SELECT ${column} FROM ${table} ORDER BY rowid`;
      const two = `SELECT ${column}, 0 AS other FROM ${table} ORDER BY rowid`;
      const single = [...executeStatement(db.prepare(one), one).rows];
      const pair = [...executeStatement(db.prepare(two), two).rows].map((row) => [row[0]]);
      assert.deepEqual(single, pair, `${table}.${column}`);
    }
  }
});
