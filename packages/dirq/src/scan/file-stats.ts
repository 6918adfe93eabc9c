import { type BigIntStats, type Stats, statSync } from "node:fs";
import { Worker } from "node:worker_threads";

/** Stat fields per file, three numbers each: size (bytes), mtime and ctime (Unix seconds). */
export const STAT_FIELDS = 3;

const NANOSECONDS_PER_SECOND = 1_000_000_000n;

/** Whole Unix seconds of a nanosecond time, floored (also before 1970), computed exactly. */
export function flooredSeconds(nanoseconds: bigint): number {
  let seconds = nanoseconds / NANOSECONDS_PER_SECOND;
  if (nanoseconds < 0n && seconds * NANOSECONDS_PER_SECOND !== nanoseconds) seconds -= 1n;
  return Number(seconds);
}

/**
 * Whole seconds of a time Node gives as float milliseconds, or NaN when the float cannot tell
 * (near a whole second, where `sec * 1e3 + nsec / 1e6` may have rounded across it): then only
 * the exact nanoseconds can. "Near": a microsecond, or a few units in the last place of the
 * float for times far from 1970, whichever is more.
 */
function secondsOfMs(ms: number): number {
  const seconds = Math.floor(ms / 1000);
  const rest = ms - seconds * 1000;
  const near = Math.max(0.001, Math.abs(ms) * 2 ** -48);
  return rest < near || rest > 1000 - near ? Number.NaN : seconds;
}

/**
 * Stats each path (relative to `root`, or its raw bytes from `rawPaths` when its name is not
 * valid UTF-8) into a new array of STAT_FIELDS numbers per path. Symlinks are followed (a
 * listed symlink is a file). Times are whole seconds, floored exactly: a number stat is read
 * first (a bigint stat costs about a third more, in dates and BigInts), and a file whose time
 * lies too near a whole second for the float to tell is stat'ed again with nanoseconds. A path
 * that vanished, or no longer names a regular file, or cannot be stat'ed at all gets NaN, and
 * the indexer drops it.
 */
export function statPaths(
  root: string,
  paths: readonly string[],
  rawPaths?: ReadonlyMap<string, Uint8Array>,
): Float64Array {
  const out = new Float64Array(paths.length * STAT_FIELDS);
  const prefix = `${root}/`;
  const hasRaw = rawPaths !== undefined && rawPaths.size > 0;
  for (let i = 0; i < paths.length; i++) {
    const path = paths[i] as string;
    const at = i * STAT_FIELDS;
    const target = (hasRaw ? rawPaths.get(path) : undefined) ?? prefix + path;
    let stats: Stats | undefined;
    try {
      stats = statSync(target as string, { throwIfNoEntry: false });
    } catch {
      stats = undefined;
    }
    if (stats === undefined || !stats.isFile()) {
      out[at] = Number.NaN;
      continue;
    }
    let mtime = secondsOfMs(stats.mtimeMs);
    let ctime = secondsOfMs(stats.ctimeMs);
    let size = stats.size;
    if (Number.isNaN(mtime) || Number.isNaN(ctime)) {
      const exact = exactStat(target);
      if (exact === undefined) {
        out[at] = Number.NaN;
        continue;
      }
      size = Number(exact.size);
      mtime = flooredSeconds(exact.mtimeNs);
      ctime = flooredSeconds(exact.ctimeNs);
    }
    out[at] = size;
    out[at + 1] = mtime;
    out[at + 2] = ctime;
  }
  return out;
}

/** A stat with nanosecond times, `undefined` when the path is gone or not a regular file. */
function exactStat(target: string | Uint8Array): BigIntStats | undefined {
  try {
    const stats = statSync(target as string, { bigint: true, throwIfNoEntry: false });
    return stats?.isFile() ? stats : undefined;
  } catch {
    return undefined;
  }
}

/** Files stat'ed on the calling thread before a helper thread is worth its start-up. */
const HELPER_THRESHOLD = 16_384;
/**
 * Past the threshold, one batch in this many stays on the calling thread: it also walks and
 * inserts, so it takes a small share and is never left idle waiting for the helper.
 */
const CALLER_SHARE_EVERY = 8;

interface StatReply {
  id: number;
  stats: Float64Array;
}

/**
 * Stats batches of paths as a walk finds them. The first files are stat'ed on the calling
 * thread when asked for; past a threshold one helper thread stats the rest while the walk and
 * the inserts go on, since a stat is a system call per file and this machine has two cores.
 */
export class BatchStatter {
  private submitted = 0;
  private worker: Worker | null = null;
  private readonly waiting = new Map<
    number,
    { resolve: (stats: Float64Array) => void; reject: (error: Error) => void }
  >();
  private nextId = 0;
  private batchesPastThreshold = 0;

  constructor(private readonly root: string) {}

  /** Queues a batch; the returned function yields its stats (possibly later, from the helper). */
  submit(
    paths: readonly string[],
    rawPaths?: ReadonlyMap<string, Uint8Array>,
  ): () => Promise<Float64Array> | Float64Array {
    this.submitted += paths.length;
    const onCaller =
      this.submitted <= HELPER_THRESHOLD ||
      this.batchesPastThreshold++ % CALLER_SHARE_EVERY === CALLER_SHARE_EVERY - 1;
    if (onCaller) return () => statPaths(this.root, paths, rawPaths);
    const id = this.nextId++;
    const result = new Promise<Float64Array>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.helper().postMessage({ id, paths, rawPaths });
    });
    return () => result;
  }

  private helper(): Worker {
    if (this.worker === null) {
      this.worker = new Worker(new URL("./stat-worker.js", import.meta.url), {
        workerData: { root: this.root },
      });
      this.worker.on("message", ({ id, stats }: StatReply) => {
        this.waiting.get(id)?.resolve(stats);
        this.waiting.delete(id);
      });
      this.worker.on("error", (error) => {
        for (const { reject } of this.waiting.values()) reject(error);
        this.waiting.clear();
      });
    }
    return this.worker;
  }

  /** Stops the helper thread, if one was started. */
  async close(): Promise<void> {
    await this.worker?.terminate();
    this.worker = null;
  }
}
