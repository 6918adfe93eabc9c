import assert from "node:assert/strict";
import { after, test } from "node:test";
import { makeTree, queryJson, removeTree } from "./helpers.js";

const root = makeTree({ "a.txt": "hello", "docs/b.md": "# b" });
after(() => removeTree(root));

test("a path-table lists every file under the root", async () => {
  const rows = await queryJson(root, "SELECT path, size FROM './' ORDER BY path");
  assert.deepEqual(rows, [
    { path: "a.txt", size: 5 },
    { path: "docs/b.md", size: 3 },
  ]);
});
