import { isUtf8 } from "node:buffer";
import { readSync } from "node:fs";
import { parseExactJson } from "../exact-json.js";
import type { HookRow } from "../hook-rows.js";
import { documentRows, RowsError } from "./document-rows.js";
import { brokenArrayError } from "./json-array-errors.js";
import { MAX_NESTING } from "./nesting.js";

/**
 * A large JSON file that is one array, read element by element: memory holds a piece of the
 * file and the element being read, never the whole file or all its rows. The bytes are cut
 * after the last element that ends in what has been read (at a comma between two elements,
 * outside strings), and the elements before the cut are parsed together, as one array, by the
 * exact-number reader. A file that is not an array is not read here: the caller reads it
 * whole. An array that breaks a rule of JSON or of rows part way is refused here, with the
 * error the whole-file reader gives it (see json-array-errors.ts), at about the cost of
 * reading a well-formed one (the rows handed over before are the caller's to discard).
 */

/** Not an array read in pieces: read the file whole instead. */
export class NotStreamable extends Error {}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/**
 * Where the scan of the bytes read so far stands: inside a string or not, how deep, and (once
 * found) where the top array closes. Kept across reads, so each byte is scanned once.
 */
interface ScanState {
  inString: boolean;
  /**
   * After a backslash in a string, at the end of the bytes scanned: the native scan's (the
   * JavaScript one counts the backslashes before a quote in the buffer instead).
   */
  escaped: boolean;
  /**
   * Commas between two elements, about a range apart, where the native parse may cut the
   * elements for its threads (the native scan's; the JavaScript one finds none): buffer indices.
   */
  marks: number[];
  /** 1 inside the top array, as `refuseDeepNesting` counts. */
  depth: number;
  /** Index of the top array's `]` in the buffer, once found. */
  closedAt: number;
  /** Commas between two elements of the top array scanned so far. */
  commas: number;
}

/** The index after the closing quote of a string that is open at `from`, or -1. */
function stringClose(buffer: Buffer, from: number, to: number): number {
  // Searched in a view that ends at `to`: the bytes after it are not read yet.
  const read = buffer.subarray(0, to);
  for (
    let quote = read.indexOf(QUOTE, from);
    quote !== -1;
    quote = read.indexOf(QUOTE, quote + 1)
  ) {
    // The string opened after the last cut, so its backslashes are all in the buffer.
    let backslashes = 0;
    while (read[quote - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
  }
  return -1;
}

/**
 * Scans `buffer[from, to)` on from `state`; returns the index of the last comma between two
 * elements of the top array in it, or -1. Stops at the top array's `]`.
 */
function scan(buffer: Buffer, from: number, to: number, state: ScanState): number {
  let lastComma = -1;
  let i = from;
  while (i < to) {
    if (state.inString) {
      const close = stringClose(buffer, i, to);
      if (close === -1) return lastComma;
      state.inString = false;
      i = close;
      continue;
    }
    const byte = buffer[i] as number;
    if (byte === QUOTE) {
      state.inString = true;
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (++state.depth > MAX_NESTING) throw new NotStreamable("nested too deep");
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      if (--state.depth === 0) {
        state.closedAt = i;
        return lastComma;
      }
    } else if (byte === COMMA && state.depth === 1) {
      lastComma = i;
      state.commas++;
    }
    i++;
  }
  return lastComma;
}

/**
 * Scans `buffer[from, to)` on from `state` as `scan` does: the index of the last comma between
 * two elements of the top array in it, or -1; stops at the top array's `]`.
 */
export type ArrayScan = (buffer: Buffer, from: number, to: number, state: ScanState) => number;

/**
 * The native extension's `dirq_json_array_scan`: its answer for `bytes` scanned on from a
 * state (see `nativeArrayScan`), or `null` when a bracket nests too deep.
 */
export type NativeArrayScan = (bytes: Buffer, state: number) => string | null;

/** How `dirq_json_array_scan` packs a state into one integer (native/dirq-jsonl.c). */
const SCAN_DEPTH = 0xffff;
const SCAN_IN_STRING = 1 << 16;
const SCAN_ESCAPED = 1 << 17;

/**
 * `scan` done by the native extension: the same cuts, the same `NotStreamable` for nesting
 * too deep, at the speed of C over the bytes instead of a JavaScript loop over each of them.
 */
export function nativeArrayScan(scanBytes: NativeArrayScan): ArrayScan {
  return (buffer, from, to, state) => {
    const packed =
      state.depth | (state.inString ? SCAN_IN_STRING : 0) | (state.escaped ? SCAN_ESCAPED : 0);
    const answer = scanBytes(buffer.subarray(from, to), packed);
    if (answer === null) throw new NotStreamable("nested too deep");
    const [lastComma, closedAt, commas, after, ...marks] = answer.split(" ").map(Number) as [
      number,
      number,
      number,
      number,
      ...number[],
    ];
    for (const mark of marks) state.marks.push(from + mark);
    state.depth = after & SCAN_DEPTH;
    state.inString = (after & SCAN_IN_STRING) !== 0;
    state.escaped = (after & SCAN_ESCAPED) !== 0;
    state.commas += commas;
    if (closedAt !== -1) state.closedAt = from + closedAt;
    return lastComma === -1 ? -1 : from + lastComma;
  };
}

/** The text of some whole elements of the array (the bytes between two cuts). */
function elementsText(bytes: Buffer): string {
  if (!isUtf8(bytes)) throw new NotStreamable("not UTF-8");
  const text = bytes.toString("utf8");
  if (text.trim() === "") throw new NotStreamable("no element between two commas");
  return text;
}

/**
 * The rows of some whole elements of the array. A syntax error is `NotStreamable`; an element
 * that is no row is the `RowsError` the whole reader gives it, once `before` elements precede.
 */
function elementRows(bytes: Buffer, rows: HookRow[], before: number): void {
  let parsed: ReturnType<typeof parseExactJson>;
  try {
    parsed = parseExactJson(`[${elementsText(bytes)}]`);
  } catch (error) {
    if (error instanceof SyntaxError) throw new NotStreamable(error.message);
    throw error;
  }
  try {
    documentRows(parsed.data, null, parsed.stored, rows);
  } catch (error) {
    if (!(error instanceof RowsError)) throw error;
    const item = /^item (\d+) of the array /.exec(error.message);
    if (item === null) throw error;
    const index = before + Number(item[1]);
    throw new RowsError(`item ${index} of the array ${error.message.slice(item[0].length)}`);
  }
}

/** Checks that some whole elements of the array are JSON (their rows are not wanted). */
function checkElements(bytes: Buffer): void {
  try {
    JSON.parse(`[${elementsText(bytes)}]`);
  } catch (error) {
    if (error instanceof SyntaxError) throw new NotStreamable(error.message);
    throw error;
  }
}

/**
 * Where the top array opens: the index after its `[`, past a byte-order mark and spaces; -1
 * when the file holds something else first, `null` when the bytes so far are only spaces.
 */
function arrayStart(buffer: Buffer): number | null {
  let at = buffer[0] === 0xef && buffer[1] === 0xbb && buffer[2] === 0xbf ? 3 : 0;
  while (at < buffer.length && isSpace(buffer[at] as number)) at++;
  if (at >= buffer.length) return null;
  return buffer[at] === OPEN_ARRAY ? at + 1 : -1;
}

/** The first bytes of the file, up to the `[` that opens the array and a piece after it. */
function firstPiece(
  fd: number,
  pieceBytes: number,
): { buffer: Buffer; filled: number; start: number } {
  let buffer = Buffer.allocUnsafe(Math.max(pieceBytes, 3));
  let filled = 0;
  for (;;) {
    const read = readSync(fd, buffer, filled, buffer.length - filled, filled);
    filled += read;
    const start = arrayStart(buffer.subarray(0, filled));
    if (start === -1 || (start === null && read === 0)) throw new NotStreamable("not an array");
    if (start !== null) return { buffer, filled, start };
    const grown = Buffer.allocUnsafe(filled + pieceBytes);
    buffer.copy(grown, 0, 0, filled);
    buffer = grown;
  }
}

/**
 * Reads the JSON file open at `fd` as an array of objects, `pieceBytes` at a time (positional
 * reads: the file's offset is left at 0 for a whole read after), handing each piece's rows to
 * `onRows`; with `takeElements`, each piece's elements (the bytes between two cuts) go there
 * first, and only those it leaves (`false`) are parsed here. `scanner` finds the cuts (the
 * native one where there is; this module's JavaScript `scan` by default). Throws `NotStreamable` for a
 * file that must be read whole instead, and the whole reader's `RowsError` for an array that
 * breaks a rule. After an element that is no row, the rest is only checked: an error of
 * encoding, nesting or syntax anywhere in the file is named before it, as the whole reader
 * names it.
 */
export function readJsonArrayPieces(
  fd: number,
  pieceBytes: number,
  onRows: (rows: HookRow[]) => void,
  takeElements?: (elements: Buffer, cuts: readonly number[]) => boolean,
  scanner: ArrayScan = scan,
): void {
  let rowsError: RowsError | null = null;
  let handed = 0;
  const handOver = (elements: Buffer, cuts: readonly number[]) => {
    if (rowsError !== null) return checkElements(elements);
    if (takeElements?.(elements, cuts) === true) return;
    const rows: HookRow[] = [];
    try {
      elementRows(elements, rows, handed);
    } catch (error) {
      if (!(error instanceof RowsError)) throw error;
      rowsError = error;
      return;
    }
    onRows(rows);
  };
  const first = firstPiece(fd, pieceBytes);
  const bom = first.buffer[0] === 0xef && first.buffer[1] === 0xbb && first.buffer[2] === 0xbf;
  const reading = { ...first, position: first.filled, commas: 0 };
  try {
    readPieces(fd, pieceBytes, { at: reading, scanner }, handOver, (commas) => (handed = commas));
  } catch (error) {
    if (!(error instanceof NotStreamable)) throw error;
    const offset = reading.position - reading.filled + reading.start;
    throw (
      brokenArrayError(fd, { offset, afterOpen: reading.commas === 0, bom: bom ? 3 : 0 }) ?? error
    );
  }
  if (rowsError !== null) throw rowsError;
}

/** Where the reading stands: the buffer, its bytes, the first not handed over, the file's. */
interface Reading {
  buffer: Buffer;
  filled: number;
  start: number;
  /** The file offset after the buffer's bytes. */
  position: number;
  /** Cuts made so far. */
  commas: number;
}

/** Bytes read at a time while looking for a long element's end (read, scanned, dropped). */
const LOOK_AHEAD_BYTES = 64 * 1024;

/**
 * How many bytes from the file's `position` to just after the end of the element being read
 * (the next comma between two elements, or the array's end), or to the file's end: read ahead
 * and dropped, scanned on from a copy of `state`. A 100 MB element's buffer then grows once,
 * not by a piece per read (each growth a copy of all before it). Only a size: what the scan
 * finds wrong here is found again, and named, when the bytes are read for good.
 */
function bytesToElementEnd(
  fd: number,
  position: number,
  state: ScanState,
  scanner: ArrayScan,
): number {
  const probe: ScanState = { ...state, marks: [], closedAt: -1 };
  const chunk = Buffer.allocUnsafe(LOOK_AHEAD_BYTES);
  let total = 0;
  try {
    for (;;) {
      const read = readSync(fd, chunk, 0, LOOK_AHEAD_BYTES, position + total);
      if (read === 0) return total;
      const comma = scanner(chunk, 0, read, probe);
      if (comma !== -1) return total + comma + 1;
      if (probe.closedAt !== -1) return total + probe.closedAt + 1;
      total += read;
    }
  } catch (error) {
    if (error instanceof NotStreamable) return total;
    throw error;
  }
}

/** The marks in `buffer[start, end)`, counted from `start`; none up to `end` are kept. */
function takeMarks(state: ScanState, start: number, end: number): number[] {
  const inside = state.marks.filter((mark) => mark > start && mark < end);
  state.marks = state.marks.filter((mark) => mark > end);
  return inside.map((mark) => mark - start);
}

/** The loop of `readJsonArrayPieces`: `cut` learns the elements handed over after each cut. */
function readPieces(
  fd: number,
  pieceBytes: number,
  reading: { at: Reading; scanner: ArrayScan },
  handOver: (elements: Buffer, cuts: readonly number[]) => void,
  cut: (elements: number) => void,
): void {
  const { at, scanner } = reading;
  const state: ScanState = {
    inString: false,
    escaped: false,
    marks: [],
    depth: 1,
    closedAt: -1,
    commas: 0,
  };
  let scanned = at.start;
  for (;;) {
    const comma = scanner(at.buffer, scanned, at.filled, state);
    scanned = state.closedAt === -1 ? at.filled : state.closedAt + 1;
    if (comma !== -1) {
      handOver(at.buffer.subarray(at.start, comma), takeMarks(state, at.start, comma));
      at.commas++;
      at.start = comma + 1;
      cut(state.commas);
    }
    if (state.closedAt !== -1) break;
    // The element being read goes to the start of the buffer, which grows for a large one:
    // once, to its whole size, when it has outgrown a piece (see `bytesToElementEnd`).
    const carry = at.filled - at.start;
    let size = carry + pieceBytes;
    if (size > at.buffer.length && carry >= pieceBytes) {
      size += bytesToElementEnd(fd, at.position, state, scanner);
    }
    const next = size > at.buffer.length ? Buffer.allocUnsafe(size) : at.buffer;
    if (next !== at.buffer || at.start > 0) at.buffer.copy(next, 0, at.start, at.filled);
    at.buffer = next;
    state.marks = state.marks.map((mark) => mark - at.start);
    scanned -= at.start;
    at.start = 0;
    at.filled = carry;
    const read = readSync(fd, at.buffer, at.filled, pieceBytes, at.position);
    if (read === 0) throw new NotStreamable("the array does not close");
    at.position += read;
    at.filled += read;
  }
  finishArray(
    fd,
    at.buffer,
    {
      start: at.start,
      end: state.closedAt,
      after: scanned,
      filled: at.filled,
      position: at.position,
    },
    at.commas,
    (last) => handOver(last, takeMarks(state, at.start, state.closedAt)),
  );
}

/** The last elements (before the `]`), then only spaces to the end of the file. */
function finishArray(
  fd: number,
  buffer: Buffer,
  at: { start: number; end: number; after: number; filled: number; position: number },
  commas: number,
  handOver: (elements: Buffer) => void,
): void {
  const last = buffer.subarray(at.start, at.end);
  if (commas > 0 || last.some((byte) => !isSpace(byte))) handOver(last);
  let rest = buffer.subarray(at.after, at.filled);
  let position = at.position;
  for (;;) {
    if (rest.some((byte) => !isSpace(byte))) throw new NotStreamable("text after the array");
    const read = readSync(fd, buffer, 0, buffer.length, position);
    if (read === 0) return;
    position += read;
    rest = buffer.subarray(0, read);
  }
}
