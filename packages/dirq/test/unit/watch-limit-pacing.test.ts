import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, describe, it } from "node:test";
import { removeTree, tempTree } from "../helpers.js";
import { type TreeWatcher, watchTree } from "../../src/watch/file-watcher.js";

// The watcher past its watch limit, on a real tree: the checks of the folders without a watch
// are paced by their CPU time, whatever else a check does.

const watchers: TreeWatcher[] = [];
const roots: string[] = [];

after(async () => {
  await Promise.all(watchers.map((watcher) => watcher.close()));
  roots.forEach(removeTree);
});

describe("checks of folders without a watch", () => {
  it("follow one another by the pause their CPU time gives, though each asks for a watch back and is refused", async () => {
    const spec: Record<string, string> = {};
    for (let i = 0; i < 30; i++) spec[`f${i}/a.txt`] = `${i}`;
    const root = tempTree(spec);
    roots.push(root);
    const errors: unknown[] = [];
    const watcher = watchTree(root, {
      onBatch: async () => {},
      onError: (error) => errors.push(error),
      maxWatches: 5,
      // No least pause: nine times a check's CPU time (a few milliseconds here) decides it.
      minCheckPauseMs: 0,
    });
    watchers.push(watcher);
    await watcher.ready;
    await sleep(2_000);
    const checks = { ...watcher.unwatchedChecks };
    // From the second on, a check finds its folders unchanged and asks for their watches back;
    // the system (here `maxWatches`) refuses one. That refusal started the next check after
    // the usual least pause (two seconds), not the one this check's CPU time gave: a big
    // tree's checks, whose CPU time gives a longer pause, then ran nearly back to back.
    assert.ok(checks.watchesRefused > 1, JSON.stringify(checks));
    assert.ok(checks.periodMs < 500, JSON.stringify(checks));
    assert.ok(checks.checks >= 6, JSON.stringify(checks));
    // The one error is the warning that the limit is reached.
    assert.equal(errors.length, 1, String(errors));
    assert.match(
      String(errors[0]),
      /the pause between checks is 9 times a check's CPU time, 0\.0 s at least/,
    );
  });
});
