/**
 * Counted fills (issue 36): a one-shot statement that reads no column and no row id of a
 * path-table gets, in the table's place, a view of as many blank rows as the walk counted
 * (`OpenIndexOptions.countedFills`, on in the CLI). What must hold:
 * - the answers equal those of the table with rows written (`DIRQ_NATIVE_FS=0` writes rows:
 *   the view needs the native extension), for every shape of statement that reads no column;
 * - a statement that reads row ids, or the schema (where a view would show), gets the table;
 * - through the library, the next statement sees the table again: one that reads paths fills
 *   it and gets every path, never the blank rows.
 */
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { openIndex } from "../src/engine.js";
import { makeTree, removeTree, runDirq } from "./helpers.js";

let root = "";

async function ask(sql: string, env: Record<string, string> = {}) {
  const result = await runDirq([sql, "--format", "json"], { cwd: root, env });
  return { code: result.code, stderr: result.stderr, stdout: result.stdout };
}

/** Statements that read no column of a path-table, or only row ids (which need the table). */
const STATEMENTS = [
  "SELECT count(*) AS n FROM './'",
  "SELECT count(*) AS n FROM './**/*.md'",
  "SELECT count(*) AS n FROM './' WHERE 1 = 1",
  "SELECT EXISTS (SELECT 1 FROM './docs') AS e, EXISTS (SELECT 1 FROM './none/**') AS f",
  "SELECT (SELECT count(*) FROM './**/*.md') - (SELECT count(*) FROM './**/*.json') AS n",
  "SELECT count(*) AS n FROM './docs/**' a, './docs/**' b",
  "SELECT count(*) AS n FROM './**/*.md' LIMIT 1",
  "SELECT 1 AS one FROM './docs' LIMIT 2",
  "SELECT count(*) AS n FROM './' GROUP BY 1 = 1",
  "SELECT max(rowid) AS n FROM './'",
  "SELECT count(*) AS n FROM './' WHERE rowid % 2 = 0",
  "SELECT count(*) AS n, (SELECT count(path) FROM './docs') AS m FROM './docs'",
  "SELECT count(*) AS n FROM './empty'",
  // The schema would show a view: these get the table.
  "SELECT name, type FROM pragma_table_info('./') WHERE (SELECT count(*) FROM './') > 0",
  "SELECT type, sql FROM sqlite_schema WHERE name = './docs' AND EXISTS (SELECT 1 FROM './docs')",
];

describe("counted fills: statements that read no column", { concurrency: true }, () => {
  before(() => {
    const files: Record<string, string> = { "a.md": "a", "b.json": "{}", ".hidden.md": "h" };
    for (let i = 0; i < 300; i++)
      files[`docs/d${i % 7}/f${i}${i % 3 === 0 ? ".md" : ".json"}`] = "x";
    root = makeTree(files);
    mkdirSync(join(root, "empty"));
    writeFileSync(join(root, "docs", "z.md"), "z");
  });
  after(() => removeTree(root));

  for (const sql of STATEMENTS) {
    it(`${sql}: the same answer as with rows written`, async () => {
      const counted = await ask(sql);
      const written = await ask(sql, { DIRQ_NATIVE_FS: "0" });
      assert.deepEqual(counted, written);
      assert.equal(counted.code, 0, counted.stderr);
    });
  }

  it("through the library, the statement after a counted one sees the table and fills it", async () => {
    const index = openIndex({ root, pathlessFills: true, countedFills: true, progress: false });
    const values = async (sql: string) =>
      [...(await index.query(sql)).rows].map((row) => row.map((value) => String(value)));
    try {
      assert.deepEqual(await values("SELECT count(*) FROM './docs'"), [["301"]]);
      const paths = await values("SELECT path FROM './docs' ORDER BY path LIMIT 2");
      assert.deepEqual(paths, [["docs/d0/f0.md"], ["docs/d0/f105.md"]]);
      assert.deepEqual(await values("SELECT count(*) FROM './docs'"), [["301"]]);
      assert.deepEqual(await values("SELECT count(*) FROM './**/*.md'"), [["102"]]);
      assert.deepEqual(await values("SELECT max(rowid) FROM './**/*.md'"), [["102"]]);
      assert.deepEqual(await values("SELECT count(*) FROM './**/*.md'"), [["102"]]);
      const names = await values("SELECT count(DISTINCT basename) FROM './**/*.md'");
      assert.deepEqual(names, [["102"]]);
      // Every path-table is a table between statements, whatever the one before read.
      await values("SELECT count(*) FROM './'");
      const kinds = await values(
        "SELECT DISTINCT type FROM sqlite_schema WHERE name IN ('./', './docs', './**/*.md')",
      );
      assert.deepEqual(kinds, [["table"]]);
    } finally {
      index.close();
    }
  });
});
