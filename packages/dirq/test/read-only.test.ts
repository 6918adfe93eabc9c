import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  assertUserError,
  makeTree,
  parseRows,
  removeTree,
  runDirq,
  runOk,
  snapshotTree,
} from "./helpers.js";

const root = makeTree({
  "a.md": "# a\n",
  "docs/b.md": "bb",
  "existing.db": "not really a database",
  "src/x.ts": "export {};\n",
});
/** A name no statement below may create next to the root (for `'../…'` paths). */
const escapeName = `${basename(root)}-escape.db`;
let snapshot = "";
let parentBefore: string[] = [];

before(() => {
  snapshot = snapshotTree(root);
  parentBefore = readdirSync(dirname(root)).filter((name) => name.startsWith(basename(root)));
});
after(() => removeTree(root));

/** Files a statement could have created if it ran. */
const FORBIDDEN_FILES = ["x.db", "y.db", "z.db", "x.db-journal", "x.db-wal"];

function assertTreeUntouched(): void {
  assert.equal(snapshotTree(root), snapshot, "the tree changed");
  for (const name of FORBIDDEN_FILES) {
    assert.ok(!existsSync(join(root, name)), `${name} appeared in the root`);
    assert.ok(!existsSync(join(process.cwd(), name)), `${name} appeared in the test's cwd`);
  }
  assert.ok(!existsSync(join(dirname(root), escapeName)), "a file appeared next to the root");
  const parentNow = readdirSync(dirname(root)).filter((name) => name.startsWith(basename(root)));
  assert.deepEqual(parentNow, parentBefore);
}

/**
 * A rejected statement: exit 1, one `dirq: ` line, nothing on stdout, and (progress forced on)
 * no scan ran before the rejection. The tree is unchanged afterwards.
 */
async function assertRejected(sql: string, pattern?: RegExp | string): Promise<string> {
  const result = await runDirq(["query", sql], { cwd: root, env: { DIRQ_PROGRESS: "always" } });
  const message = assertUserError(result, pattern);
  const lines = result.stderr.split("\n").filter((line) => line !== "");
  assert.deepEqual(lines.length, 1, `expected one diagnostic line, got: ${result.stderr}`);
  assertTreeUntouched();
  return message;
}

const WRITES = [
  "INSERT INTO './' (path, basename, dir) VALUES ('x', 'x', '')",
  "INSERT OR REPLACE INTO './' (path, basename, dir) VALUES ('x', 'x', '')",
  "UPDATE './' SET size = 0",
  "DELETE FROM './'",
  "REPLACE INTO './' (path, basename, dir) VALUES ('x', 'x', '')",
  "CREATE TABLE t (x)",
  "CREATE TEMP TABLE t AS SELECT * FROM './'",
  "CREATE VIEW v AS SELECT * FROM './'",
  "CREATE INDEX i ON './' (path)",
  "CREATE VIRTUAL TABLE f USING fts5(x)",
  "CREATE TRIGGER tr AFTER INSERT ON './' BEGIN SELECT 1; END",
  "DROP TABLE './'",
  "DROP TABLE IF EXISTS _dirq_meta",
  "ALTER TABLE './' ADD COLUMN x",
  "WITH t AS (SELECT 1) INSERT INTO './' (path, basename, dir) SELECT 'x', 'x', '' FROM t",
  "WITH t AS (SELECT 1) DELETE FROM './'",
  "WITH t AS (SELECT 1) UPDATE './' SET size = 1",
  "WITH RECURSIVE c(x) AS (SELECT 1) REPLACE INTO './' (path, basename, dir) VALUES ('x', 'x', '')",
];

const FILE_STATEMENTS = [
  "ATTACH 'x.db' AS x",
  "attach 'x.db' as x",
  "ATTACH ':memory:' AS m",
  "ATTACH 'file:x.db?mode=rwc' AS x",
  "ATTACH 'existing.db' AS e",
  `ATTACH '../${escapeName}' AS e`,
  "/* a comment */ ATTACH 'x.db' AS x",
  "EXPLAIN ATTACH 'x.db' AS x",
  "EXPLAIN QUERY PLAN ATTACH 'x.db' AS x",
  "DETACH x",
  "VACUUM",
  "VACUUM INTO 'y.db'",
  "VACUUM main INTO 'y.db'",
  `VACUUM INTO '../${escapeName}'`,
  "REINDEX",
  "ANALYZE",
  "SELECT load_extension('./x.so')",
];

const PRAGMA_WRITES = [
  "PRAGMA user_version = 1",
  "PRAGMA user_version(1)",
  "pragma USER_VERSION = 1",
  "PRAGMA main.user_version = 1",
  "PRAGMA main.user_version(1)",
  'PRAGMA "user_version" = 1',
  "PRAGMA journal_mode = WAL",
  "PRAGMA writable_schema = ON",
  "PRAGMA temp_store_directory = '.'",
];

const TRANSACTIONS = [
  "BEGIN",
  "BEGIN IMMEDIATE",
  "COMMIT",
  "END",
  "ROLLBACK",
  "SAVEPOINT s",
  "RELEASE s",
];

const MULTIPLE = [
  "SELECT 1; SELECT 2",
  "SELECT * FROM './'; ATTACH 'x.db' AS x",
  "SELECT 1; DELETE FROM './'",
  "SELECT 1; VACUUM INTO 'y.db'",
];

const EMPTY = ["", "   ", " ; ; ", "/* only a comment */", "\n-- only a comment\n"];

describe("statements that are not a single read are rejected", { concurrency: 4 }, () => {
  for (const sql of WRITES) {
    it(`write: ${sql}`, async () => {
      await assertRejected(sql, /read-only|writes/);
    });
  }
  for (const sql of FILE_STATEMENTS) {
    it(`file access: ${sql}`, async () => {
      await assertRejected(sql);
    });
  }
  for (const sql of PRAGMA_WRITES) {
    it(`PRAGMA assignment: ${sql}`, async () => {
      await assertRejected(sql, /PRAGMA/i);
    });
  }
  for (const sql of TRANSACTIONS) {
    it(`transaction: ${sql}`, async () => {
      await assertRejected(sql, /transaction|read-only/);
    });
  }
  for (const sql of MULTIPLE) {
    it(`several statements: ${sql}`, async () => {
      await assertRejected(sql, /statement/);
    });
  }
  for (const sql of EMPTY) {
    it(`empty SQL: ${JSON.stringify(sql)}`, async () => {
      await assertRejected(sql, /empty|statement|SQL/i);
    });
  }

  it("the default mode rejects the same way as 'query'", async () => {
    const viaQuery = await runDirq(["query", "VACUUM INTO 'y.db'"], { cwd: root });
    const viaDefault = await runDirq(["VACUUM INTO 'y.db'"], { cwd: root });
    assertUserError(viaDefault);
    assert.deepEqual(viaDefault, viaQuery);
    assertTreeUntouched();
  });
});

describe("reads that are allowed", { concurrency: 4 }, () => {
  it("PRAGMA user_version (a bare reading pragma)", async () => {
    assert.equal(await runOk(root, ["PRAGMA user_version"]), '[{"user_version":0}]\n');
    assertTreeUntouched();
  });

  it("PRAGMA table_info('./') is accepted", async () => {
    const rows = parseRows(await runOk(root, ["PRAGMA table_info('./')"]));
    assert.ok(Array.isArray(rows));
    assertTreeUntouched();
  });

  it("PRAGMA table_info('./') and pragma_table_info('./') describe the seven columns", async () => {
    const expected = ["path", "basename", "dir", "ext", "size", "mtime", "ctime"];
    const pragma = parseRows(await runOk(root, ["PRAGMA table_info('./')"]));
    assert.deepEqual(
      pragma.map((row) => row.name),
      expected,
    );
    const tvf = parseRows(await runOk(root, ["SELECT name FROM pragma_table_info('./')"]));
    assert.deepEqual(
      tvf.map((row) => row.name),
      expected,
    );
  });

  it("pragma_table_info over a path-table that the statement also reads", async () => {
    const rows = parseRows(
      await runOk(root, [
        "SELECT name, type FROM pragma_table_info('./') WHERE (SELECT count(*) FROM './') > 0",
      ]),
    );
    assert.deepEqual(rows, [
      { name: "path", type: "TEXT" },
      { name: "basename", type: "TEXT" },
      { name: "dir", type: "TEXT" },
      { name: "ext", type: "TEXT" },
      { name: "size", type: "INTEGER" },
      { name: "mtime", type: "INTEGER" },
      { name: "ctime", type: "INTEGER" },
    ]);
  });

  it("EXPLAIN QUERY PLAN SELECT … and EXPLAIN SELECT …", async () => {
    const plan = parseRows(
      await runOk(root, ["EXPLAIN QUERY PLAN SELECT path FROM './' WHERE size > 1"]),
    );
    assert.ok(plan.length > 0);
    assert.deepEqual(Object.keys(plan[0] ?? {}), ["id", "parent", "notused", "detail"]);
    assert.ok(plan.some((row) => String(row.detail).includes("SCAN")));
    const program = parseRows(await runOk(root, ["EXPLAIN SELECT 1"]));
    assert.ok(program.some((row) => row.opcode === "Halt"));
    assertTreeUntouched();
  });

  it("VALUES, WITH RECURSIVE and a trailing semicolon", async () => {
    assert.equal(await runOk(root, ["VALUES (1, 'a')"]), '[{"column1":1,"column2":"a"}]\n');
    assert.equal(
      await runOk(root, [
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3) SELECT x FROM c;",
      ]),
      '[{"x":1},{"x":2},{"x":3}]\n',
    );
    assert.equal(await runOk(root, ["  select 1 as x ;; "]), '[{"x":1}]\n');
  });

  it("a semicolon inside a string, identifier or comment is not a second statement", async () => {
    assert.equal(await runOk(root, [`SELECT ';' AS "a;b" /* ; SELECT 2 */`]), '[{"a;b":";"}]\n');
    assert.equal(
      await runOk(root, ["SELECT count(*) AS n FROM './' WHERE path <> 'x; DROP TABLE y'"]),
      '[{"n":4}]\n',
    );
    assertTreeUntouched();
  });

  it("words like 'delete' or 'attach' inside strings do not trip the guard", async () => {
    assert.equal(
      await runOk(root, [
        "SELECT 'DELETE FROM x' AS a, 'ATTACH' AS b, \"insert\" FROM (SELECT 1 AS \"insert\")",
      ]),
      '[{"a":"DELETE FROM x","b":"ATTACH","insert":1}]\n',
    );
  });
});

describe("internal _dirq_ tables are denied with an error", { concurrency: 4 }, () => {
  const DENIED = [
    "SELECT * FROM _dirq_meta",
    "SELECT key FROM main._dirq_meta",
    'SELECT * FROM "_DIRQ_META"',
    "SELECT * FROM [_dirq_meta]",
    "WITH m AS (SELECT * FROM _dirq_meta) SELECT * FROM m",
    "SELECT * FROM (SELECT * FROM _dirq_meta)",
    "SELECT (SELECT value FROM _dirq_meta WHERE key = 'root') AS r",
    "SELECT path FROM './' WHERE path IN (SELECT value FROM _dirq_meta)",
    "SELECT * FROM pragma_table_info('_dirq_meta')",
    "SELECT * FROM pragma_index_list('_dirq_meta')",
    "PRAGMA table_info(_dirq_meta)",
    "PRAGMA table_info('_dirq_meta')",
    "PRAGMA main.table_xinfo(_dirq_meta)",
    "EXPLAIN QUERY PLAN SELECT * FROM _dirq_meta",
    "SELECT * FROM _dirq_does_not_exist",
  ];
  for (const sql of DENIED) {
    it(sql, async () => {
      await assertRejected(sql, /_dirq_/i);
    });
  }

  it("a table-valued pragma cannot reach an internal table through a computed name", async () => {
    await assertRejected("SELECT * FROM pragma_table_info(char(95) || 'dirq_meta')", /_dirq_/i);
  });

  it("a statement that merely spells an internal name, even as a string, is refused (docs/read-only.md)", async () => {
    await assertRejected("SELECT count(*) AS n FROM './' WHERE basename = '_dirq_notes'", /_dirq_/);
    await assertRejected("SELECT 1 AS _dirq_x", /_dirq_/);
  });

  it("the hidden column names _dirq_file_path and _dirq_row_index are not refused as tables", async () => {
    const result = await runDirq(["SELECT _dirq_file_path, _dirq_row_index FROM './'"], {
      cwd: root,
    });
    // A path-table has no such columns: SQLite's own error, not the internal-table denial.
    const message = assertUserError(result, "no such column");
    assert.doesNotMatch(message, /internal/);
  });
});
