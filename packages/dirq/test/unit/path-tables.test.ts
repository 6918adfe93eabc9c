import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Catalog } from "../../src/indexer/catalog.js";
import { openIndexDatabase } from "../../src/indexer/database.js";
import { ALL_COLUMN_GROUPS, PathTables } from "../../src/indexer/path-tables.js";
import { quiet, tempTree } from "../helpers.js";

describe("PathTables", () => {
  it("creates a path-table, fills the groups asked for, refreshes one file", async () => {
    const root = tempTree({ "docs/a.md": "a", "docs/b.md": "bb", "other.txt": "x" });
    const db = openIndexDatabase(root);
    try {
      const catalog = new Catalog(null);
      const tables = new PathTables(db, { root, useGitignore: true, progress: quiet }, catalog);
      assert.equal(tables.create("./docs"), true);
      assert.equal(tables.create("not a path"), false);
      assert.equal(tables.needsFill("./docs", ALL_COLUMN_GROUPS), true);
      assert.deepEqual(await tables.fill("./docs", ALL_COLUMN_GROUPS), []);
      assert.equal(tables.needsFill("./docs", ALL_COLUMN_GROUPS), false);
      const rows = db.prepare(`SELECT path, size FROM "./docs" ORDER BY path`).all();
      assert.deepEqual(rows, [
        { path: "docs/a.md", size: 1 },
        { path: "docs/b.md", size: 2 },
      ]);
      writeFileSync(join(root, "docs/a.md"), "aaa");
      const changes = tables.refreshFile("docs/a.md", [3, Date.now(), Date.now()]);
      assert.deepEqual(
        changes.map((change) => [change.action, change.file_path]),
        [["update", "docs/a.md"]],
      );
      assert.deepEqual(tables.names(), ["./docs"]);
      assert.deepEqual(catalog.names(), ["./docs"]);
    } finally {
      db.close();
    }
  });
});
