import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EventHistory } from "../../src/live/event-history.js";
import { EventHub } from "../../src/server/event-hub.js";

describe("EventHub", () => {
  it("hands every frame to every subscriber, in order, with ids", async () => {
    const history = new EventHistory();
    const hub = new EventHub();
    hub.attach(history);
    const a = hub.subscribe(undefined);
    const b = hub.subscribe(undefined);
    assert.deepEqual(a.start, { readyId: history.idOf(0) });
    history.append("one");
    history.append("two");
    const one = { event: "row", id: history.idOf(1), data: [Buffer.from("one")] };
    const firstOfA = await a.subscription.next(1000);
    assert.deepEqual(firstOfA, one);
    const two = { ...one, id: history.idOf(2), data: [Buffer.from("two")] };
    assert.deepEqual(await a.subscription.next(1000), two);
    const firstOfB = await b.subscription.next(1000);
    assert.deepEqual(firstOfB, one);
    // The frame's bytes are encoded once: every subscriber sends the very same buffer.
    assert.equal(firstOfB?.data, firstOfA?.data);
    assert.equal(hub.size, 2);
    const resumed = hub.subscribe(history.idOf(1));
    assert.deepEqual(resumed.start, { readyId: history.idOf(1) });
    assert.equal(String((await resumed.subscription.next(1000))?.data), "two");
    assert.deepEqual(hub.subscribe("elsewhere-1").start, { resetId: history.idOf(2) });
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
});
