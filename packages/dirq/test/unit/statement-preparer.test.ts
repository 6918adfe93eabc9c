import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { openIndex } from "../../src/engine.js";
import { tempTree } from "../helpers.js";

describe("StatementPreparer (through DirqIndex.prepare and preparedAlready)", () => {
  it("answers at once only what needs nothing built, and remembers what it checked", async () => {
    const root = tempTree({ "docs/a.md": "a" });
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
    const root = tempTree({ "docs/a.md": "a", "src/b.ts": "b" });
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
    const index = openIndex({ root: tempTree({ "a.txt": "a" }), progress: false });
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
    const root = tempTree({ "Docs/a.md": "a", "docs/b.md": "bb" });
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
