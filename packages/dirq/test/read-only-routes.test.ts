import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { assertUserError, makeTree, removeTree, runDirq, snapshotTree } from "./helpers.js";
import { postQuery, type ServerProcess, startServer } from "./server-support.js";

/*
 * A generated battery of statements that must be rejected, sent by every route (the server,
 * the piped REPL, the one-shot CLI). After each, no file in the root or in a folder outside it
 * was created or changed: statements name files in both.
 */

const root = makeTree({ "a.md": "# a\n", "docs/b.md": "bb", "existing.db": "not a database" });
const outside = mkdtempSync(join(tmpdir(), "dirq-outside-"));
let rootSnapshot = "";
let outsideSnapshot = "";

/** Files a statement names, in the root, beside it and outside it. */
const TARGETS = ["x.db", "existing.db", `${outside}/x.db`, `file:${outside}/u.db?mode=rwc`];

const WRITES = [
  "INSERT INTO './' (path) VALUES ('x')",
  "INSERT OR IGNORE INTO './' (path) VALUES ('x')",
  "REPLACE INTO './' (path) VALUES ('x')",
  "INSERT INTO './' (path) SELECT path FROM './'",
  "UPDATE './' SET size = 0",
  "UPDATE OR FAIL './' SET size = 0 WHERE 1",
  "DELETE FROM './'",
  "DELETE FROM './' WHERE path = 'a.md' RETURNING path",
  "CREATE TABLE t (x)",
  "CREATE TABLE IF NOT EXISTS t AS SELECT * FROM './'",
  "CREATE TEMP TABLE t (x)",
  "CREATE TEMPORARY VIEW v AS SELECT 1",
  "CREATE VIEW v AS SELECT * FROM './'",
  "CREATE INDEX i ON './' (path)",
  "CREATE UNIQUE INDEX IF NOT EXISTS i ON './' (size)",
  "CREATE VIRTUAL TABLE f USING fts5(x)",
  "CREATE TRIGGER tr AFTER INSERT ON './' BEGIN SELECT 1; END",
  "DROP TABLE './'",
  "DROP VIEW IF EXISTS v",
  "DROP INDEX IF EXISTS i",
  "DROP TRIGGER IF EXISTS tr",
  "ALTER TABLE './' RENAME TO y",
  "ALTER TABLE './' ADD COLUMN z",
  "ALTER TABLE './' DROP COLUMN size",
];

const FILE_FORMS = [
  ...TARGETS.flatMap((target) => [
    `ATTACH '${target}' AS x`,
    `ATTACH DATABASE '${target}' AS x`,
    `VACUUM INTO '${target}'`,
    `VACUUM main INTO '${target}'`,
  ]),
  "DETACH x",
  "DETACH DATABASE main",
  "VACUUM",
  "VACUUM temp",
  "REINDEX",
  "ANALYZE",
  "ANALYZE main",
];

const PRAGMA_NAMES = [
  "user_version",
  "application_id",
  "journal_mode",
  "synchronous",
  "locking_mode",
  "writable_schema",
  "schema_version",
  "query_only",
  "temp_store",
  "temp_store_directory",
  "data_store_directory",
  "cache_size",
  "page_size",
  "max_page_count",
  "mmap_size",
  "auto_vacuum",
  "secure_delete",
  "foreign_keys",
  "recursive_triggers",
  "trusted_schema",
  "busy_timeout",
  "case_sensitive_like",
];

const PRAGMA_FORMS = [
  ...PRAGMA_NAMES.flatMap((name) => [
    `PRAGMA ${name} = 1`,
    `PRAGMA main.${name} = 'wal'`,
    `PRAGMA ${name}(0)`,
    `PRAGMA temp.${name} = '${outside}'`,
  ]),
  "PRAGMA optimize",
  "PRAGMA wal_checkpoint(TRUNCATE)",
  "PRAGMA incremental_vacuum(1)",
  "PRAGMA shrink_memory",
];

const EXTENSION_FORMS = [
  `SELECT load_extension('${outside}/x.so')`,
  "SELECT load_extension('./x.so', 'sqlite3_x_init')",
  "VALUES (load_extension('x'))",
  "SELECT * FROM (SELECT LOAD_EXTENSION('x'))",
  "SELECT \"load_extension\"('x')",
  "WITH e AS (SELECT load_extension('x')) SELECT * FROM e",
  "SELECT path FROM './' WHERE load_extension(path) IS NULL",
];

const TRANSACTION_FORMS = [
  "BEGIN",
  "BEGIN EXCLUSIVE TRANSACTION",
  "COMMIT",
  "END TRANSACTION",
  "ROLLBACK",
  "ROLLBACK TO s",
  "SAVEPOINT s",
  "RELEASE SAVEPOINT s",
];

const INTERNAL_FORMS = ["_dirq_meta", "_DIRQ_META", '"_dirq_meta"', "[_dirq_meta]", "`_dirq_meta`"]
  .flatMap((name) => [
    `SELECT * FROM ${name}`,
    `SELECT * FROM main.${name}`,
    `WITH m AS (SELECT * FROM ${name}) SELECT * FROM m`,
    `SELECT (SELECT count(*) FROM ${name}) AS n`,
    `SELECT * FROM './' WHERE path IN (SELECT value FROM ${name})`,
    `PRAGMA table_info(${name})`,
    `INSERT INTO ${name} VALUES ('k', 'v')`,
  ])
  .concat([
    "SELECT * FROM pragma_table_info('_dirq_meta')",
    "SELECT * FROM pragma_table_info(char(95) || 'dirq_meta')",
    "SELECT * FROM pragma_table_info WHERE arg = '_dirq' || '_meta'",
  ]);

/** Each base form, and the same with a comment in front, in lower case, under EXPLAIN. */
function variants(sql: string): string[] {
  return [
    sql,
    `/* hidden */ ${sql}`,
    `-- a comment\n${sql}`,
    sql.toLowerCase(),
    `EXPLAIN ${sql}`,
    `EXPLAIN QUERY PLAN ${sql}`,
    `${sql};`,
    `SELECT 1; ${sql}`,
  ];
}

const BASES = [
  ...WRITES,
  ...FILE_FORMS,
  ...PRAGMA_FORMS,
  ...EXTENSION_FORMS,
  ...TRANSACTION_FORMS,
  ...INTERNAL_FORMS,
];
const WITH_WRITES = WRITES.filter((sql) => /^(INSERT|REPLACE|UPDATE|DELETE)/.test(sql)).map(
  (sql) => `WITH w AS (SELECT 1) ${sql}`,
);
// The lower-case variant of a statement naming an outside path names another path: still refused.
const BATTERY = [...new Set([...BASES.flatMap(variants), ...WITH_WRITES])];

function assertNothingChanged(after: string): void {
  assert.equal(snapshotTree(root), rootSnapshot, `the root changed after ${after}`);
  assert.equal(snapshotTree(outside), outsideSnapshot, `the outside folder changed after ${after}`);
}

before(() => {
  rootSnapshot = snapshotTree(root);
  outsideSnapshot = snapshotTree(outside);
});

after(() => {
  removeTree(root);
  removeTree(outside);
});

describe(`${BATTERY.length} generated statements are rejected by every route`, () => {
  it("the battery covers every family", () => {
    assert.ok(BATTERY.length > 900, `${BATTERY.length} statements`);
  });

  it("POST /query: 400 with a JSON error for each, nothing created or changed", async () => {
    const server: ServerProcess = await startServer(["--host", "127.0.0.1", "--port", "0"], {
      cwd: root,
    });
    try {
      for (const sql of BATTERY) {
        const answer = await postQuery(server, sql);
        assert.equal(answer.status, 400, `${sql}: ${answer.status} ${answer.text}`);
        assert.equal(typeof (JSON.parse(answer.text) as { error: unknown }).error, "string");
        assertNothingChanged(sql);
      }
      assert.doesNotMatch(server.stderr(), /internal error/);
    } finally {
      await server.kill();
    }
  });

  it("the piped REPL: one diagnostic per statement, no rows, exit 0", async () => {
    // One statement per line: the REPL takes a newline as the end of a piped statement.
    const lines = BATTERY.filter((sql) => !sql.includes("\n"));
    const result = await runDirq(["--format", "json"], { cwd: root, input: lines.join("\n") });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, "");
    const diagnostics = result.stderr.split("\n").filter((line) => line !== "");
    assert.equal(diagnostics.length, lines.length, result.stderr);
    for (const line of diagnostics) assert.match(line, /^dirq: \S/);
    assert.doesNotMatch(result.stderr, /internal error/i);
    assertNothingChanged("the REPL session");
  });

  it("the one-shot CLI: exit 1 with one diagnostic (a sample of the battery)", async () => {
    // A process per statement: an eighth of the bases and every hundredth variant (the server and
    // the REPL take them all; read-only.test.ts has more one-shot cases).
    const sample = [
      ...new Set([
        ...BASES.filter((_, i) => i % 4 === 0),
        ...BATTERY.filter((_, i) => i % 50 === 0),
      ]),
    ];
    const queue = [...sample];
    const worker = async () => {
      for (let sql = queue.shift(); sql !== undefined; sql = queue.shift()) {
        const result = await runDirq(["query", sql], { cwd: root });
        assertUserError(result);
        assertNothingChanged(sql);
      }
    };
    await Promise.all([worker(), worker()]);
  });
});
