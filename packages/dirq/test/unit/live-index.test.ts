import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openIndex } from "../../src/engine.js";
import type { RowChange } from "../../src/indexer/row-changes.js";
import { LiveIndex } from "../../src/live/live-index.js";
import { tempTree } from "../helpers.js";

describe("LiveIndex", () => {
  it("keeps an index current and hands over each commit's changes", async () => {
    const root = tempTree({ "a.txt": "a" });
    const index = openIndex({ root, progress: false, fillAllColumns: true });
    const seen: RowChange[] = [];
    const live = await LiveIndex.watch(index, {
      onChanges: (commit) => seen.push(...commit.changes),
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
