import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Catalog } from "../../src/indexer/catalog.js";
import { CatalogStore } from "../../src/indexer/catalog-store.js";
import { openIndexDatabase } from "../../src/indexer/database.js";
import { ALL_COLUMN_GROUPS, PathTables } from "../../src/indexer/path-tables.js";
import { quiet, tempTree } from "../helpers.js";

describe("Catalog", () => {
  it("keeps every table of an in-memory index: path-tables, their aliases, parsed tables", async () => {
    const root = tempTree({ "docs/a.md": "a" });
    const db = openIndexDatabase(root);
    try {
      const catalog = new Catalog(null);
      const tables = new PathTables(db, { root, useGitignore: true, progress: quiet }, catalog);
      assert.equal(tables.create("./docs"), true);
      // The same files under another name: a view over the one table.
      assert.equal(tables.create("./docs/../docs"), true);
      assert.deepEqual(catalog.names(), ["./docs", "./docs/../docs"]);
      assert.equal(catalog.pathTable("./DOCS/../docs"), catalog.ownPathTable("./docs"));
      assert.equal(catalog.ownPathTable("./docs/../docs"), undefined);
      const spec = { name: "posts", selection: null } as never;
      catalog.keepUnreconciled("posts");
      assert.equal(catalog.isUnreconciled("POSTS"), true);
      assert.equal(catalog.hasParsedTable("posts"), false);
      // Not compared yet: not a table a statement can be rewritten to.
      assert.deepEqual(catalog.names(), ["./docs", "./docs/../docs"]);
      catalog.addParsedTable({ spec, columns: ["title"], matches: () => false });
      assert.equal(catalog.isUnreconciled("posts"), false);
      assert.deepEqual(catalog.parsedTables().length, 1);
      assert.deepEqual(catalog.names(), ["./docs", "./docs/../docs", "posts"]);
    } finally {
      db.close();
    }
  });

  it("writes path-tables through to the store of a persisted index, and forgets them", async () => {
    const root = tempTree({ "docs/a.md": "a" });
    const db = openIndexDatabase(root);
    try {
      const store = new CatalogStore(db);
      const catalog = new Catalog(store);
      const tables = new PathTables(db, { root, useGitignore: true, progress: quiet }, catalog);
      tables.create("./docs");
      tables.create("./docs/.");
      await tables.fill("./docs", ALL_COLUMN_GROUPS);
      const stored = store.tables().map((table) => [table.name, table.kind]);
      assert.deepEqual(stored.sort(), [
        ["./docs", "path"],
        ["./docs/.", "alias"],
      ]);
      assert.deepEqual(JSON.parse(store.table("./docs")?.filled ?? "null"), ALL_COLUMN_GROUPS);
      // A second index over the same database takes the path-table back (not the alias).
      const again = new Catalog(store);
      const restored = new PathTables(db, { root, useGitignore: true, progress: quiet }, again);
      const entry = store.table("./docs");
      assert.ok(entry !== undefined && restored.restore(entry));
      assert.deepEqual(again.names(), ["./docs"]);
      const docs = catalog.ownPathTable("./docs");
      assert.ok(docs !== undefined);
      catalog.removePathTable(docs);
      assert.equal(catalog.pathTableSelecting(docs.selection), undefined);
      assert.deepEqual(store.tables(), []);
      assert.deepEqual(catalog.names(), []);
    } finally {
      db.close();
    }
  });
});
