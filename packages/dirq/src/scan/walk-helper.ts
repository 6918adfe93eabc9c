import {
  MessageChannel,
  type MessagePort,
  receiveMessageOnPort,
  Worker,
} from "node:worker_threads";
import type { PathSelection } from "./path-selection.js";
import type { ResumePoint, SkippedPath } from "./walk.js";

/**
 * A thread that walks the second part of a split walk (see `SelectionWalker.split`) for a fill
 * that writes paths only (`count(*)`, `SELECT path`): there directory reading is nearly all
 * the work, and one thread reads while the other also inserts. It posts its files as one JSON
 * array per batch, which SQLite's `json_each` reads as it is: the calling thread only inserts
 * them. One message per batch of hundreds of files (a round trip between threads costs tens of
 * microseconds, FACTS.md). It waits when the caller falls behind, so only a few batches are
 * ever in flight.
 */

/** Slots of the counters shared with the thread. */
export const READY = 0;
/** Batches the thread posted, and the caller took. */
export const POSTED = 1;
export const TAKEN = 2;
/** Batches in flight at most before the thread waits for the caller. */
export const MAX_IN_FLIGHT = 16;

/** The walk options that cross to the thread (all but the callbacks). */
export interface WalkHelperOptions {
  root: string;
  selection: PathSelection;
  useGitignore: boolean;
  extraIgnores?: readonly string[];
}

export interface WalkHelperData {
  options: WalkHelperOptions;
  counters: Int32Array;
  answers: MessagePort;
  /** Sign each folder listed (for a persisted index), with the walk's start time (ms). */
  signFoldersSince: number | null;
}

/** A batch of files: their paths as a JSON array. */
export interface WalkHelperBatch {
  kind: "batch";
  json: string;
  count: number;
}

/** The thread's part is over. */
export interface WalkHelperEnd {
  kind: "end";
  skipped: SkippedPath[];
  /** Folder signatures, when asked (key, signature). */
  folders: [string, string][];
}

export type WalkHelperAnswer = WalkHelperBatch | WalkHelperEnd;

export class WalkHelper {
  private readonly counters = new Int32Array(new SharedArrayBuffer(12));
  private worker: Worker | null = null;
  private answers: MessagePort | null = null;
  private broken = false;
  private taken = 0;
  /** Set when the thread's part is over. */
  end: WalkHelperEnd | null = null;

  constructor(
    private readonly options: WalkHelperOptions,
    private readonly signFoldersSince: number | null,
  ) {}

  /** Starts the thread (once). It can be given work when `ready`. */
  start(): void {
    if (this.worker !== null || this.broken) return;
    const channel = new MessageChannel();
    const data: WalkHelperData = {
      options: this.options,
      counters: this.counters,
      answers: channel.port2,
      signFoldersSince: this.signFoldersSince,
    };
    this.answers = channel.port1;
    this.worker = new Worker(new URL("./walk-helper-thread.js", import.meta.url), {
      workerData: data,
      transferList: [channel.port2],
    });
    const fail = () => {
      this.broken = true;
    };
    this.worker.on("error", fail);
    this.worker.on("exit", fail);
  }

  /** Whether the thread is up and waiting for its part. */
  get ready(): boolean {
    return this.worker !== null && !this.broken && Atomics.load(this.counters, READY) === 1;
  }

  /** Whether the thread failed or was closed: its part is the caller's to walk. */
  get failed(): boolean {
    return this.broken;
  }

  /** Gives the thread its part of the walk (`null`: nothing, it ends at once). */
  give(resume: ResumePoint | null): void {
    this.worker?.postMessage(resume);
  }

  /** The batches that have arrived, in order (the end, when it arrives, sets `end`). */
  take(): WalkHelperBatch[] {
    const batches: WalkHelperBatch[] = [];
    if (this.answers === null) return batches;
    for (;;) {
      const received = receiveMessageOnPort(this.answers);
      if (received === undefined) break;
      const answer = received.message as WalkHelperAnswer;
      if (answer.kind === "end") this.end = answer;
      else batches.push(answer);
      this.taken++;
    }
    if (batches.length > 0) {
      Atomics.store(this.counters, TAKEN, this.taken);
      Atomics.notify(this.counters, TAKEN);
    }
    return batches;
  }

  /** Blocks until the thread posts again (unless it has), at most `maxMs`. */
  wait(maxMs: number): void {
    if (this.broken || this.end !== null) return;
    Atomics.wait(this.counters, POSTED, this.taken, maxMs);
  }

  /** Stops the thread, if one was started. */
  async close(): Promise<void> {
    this.broken = true;
    const worker = this.worker;
    this.worker = null;
    this.answers?.close();
    this.answers = null;
    if (worker !== null) {
      worker.removeAllListeners("exit");
      await worker.terminate();
    }
  }
}
