import { parentPort, workerData } from "node:worker_threads";
import { statJoinedPaths } from "./file-stats.js";
import { inheritNativeHost } from "./native-fs.js";
import {
  Slot,
  claimRequest,
  type HelperData,
  type StatAnswer,
  type StatRequest,
} from "./stat-helper.js";

/**
 * The thread of `StatHelper`: answers each request in order on the answer port (unless the
 * calling thread claimed it first), then counts the answer in the shared counters, which the
 * calling thread waits on.
 */
const { root, counters, answers, nativeHost } = workerData as HelperData;
await inheritNativeHost(nativeHost);

parentPort?.on("message", ({ id, paths, rawPaths }: StatRequest) => {
  if (!claimRequest(counters, id)) {
    // The calling thread took this one back and stat'ed it itself.
    answers.postMessage({ id, stats: null } satisfies StatAnswer);
  } else {
    const stats = statJoinedPaths(root, paths, rawPaths);
    const answer: StatAnswer = { id, stats };
    answers.postMessage(answer, [stats.buffer as ArrayBuffer]);
  }
  Atomics.add(counters, Slot.answered, 1);
  Atomics.notify(counters, Slot.answered);
});
Atomics.store(counters, Slot.ready, 1);
