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

/** Each round's collection ("collect") and each release of freed memory ("release"), in order. */
function steps(threshold: number): { collector: BurstCollector; log: string[] } {
  const log: string[] = [];
  const collector = new BurstCollector(
    () => log.push("collect"),
    threshold,
    SETTLE_MS,
    () => log.push("release"),
    2 * SETTLE_MS,
  );
  return { collector, log };
}

const ROUNDS = ["collect", "collect", "release", "collect", "collect", "release"];

describe("BurstCollector", () => {
  it("collects four times and releases twice once a burst past the threshold settles, never for small changes", async () => {
    const { collector, log } = steps(100);
    collector.recorded(60);
    await sleep(2 * SETTLE_MS);
    // Under the threshold: nothing.
    assert.deepEqual(log, []);
    collector.recorded(60);
    collector.recorded(500);
    // Not settled yet: the changes came just now.
    assert.deepEqual(log, []);
    await until(() => log.length === ROUNDS.length, "the four rounds");
    assert.deepEqual(log, ROUNDS);
    // A new burst is counted from zero.
    collector.recorded(99);
    await sleep(4 * SETTLE_MS);
    assert.equal(log.length, ROUNDS.length);
    collector.close();
  });

  it("a burst that begins before the last round is collected once it settles, all rounds anew", async () => {
    const { collector, log } = steps(10);
    collector.recorded(10);
    await until(() => log.length === 1, "the first collection");
    // Within the settle time of the first collection: its later rounds give way to the new burst.
    collector.recorded(20);
    collector.recorded(20);
    await until(() => log.length === 1 + ROUNDS.length, "the new burst's rounds");
    assert.deepEqual(log, ["collect", ...ROUNDS]);
    await sleep(4 * SETTLE_MS);
    assert.equal(log.length, 1 + ROUNDS.length);
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
