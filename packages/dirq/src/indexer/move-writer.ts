import type { Worker } from "node:worker_threads";
import { DirqError } from "../errors.js";
import { startThread } from "../node-options.js";
import { type FillFailure, type FillWorkerData, rebuildError } from "./fill-worker.js";
import type {
  FolderMove,
  MoveReads,
  MovedTableSql,
  MoveWrite,
  MoveWritten,
} from "./folder-moves.js";

/**
 * A thread that writes a burst of folder moves (a checkout's thousand) on a connection of its
 * own to the index file, while the index's thread holds the writer lock (one writer still: the
 * index's own connection writes nothing meanwhile). Renaming a hundred thousand rows is most
 * of a burst's work, all of it SQLite's; on this thread it leaves the index's thread free to
 * number and send the events of the moves already committed, and to answer statements.
 *
 * A burst asks it step by step (`step`): the thread first reads the rows of the next step's
 * moves and sends them, then writes this step's moves (decided from their rows, read one step
 * earlier) in one transaction. The calling thread decides the next step's moves while this
 * one is written, so the thread waits for nothing but a message between steps. The moves of
 * two steps in a row lie in folders apart, so reading one before writing the other reads what
 * reading after it would.
 */

export interface MoveRequest {
  id: number;
  /** The burst the step is of: once one of its steps failed, the thread does none of the rest. */
  burst: number;
  /** Set to 1 when the calling thread gave the burst up: no later write of it is made. */
  abandoned: Int32Array;
  tables: MovedTableSql[];
  write: MoveWrite[];
  read: FolderMove[];
  /** The burst's last step: the thread gives back what its connection cached meanwhile. */
  last: boolean;
}

export type MoveAnswer =
  | { id: number; kind: "read"; reads: MoveReads[] }
  | { id: number; kind: "written"; written: MoveWritten[] }
  | { id: number; kind: "failed"; error: FillFailure };

/** A step asked of the thread: the next moves' rows, then this one's moves committed. */
export interface MoveStep {
  reads: Promise<MoveReads[]>;
  written: Promise<MoveWritten[]>;
}

/** One burst's steps, asked in order; each is queued on the thread behind the one before. */
export interface MoveBurst {
  /**
   * Reads the rows of the moves `read`, then writes `write` (moves decided from rows read one
   * step earlier) in one transaction. Call with the index's writer lock held. A failure (a
   * full disk, a thread lost) rejects what is still to come of the step and of every later
   * step of the burst: a write that fails commits nothing, and nothing after it is written.
   */
  step(write: MoveWrite[], read: FolderMove[], last: boolean): MoveStep;
  /**
   * Gives the burst up (the calling thread failed between steps): the steps already asked
   * fail rather than write, as their changes would never be handed on.
   */
  abandon(): void;
}

interface Pending {
  read: (reads: MoveReads[]) => void;
  written: (written: MoveWritten[]) => void;
  reject: (error: Error) => void;
}

/** The young generation of the thread (MB): each step's rows are garbage at the next. */
const YOUNG_GENERATION_MB = 4;

export class MoveWriter {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private bursts = 0;
  private closed = false;

  constructor(private readonly data: FillWorkerData) {}

  /** Starts the thread now: a burst's first step then waits neither for it nor its modules. */
  start(): void {
    if (!this.closed) this.started();
  }

  private started(): Worker {
    if (this.worker !== null) return this.worker;
    const worker = startThread(new URL("./move-writer-thread.js", import.meta.url), {
      workerData: this.data,
      resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    });
    worker.on("message", (answer: MoveAnswer) => this.answer(answer));
    // A thread that fails or exits fails what it had; the next step starts a new one.
    const lost = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      this.failAll(error);
    };
    worker.on("error", lost);
    worker.on("exit", (code) => lost(new Error(`the move thread exited (code ${code})`)));
    worker.unref();
    this.worker = worker;
    return worker;
  }

  /** A burst of moves in `tables`, asked of the thread step by step (see `MoveBurst`). */
  burst(tables: MovedTableSql[]): MoveBurst {
    const id = ++this.bursts;
    const abandoned = new Int32Array(new SharedArrayBuffer(4));
    return {
      step: (write, read, last) => this.step({ burst: id, abandoned, tables, last }, write, read),
      abandon: () => Atomics.store(abandoned, 0, 1),
    };
  }

  private step(
    burst: Pick<MoveRequest, "burst" | "abandoned" | "tables" | "last">,
    write: MoveWrite[],
    read: FolderMove[],
  ): MoveStep {
    if (this.closed) {
      const closed = Promise.reject(new DirqError("INDEX_CLOSED", "the index was closed"));
      closed.catch(() => {});
      return { reads: closed, written: closed };
    }
    const worker = this.started();
    const id = this.nextId++;
    let gotReads!: Pending["read"];
    let rejectReads!: Pending["reject"];
    const reads = new Promise<MoveReads[]>((resolve, reject) => {
      [gotReads, rejectReads] = [resolve, reject];
    });
    let wrote!: Pending["written"];
    let rejectWritten!: Pending["reject"];
    const written = new Promise<MoveWritten[]>((resolve, reject) => {
      [wrote, rejectWritten] = [resolve, reject];
    });
    // Either may be left unread once the other failed.
    reads.catch(() => {});
    written.catch(() => {});
    const reject = (error: Error) => {
      rejectReads(error);
      rejectWritten(error);
    };
    this.pending.set(id, { read: gotReads, written: wrote, reject });
    // Waited for: the burst holds the writer until its last step answers.
    worker.ref();
    worker.postMessage({ id, ...burst, write, read } satisfies MoveRequest);
    return { reads, written };
  }

  private answer(answer: MoveAnswer): void {
    const pending = this.pending.get(answer.id);
    if (pending === undefined) return;
    if (answer.kind === "read") {
      pending.read(answer.reads);
      return;
    }
    this.pending.delete(answer.id);
    if (this.pending.size === 0) this.worker?.unref();
    if (answer.kind === "written") pending.written(answer.written);
    else pending.reject(rebuildError(answer.error));
  }

  private failAll(error: Error): void {
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const { reject } of pending) reject(error);
  }

  /** Stops the thread; a step it was writing fails (its transaction rolls back). */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = null;
    this.failAll(new DirqError("INDEX_CLOSED", "the index was closed while folders were moved"));
    if (worker !== null) {
      worker.removeAllListeners("exit");
      await worker.terminate();
    }
  }
}
