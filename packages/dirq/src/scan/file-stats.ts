import { type BigIntStats, type Stats, statSync } from "node:fs";
import { type NativeFs, nativeFs, type ReadAhead } from "./native-fs.js";
import type { PathBatch } from "./path-batch.js";
import type { StatHelper, StatRequest } from "./stat-helper.js";

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
 * How a stat reaches the files under `root`: relative to the working directory when the root
 * is it (the usual case: dirq indexes where it runs), so the kernel resolves a short path
 * instead of the whole absolute one (less system time per stat); absolute otherwise. Asked
 * per batch, so a `process.chdir` between batches is harmless.
 */
function statPrefix(root: string): string {
  try {
    if (process.cwd() === root) return "";
  } catch {
    // The working directory is gone: absolute paths still work.
  }
  return `${root}/`;
}

/**
 * Stats each path (relative to `root`, or its raw bytes from `rawPaths` when its name is not
 * valid UTF-8) into a new array of STAT_FIELDS numbers per path. Symlinks are followed (a
 * listed symlink is a file). Times are whole seconds, floored exactly. A path that vanished,
 * or no longer names a regular file, or cannot be stat'ed at all gets NaN, and the indexer
 * drops it. A batch goes through dirq's native extension when it is built (native-fs.ts),
 * else one `fs.statSync` per path; both give the same numbers.
 */
export function statPaths(
  root: string,
  paths: readonly string[],
  rawPaths?: ReadonlyMap<string, Uint8Array>,
): Float64Array {
  return statBatch(
    root,
    paths.length,
    () => paths.join("\0"),
    () => paths,
    rawPaths,
  );
}

/**
 * `statPaths` of paths joined by NUL characters, as the helper thread receives them: the
 * extension takes them as they are, the JavaScript stats split them.
 */
export function statJoinedPaths(
  root: string,
  joinedPaths: string,
  rawPaths?: ReadonlyMap<string, Uint8Array>,
): Float64Array {
  if (joinedPaths === "") return new Float64Array(0);
  const count = countPaths(joinedPaths);
  return statBatch(
    root,
    count,
    () => joinedPaths,
    () => joinedPaths.split("\0"),
    rawPaths,
  );
}

/** A batch of `count` paths, through the extension when it may take them, else Node's `fs`. */
function statBatch(
  root: string,
  count: number,
  joined: () => string,
  listed: () => readonly string[],
  rawPaths: ReadonlyMap<string, Uint8Array> | undefined,
): Float64Array {
  const native = nativelyStatable(count, rawPaths);
  const stats = native === null ? null : statNatively(native, root, joined(), count);
  return stats ?? statEach(root, listed(), rawPaths);
}

/**
 * Below this many paths a batch is stat'ed from JavaScript: a single file (a refresh) is not
 * worth opening the extension's connection for.
 */
const NATIVE_MIN_PATHS = 16;

/**
 * The extension, when it may stat this batch: it is loaded, the batch is big enough, and no
 * path's name needs its raw bytes (a name that is not valid UTF-8: rare, left to Node).
 */
function nativelyStatable(
  count: number,
  rawPaths: ReadonlyMap<string, Uint8Array> | undefined,
): NativeFs | null {
  if (count < NATIVE_MIN_PATHS || (rawPaths !== undefined && rawPaths.size > 0)) return null;
  return nativeFs();
}

function countPaths(joinedPaths: string): number {
  let count = 1;
  for (let at = joinedPaths.indexOf("\0"); at !== -1; at = joinedPaths.indexOf("\0", at + 1)) {
    count++;
  }
  return count;
}

/** The extension's answer as STAT_FIELDS numbers per path, or `null` if it has another shape. */
function statNatively(
  native: NativeFs,
  root: string,
  joinedPaths: string,
  count: number,
): Float64Array | null {
  return statsOfBlob(native.statBatch(statPrefix(root), joinedPaths), count);
}

/** A stat blob of the extension as STAT_FIELDS numbers per path; `null` for another shape. */
function statsOfBlob(bytes: Buffer, count: number): Float64Array | null {
  const length = count * STAT_FIELDS;
  if (bytes.byteLength !== length * Float64Array.BYTES_PER_ELEMENT) return null;
  // A view when the blob has a buffer of its own (the answer is transferred between threads
  // by its buffer), else a copy.
  if (bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.byteLength) {
    return new Float64Array(bytes.buffer, 0, length);
  }
  const stats = new Float64Array(length);
  new Uint8Array(stats.buffer).set(bytes);
  return stats;
}

/**
 * Stats the paths one `fs.statSync` at a time (see `statPaths`). A number stat is read first
 * (a bigint stat costs more, in dates and BigInts), and a file whose time lies
 * too near a whole second for the float to tell is stat'ed again with nanoseconds.
 */
function statEach(
  root: string,
  paths: readonly string[],
  rawPaths: ReadonlyMap<string, Uint8Array> | undefined,
): Float64Array {
  const out = new Float64Array(paths.length * STAT_FIELDS);
  const prefix = statPrefix(root);
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

/** What a fill needs of the thing that stats its batches, in walk order. */
export interface Statter {
  /** Batches submitted and not yet taken. */
  readonly pending: number;
  submit(batch: PathBatch): void;
  /** The oldest batches whose stats are in, in order, removed from the queue. */
  takeReady(): StatBatch[];
  /** Brings the oldest batch nearer, blocking at most about `maxMs`. */
  helpOrWait(maxMs: number): void;
}

/** The native extension's read-ahead, when it is loaded: then `AheadStatter` can run. */
export function statReadAhead(): ReadAhead | null {
  return nativeFs()?.readAhead ?? null;
}

/**
 * Stats batches on the native extension's own thread (see "Reading ahead" in dirq-fs.c),
 * which also lists the walk's folders: the calling thread goes on walking and inserting, and
 * when it waits for the oldest batch and the thread has not begun it, stats it itself. A
 * batch the extension cannot take (a name that is not valid UTF-8, a full queue) is stat'ed
 * at once on the calling thread.
 */
export class AheadStatter implements Statter {
  private readonly queue: (StatBatch & { ticket: number })[] = [];

  constructor(
    private readonly root: string,
    private readonly ahead: ReadAhead,
  ) {}

  get pending(): number {
    return this.queue.length;
  }

  submit(batch: PathBatch): void {
    const ticket =
      batch.rawPaths.size > 0 ? 0 : this.ahead.stat(statPrefix(this.root), batch.joined);
    const stats = ticket === 0 ? statPaths(this.root, batch.paths, batch.rawPaths) : null;
    this.queue.push({ batch, stats, request: -1, ticket });
  }

  takeReady(): StatBatch[] {
    const ready: StatBatch[] = [];
    for (;;) {
      const oldest = this.queue[0];
      if (oldest === undefined || (oldest.stats === null && !this.collect(oldest, false))) break;
      ready.push(this.queue.shift() as StatBatch);
    }
    return ready;
  }

  /**
   * Stats here the oldest batch no extension thread has begun (when a thread is busy with the
   * oldest, waiting for it would leave this core idle), else waits for the oldest.
   */
  helpOrWait(): void {
    const oldest = this.queue[0];
    if (oldest === undefined || oldest.stats !== null) return;
    for (const batch of this.queue) {
      if (batch.stats === null && batch.ticket !== 0 && this.collect(batch, "claim")) return;
    }
    this.collect(oldest, true);
  }

  /**
   * Sets the batch's stats from the extension (`wait`: however long it takes; `"claim"`: when
   * done or begun by no thread). `false` when they are not in.
   */
  private collect(batch: StatBatch & { ticket: number }, wait: boolean | "claim"): boolean {
    const answer = this.ahead.take(batch.ticket, wait);
    if (answer === null && wait !== true) return false;
    const stats = answer instanceof Buffer ? statsOfBlob(answer, batch.batch.count) : null;
    batch.stats = stats ?? statPaths(this.root, batch.batch.paths, batch.batch.rawPaths);
    return true;
  }
}

/**
 * Requests posted to the helper and not yet answered, at most (fewer than the claim ring has
 * slots, see stat-helper.ts). Past this the calling thread stats a batch itself.
 */
const MAX_POSTED = 32;

/** A batch of paths and, once they are in, their stats. */
export interface StatBatch {
  batch: PathBatch;
  stats: Float64Array | null;
  /** The helper's request id while the batch is posted to it, else -1. */
  request: number;
}

/**
 * Stats batches of paths as a walk finds them, keeping them in order. Once the helper thread
 * is up every batch is posted to it; the calling thread, when it has got far enough ahead
 * (`helpOrWait`), takes back the oldest batch the helper has not begun and stats it itself
 * (work stealing), so both threads stat until the end and neither waits while the other has
 * a batch left. Batches the helper held when it failed are stat'ed on the calling thread.
 */
export class BatchStatter implements Statter {
  private readonly queue: StatBatch[] = [];
  private readonly posted = new Set<StatBatch>();

  constructor(
    private readonly root: string,
    private readonly helper: StatHelper | null,
  ) {}

  /** Batches submitted and not yet taken. */
  get pending(): number {
    return this.queue.length;
  }

  /** Queues a batch: posted to the helper, or stat'ed now when it is not up (or too far behind). */
  submit(paths: PathBatch): void {
    const batch: StatBatch = { batch: paths, stats: null, request: -1 };
    this.queue.push(batch);
    const helper = this.helper;
    if (helper === null || !helper.ready || helper.unanswered >= MAX_POSTED) {
      batch.stats = statPaths(this.root, paths.paths, paths.rawPaths);
      return;
    }
    this.posted.add(batch);
    const request: Omit<StatRequest, "id"> = { paths: paths.joined };
    if (paths.rawPaths.size > 0) request.rawPaths = paths.rawPaths;
    batch.request = helper.ask(request, (answer) => {
      this.posted.delete(batch);
      batch.request = -1;
      if (answer.stats !== null) batch.stats = answer.stats;
    });
  }

  /** The oldest batches whose stats are in, in order, removed from the queue. */
  takeReady(): StatBatch[] {
    this.helper?.receive();
    const ready: StatBatch[] = [];
    while (this.queue.length > 0 && (this.queue[0] as StatBatch).stats !== null) {
      ready.push(this.queue.shift() as StatBatch);
    }
    return ready;
  }

  /**
   * Brings the oldest batch nearer: stats here the oldest batch the helper has not begun, or,
   * when the helper holds the only ones left, waits for it at most `maxMs` (see
   * `StatHelper.wait`). When the helper has failed, what it held is stat'ed here instead.
   */
  helpOrWait(maxMs: number): void {
    const oldest = this.queue[0];
    if (oldest === undefined || oldest.stats !== null || this.helper === null) return;
    if (this.helper.failed) {
      for (const batch of this.posted)
        batch.stats ??= statPaths(this.root, batch.batch.paths, batch.batch.rawPaths);
      this.posted.clear();
      return;
    }
    for (const batch of this.queue) {
      if (batch.stats !== null || batch.request === -1) continue;
      if (!this.helper.claim(batch.request)) continue;
      batch.stats = statPaths(this.root, batch.batch.paths, batch.batch.rawPaths);
      return;
    }
    this.helper.wait(maxMs);
  }
}
