import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { openIndexDatabase } from "../../src/indexer/database.js";
import { IndexWriter } from "../../src/indexer/index-writer.js";
import { tempTree } from "../helpers.js";

describe("IndexWriter", () => {
  it("runs write tasks one at a time, in order; a failed task blocks none after it", async () => {
    const db = openIndexDatabase(tempTree({ "a.txt": "a" }));
    try {
      const writer = new IndexWriter(db, null);
      const order: string[] = [];
      let running = 0;
      const task =
        (name: string, fail = false) =>
        async () => {
          running++;
          assert.equal(running, 1, `${name} ran beside another task`);
          await new Promise((resolve) => setTimeout(resolve, 5));
          order.push(name);
          running--;
          if (fail) throw new Error(`${name} failed`);
          return name;
        };
      const results = await Promise.allSettled([
        writer.run(task("first")),
        writer.run(task("second", true)),
        writer.run(task("third")),
      ]);
      assert.deepEqual(order, ["first", "second", "third"]);
      assert.deepEqual(
        results.map((result) => result.status),
        ["fulfilled", "rejected", "fulfilled"],
      );
    } finally {
      db.close();
    }
  });

  it("remembers the schema version between tasks and reads it again after one", async () => {
    const db = openIndexDatabase(tempTree({ "a.txt": "a" }));
    try {
      const writer = new IndexWriter(db, null);
      const before = writer.schemaVersion;
      assert.equal(writer.schemaVersion, before);
      await writer.run(() => db.exec("CREATE TABLE t (x)"));
      assert.ok(writer.schemaVersion > before, "a table created moves the version");
      // Written outside a task (nothing in dirq does): the remembered version stands.
      const seen = writer.schemaVersion;
      db.exec("CREATE TABLE u (x)");
      assert.equal(writer.schemaVersion, seen);
    } finally {
      db.close();
    }
  });
});
