import type { MessagePort, Worker } from "node:worker_threads";
import { DirqError } from "../errors.js";
import { workerThreads } from "../lazy-module.js";
import type { FormatName } from "../parse/formats/format-names.js";
import type { RowShape } from "../parse/row-shape.js";
import { startThread } from "../node-options.js";
import { type FillFailure, type FillWorkerData, rebuildError } from "./fill-worker.js";
import type { RowChange, RowText } from "./row-changes.js";

/**
 * A thread that reads large files of built-in formats for a live refresh (see
 * staged-refresh.ts) on a connection of its own to the index file, so that the thread that
 * serves requests stays free while tens of megabytes are parsed and compared: statements on
 * other tables are answered and their events sent meanwhile. A server's table build has it
 * read its large files too (`fill`), each into the table in one transaction of the thread's.
 *
 * A refresh asks it twice. `stage` reads the file into a staging table of the thread's
 * temporary schema: nothing of the index is written, so it runs without the writer and other
 * files commit meanwhile. `swap` then writes the changes from the table's rows to the staged
 * ones, in one transaction of the thread's, under the index's writer lock (one writer still:
 * the index's own connection writes nothing meanwhile), and sends them back a slice at a time.
 * A file with many rows that left a table (deleted, renamed, no longer matching) has them
 * deleted the same way: `leaving` reads them and makes their delete changes without the
 * writer, `clear` deletes them under it. One refresh holds the thread from its first `stage` to its last `swap` (`exclusive`), so a
 * `swap` never waits behind another file's `stage` while it holds the writer.
 */

/** What the thread needs of a table: enough to read a file as the table's build reads it. */
export interface StagedTable {
  name: string;
  label?: string;
  schema: [string, string][] | null;
  origin: string;
  format: FormatName;
  each: string | null;
  /** Captures, `columns` and `strict` the table's rows take (see row-shape.ts). */
  shape: RowShape | null;
}

export type StagingRequest =
  | { id: number; kind: "stage"; stage: string; table: StagedTable; path: string; root: string }
  | { id: number; kind: "fill"; table: StagedTable; path: string; root: string }
  | { id: number; kind: "swap"; stage: string; table: StagedTable; path: string }
  | { id: number; kind: "leaving"; stage: string; table: StagedTable; path: string }
  | { id: number; kind: "clear"; stage: string; table: StagedTable; path: string }
  | { id: number; kind: "drop"; stage: string }
  | { id: number; kind: "exec"; statements: string[] }
  | { id: number; kind: "checkpoint" };

/** What a table build's file filled on the thread left (see `ReaderTableBuild.fillFile`). */
export interface FilledOffThread {
  reason: string | null;
  rows: number;
  /** The table's visible columns after the file, or `null` while the table is not created. */
  columns: string[] | null;
}

export type StagingAnswer =
  | { id: number; kind: "staged"; reason: string | null }
  | ({ id: number; kind: "filled" } & FilledOffThread)
  | { id: number; kind: "done" }
  | { id: number; kind: "failed"; error: FillFailure };

/**
 * A slice of a request's changes, sent on the changes port before the request's answer. The
 * table and file are given once, not once per change (a staged refresh's changes are all one
 * file's, in one table): the receiving thread then deserializes a string per change, not an
 * object and its four strings, and keeps one copy of the names.
 */
export interface ChangesSlice {
  id: number;
  table: string;
  file_path: string;
  /** Each change's action, by its first letter: `i`, `u` or `d`. */
  actions: string;
  rows: RowText[];
  oldRows: (RowText | null)[];
}

const ACTIONS = { i: "insert", u: "update", d: "delete" } as const;

/** What the thread is started with: the index file, and the port it sends changes on. */
export interface StagingWorkerData extends FillWorkerData {
  changes: MessagePort;
}

/** Changes sent back in one message: the receiving thread takes each in one short task. */
export const CHANGES_PER_MESSAGE = 1_000;

/**
 * `changes` as slices of at most `CHANGES_PER_MESSAGE`, each of one table and file, in order.
 * Only changes to rows: a staged refresh's failure is its request's, never an `error` change.
 */
export function changeSlices(id: number, changes: readonly RowChange[]): ChangesSlice[] {
  const slices: ChangesSlice[] = [];
  let slice: ChangesSlice | null = null;
  for (const change of changes) {
    if (change.action === "error") throw new Error("a staged refresh made an error change");
    if (
      slice === null ||
      slice.rows.length === CHANGES_PER_MESSAGE ||
      slice.table !== change.table ||
      slice.file_path !== change.file_path
    ) {
      slice = {
        id,
        table: change.table,
        file_path: change.file_path,
        actions: "",
        rows: [],
        oldRows: [],
      };
      slices.push(slice);
    }
    slice.actions += change.action[0];
    slice.rows.push(change.row);
    slice.oldRows.push(change.old_row);
  }
  return slices;
}

/** Appends the changes of `slice` to `changes`. */
export function takeSlice(slice: ChangesSlice, changes: RowChange[]): void {
  const { table, file_path: path } = slice;
  slice.rows.forEach((row, i) => {
    const action = ACTIONS[slice.actions[i] as keyof typeof ACTIONS];
    changes.push({ action, table, file_path: path, row, old_row: slice.oldRows[i] ?? null });
  });
}

interface Answered {
  reason: string | null;
  changes: RowChange[];
  filled: FilledOffThread | null;
}

interface Pending {
  resolve: (answered: Answered) => void;
  reject: (error: Error) => void;
  changes: RowChange[];
}

export class StagingWorker {
  private worker: Worker | null = null;
  /**
   * Where the thread's changes arrive. Node hands a port's listener every message already
   * queued in one go, without letting other work run between them: the slices of a change set
   * of a hundred thousand rows would be one long task, which requests and event streams wait
   * behind. This port has no listener: its slices are taken one per turn of the event loop
   * (`takeChanges`).
   */
  private changesPort: MessagePort | null = null;
  /** Answers are handed out in the order they come, each after the changes sent before it. */
  private answering: Promise<void> = Promise.resolve();
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private nextStage = 1;
  private closed = false;
  /** The refresh that holds the thread now (see `exclusive`). */
  private holder: Promise<unknown> = Promise.resolve();

  /**
   * `runsDdl`: whether this thread's connection runs what a table's `ddl` made as the index's
   * own does (no extension loaded, no function declared), so it may write such a table's rows.
   */
  constructor(
    private readonly data: FillWorkerData,
    readonly runsDdl = false,
  ) {}

  /** Whether the thread has been started (and not lost since). */
  get running(): boolean {
    return this.worker !== null;
  }

  /** Starts the thread now, so a first request later need not wait for its start. */
  start(): void {
    if (!this.closed) this.started();
  }

  private started(): Worker {
    if (this.worker !== null) return this.worker;
    const { port1, port2 } = new (workerThreads().MessageChannel)();
    const workerData: StagingWorkerData = { ...this.data, changes: port2 };
    const worker = startThread(new URL("./staging-worker-thread.js", import.meta.url), {
      workerData,
      transferList: [port2],
    });
    port1.unref();
    worker.on("message", (answer: StagingAnswer) => this.answer(answer));
    // A thread that fails or exits fails what it had; the next request starts a new one.
    const lost = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      this.closeChangesPort();
      this.failAll(error);
    };
    worker.on("error", lost);
    worker.on("exit", (code) => lost(new Error(`the staging thread exited (code ${code})`)));
    worker.unref();
    this.worker = worker;
    this.changesPort = port1;
    return worker;
  }

  private closeChangesPort(): void {
    this.changesPort?.close();
    this.changesPort = null;
  }

  /** Runs `task` once no other refresh holds the thread, and holds it until `task` ends. */
  exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.holder.then(task);
    this.holder = run.catch(() => undefined);
    return run;
  }

  /** A staging table's name, unique in the thread. */
  newStage(): string {
    return `_dirq_stage_${this.nextStage++}`;
  }

  /** Reads `path` into `stage`; `null`, or the reason the file has no rows. */
  async stage(
    stage: string,
    table: StagedTable,
    path: string,
    root: string,
  ): Promise<string | null> {
    return (await this.send({ kind: "stage", stage, table, path, root })).reason;
  }

  /**
   * Fills the file at `path` into the table (a table build's: call under the writer, with no
   * transaction open on the index's own connection), in one transaction of the thread's.
   */
  async fill(table: StagedTable, path: string, root: string): Promise<FilledOffThread> {
    return (await this.send({ kind: "fill", table, path, root })).filled as FilledOffThread;
  }

  /** Writes the staged rows' changes into the table (call under the writer); the changes. */
  async swap(stage: string, table: StagedTable, path: string): Promise<RowChange[]> {
    return (await this.send({ kind: "swap", stage, table, path })).changes;
  }

  /** Reads the rows of `path` in the table, to delete them (`clear`) under the writer. */
  async leaving(stage: string, table: StagedTable, path: string): Promise<void> {
    await this.send({ kind: "leaving", stage, table, path });
  }

  /**
   * Deletes the rows of `path` from the table (a file that left it: call under the writer), in
   * one transaction of the thread's; the delete changes.
   */
  async clear(stage: string, table: StagedTable, path: string): Promise<RowChange[]> {
    return (await this.send({ kind: "clear", stage, table, path })).changes;
  }

  /** Runs `statements` (schema changes: call under the writer) in one transaction. */
  async exec(statements: readonly string[]): Promise<void> {
    await this.send({ kind: "exec", statements });
  }

  /**
   * Copies what the write-ahead log holds into the index file, as far as no reader needs it
   * (a passive checkpoint), on the thread: a burst of commits grows the log by tens of MB, and
   * SQLite's own checkpoint, made by the commit that passes its size, copies them all on the
   * writer's thread while statements wait. Nothing when the thread is not running: that
   * checkpoint is left to SQLite.
   */
  async checkpoint(): Promise<void> {
    if (this.worker === null || this.closed) return;
    await this.send({ kind: "checkpoint" });
  }

  async drop(stage: string): Promise<void> {
    if (this.worker === null) return;
    await this.send({ kind: "drop", stage });
  }

  private send(
    request: { kind: StagingRequest["kind"] } & Record<string, unknown>,
  ): Promise<Answered> {
    if (this.closed) {
      return Promise.reject(new DirqError("INDEX_CLOSED", "the index was closed"));
    }
    const worker = this.started();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const entry: Pending = { resolve, reject, changes: [] };
      this.pending.set(id, entry);
      // Keeps the process alive while a request runs; an idle thread does not.
      worker.ref();
      worker.postMessage({ ...request, id } as StagingRequest);
    });
  }

  /**
   * An answer ends its request once the changes the thread sent before it are taken: they are
   * on the changes port already (a message is queued when it is posted).
   */
  private answer(answer: StagingAnswer): void {
    this.answering = this.answering
      .then(() => this.takeChanges())
      .then(
        () => this.settle(answer),
        (error: unknown) => this.failAll(error instanceof Error ? error : new Error(String(error))),
      );
  }

  /**
   * Takes the slices of changes on the changes port, one per turn of the event loop, each to
   * its request (a slice of a request that failed meanwhile is dropped).
   */
  private async takeChanges(): Promise<void> {
    const { receiveMessageOnPort } = workerThreads();
    for (;;) {
      const port = this.changesPort;
      const received = port === null ? undefined : receiveMessageOnPort(port);
      if (received === undefined) return;
      const slice = received.message as ChangesSlice;
      const request = this.pending.get(slice.id);
      if (request !== undefined) takeSlice(slice, request.changes);
      await new Promise(setImmediate);
    }
  }

  private settle(answer: StagingAnswer): void {
    const request = this.pending.get(answer.id);
    if (request === undefined) return;
    this.pending.delete(answer.id);
    if (this.pending.size === 0) this.worker?.unref();
    if (answer.kind === "failed") return request.reject(rebuildError(answer.error));
    request.resolve({
      reason: answer.kind === "staged" ? answer.reason : null,
      changes: request.changes,
      filled: answer.kind === "filled" ? answer : null,
    });
  }

  private failAll(error: Error): void {
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const request of pending) request.reject(error);
  }

  /** Stops the thread; what it was doing fails (its transaction rolls back). */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = null;
    this.closeChangesPort();
    this.failAll(new DirqError("INDEX_CLOSED", "the index was closed while a file was refreshing"));
    if (worker !== null) {
      worker.removeAllListeners("exit");
      await worker.terminate();
    }
  }
}
