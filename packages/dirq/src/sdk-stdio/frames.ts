import { parseJsonExact } from "../parse/hook-rows.js";
import { FrameCutter } from "../shared/frame-cutter.js";

/**
 * The frames of `dirq sdk-stdio` (docs/python.md, "The protocol"): an 8-byte head, two
 * big-endian unsigned 32-bit lengths (the header's, then the payload's), the header (a JSON
 * object, UTF-8) and the payload (bytes: JSON text or a file's content, as the header says).
 * Binary payloads travel as they are, and JSON payloads are handed on without being parsed
 * again: a query's rows are written once and read once.
 */
export interface Frame {
  header: Record<string, unknown>;
  payload: Buffer;
}

const HEAD_BYTES = 8;
/**
 * A header is a request: far below this. Text sent by mistake (`SELECT 1`, any printable first
 * byte) reads as a length above it, and is told at once instead of waited for.
 */
const MAX_HEADER_BYTES = 256 * 1024 * 1024;
const EMPTY = Buffer.alloc(0);

/**
 * A frame's head and header, for a payload of `payloadLength` bytes that follows it: the
 * header's JSON written straight into the buffer, so a payload (a file's content) is never
 * copied to join it.
 */
export function frameHead(header: object, payloadLength: number): Buffer {
  const json = JSON.stringify(header);
  const headerLength = Buffer.byteLength(json, "utf8");
  const head = Buffer.allocUnsafe(HEAD_BYTES + headerLength);
  head.writeUInt32BE(headerLength, 0);
  head.writeUInt32BE(payloadLength, 4);
  head.write(json, HEAD_BYTES, "utf8");
  return head;
}

/** One frame's bytes: the head, the header and the payload. */
export function encodeFrame(header: object, payload: Buffer | string = EMPTY): Buffer {
  const payloadBytes = typeof payload === "string" ? Buffer.from(payload, "utf8") : payload;
  return Buffer.concat([frameHead(header, payloadBytes.length), payloadBytes]);
}

/** A stream that is not frames (another program on the other end): nothing more is read. */
export class FrameError extends Error {}

/**
 * Cuts a byte stream into frames, whatever the chunks it arrives in. Headers are read with
 * dirq's exact-number JSON reader, so an integer parameter beyond 2^53 stays exact (a bigint).
 */
export class FrameReader extends FrameCutter<Frame> {
  /** `push` throws a `FrameError` on a broken header. */
  constructor() {
    super(HEAD_BYTES, frameBytes, (frame) => {
      const payloadStart = HEAD_BYTES + frame.readUInt32BE(0);
      return {
        header: parseHeader(frame.toString("utf8", HEAD_BYTES, payloadStart)),
        payload: frame.subarray(payloadStart),
      };
    });
  }
}

/** A frame's whole length, from its head; a `FrameError` when the head cannot be a frame's. */
function frameBytes(head: Buffer): number {
  const headerLength = head.readUInt32BE(0);
  if (headerLength > MAX_HEADER_BYTES) {
    throw new FrameError(`a frame's header of ${headerLength} bytes is not a request`);
  }
  return HEAD_BYTES + headerLength + head.readUInt32BE(4);
}

function parseHeader(text: string): Record<string, unknown> {
  let header: unknown;
  try {
    header = parseJsonExact(text);
  } catch (error) {
    throw new FrameError(`a frame's header is not JSON (${(error as Error).message})`);
  }
  if (header === null || typeof header !== "object" || Array.isArray(header)) {
    throw new FrameError("a frame's header is not a JSON object");
  }
  return header as Record<string, unknown>;
}
