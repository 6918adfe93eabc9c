import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Catalog } from "../../src/indexer/catalog.js";
import { openIndexDatabase } from "../../src/indexer/database.js";
import { ALL_COLUMN_GROUPS, PathTables } from "../../src/indexer/path-tables.js";
import { Refresher } from "../../src/indexer/refresh.js";
import { type CommitChange, expandChanges, type RowChange } from "../../src/indexer/row-changes.js";
import { quiet, tempTree } from "../helpers.js";

/** An index of `root` whose catalog holds the filled path-table `./docs`. */
async function docsTable(root: string) {
  const db = openIndexDatabase(root);
  const catalog = new Catalog(null);
  const options = { root, useGitignore: true, progress: quiet };
  const tables = new PathTables(db, options, catalog);
  tables.create("./docs");
  await tables.fill("./docs", ALL_COLUMN_GROUPS);
  return { db, catalog, options, tables };
}

describe("Refresher", () => {
  it("brings the catalog's path-tables up to date with changed paths, one commit at a time", async () => {
    const root = tempTree({ "docs/a.md": "a", "docs/b.md": "b" });
    const { db, catalog, options, tables } = await docsTable(root);
    try {
      let writing = false;
      const refresher = new Refresher(db, root, catalog, tables, options, async (task) => {
        assert.equal(writing, false, "one write at a time");
        writing = true;
        try {
          return await task();
        } finally {
          writing = false;
        }
      });
      writeFileSync(join(root, "docs/c.md"), "ccc");
      rmSync(join(root, "docs/b.md"));
      const commits: RowChange[][] = [];
      const run = await refresher.start(["docs/c.md", "docs/b.md"], {
        onCommit: (changes) => commits.push(expandChanges(changes)),
      });
      await run.done;
      const changes = commits.flat().map((change) => [change.action, change.file_path]);
      assert.deepEqual(changes.sort(), [
        ["delete", "docs/b.md"],
        ["insert", "docs/c.md"],
      ]);
      const rows = db.prepare(`SELECT path, size FROM "./docs" ORDER BY path`).all();
      assert.deepEqual(rows, [
        { path: "docs/a.md", size: 1 },
        { path: "docs/c.md", size: 3 },
      ]);
      // Nothing changed since: a second refresh of the same paths finds nothing to say.
      const again: RowChange[] = [];
      await (
        await refresher.start(["docs/c.md"], { onCommit: (c) => again.push(...expandChanges(c)) })
      ).done;
      assert.deepEqual(again, []);
    } finally {
      db.close();
    }
  });

  it("records a file as seen only once its rows commit: a commit that failed is applied again", async () => {
    const root = tempTree({ "docs/a.md": "a" });
    const { db, catalog, options, tables } = await docsTable(root);
    try {
      const refresher = new Refresher(db, root, catalog, tables, options, async (task) => task());
      // Every change committed, a failed refresh's slices that did commit included.
      let committed: RowChange[] = [];
      const refresh = async (paths: string[], onlyIfChanged: boolean) => {
        const changes: RowChange[] = [];
        const onCommit = (held: CommitChange[]) => {
          const c = expandChanges(held);
          changes.push(...c);
          committed.push(...c);
        };
        await (
          await refresher.start(paths, { onlyIfChanged, onCommit })
        ).done;
        return changes;
      };
      await refresh(["docs/a.md"], false);
      // More rows than the pages the database may still use: its commit fails, as on a full disk.
      const files = Array.from({ length: 400 }, (_, n) => `docs/${String(n).padStart(200, "f")}`);
      for (const file of files) writeFileSync(join(root, file), "new");
      writeFileSync(join(root, "docs/a.md"), "changed");
      db.pragma(`max_page_count = ${db.pragma("page_count", { simple: true }) as number}`);
      committed = [];
      await assert.rejects(refresh(["docs"], false), /full/);
      assert.deepEqual(refresher.unsettledFiles(), ["docs"]);
      db.pragma("max_page_count = 1073741823");
      // The recheck that follows a change (only files that changed since their last commit).
      // A refresh commits in slices: those before the full disk stand, the rest come now.
      await refresh(refresher.unsettledFiles(), true);
      assert.equal(committed.length, files.length + 1);
      const rows = db.prepare(`SELECT count(*) AS n, max(size) AS big FROM "./docs"`).get();
      assert.deepEqual(rows, { n: files.length + 1, big: "changed".length });
      assert.deepEqual(refresher.unsettledFiles(), []);
      assert.deepEqual(await refresh(["docs"], true), [], "recorded once committed");
    } finally {
      db.close();
    }
  });
});
