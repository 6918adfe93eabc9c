import assert from "node:assert/strict";
import { after, test } from "node:test";
import { HookSlots } from "../../src/parse/hook-slots.js";

// The slots' timers do not keep a process alive (its hooks do): the tests keep it alive.
const keepAlive = setInterval(() => {}, 1_000);
after(() => clearInterval(keepAlive));

test("slots: at most `limit` young holders; a slow one stops counting, up to the hard cap", async () => {
  const slots = new HookSlots(2, 50, 3);
  const first = await slots.acquire();
  const second = await slots.acquire();
  assert.ok(first && second);
  let thirdGranted = false;
  const third = slots.acquire().then((release) => {
    thirdGranted = true;
    return release;
  });
  await new Promise(setImmediate);
  assert.equal(thirdGranted, false, "both slots are young: the third waits");
  // After 50 ms the first two are slow: the third gets a slot (the hard cap is 3).
  const releaseThird = await third;
  assert.ok(releaseThird);
  assert.equal(slots.running, 3);
  let fourthGranted = false;
  const fourth = slots.acquire().then((release) => {
    fourthGranted = true;
    return release;
  });
  await new Promise((resolve) => setTimeout(resolve, 120));
  assert.equal(fourthGranted, false, "the hard cap holds even when all are slow");
  first?.();
  const releaseFourth = await fourth;
  assert.ok(releaseFourth);
  second?.();
  releaseThird();
  releaseFourth?.();
  assert.equal(slots.running, 0);
});

test("slots: a waiter whose signal aborts gets null and takes no slot", async () => {
  const slots = new HookSlots(1, 60_000);
  const held = await slots.acquire();
  const controller = new AbortController();
  const waiting = slots.acquire(controller.signal);
  controller.abort();
  assert.equal(await waiting, null);
  assert.equal(await slots.acquire(AbortSignal.abort()), null);
  held?.();
  assert.equal(slots.running, 0);
  const next = await slots.acquire();
  assert.ok(next);
  next?.();
  next?.(); // releasing twice gives back one slot only
  assert.equal(slots.running, 0);
});
