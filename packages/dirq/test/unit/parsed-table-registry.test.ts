import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { EMPTY_PROFILE } from "../../src/connection/profile.js";
import { Catalog } from "../../src/indexer/catalog.js";
import { openIndexDatabase } from "../../src/indexer/database.js";
import { ParsedTableRegistry } from "../../src/indexer/parsed-table-registry.js";
import { PathTables } from "../../src/indexer/path-tables.js";
import { Refresher } from "../../src/indexer/refresh.js";
import { expandChanges, type RowChange } from "../../src/indexer/row-changes.js";
import { quiet, tempTree } from "../helpers.js";

describe("ParsedTableRegistry", () => {
  it("builds each config table once into the catalog, and the refresher keeps it current", async () => {
    const root = tempTree({
      "posts/a.json": '{"title": "A", "words": 10}',
      "posts/b.json": '{"title": "B", "words": 20}',
      "posts/broken.json": "{ not json",
    });
    const db = openIndexDatabase(root);
    try {
      const catalog = new Catalog(null);
      const options = { root, useGitignore: true, progress: quiet };
      const paths = new PathTables(db, options, catalog);
      const writer = async <T>(task: () => T | Promise<T>) => task();
      const refresher = new Refresher(db, root, catalog, paths, options, writer);
      const tableExists = (name: string) =>
        db.prepare("SELECT 1 FROM sqlite_schema WHERE name = ? COLLATE NOCASE").get(name) !==
        undefined;
      const posts = {
        name: "posts",
        glob: "posts/*.json",
        schema: null,
        onFile: "",
        format: "json" as const,
        each: null,
        baseDir: root,
        ddl: null,
        timeout: null,
        origin: "test: table[1]",
      };
      const registry = new ParsedTableRegistry({
        db,
        root,
        config: { ignore: [], tables: [posts], extensions: [], functions: [] },
        onFile: null,
        options: { ...options, useGitignore: true },
        userIgnores: [],
        profile: EMPTY_PROFILE,
        catalog,
        refresher: () => refresher,
        tableExists,
      });
      assert.equal(registry.configTablesBuilt, false);
      const skipped = await registry.buildConfigTables();
      assert.deepEqual(
        skipped.map((file) => file.path),
        ["posts/broken.json"],
      );
      assert.equal(registry.configTablesBuilt, true);
      // Once per index: a second call builds nothing.
      assert.deepEqual(await registry.buildConfigTables(), []);
      assert.deepEqual(catalog.names(), ["posts"]);
      assert.deepEqual(catalog.parsedTables()[0]?.columns, ["title", "words"]);
      const sum = () => db.prepare("SELECT sum(words) AS n FROM posts").get();
      assert.deepEqual(sum(), { n: 30 });
      writeFileSync(join(root, "posts/b.json"), '{"title": "B", "words": 25}');
      const changes: RowChange[] = [];
      await (
        await refresher.start(["posts/b.json"], {
          onCommit: (c) => changes.push(...expandChanges(c)),
        })
      ).done;
      assert.deepEqual(
        changes.map((change) => [change.action, change.table, change.file_path]),
        [["update", "posts", "posts/b.json"]],
      );
      assert.deepEqual(sum(), { n: 35 });
    } finally {
      db.close();
    }
  });
});
