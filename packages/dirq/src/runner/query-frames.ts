/**
 * The wire between the query pool and its query processes: length-prefixed binary frames on
 * one socket (the child's fd 3), in both directions. Not Node's IPC channel (a message
 * serialized and written per statement, one statement in flight per process), which holds
 * uncached statements far below what a bare node:http server answers; frames let the pool send
 * every statement of one event-loop turn in one write and a process work through several in a
 * row, and an answer's bytes travel as they are.
 *
 * A frame: payload length (u32), id (u32), kind (u8), flags (u8), then the payload.
 */

import { FrameCutter } from "../shared/frame-cutter.js";
export const HEADER_BYTES = 10;

/** Pool to process. */
export const RequestKind = {
  /** Run the statement (payload: SQL), answer JSON bytes. */
  Json: 1,
  /** Run the statement (payload: SQL), answer an aligned text table. */
  Table: 2,
  /** Drop the statement with this id if it has not started (no payload, no answer). */
  Cancel: 3,
  /**
   * Run a statement with bound values, answer JSON bytes (the SDK). Payload: the values as
   * `encodeArguments` writes them (one line: JSON escapes line breaks), a line break, the SQL.
   */
  JsonBound: 4,
  /** Run the statement (payload: SQL), answer CSV with a header line (the REPL's `--format csv`). */
  Csv: 5,
} as const;

/** Process to pool. */
export const AnswerKind = {
  /** Payload: the answer's bytes. */
  Body: 1,
  /** Payload: JSON `{ message, user, tooLarge? }`. */
  Error: 2,
  /** Sent once, first (id 0, no payload): the process is up and reads statements. */
  Ready: 3,
} as const;

/** Flag of an answer: the process retires (it held a large answer); send it nothing new. */
export const RETIRING = 1;

/**
 * Flag of a statement: it calls no worker-backed function (the server learned that from its
 * bytecode), so the process need not read the bytecode again.
 */
export const NO_WORKER_CALLS = 1;

export interface Frame {
  id: number;
  kind: number;
  flags: number;
  payload: Buffer;
}

function writeHeader(frame: Buffer, id: number, kind: number, length: number, flags: number): void {
  frame.writeUInt32LE(length, 0);
  frame.writeUInt32LE(id >>> 0, 4);
  frame.writeUInt8(kind, 8);
  frame.writeUInt8(flags, 9);
}

/** One frame's bytes. */
export function encodeFrame(
  id: number,
  kind: number,
  payload: Uint8Array | string = "",
  flags = 0,
): Buffer {
  const length = typeof payload === "string" ? Buffer.byteLength(payload) : payload.length;
  const frame = Buffer.allocUnsafe(HEADER_BYTES + length);
  writeHeader(frame, id, kind, length, flags);
  if (typeof payload === "string") frame.write(payload, HEADER_BYTES, "utf8");
  else frame.set(payload, HEADER_BYTES);
  return frame;
}

/** The header of a frame whose `length` payload bytes are written right after it. */
export function frameHeader(id: number, kind: number, length: number, flags = 0): Buffer {
  const header = Buffer.allocUnsafe(HEADER_BYTES);
  writeHeader(header, id, kind, length, flags);
  return header;
}

/** Cuts a byte stream into frames (a large answer arriving in many chunks is copied once). */
export class FrameReader extends FrameCutter<Frame> {
  constructor() {
    super(
      HEADER_BYTES,
      (head) => HEADER_BYTES + head.readUInt32LE(0),
      (frame) => ({
        id: frame.readUInt32LE(4),
        kind: frame.readUInt8(8),
        flags: frame.readUInt8(9),
        payload: frame.subarray(HEADER_BYTES),
      }),
    );
  }
}

/**
 * A query process's last argument: how it ends with the process that started it. `reaped`:
 * that process's reaper stops it (see reaper/reaper.ts); `watch-parent`: it watches for its
 * parent's end itself, on a thread of its own.
 */
export const REAPED = "reaped";
export const WATCHES_PARENT = "watch-parent";
