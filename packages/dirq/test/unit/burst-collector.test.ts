import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { BurstCollector, collectGarbage } from "../../src/live/burst-collector.js";

/** Waits until `done()` holds (polled), or fails after `limitMs`. */
async function until(done: () => boolean, what: string, limitMs = 10_000): Promise<void> {
  const started = Date.now();
  while (!done()) {
    assert.ok(Date.now() - started < limitMs, `still waiting for ${what}`);
    await sleep(5);
  }
}

// The settle time is long beside the test's own steps, which run back to back: a loaded
// machine stretches a step, never to a settle time.
const SETTLE_MS = 300;

describe("BurstCollector", () => {
  it("collects twice once a burst past the threshold settles, never for small changes", async () => {
    let collected = 0;
    const collector = new BurstCollector(() => collected++, 100, SETTLE_MS);
    collector.recorded(60);
    await sleep(2 * SETTLE_MS);
    // Under the threshold: nothing.
    assert.equal(collected, 0);
    collector.recorded(60);
    collector.recorded(500);
    // Not settled yet: the changes came just now.
    assert.equal(collected, 0);
    await until(() => collected === 2, "two collections");
    // A new burst is counted from zero.
    collector.recorded(99);
    await sleep(2 * SETTLE_MS);
    assert.equal(collected, 2);
    collector.close();
  });

  it("asks the allocator to give back freed memory after the second collection, once", async () => {
    const steps: string[] = [];
    const collector = new BurstCollector(
      () => steps.push("collect"),
      10,
      SETTLE_MS,
      () => steps.push("release"),
    );
    collector.recorded(10);
    await until(() => steps.length === 3, "two collections and a release");
    assert.deepEqual(steps, ["collect", "collect", "release"]);
    await sleep(2 * SETTLE_MS);
    assert.equal(steps.length, 3);
    collector.close();
  });

  it("a burst that begins before the second collection is collected once it settles", async () => {
    let collected = 0;
    const collector = new BurstCollector(() => collected++, 10, SETTLE_MS);
    collector.recorded(10);
    await until(() => collected === 1, "the first collection");
    // Within the settle time of the first collection: its second gives way to the new burst.
    collector.recorded(20);
    collector.recorded(20);
    await until(() => collected === 3, "the new burst's two collections");
    await sleep(2 * SETTLE_MS);
    assert.equal(collected, 3);
    collector.close();
  });

  it("V8's full collection is callable at run time, and frees what nothing holds", async () => {
    const collect = collectGarbage();
    assert.notEqual(collect, null);
    let held: object | undefined = { big: new Array(1000).fill(0) };
    const ref = new WeakRef(held);
    held = undefined;
    // A weak reference holds its target until the current job ends.
    await sleep(0);
    collect?.();
    assert.equal(ref.deref(), undefined);
  });
});
