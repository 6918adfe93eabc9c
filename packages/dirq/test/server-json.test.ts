import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { seededRandom } from "./differential.js";
import { describe, it } from "node:test";
import { runDirq } from "./helpers.js";
import { COLUMN_NAMES, jsonStatement, SERIES, valueSql } from "./json-statements.js";
import { assertJsonError, postQuery, postRaw, serverFixtures } from "./server-support.js";

/*
 * The server writes most JSON answers inside SQLite (json_object) and the CLI here writes them
 * in JS: the bytes must be the same. Seeded statements with every kind of value, compared
 * against the CLI's output for the same statement.
 */

const { tree, serve } = serverFixtures();

/** The stat columns of a path-table, in order. */
const PATH_COLUMNS = ["path", "basename", "dir", "ext", "size", "mtime", "ctime"];

/** A statement's first answer is written in JS when it is short: here SQLite writes them all. */
const SQLITE_FIRST = { DIRQ_FIRST_ANSWER_JS_ROWS: "0" };
/** The CLI writes long answers in SQLite too: here it writes every answer the JS way. */
const JS_ONLY = { DIRQ_FIRST_ANSWER_JS_ROWS: String(Number.MAX_SAFE_INTEGER) };

describe("JSON written by SQLite", { concurrency: true }, () => {
  it("answers with the same bytes as the CLI, for seeded statements with every kind of value", async () => {
    const root = tree({ "a.txt": "aa", "b/c.md": "ccc", "b/d.md": "d" });
    const server = await serve(root, [], SQLITE_FIRST);
    const random = seededRandom(18);
    const statements = [
      ...Array.from({ length: 24 }, (_, i) => jsonStatement(random, i)),
      "SELECT path, size, ext FROM './' ORDER BY path DESC",
      "SELECT path FROM './' ORDER BY size DESC, path LIMIT 2",
      `${SERIES} SELECT value, value * 7 % 5 AS k FROM s ORDER BY k, value DESC`,
      `${SERIES} SELECT k, count(*) AS n FROM (SELECT value % 7 AS k FROM s) GROUP BY k ORDER BY n, k DESC`,
      "SELECT * FROM './b/*.md' ORDER BY size",
      "SELECT 1;",
      "VALUES (1, 'x'), (2, NULL)",
      "SELECT count(*) AS n, 'x' AS n FROM './'",
    ];
    for (const sql of statements) {
      const [fromServer, fromCli] = await Promise.all([
        postQuery(server, sql),
        runDirq(["query", sql, "--format", "json"], { cwd: root, env: JS_ONLY }),
      ]);
      assert.equal(fromCli.code, 0, `${sql}: ${fromCli.stderr}`);
      assert.equal(fromServer.status, 200, `${sql}: ${fromServer.text}`);
      assert.equal(fromServer.text, fromCli.stdout, sql);
    }
  });

  it("answers table columns holding values their declared type does not promise like the CLI", async () => {
    // SQLite writes columns read straight from a table without type checks when their type
    // allows it: a REAL in an INTEGER column, a number in a TEXT column, a value of a second
    // UNION arm with a JSON subtype, and a BLOB must still come out as the JS way writes them.
    const rows = [
      { t: "plain", i: 1, n: 1 },
      { t: 2.5, i: 1.5, n: "x" },
      { t: "1e999", i: "text in an integer column", n: 0.1 },
      { t: null, i: 9007199254740992, n: null },
    ];
    const root = tree({
      "rows.json": JSON.stringify(rows),
      "typed.toml": [
        "[[table]]",
        'name = "typed"',
        'glob = "rows.json"',
        'schema = { t = "TEXT", i = "INTEGER", n = "BLOB" }',
        'on-file = "cat {path}"',
      ].join("\n"),
    });
    const server = await serve(root, ["-c", "typed.toml"], SQLITE_FIRST);
    const statements = [
      "SELECT t, i, n FROM typed",
      "SELECT t FROM typed WHERE i IS NOT NULL",
      "SELECT i FROM typed WHERE typeof(i) = 'integer'",
      "SELECT t FROM typed UNION ALL SELECT json('[1, 2]')",
      "SELECT t FROM typed UNION ALL SELECT 1.5",
      "SELECT x FROM (SELECT t AS x FROM typed) ORDER BY x",
      "SELECT t, CAST(t AS BLOB) AS b FROM typed",
      "SELECT path, size FROM './' ORDER BY path",
    ];
    for (const sql of statements) {
      const [fromServer, fromCli] = await Promise.all([
        postQuery(server, sql),
        runDirq(["query", sql, "--format", "json", "-c", "typed.toml"], {
          cwd: root,
          env: JS_ONLY,
        }),
      ]);
      assert.equal(fromCli.code, 0, `${sql}: ${fromCli.stderr}`);
      assert.equal(fromServer.status, 200, `${sql}: ${fromServer.text}`);
      assert.equal(fromServer.text, fromCli.stdout, sql);
    }
  });
  it("answers a statement the same the first time (in JS when short) and after (in SQLite)", async () => {
    const files = Object.fromEntries(
      Array.from({ length: 80 }, (_, i) => [`f${String(i).padStart(2, "0")}.txt`, "x".repeat(i)]),
    );
    const root = tree(files);
    const server = await serve(root);
    // random() keeps the result cache out: every request runs the statement.
    const statements = [
      "SELECT path, size FROM './' WHERE random() IS NOT NULL ORDER BY path LIMIT 10",
      // Past the first answer's bound: SQLite writes it from the start.
      "SELECT path, size FROM './' WHERE random() IS NOT NULL ORDER BY path",
      // A REAL: SQLite's bytes would differ, so every answer is written in JS.
      "SELECT path, size / 2.0 AS half FROM './' WHERE random() IS NOT NULL ORDER BY path LIMIT 5",
    ];
    for (const sql of statements) {
      const fromCli = await runDirq(["query", sql, "--format", "json"], {
        cwd: root,
        env: JS_ONLY,
      });
      assert.equal(fromCli.code, 0, `${sql}: ${fromCli.stderr}`);
      for (const run of [1, 2, 3]) {
        const fromServer = await postQuery(server, sql);
        assert.equal(fromServer.status, 200, `${sql}: ${fromServer.text}`);
        assert.equal(fromServer.text, fromCli.stdout, `${sql} (run ${run})`);
      }
    }
  });

  it("answers a statement whose answer grows past 10,000 rows between runs like the CLI", async () => {
    // A statement SQLite has answered small runs without its row bound the next time; one
    // that then outgrows the bound must still answer right, and go the JS way after that.
    const root = tree({ "f0.txt": "x" });
    const server = await serve(root);
    // 500 rows per file, uncached (random()), in an order SQLite must keep: 500, then 25,000.
    const sql =
      "WITH RECURSIVE s(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM s WHERE v < (SELECT count(*) FROM './') * 500) " +
      "SELECT v, 'row ' || v AS label FROM s WHERE random() IS NOT NULL ORDER BY v % 7, v DESC";
    const expectMatchesCli = async (rows: number) => {
      const [fromServer, fromCli] = await Promise.all([
        postQuery(server, sql),
        runDirq(["query", sql, "--format", "json"], { cwd: root, env: JS_ONLY }),
      ]);
      assert.equal(fromCli.code, 0, fromCli.stderr);
      assert.equal(fromServer.status, 200, fromServer.text);
      assert.equal((JSON.parse(fromServer.text) as unknown[]).length, rows);
      assert.equal(fromServer.text, fromCli.stdout);
    };
    await expectMatchesCli(500);
    await expectMatchesCli(500);
    for (let i = 1; i < 50; i++) writeFileSync(join(root, `f${i}.txt`), "x");
    const giveUp = Date.now() + 30_000;
    for (;;) {
      const count = await postQuery(server, "SELECT count(*) AS n FROM './'");
      if (count.text.includes('"n":50')) break;
      assert.ok(Date.now() < giveUp, `the server never saw the 49 new files: ${count.text}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await expectMatchesCli(25_000);
    await expectMatchesCli(25_000);
  });
});

describe('POST /query with "columns": true', { concurrency: true }, () => {
  /** A seeded SELECT and the names of its columns, repeats and integer-like names included. */
  function namedStatement(random: () => number): { sql: string; names: string[] } {
    const names = Array.from(
      { length: 1 + Math.floor(random() * 6) },
      () => COLUMN_NAMES[Math.floor(random() * COLUMN_NAMES.length)] as string,
    );
    const select = names
      .map((name) => `${valueSql(random, false)} AS "${name.replaceAll('"', '""')}"`)
      .join(", ");
    return { sql: `SELECT ${select}`, names };
  }

  it("names the columns in the answer's order and multiplicity, the rows unchanged", async () => {
    const root = tree({ "a.txt": "aa", "b/c.md": "ccc" });
    const server = await serve(root);
    const random = seededRandom(30);
    const cases = [
      ...Array.from({ length: 30 }, () => namedStatement(random)),
      {
        sql: `SELECT path, size, 2024 AS "2024" FROM './' ORDER BY path`,
        names: ["path", "size", "2024"],
      },
      {
        sql: "SELECT * FROM './a.txt', './b/*.md'",
        names: [...PATH_COLUMNS, ...PATH_COLUMNS],
      },
      { sql: "SELECT x.path, y.path FROM './a.txt' AS x, './a.txt' AS y", names: ["path", "path"] },
    ];
    for (const { sql, names } of cases) {
      for (const empty of [false, true]) {
        // An empty answer has no row to take names from: the server still names them.
        const statement = empty ? `${sql} LIMIT 0` : sql;
        const plain = await postQuery(server, statement);
        const named = await postRaw(server, JSON.stringify({ sql: statement, columns: true }));
        assert.equal(named.status, 200, `${statement}: ${named.text}`);
        assert.equal(named.contentType, "application/json");
        assert.equal(
          named.text,
          `{"columns":${JSON.stringify(names)},"rows":${plain.text.replace(/\n$/, "")}}\n`,
          statement,
        );
      }
    }
  });

  it("answers a failing statement as without it, and refuses a non-boolean", async () => {
    const server = await serve(tree({ "a.txt": "a" }));
    const plain = await postQuery(server, "SELECT nope FROM './'");
    const named = await postRaw(
      server,
      JSON.stringify({ sql: "SELECT nope FROM './'", columns: true }),
    );
    assert.equal(named.status, 400);
    assert.equal(named.text, plain.text);
    const off = await postRaw(server, JSON.stringify({ sql: "SELECT 1 AS one", columns: false }));
    assert.equal(off.text, '[{"one":1}]\n');
    for (const columns of [1, "yes", null, ["a"]]) {
      const refused = await postRaw(server, JSON.stringify({ sql: "SELECT 1", columns }));
      assertJsonError(refused, 400, /"columns" must be true or false/);
    }
  });
});
