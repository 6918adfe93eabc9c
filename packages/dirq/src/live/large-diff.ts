import type { Worker } from "node:worker_threads";
import { startThread } from "../node-options.js";
import type { AnswerDiff, DiffShape } from "./live-diff.js";

/**
 * Whole answers from this size up (bytes of JSON) are cut into rows and diffed on the diff
 * thread, which then keeps the query's rows: cutting and diffing hundreds of thousands of rows
 * would hold the main thread (and every `/query`, `/events` and other live query) for as long.
 * Below it the main thread's own work is as small as what sending the answer costs it, and
 * the answer is not worth a thread. Measured with bench/dirq-live-diff.mjs
 * (`npm run bench:live-diff`).
 */
export const LARGE_DIFF_BYTES = 64 * 1024;

/** What the main thread sends the diff thread. */
export type DiffThreadMessage =
  | {
      kind: "run";
      id: number;
      /** The live query whose rows the thread holds. */
      query: number;
      /** The new answer, as a query process wrote it (moved, not copied). */
      body: Uint8Array;
      shape: DiffShape;
      /** Rows to diff against, when the thread holds none yet (they were the main thread's). */
      seed: readonly string[] | null;
      /** The answer replaces what was held: no diff. */
      reset: boolean;
    }
  | { kind: "forget"; query: number };

/** What it answers a run: the diff (`null` for a reset) and the rows' text, joined by commas. */
export type DiffThreadAnswer =
  | { id: number; ok: true; diff: AnswerDiff | null; text: Uint8Array }
  | { id: number; ok: false; message: string };

/** A run's answer, and the generation of the thread that holds its rows. */
export interface DiffThreadResult {
  diff: AnswerDiff | null;
  text: Uint8Array;
  generation: number;
}

interface Pending {
  resolve: (result: DiffThreadResult) => void;
  reject: (error: Error) => void;
}

/**
 * The one diff thread of a set of live queries, started at the first large answer and ended
 * with them (`close`). While nothing is out it does not keep the process alive. A thread that
 * fails takes the rows it held with it: its runs fail, a live query that had rows there sees
 * it (`holds`) and sends a new snapshot, and the next run starts a new thread.
 */
export class DiffThread {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private nextQuery = 1;
  private started = 0;
  private isClosed = false;

  /** A number for a new live query's rows. */
  newQuery(): number {
    return this.nextQuery++;
  }

  /** Whether the thread of `generation` (a run's result says it) still runs, holding its rows. */
  holds(generation: number): boolean {
    return this.worker !== null && generation === this.started;
  }

  private thread(): Worker {
    if (this.worker !== null) return this.worker;
    const worker = startThread(new URL("./diff-thread.js", import.meta.url), {});
    this.started++;
    const generation = this.started;
    worker.on("message", (answer: DiffThreadAnswer) => {
      const waiting = this.pending.get(answer.id);
      this.pending.delete(answer.id);
      if (this.pending.size === 0) worker.unref();
      if (answer.ok) waiting?.resolve({ diff: answer.diff, text: answer.text, generation });
      else waiting?.reject(new Error(answer.message));
    });
    const lost = (error?: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      const message = `the live queries' diff thread stopped${error ? `: ${error.message}` : ""}`;
      for (const waiting of this.pending.values()) waiting.reject(new Error(message));
      this.pending.clear();
    };
    worker.on("error", lost);
    worker.on("exit", () => lost());
    worker.unref();
    this.worker = worker;
    return worker;
  }

  /** Cuts and diffs `body` on the thread (`body` is not usable afterwards). */
  run(request: Omit<Extract<DiffThreadMessage, { kind: "run" }>, "kind" | "id">) {
    if (this.isClosed) return Promise.reject(new Error("the live queries are closing"));
    return new Promise<DiffThreadResult>((resolve, reject) => {
      const worker = this.thread();
      const id = this.nextId++;
      this.pending.set(id, { resolve, reject });
      worker.ref();
      const message: DiffThreadMessage = { kind: "run", id, ...request };
      worker.postMessage(message, [request.body.buffer as ArrayBuffer]);
    });
  }

  /** The thread drops the rows of `query` (a live query that stopped). */
  forget(query: number): void {
    this.worker?.postMessage({ kind: "forget", query } satisfies DiffThreadMessage);
  }

  /** Ends the thread; runs still out fail. */
  close(): void {
    this.isClosed = true;
    const worker = this.worker;
    if (worker === null) return;
    this.worker = null;
    for (const waiting of this.pending.values()) {
      waiting.reject(new Error("the live queries are closing"));
    }
    this.pending.clear();
    void worker.terminate();
  }
}
