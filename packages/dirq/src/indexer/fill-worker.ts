import type { Worker } from "node:worker_threads";
import { DirqError, type DirqErrorCode } from "../errors.js";
import { startThread } from "../node-options.js";
import type { FillJob, FillOutcome } from "./path-fill.js";

/**
 * A thread that runs path-table fills (walk, stats, inserts, commits) on a connection of its
 * own to the index file, so the thread that serves requests stays free while a big table
 * fills: on that thread, a million-file fill holds the event loop for seconds in short slices,
 * and every request waits behind several of them.
 *
 * One writer still: the index runs each fill under its writer lock, and its own connection
 * writes nothing until the fill's answer is in. Query processes read the file (WAL) as before
 * and see only committed rows of tables the index has marked filled.
 */

/** A request to the thread. */
export interface FillRequest {
  id: number;
  job: FillJob;
}

/** A failure, as data: the error is rebuilt on this side with its code. */
export interface FillFailure {
  name: string;
  message: string;
  code?: string;
  stack?: string;
}

/** What the thread posts back: progress while a fill runs, then its outcome or failure. */
export type FillAnswer =
  | { id: number; kind: "progress"; found: number }
  | { id: number; kind: "done"; outcome: FillOutcome }
  | { id: number; kind: "failed"; error: FillFailure };

export interface FillWorkerData {
  databasePath: string;
  /** `PRAGMA synchronous` of the index's connection (a per-connection setting). */
  synchronous: number;
}

/**
 * The thread's young generation (MB). V8's default lets it grow to tens of MB while a fill
 * allocates batch after batch; this bound lowers the server's peak memory on big trees, for a
 * little more CPU.
 */
const YOUNG_GENERATION_MB = 4;

interface Pending {
  resolve: (outcome: FillOutcome) => void;
  reject: (error: Error) => void;
  progress: (found: number) => void;
}

/** An error as data, to post from a thread (see `rebuildError`). */
export function failureOf(caught: unknown): FillFailure {
  const error = caught as Error & { code?: unknown };
  return {
    name: error?.name ?? "Error",
    message: error?.message ?? String(caught),
    code: typeof error?.code === "string" ? error.code : undefined,
    stack: error?.stack,
  };
}

/** The error a thread posted as data, with its code. */
export function rebuildError(failure: FillFailure): Error {
  if (failure.name === "DirqError" && failure.code !== undefined) {
    return new DirqError(failure.code as DirqErrorCode, failure.message);
  }
  // SQLite's errors keep their code (SQLITE_FULL and the like name a storage failure).
  const error = new Error(failure.message) as Error & { code?: string };
  error.name = failure.name;
  if (failure.code !== undefined) error.code = failure.code;
  if (failure.stack !== undefined) error.stack = failure.stack;
  return error;
}

export class FillWorker {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  constructor(private readonly data: FillWorkerData) {}

  /** Starts the thread ahead of the first fill (it loads SQLite and the walk: tens of ms). */
  start(): void {
    if (this.worker !== null || this.closed) return;
    const worker = startThread(new URL("./fill-worker-thread.js", import.meta.url), {
      workerData: this.data,
      resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    });
    worker.on("message", (answer: FillAnswer) => this.answer(answer));
    // A thread that fails or exits fails the fills it had; the next fill starts a new one.
    const lost = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      const pending = [...this.pending.values()];
      this.pending.clear();
      for (const fill of pending) fill.reject(error);
    };
    worker.on("error", lost);
    worker.on("exit", (code) => lost(new Error(`the fill thread exited (code ${code})`)));
    worker.unref();
    this.worker = worker;
  }

  /** Runs one fill on the thread (a `FillRunner`). */
  run(job: FillJob, progress: (found: number) => void): Promise<FillOutcome> {
    if (this.closed) {
      return Promise.reject(new DirqError("INDEX_CLOSED", "the index was closed"));
    }
    this.start();
    const worker = this.worker as Worker;
    const id = this.nextId++;
    const request: FillRequest = { id, job };
    return new Promise<FillOutcome>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, progress });
      // Keeps the process alive while a fill runs; an idle thread does not.
      worker.ref();
      worker.postMessage(request);
    });
  }

  private answer(answer: FillAnswer): void {
    const fill = this.pending.get(answer.id);
    if (fill === undefined) return;
    if (answer.kind === "progress") {
      fill.progress(answer.found);
      return;
    }
    this.pending.delete(answer.id);
    if (this.pending.size === 0) this.worker?.unref();
    if (answer.kind === "done") fill.resolve(answer.outcome);
    else fill.reject(rebuildError(answer.error));
  }

  /** Stops the thread; a fill still running fails (its transaction rolls back). */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = null;
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const fill of pending) {
      fill.reject(new DirqError("INDEX_CLOSED", "the index was closed while a table was filling"));
    }
    if (worker !== null) {
      worker.removeAllListeners("exit");
      await worker.terminate();
    }
  }
}
