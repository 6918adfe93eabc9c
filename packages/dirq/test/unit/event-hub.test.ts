import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EventHistory } from "../../src/live/event-history.js";
import { EventHub } from "../../src/server/event-hub.js";

describe("EventHub", () => {
  it("hands every frame to every subscriber, in order, with ids; adjoining ones as one", async () => {
    const history = new EventHistory();
    const hub = new EventHub();
    hub.attach(history);
    const a = hub.subscribe(undefined);
    const b = hub.subscribe(undefined);
    assert.deepEqual(a.start, { readyId: history.idOf(0) });
    history.append("one");
    history.append("two");
    const sse = (n: number, data: string) =>
      `id: ${history.idOf(n)}\nevent: row\ndata: ${data}\n\n`;
    // Frames copied one after the other into the history's block go out as one view of it.
    const both = {
      event: "row",
      id: history.idOf(2),
      encoded: Buffer.from(sse(1, "one") + sse(2, "two")),
    };
    const firstOfA = await a.subscription.next(1000);
    assert.deepEqual(firstOfA, both);
    const firstOfB = await b.subscription.next(1000);
    assert.deepEqual(firstOfB, both);
    // The frames' bytes are encoded once: every subscriber sends the very same bytes.
    assert.equal(firstOfB?.encoded?.buffer, firstOfA?.encoded?.buffer);
    assert.equal(firstOfB?.encoded?.byteOffset, firstOfA?.encoded?.byteOffset);
    assert.equal(hub.size, 2);
    const resumed = hub.subscribe(history.idOf(1));
    assert.deepEqual(resumed.start, { readyId: history.idOf(1) });
    assert.equal(String((await resumed.subscription.next(1000))?.encoded), sse(2, "two"));
    assert.deepEqual(hub.subscribe("elsewhere-1").start, { resetId: history.idOf(2) });
    // A frame whose data is in pieces of its own (lines) goes alone, as its data.
    history.append("three");
    history.append("four\nlines");
    history.append("five");
    assert.equal(String((await a.subscription.next(1000))?.encoded), sse(3, "three"));
    assert.deepEqual(await a.subscription.next(1000), {
      event: "row",
      id: history.idOf(4),
      data: [Buffer.from("four\nlines")],
    });
    assert.equal(String((await a.subscription.next(1000))?.encoded), sse(5, "five"));
  });

  it("a run of adjoining frames stops past 64 KiB of data", async () => {
    const history = new EventHistory();
    const hub = new EventHub();
    hub.attach(history);
    const { subscription } = hub.subscribe(undefined);
    history.appendTexts(Array.from({ length: 100 }, (_, i) => `${i}`.padEnd(1000, "x")));
    const runs: number[] = [];
    for (let frame = subscription.poll(); frame !== null; frame = subscription.poll()) {
      runs.push(String(frame.encoded).split("\nevent: row\n").length - 1);
    }
    assert.deepEqual(runs, [66, 34]);
  });

  it("next is null after an idle wait and undefined once closed; closeAll empties it", async () => {
    const hub = new EventHub();
    hub.attach(new EventHistory());
    const { subscription } = hub.subscribe(undefined);
    assert.equal(await subscription.next(5), null);
    const waiting = subscription.next(10_000);
    hub.closeAll();
    assert.equal(await waiting, undefined);
    assert.equal(hub.size, 0);
  });

  it("a subscriber behind the history's bounds still gets every frame, in order", async () => {
    const history = new EventHistory({ frames: 2, bytes: 10 });
    const hub = new EventHub();
    hub.attach(history);
    const { subscription } = hub.subscribe(undefined);
    for (let i = 1; i <= 6; i++) history.append(`frame${i}`);
    // The history keeps the newest frame alone; the subscriber's queue keeps all six.
    assert.deepEqual([history.oldest, history.head], [6, 6]);
    assert.deepEqual(subscription.backlog, { frames: 6, bytes: 36 });
    // The six adjoin in the history's block: one run of them.
    assert.deepEqual(await subscription.next(1000), {
      event: "row",
      id: history.idOf(6),
      encoded: Buffer.from(
        [1, 2, 3, 4, 5, 6]
          .map((i) => `id: ${history.idOf(i)}\nevent: row\ndata: frame${i}\n\n`)
          .join(""),
      ),
    });
    assert.deepEqual(subscription.backlog, { frames: 0, bytes: 0 });
    // A client that comes back can replay only what the history kept.
    assert.deepEqual(hub.subscribe(history.idOf(4)).start, { resetId: history.idOf(6) });
  });

  it("one that does not read, behind the bounds, is cut off: one reset, then live", async () => {
    const history = new EventHistory({ frames: 2, bytes: 1000 });
    const hub = new EventHub();
    hub.attach(history);
    const { subscription } = hub.subscribe(undefined);
    for (let i = 1; i <= 3; i++) history.append(String(i));
    // The first check has nothing to compare with; a socket that sends bytes is reading.
    subscription.checkStall(500);
    subscription.checkStall(400);
    assert.equal(subscription.backlog.frames, 3);
    // Taking frames is reading too (the three adjoin in the history's block: taken as one).
    await subscription.next(1000);
    history.append("4");
    history.append("5");
    subscription.checkStall(400);
    assert.equal(subscription.backlog.frames, 2);
    // Within the bounds, a stuck socket is left alone.
    const within = hub.subscribe(undefined).subscription;
    history.append("6");
    within.checkStall(100);
    within.checkStall(100);
    assert.equal(within.backlog.frames, 1);
    // Beyond them, and stuck since the last check: cut off.
    subscription.checkStall(400);
    assert.deepEqual(subscription.backlog, { frames: 0, bytes: 0 });
    history.append("7");
    assert.deepEqual(await subscription.next(1000), {
      event: "reset",
      id: history.idOf(6),
      data: "{}",
    });
    assert.match(String((await subscription.next(1000))?.encoded), /\ndata: 7\n\n$/);
    hub.closeAll();
  });

  it("one that reads slower than the server publishes is cut off past 32× the bytes, 4× the frames", async () => {
    const history = new EventHistory({ frames: 2, bytes: 10 });
    const hub = new EventHub();
    hub.attach(history);
    const { subscription } = hub.subscribe(undefined);
    for (let i = 1; i <= 8; i++) history.append("x");
    assert.equal(subscription.backlog.frames, 8);
    history.append("x");
    assert.deepEqual(subscription.backlog, { frames: 0, bytes: 0 });
    assert.equal((await subscription.next(1000))?.event, "reset");
    const bytes = hub.subscribe(undefined).subscription;
    history.append("y".repeat(320));
    assert.equal(bytes.backlog.bytes, 320);
    history.append("y");
    assert.deepEqual(bytes.backlog, { frames: 0, bytes: 0 });
    hub.closeAll();
  });
});
