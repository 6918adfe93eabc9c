// The checkout's renames of bench/dirq-million.mjs, on a thread of their own. A thousand
// synchronous renames on the bench's own event loop held up whatever it was doing then: a probe
// statement in flight when they began was timed with the renames' length added, and the
// watchman subscription's messages were stamped late (see bench/notes/million.md).
// Each message is `{ pairs: [from, to][], spreadMs }`; the answer gives the epoch times of the
// first and last rename. With `spreadMs` the renames are paced over that time, as a checkout
// that writes between them.
import { renameSync } from "node:fs";
import { parentPort } from "node:worker_threads";

const pause = new Int32Array(new SharedArrayBuffer(4));
const now = () => performance.timeOrigin + performance.now();

parentPort.on("message", ({ pairs, spreadMs }) => {
  const firstAt = now();
  pairs.forEach(([from, to], i) => {
    renameSync(from, to);
    const ahead = ((i + 1) / pairs.length) * spreadMs - (now() - firstAt);
    if (ahead >= 1) Atomics.wait(pause, 0, 0, ahead);
  });
  parentPort.postMessage({ firstAt, lastAt: now() });
});
