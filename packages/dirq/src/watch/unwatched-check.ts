import type { Worker } from "node:worker_threads";
import { startThread } from "../node-options.js";
import { nativeHostModule } from "../scan/native-fs.js";

/** What the check's thread starts with. */
export interface UnwatchedCheckData {
  /** The module that provides the native calls (`inheritNativeHost`), if any. */
  nativeHost: string | null;
}

/** A folder's listing in an answer when nothing in it changed since its previous check. */
export const UNCHANGED = 0;

export interface UnwatchedCheckRequest {
  id: number;
  /** The tree's root (a path as given). */
  root: string;
  /** Folder keys (latin1 relative paths, `""` the root) to list. */
  folders: string[];
  /** A folder not checked before reports the files changed at or after this time (ms). */
  since: number;
  /**
   * Watched folders renamed since the previous request (keys, each batch's moves innermost
   * first): a folder under one is the same folder under its new name, compared with what it
   * showed under the old one.
   */
  moves: KeyMove[][];
}

/** A folder renamed (keys). */
export interface KeyMove {
  from: string;
  to: string;
}

/** `key` and the folders above it, innermost first (`""` is not one). */
function selfAndAbove(key: string): string[] {
  const keys = [key];
  for (let at = key.lastIndexOf("/"); at > 0; at = key.lastIndexOf("/", at - 1)) {
    keys.push(key.slice(0, at));
  }
  return keys;
}

/** Each batch's moves by their source, for `keyAfterMoves`. */
export function bySource(batches: readonly (readonly KeyMove[])[]): Map<string, string>[] {
  return batches.map((moves) => new Map(moves.map(({ from, to }) => [from, to])));
}

/**
 * `key` after batches of moves (`bySource`), each applied as the watcher did: by the innermost
 * source at or above it, one pass per batch.
 */
export function keyAfterMoves(key: string, batches: readonly Map<string, string>[]): string {
  let moved = key;
  for (const sources of batches) {
    const source = selfAndAbove(moved).find((at) => sources.has(at));
    if (source !== undefined) moved = `${sources.get(source)}${moved.slice(source.length)}`;
  }
  return moved;
}

export interface UnwatchedCheckAnswer {
  id: number;
  /** Keys of the files that changed, appeared or went away since the previous check. */
  changed: string[];
  /**
   * Each folder's subfolder names, in the order asked; `null` for a folder gone; `UNCHANGED`
   * for one in which nothing changed since its previous check.
   */
  listings: (string[] | null | typeof UNCHANGED)[];
  /** Files the check stat'ed. */
  files: number;
  /** Whether the check ran through dirq's native extension (else Node's fs). */
  native: boolean;
  /** The check's CPU time on its thread (ms), `null` where the system does not tell. */
  cpuMs: number | null;
  error?: string;
}

/** What the checks of the folders without a watch have done so far. */
export interface UnwatchedCheckStats {
  checks: number;
  /** Files stat'ed by the checks (on their own thread). */
  filesChecked: number;
  /** Files the checks handed over to be read again (the changed ones). */
  filesHanded: number;
  /** How long the last check took, from its request to its answer (ms). */
  lastCheckMs: number;
  /** The CPU time the last check took on its thread (ms; its wall time where not told). */
  lastCheckCpuMs: number;
  /** Files the last check stat'ed. */
  lastCheckFiles: number;
  /** The time from the end of a check to the start of the next (ms). */
  periodMs: number;
  /** Watches the system refused since the limit was reached (a check asks until one is). */
  watchesRefused: number;
  /** Whether the checks run through dirq's native extension (`null` before the first). */
  native: boolean | null;
}

/**
 * Checks the folders without a watch on a thread of its own, so that listing them and
 * statting their files never holds up a statement or a watched folder's change. The thread
 * keeps what each folder showed, so only what changed comes back. Started on first use.
 */
export class UnwatchedCheck {
  private worker: Worker | null = null;
  private nextId = 0;
  private waiting: {
    resolve: (answer: UnwatchedCheckAnswer) => void;
    reject: (error: Error) => void;
  } | null = null;
  readonly stats: UnwatchedCheckStats = {
    checks: 0,
    filesChecked: 0,
    filesHanded: 0,
    lastCheckMs: 0,
    lastCheckCpuMs: 0,
    lastCheckFiles: 0,
    periodMs: 0,
    watchesRefused: 0,
    native: null,
  };
  private sentAt = 0;

  /** Lists `folders` and stats their files; one check at a time. */
  run(
    root: string,
    folders: string[],
    since: number,
    moves: KeyMove[][],
  ): Promise<UnwatchedCheckAnswer> {
    const worker = this.thread();
    return new Promise<UnwatchedCheckAnswer>((resolve, reject) => {
      this.waiting = { resolve, reject };
      worker.ref();
      const request: UnwatchedCheckRequest = { id: this.nextId++, root, folders, since, moves };
      this.sentAt = Date.now();
      worker.postMessage(request);
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    await worker?.terminate();
  }

  private thread(): Worker {
    if (this.worker !== null) return this.worker;
    const workerData: UnwatchedCheckData = { nativeHost: nativeHostModule() };
    const worker = startThread(new URL("./unwatched-thread.js", import.meta.url), { workerData });
    worker.on("message", (answer: UnwatchedCheckAnswer) => {
      const waiting = this.waiting;
      this.waiting = null;
      worker.unref();
      if (answer.error !== undefined) {
        waiting?.reject(new Error(`checking the folders without a watch failed: ${answer.error}`));
        return;
      }
      this.stats.checks++;
      this.stats.filesChecked += answer.files;
      this.stats.filesHanded += answer.changed.length;
      this.stats.lastCheckMs = Date.now() - this.sentAt;
      this.stats.lastCheckCpuMs = answer.cpuMs ?? this.stats.lastCheckMs;
      this.stats.lastCheckFiles = answer.files;
      this.stats.native = answer.native;
      waiting?.resolve(answer);
    });
    const lost = (error?: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      const reason = error ? `: ${error.message}` : "";
      this.waiting?.reject(
        new Error(`the thread checking folders without a watch stopped${reason}`),
      );
      this.waiting = null;
    };
    worker.on("error", lost);
    worker.on("exit", () => lost());
    worker.unref();
    this.worker = worker;
    return worker;
  }
}
