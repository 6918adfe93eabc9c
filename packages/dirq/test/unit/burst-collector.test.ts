import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { BurstCollector, collectGarbage } from "../../src/live/burst-collector.js";

describe("BurstCollector", () => {
  it("collects twice once a burst past the threshold settles, never for small changes", async () => {
    const collected: number[] = [];
    const collector = new BurstCollector(() => collected.push(Date.now()), 100, 40);
    collector.recorded(60);
    await sleep(100);
    // Under the threshold: nothing.
    assert.equal(collected.length, 0);
    collector.recorded(60);
    collector.recorded(500);
    await sleep(20);
    // Not settled yet: changes came less than 40 ms ago.
    assert.equal(collected.length, 0);
    await sleep(1000);
    assert.equal(collected.length, 2);
    // A new burst is counted from zero.
    collector.recorded(99);
    await sleep(100);
    assert.equal(collected.length, 2);
    collector.close();
  });

  it("a burst that begins before the second collection is collected once it settles", async () => {
    let collected = 0;
    const collector = new BurstCollector(() => collected++, 10, 40);
    collector.recorded(10);
    await sleep(60);
    assert.equal(collected, 1);
    collector.recorded(20);
    await sleep(20);
    collector.recorded(20);
    await sleep(1000);
    // The first burst's second collection gave way to the new burst's two.
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
