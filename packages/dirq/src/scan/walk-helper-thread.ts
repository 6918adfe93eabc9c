import { parentPort, workerData } from "node:worker_threads";
import { inheritNativeHost } from "./native-fs.js";
import { directorySignature, folderKey } from "./tree-signature.js";
import { type ResumePoint, SelectionWalker } from "./walk.js";
import { MAX_IN_FLIGHT, Slot, type WalkHelperAnswer, type WalkHelperData } from "./walk-helper.js";

/** The thread of `WalkHelper`: waits for its part of the walk, walks it, posts its files. */
const { options, counters, answers, signFoldersSince, nativeHost } = workerData as WalkHelperData;
await inheritNativeHost(nativeHost);

function post(answer: WalkHelperAnswer): void {
  answers.postMessage(answer);
  Atomics.add(counters, Slot.posted, 1);
  Atomics.notify(counters, Slot.posted);
}

function walk(resume: ResumePoint): void {
  const folders: [string, string][] = [];
  const walker = new SelectionWalker({
    ...options,
    resume,
    onDirectory:
      signFoldersSince === null
        ? undefined
        : (dir, absolute) =>
            folders.push([folderKey(dir), directorySignature(absolute, signFoldersSince)]),
  });
  let posted = 0;
  for (let batch = walker.next(); batch !== null; batch = walker.next()) {
    // The caller inserts; when it falls behind, wait rather than pile batches up in memory.
    for (;;) {
      const taken = Atomics.load(counters, Slot.taken);
      if (posted - taken < MAX_IN_FLIGHT) break;
      Atomics.wait(counters, Slot.taken, taken, 100);
    }
    post({ kind: "batch", json: JSON.stringify(batch.paths), count: batch.paths.length });
    posted++;
  }
  post({ kind: "end", skipped: walker.skipped, folders });
}

parentPort?.once("message", (resume: ResumePoint | null) => {
  if (resume === null) post({ kind: "end", skipped: [], folders: [] });
  else walk(resume);
});
Atomics.store(counters, Slot.ready, 1);
