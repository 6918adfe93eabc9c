import { workerData } from "node:worker_threads";
import { CsvReader } from "./csv-rows.js";
import type { CsvThreadData, PieceAnswer, PieceJob } from "./csv-workers.js";
import { RowsError } from "./document-rows.js";
import { pieceBytes } from "./read-file-rows.js";

/**
 * A thread of csv-workers.ts: parses the pieces it is sent (records after the header of a
 * CSV or TSV file), types their fields, and answers each on its channel, then signals the
 * waiting thread through the shared slot.
 */
const { port, signals, slot } = workerData as CsvThreadData;

function answer(message: PieceAnswer): void {
  const packed = message.kind === "records" ? message.records : null;
  // The packed buffers move to the other thread rather than being copied.
  const transfer = packed ? [packed.kinds.buffer, packed.numbers.buffer, packed.ends.buffer] : [];
  port.postMessage(message, transfer as ArrayBuffer[]);
  Atomics.add(signals, slot, 1);
  Atomics.notify(signals, slot);
}

function parsePiece(job: PieceJob): PieceAnswer {
  const { id, firstLine } = job;
  try {
    const reader = new CsvReader(job.delimiter, [...job.names], job.textNames);
    const bytes = pieceBytes(Buffer.from(job.bytes), firstLine, false);
    const records = reader.packedPiece(bytes, firstLine);
    return records === null ? { id, kind: "none" } : { id, kind: "records", records };
  } catch (error) {
    if (error instanceof RowsError) return { id, kind: "rule", reason: error.message };
    return { id, kind: "fault", message: (error as Error)?.message ?? String(error) };
  }
}

port.on("message", (job: PieceJob) => answer(parsePiece(job)));
answer({ id: 0, kind: "ready" });
