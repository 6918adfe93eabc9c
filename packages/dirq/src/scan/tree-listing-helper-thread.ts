import { parentPort, workerData } from "node:worker_threads";
import { inheritNativeHost } from "./native-fs.js";
import {
  claimFolder,
  type ListingAnswer,
  type ListingJob,
  listTree,
  Slot,
  type TreeListingData,
} from "./tree-listing-helper.js";

/**
 * The thread of `TreeListingHelper`: lists each job's folders from the last one back, until
 * it meets one the calling thread has claimed, and posts each listing as it is made.
 */
const { counters, answers, nativeHost } = workerData as TreeListingData;
await inheritNativeHost(nativeHost);

/** Lists one folder; a failure is the calling thread's to meet again (and report). */
function listOne(job: number, root: string, folder: string, index: number): ListingAnswer {
  try {
    const { paths, skipped } = listTree(root, folder);
    return { job, index, paths: paths.join("\0"), skipped };
  } catch {
    return { job, index, paths: null, skipped: [] };
  }
}

parentPort?.on("message", ({ job, root, folders, claims }: ListingJob) => {
  for (let index = folders.length - 1; index >= 0 && claimFolder(claims, index); index--) {
    answers.postMessage(listOne(job, root, folders[index] as string, index));
    Atomics.add(counters, Slot.posted, 1);
    Atomics.notify(counters, Slot.posted);
  }
});
Atomics.store(counters, Slot.ready, 1);
