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

parentPort?.on("message", ({ job, root, folders, claims }: ListingJob) => {
  for (let index = folders.length - 1; index >= 0 && claimFolder(claims, index); index--) {
    const { paths, skipped } = listTree(root, folders[index] as string);
    answers.postMessage({ job, index, paths: paths.join("\0"), skipped } satisfies ListingAnswer);
    Atomics.add(counters, Slot.posted, 1);
    Atomics.notify(counters, Slot.posted);
  }
});
Atomics.store(counters, Slot.ready, 1);
