import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LIVE_STORM_TREE, runLiveStorm, serverFixtures } from "./server-support.js";

/**
 * Seeded storms of file changes (create, edit, atomic rewrite, delete, folder rename) under
 * the eight shapes of statement, with subscribers that disconnect and resume: at the end each
 * subscriber's snapshot with every diff applied is a fresh `POST /query` answer. The storms
 * at the size are bench/dirq-live-storm.mjs.
 */

const { tree, serve } = serverFixtures();

const CHANGES = 200;

describe("live query storms", () => {
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: ${CHANGES} changes under eight statements, subscribers leaving and coming back`, async () => {
      const root = tree(LIVE_STORM_TREE);
      const result = await runLiveStorm(root, seed, CHANGES, () =>
        serve(root, ["-c", ".dirq.toml"]),
      );
      assert.deepEqual(result.wrong, []);
      assert.ok(result.diffs > 0, "no diff frame at all");
      assert.ok(result.resumed > 0, "no subscriber came back");
    });
  }
});
