import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Catalog } from "../../src/indexer/catalog.js";
import { openIndexDatabase } from "../../src/indexer/database.js";
import { ALL_COLUMN_GROUPS, PathTables } from "../../src/indexer/path-tables.js";
import { Refresher } from "../../src/indexer/refresh.js";
import type { RowChange } from "../../src/indexer/row-changes.js";
import { quiet, tempTree } from "../helpers.js";

describe("Refresher", () => {
  it("brings the catalog's path-tables up to date with changed paths, one commit at a time", async () => {
    const root = tempTree({ "docs/a.md": "a", "docs/b.md": "b" });
    const db = openIndexDatabase(root);
    try {
      const catalog = new Catalog(null);
      const options = { root, useGitignore: true, progress: quiet };
      const tables = new PathTables(db, options, catalog);
      tables.create("./docs");
      await tables.fill("./docs", ALL_COLUMN_GROUPS);
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
        onCommit: (changes) => commits.push(changes),
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
        await refresher.start(["docs/c.md"], { onCommit: (c) => again.push(...c) })
      ).done;
      assert.deepEqual(again, []);
    } finally {
      db.close();
    }
  });
});
