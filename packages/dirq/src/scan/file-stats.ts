import { statSync } from "node:fs";
import { Worker } from "node:worker_threads";

/** Stat fields per file, three numbers each: size (bytes), mtime and ctime (Unix seconds). */
export const STAT_FIELDS = 3;

/**
 * Fills `out` (STAT_FIELDS numbers per path, from `offset`) with the stat of each path, relative
 * to `root`. Symlinks are followed (a listed symlink is a file). A file that vanished since the
 * walk gets NaN, and the indexer drops it.
 */
export function statInto(root: string, paths: readonly string[], out: Float64Array): void {
  for (let i = 0; i < paths.length; i++) {
    const stats = statSync(`${root}/${paths[i]}`, { throwIfNoEntry: false });
    const at = i * STAT_FIELDS;
    if (stats === undefined) {
      out[at] = Number.NaN;
      continue;
    }
    out[at] = stats.size;
    out[at + 1] = Math.floor(stats.mtimeMs / 1000);
    out[at + 2] = Math.floor(stats.ctimeMs / 1000);
  }
}

/** Below this many files a helper thread costs more than it saves. */
const PARALLEL_THRESHOLD = 20_000;
/** Share of the files the helper thread stats; the main thread also starts the indexer. */
const HELPER_SHARE = 0.5;

function statInWorker(root: string, paths: readonly string[]): Promise<Float64Array> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./stat-worker.js", import.meta.url), {
      workerData: { root, paths },
    });
    worker.once("message", (result: Float64Array) => {
      resolve(result);
      void worker.terminate();
    });
    worker.once("error", reject);
  });
}

/**
 * Stats every path. Large lists are split between this thread and one helper thread: stat is a
 * system call per file, and on a 2-core machine two threads halve that part of a big scan.
 */
export async function statFiles(root: string, paths: readonly string[]): Promise<Float64Array> {
  const out = new Float64Array(paths.length * STAT_FIELDS);
  if (paths.length < PARALLEL_THRESHOLD) {
    statInto(root, paths, out);
    return out;
  }
  const split = Math.floor(paths.length * (1 - HELPER_SHARE));
  const helper = statInWorker(root, paths.slice(split));
  statInto(root, paths.slice(0, split), out);
  out.set(await helper, split * STAT_FIELDS);
  return out;
}
