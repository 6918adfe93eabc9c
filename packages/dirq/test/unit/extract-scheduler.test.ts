import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { ExtractScheduler, laneOf } from "../../src/indexer/extract-scheduler.js";
import { defaultHardCap, SLOW_HOOK_AFTER_MS } from "../../src/parse/hook-slots.js";

// The lanes' timers do not keep a process alive: the tests keep it alive.
const keepAlive = setInterval(() => {}, 1_000);
after(() => clearInterval(keepAlive));

const turnOf = () => new Promise(setImmediate);

/** A job's work that ends when `end` is called. */
function held(): { work: () => Promise<void>; end: () => void } {
  let end = () => {};
  const ended = new Promise<void>((resolve) => (end = resolve));
  return { work: () => ended, end };
}

describe("ExtractScheduler", () => {
  it("puts hooks in a lane of their own and everything else in the other", () => {
    assert.equal(laneOf("hook"), "hooks");
    assert.equal(laneOf("format"), "in-process");
    assert.equal(laneOf("function"), "in-process");
  });

  it("a newer live job for a file supersedes the older; a build's job is never superseded", () => {
    const scheduler = new ExtractScheduler(() => 1);
    const old = scheduler.add({ file: "a", key: "1", tables: ["t"], supersedable: true });
    assert.equal(scheduler.currentKey("a"), "1");
    const built = scheduler.add({ file: "a", key: "1", tables: ["u"], supersedable: false });
    const newer = scheduler.add({ file: "a", key: "2", tables: ["t"], supersedable: true });
    assert.equal(old.signal.aborted, true);
    assert.equal(built.signal.aborted, false);
    assert.equal(scheduler.currentKey("a"), "2");
    assert.equal(scheduler.retire(old), false, "a superseded job must not commit");
    assert.equal(scheduler.retire(newer), true);
    // Committed: nothing current for the file, and a later job supersedes nothing.
    assert.equal(scheduler.currentKey("a"), undefined);
    scheduler.add({ file: "a", key: "3", tables: ["t"], supersedable: true });
    assert.equal(newer.signal.aborted, false);
  });

  it("an in-process turn is granted while the hook lane is full of hung hooks", async () => {
    const scheduler = new ExtractScheduler(() => 1);
    const cap = defaultHardCap(1);
    const hooks = Array.from({ length: cap + 1 }, (_, i) =>
      scheduler.add({ file: `h${i}`, key: "k", tables: ["hung"], supersedable: true }),
    );
    const granted: (() => void)[] = [];
    let capReached = () => {};
    const reached = new Promise<void>((resolve) => (capReached = resolve));
    let waiting = 0;
    for (const job of hooks) {
      void scheduler.turn("hooks", job).then((release) => {
        if (release && granted.push(release) === cap) capReached();
        if (!release) waiting--;
      });
      waiting++;
    }
    // Each hook stops counting once slow, so the next is granted; up to the hard cap. The
    // grants come one slow period apart, later on a loaded machine: the test waits for them.
    await reached;
    // Past two more slow periods the last hook still queues: the hard cap holds it.
    await new Promise((resolve) => setTimeout(resolve, 2 * SLOW_HOOK_AFTER_MS));
    assert.equal(granted.length, cap);
    const json = scheduler.add({ file: "a.json", key: "k", tables: ["items"], supersedable: true });
    const release = await scheduler.turn("in-process", json);
    assert.ok(release, "the JSON file's turn came while every hook slot was held");
    release();
    // Aborting everything frees the queued hook's wait with no turn.
    scheduler.abortAll();
    await turnOf();
    assert.equal(waiting, cap);
    for (const give of granted) give();
  });

  it("bounds the in-process lane on its own", async () => {
    const scheduler = new ExtractScheduler(() => 1, 2);
    const jobs = [0, 1, 2].map((i) =>
      scheduler.add({ file: `f${i}`, key: "k", tables: ["t"], supersedable: true }),
    );
    const first = await scheduler.turn("in-process", jobs[0]!);
    const second = await scheduler.turn("in-process", jobs[1]!);
    let third = false;
    const pending = scheduler.turn("in-process", jobs[2]!).then((release) => {
      third = true;
      return release;
    });
    await new Promise((resolve) => setTimeout(resolve, 80));
    assert.equal(third, false, "two in flight: the third waits, however long they take");
    first?.();
    (await pending)?.();
    second?.();
  });

  it("idle waits for the jobs of the tables asked for, and only those", async () => {
    const scheduler = new ExtractScheduler(() => 1);
    const slow = held();
    const quick = held();
    const a = scheduler.add({ file: "a", key: "k", tables: ["Hung"], supersedable: true });
    const b = scheduler.add({ file: "b", key: "k", tables: ["items"], supersedable: true });
    void scheduler.run(a, slow.work);
    void scheduler.run(b, quick.work);
    let itemsIdle = false;
    let allIdle = false;
    void scheduler.idle(["ITEMS"]).then(() => (itemsIdle = true));
    void scheduler.idle().then(() => (allIdle = true));
    await turnOf();
    assert.deepEqual([itemsIdle, allIdle], [false, false]);
    quick.end();
    await turnOf();
    assert.deepEqual([itemsIdle, allIdle], [true, false]);
    slow.end();
    await turnOf();
    assert.equal(allIdle, true);
    assert.equal(scheduler.currentKey("a"), undefined, "a finished job is forgotten");
  });
});
