import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { openIndex } from "../../src/engine.js";
import { Catalog } from "../../src/indexer/catalog.js";
import { CatalogStore } from "../../src/indexer/catalog-store.js";
import { openIndexDatabase } from "../../src/indexer/database.js";
import { ALL_COLUMN_GROUPS, PathTables } from "../../src/indexer/path-tables.js";
import { Refresher } from "../../src/indexer/refresh.js";
import type { RowChange } from "../../src/indexer/row-changes.js";
import { LiveIndex } from "../../src/live/live-index.js";
import { EventHistory } from "../../src/live/event-history.js";
import { EventHub } from "../../src/server/event-hub.js";

/** The core's classes built directly, in this process: each with a test of its own. */

const roots: string[] = [];

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "dirq-core-"));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

after(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

const quiet = { start: () => ({ update() {}, finish() {} }) };

describe("EventHistory", () => {
  it("numbers frames consecutively with one run id, and keeps both bounds", () => {
    const history = new EventHistory({ frames: 3, bytes: 10 });
    assert.equal(history.append("aa"), 1);
    assert.equal(history.append("bb"), 2);
    assert.match(history.idOf(2), /^[0-9a-f]{16}-2$/);
    history.append("cc");
    history.append("dd");
    assert.deepEqual([history.oldest, history.head], [2, 4]);
    history.append("eeeeeeee");
    // 8 + 2 bytes: the byte bound leaves two frames.
    assert.deepEqual([history.oldest, history.head], [4, 5]);
    history.append("x".repeat(50));
    // A frame larger than the byte bound is kept alone.
    assert.deepEqual([history.oldest, history.head], [6, 6]);
  });

  it("continues an id of its run still in reach; resets others", () => {
    const history = new EventHistory({ frames: 2, bytes: 1000 });
    for (const data of ["a", "b", "c"]) history.append(data);
    assert.deepEqual(history.startPoint(undefined), { after: 3 });
    assert.deepEqual(history.startPoint(history.idOf(1)), { after: 1 });
    assert.deepEqual(history.startPoint(history.idOf(3)), { after: 3 });
    assert.deepEqual(history.startPoint(history.idOf(0)), { reset: true });
    assert.deepEqual(history.startPoint(history.idOf(4)), { reset: true });
    assert.deepEqual(history.startPoint(new EventHistory().idOf(1)), { reset: true });
    for (const bad of [
      "nonsense",
      "-1",
      `${history.run}-`,
      `${history.run}-x`,
      `${history.run}-1.5`,
    ]) {
      assert.deepEqual(history.startPoint(bad), { reset: true }, bad);
    }
  });

  it("a cursor reads in order; one the history left behind gets a reset and goes on", () => {
    const history = new EventHistory({ frames: 3, bytes: 1000 });
    const quick = history.cursor(0);
    const slow = history.cursor(0);
    for (let i = 1; i <= 5; i++) {
      history.append(String(i));
      const item = quick.next();
      assert.ok(item !== undefined && "frame" in item && item.frame.data === String(i));
    }
    assert.deepEqual(slow.next(), { reset: 5 });
    assert.equal(slow.next(), undefined);
    history.append("later");
    const item = slow.next();
    assert.ok(item !== undefined && "frame" in item && item.frame.data === "later");
    const lagging = history.cursor(history.head, 1);
    history.append("x");
    history.append("y");
    assert.deepEqual(lagging.next(), { reset: 8 });
  });
});

describe("EventHub", () => {
  it("hands every frame to every subscriber, in order, with ids", async () => {
    const history = new EventHistory();
    const hub = new EventHub();
    hub.attach(history);
    const a = hub.subscribe(undefined);
    const b = hub.subscribe(undefined);
    assert.deepEqual(a.start, { readyId: history.idOf(0) });
    history.append("one");
    history.append("two");
    const one = { event: "row", id: history.idOf(1), data: "one" };
    assert.deepEqual(await a.subscription.next(1000), one);
    assert.deepEqual(await a.subscription.next(1000), { ...one, id: history.idOf(2), data: "two" });
    assert.deepEqual(await b.subscription.next(1000), one);
    assert.equal(hub.size, 2);
    const resumed = hub.subscribe(history.idOf(1));
    assert.deepEqual(resumed.start, { readyId: history.idOf(1) });
    assert.equal((await resumed.subscription.next(1000))?.data, "two");
    assert.deepEqual(hub.subscribe("elsewhere-1").start, { resetId: history.idOf(2) });
  });

  it("next is null after an idle wait and undefined once closed; closeAll empties it", async () => {
    const hub = new EventHub();
    hub.attach(new EventHistory());
    const { subscription } = hub.subscribe(undefined);
    assert.equal(await subscription.next(5), null);
    const waiting = subscription.next(10_000);
    hub.closeAll();
    assert.equal(await waiting, undefined);
    assert.equal(hub.size, 0);
  });
});

describe("PathTables", () => {
  it("creates a path-table, fills the groups asked for, refreshes one file", async () => {
    const root = tree({ "docs/a.md": "a", "docs/b.md": "bb", "other.txt": "x" });
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

describe("Catalog", () => {
  it("keeps every table of an in-memory index: path-tables, their aliases, parsed tables", async () => {
    const root = tree({ "docs/a.md": "a" });
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
    const root = tree({ "docs/a.md": "a" });
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

describe("Refresher", () => {
  it("brings the catalog's path-tables up to date with changed paths, one commit at a time", async () => {
    const root = tree({ "docs/a.md": "a", "docs/b.md": "b" });
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

describe("LiveIndex", () => {
  it("keeps an index current and hands over each commit's changes", async () => {
    const root = tree({ "a.txt": "a" });
    const index = openIndex({ root, progress: false, fillAllColumns: true });
    const seen: RowChange[] = [];
    const live = await LiveIndex.watch(index, {
      onChanges: (changes) => seen.push(...changes),
      onError: (error) => assert.fail(String(error)),
    });
    try {
      await index.prepare("SELECT * FROM './'");
      writeFileSync(join(root, "b.txt"), "b");
      // prepareCurrent settles every change made before the call.
      await live.prepareCurrent("SELECT * FROM './'");
      const rows = await index.queryObjects("SELECT path FROM './' ORDER BY path");
      assert.deepEqual(rows, [{ path: "a.txt" }, { path: "b.txt" }]);
      assert.deepEqual(
        seen.map((change) => [change.action, change.file_path]),
        [["insert", "b.txt"]],
      );
      assert.ok(live.watchedFolders >= 1);
    } finally {
      await live.close();
      index.close();
    }
  });
});

describe("StatementPreparer (through DirqIndex.prepare and preparedAlready)", () => {
  it("answers at once only what needs nothing built, and remembers what it checked", async () => {
    const root = tree({ "docs/a.md": "a" });
    const index = openIndex({ root, progress: false });
    try {
      assert.equal(index.preparedAlready("SELECT path FROM './docs'"), null);
      const built = await index.prepare("SELECT path FROM './docs'");
      assert.deepEqual(built.tables, ["./docs"]);
      assert.equal(built.analysis.sql, built.sql);
      const again = index.preparedAlready("SELECT path FROM './docs'");
      assert.equal(again?.sql, built.sql);
      assert.equal(index.preparedAlready("SELECT 1")?.cacheable, true);
      assert.equal(index.preparedAlready("SELECT random()")?.cacheable, false);
    } finally {
      index.close();
    }
  });

  it("takes a signal: a statement whose caller left before the writer was free builds nothing", async () => {
    const root = tree({ "docs/a.md": "a", "src/b.ts": "b" });
    const index = openIndex({ root, progress: false });
    try {
      const gone = new AbortController();
      gone.abort(new Error("the client left"));
      await assert.rejects(index.prepare("SELECT path FROM './docs'", { signal: gone.signal }), {
        message: "the client left",
      });
      // Queued behind another statement's build, then abandoned.
      const leaving = new AbortController();
      const first = index.prepare("SELECT path FROM './'");
      const second = index.prepare("SELECT path FROM './src'", { signal: leaving.signal });
      leaving.abort(new Error("left while queued"));
      await first;
      await assert.rejects(second, { message: "left while queued" });
      assert.equal(index.preparedAlready("SELECT path FROM './src'"), null);
      assert.equal(index.preparedAlready("SELECT path FROM './docs'"), null);
      // The next caller builds it as usual.
      const rows = await index.queryObjects("SELECT path FROM './src'");
      assert.deepEqual(rows, [{ path: "src/b.ts" }]);
    } finally {
      index.close();
    }
  });

  it("refuses writes and internal tables before anything runs", async () => {
    const index = openIndex({ root: tree({ "a.txt": "a" }), progress: false });
    try {
      await assert.rejects(index.prepare("CREATE TABLE t (x)"), { code: "QUERY_NOT_READONLY" });
      await assert.rejects(index.prepare("SELECT * FROM _dirq_meta"), {
        code: "QUERY_INTERNAL_TABLE",
      });
      await assert.rejects(index.prepare("SELECT 1; SELECT 2"), {
        code: "QUERY_MULTIPLE_STATEMENTS",
      });
    } finally {
      index.close();
    }
  });

  it("gives path-tables whose names differ only in case SQLite names of their own", async () => {
    const root = tree({ "Docs/a.md": "a", "docs/b.md": "bb" });
    const index = openIndex({ root, progress: false });
    try {
      const prepared = await index.prepare(
        "SELECT path FROM './Docs' UNION ALL SELECT path FROM './docs'",
      );
      assert.equal(new Set(prepared.tables.map((name) => name.toLowerCase())).size, 2);
      const rows = await index.queryObjects(
        "SELECT path FROM './Docs' UNION ALL SELECT path FROM './docs' ORDER BY path",
      );
      assert.deepEqual(rows, [{ path: "Docs/a.md" }, { path: "docs/b.md" }]);
    } finally {
      index.close();
    }
  });
});
