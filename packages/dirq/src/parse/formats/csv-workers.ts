import type { MessagePort, Worker } from "node:worker_threads";
import { os, workerThreads } from "../../lazy-module.js";
import { startThread } from "../../node-options.js";
import { CsvReader, type PackedRecords, type RecordBatch, unpackRecords } from "./csv-rows.js";
import { RowsError } from "./document-rows.js";

/**
 * Large CSV and TSV files parsed on worker threads while this thread inserts: csv-parse and the
 * typing of every field take about three times as long as SQLite's inserts, so on two cores a
 * fill is bound by the parse, and with more cores the pieces are parsed side by side.
 *
 * This thread still reads the file and cuts it into pieces between records (cheap: a scan for
 * newlines and quotes), reads the first piece itself (the header), and hands every later piece
 * to a thread with the header's names; it takes the pieces' records back in the file's order.
 * It waits for them synchronously (`Atomics.wait`, `receiveMessageOnPort`), so a file is read
 * and inserted in one synchronous call, under its savepoint, exactly as a file read here.
 * Memory stays bounded: at most `THREADS.piecesAhead` pieces per thread are out at a time.
 */

/** A piece for a thread: its bytes (moved, not copied), where it starts, the header's names. */
export interface PieceJob {
  id: number;
  bytes: ArrayBuffer;
  firstLine: number;
  names: readonly string[];
  delimiter: "," | "\t";
  /** The columns whose fields are kept as their text (see `CsvReader`). */
  textNames: readonly string[];
}

/** A thread's answer for one piece, or that it is ready for pieces. */
export type PieceAnswer =
  | { id: number; kind: "records"; records: PackedRecords }
  | { id: number; kind: "none" }
  | { id: number; kind: "rule"; reason: string }
  | { id: number; kind: "fault"; message: string }
  | { id: 0; kind: "ready" };

/** What a thread is started with: its end of the channel, and the slot it signals in. */
export interface CsvThreadData {
  port: MessagePort;
  signals: Int32Array;
  slot: number;
}

/** How many threads parse, how far ahead, and how long they may take. */
const THREADS = {
  /** Pieces out per thread: one being parsed and one waiting, so a thread never idles. */
  piecesAhead: 2,
  /**
   * At most this many threads: with two, the inserts here are about as slow as the parse;
   * each thread costs its own heap while it parses.
   */
  most: 2,
  /** How long a thread may take to start (ms) before the pieces are read in this thread. */
  startMs: 10_000,
  /** How long one piece may take (ms) before the thread counts as lost (a fault of the fill). */
  pieceMs: 300_000,
} as const;

interface CsvThread {
  worker: Worker;
  port: MessagePort;
  slot: number;
  ready: boolean;
}

/** The threads, shared by every file of the process; `null` once they could not start. */
let threads: CsvThread[] | null | undefined;
let signals: Int32Array;
/** Set when a thread failed or exited: the threads are not used again. */
let broken = false;

function threadCount(): number {
  return Math.max(1, Math.min(THREADS.most, os().availableParallelism() - 1));
}

function startThreads(): CsvThread[] | null {
  if (threads !== undefined) return broken ? null : threads;
  const { MessageChannel } = workerThreads();
  const count = threadCount();
  signals = new Int32Array(new SharedArrayBuffer(4 * count));
  const started: CsvThread[] = [];
  try {
    for (let slot = 0; slot < count; slot++) {
      const { port1, port2 } = new MessageChannel();
      const workerData: CsvThreadData = { port: port2, signals, slot };
      const worker = startThread(new URL("./csv-worker-thread.js", import.meta.url), {
        workerData,
        transferList: [port2],
      });
      // A thread that fails is never used again; its pieces' wait runs out (see `receive`).
      worker.on("error", () => (broken = true));
      worker.on("exit", () => (broken = true));
      worker.unref();
      port1.unref();
      started.push({ worker, port: port1, slot, ready: false });
    }
  } catch {
    for (const thread of started) void thread.worker.terminate();
    threads = null;
    return null;
  }
  threads = started;
  return threads;
}

/** The thread's next answer, waiting for it up to `timeoutMs`; `null` when none came. */
function receive(thread: CsvThread, timeoutMs: number): PieceAnswer | null {
  const { receiveMessageOnPort } = workerThreads();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = Atomics.load(signals, thread.slot);
    const received = receiveMessageOnPort(thread.port);
    if (received !== undefined) return received.message as PieceAnswer;
    const left = deadline - Date.now();
    if (left <= 0 || broken) return null;
    Atomics.wait(signals, thread.slot, seen, Math.min(left, 1000));
  }
}

/** Waits until every thread said it is ready; false (the threads dropped) when one did not. */
function awaitReady(all: CsvThread[]): boolean {
  for (const thread of all) {
    if (thread.ready) continue;
    const answer = receive(thread, THREADS.startMs);
    if (answer?.kind !== "ready") {
      broken = true;
      for (const each of all) void each.worker.terminate();
      return false;
    }
    thread.ready = true;
  }
  return true;
}

/** Calls `visit` for each piece of a file, in order (`forEachPiece` of read-file-rows). */
export type PieceSource = (
  visit: (bytes: Buffer, firstLine: number, isFirst: boolean) => void,
) => void;

/**
 * Reads a CSV or TSV file's pieces, the first in this thread and the rest on the worker threads,
 * handing each piece's records to `onRecords` in the file's order. `firstPiece` reads a piece
 * in this thread (the header, and every piece when no thread is there). Throws a `RowsError`
 * for a record that breaks a rule, as reading here does.
 */
export function readPiecesOnThreads(
  pieces: PieceSource,
  delimiter: "," | "\t",
  firstPiece: (reader: CsvReader, bytes: Buffer, firstLine: number, isFirst: boolean) => void,
  onRecords: (batch: RecordBatch) => void,
  textNames: readonly string[] = [],
): void {
  const reader = new CsvReader(delimiter, null, textNames);
  let all = startThreads();
  const out: { thread: CsvThread; id: number }[] = [];
  let turn = 0;
  let nextId = 1;

  const takeAnswer = () => {
    const { thread, id } = out.shift() as { thread: CsvThread; id: number };
    const answer = receive(thread, THREADS.pieceMs);
    if (answer === null || answer.id !== id) {
      broken = true;
      throw new Error("a CSV reading thread stopped answering");
    }
    switch (answer.kind) {
      case "records":
        onRecords({
          names: reader.names as string[],
          values: unpackRecords(answer.records),
          count: answer.records.count,
        });
        return;
      case "rule":
        throw new RowsError(answer.reason);
      case "fault":
        throw new Error(answer.message);
      default:
    }
  };

  try {
    pieces((bytes, firstLine, isFirst) => {
      const names = reader.names;
      if (isFirst || names === null || all === null) {
        firstPiece(reader, bytes, firstLine, isFirst);
        return;
      }
      // The threads start while the first piece is read here; they are waited for only now.
      if (out.length === 0 && !awaitReady(all)) {
        all = null;
        firstPiece(reader, bytes, firstLine, isFirst);
        return;
      }
      const moved = new ArrayBuffer(bytes.length);
      new Uint8Array(moved).set(bytes);
      const thread = all[turn++ % all.length] as CsvThread;
      const job: PieceJob = {
        id: nextId++,
        bytes: moved,
        firstLine,
        names,
        delimiter,
        textNames,
      };
      thread.port.postMessage(job, [moved]);
      out.push({ thread, id: job.id });
      while (out.length >= all.length * THREADS.piecesAhead) takeAnswer();
    });
    while (out.length > 0) takeAnswer();
  } finally {
    // A file that failed part way: its pieces still out are answered and dropped, so that the
    // next file's answers are its own.
    while (out.length > 0 && !broken) {
      const { thread } = out.shift() as { thread: CsvThread; id: number };
      if (receive(thread, THREADS.pieceMs) === null) broken = true;
    }
  }
}
