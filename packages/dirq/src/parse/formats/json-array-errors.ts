import { isUtf8 } from "node:buffer";
import { fstatSync, readSync } from "node:fs";
import { RowsError } from "./document-rows.js";
import { losslessObjection } from "./json-rows.js";
import { MAX_NESTING } from "./nesting.js";

/**
 * The error of a large JSON array that breaks a rule part way, named exactly as the whole-file
 * reader (`jsonRows`) names it, without holding the file: the whole reader checks the text's
 * encoding first, then its nesting, then its syntax, then its rows, each over the whole text,
 * and so does this, from the point where the streamed reader stopped (everything before it is
 * known to be well-formed elements). Positions are counted as the whole reader counts them:
 * lines from 1, columns in UTF-16 code units, a byte-order mark left out.
 */

const LF = 0x0a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Bytes read at a time while scanning. */
const SCAN_BYTES = 1 << 20;
/** The first syntax window (bytes); it doubles while the parser's error lies near its end. */
const FIRST_WINDOW_BYTES = 1 << 16;
/** An error this close to a window's end (characters) may depend on what follows: read more. */
const WINDOW_MARGIN = 64;

/** Where the streamed reader stopped: the first byte after the last well-formed elements. */
export interface StopPoint {
  /** Offset in the file. */
  offset: number;
  /** Whether it directly follows the array's `[` (no element was cut off before it). */
  afterOpen: boolean;
  /** Bytes of the byte-order mark at the file's start (0 or 3). */
  bom: number;
}

/** Reads `[from, to)` of the file a piece at a time, handing each piece to `visit`. */
function eachPiece(fd: number, from: number, to: number, visit: (piece: Buffer) => void): void {
  const buffer = Buffer.allocUnsafe(SCAN_BYTES);
  for (let position = from; position < to;) {
    const read = readSync(fd, buffer, 0, Math.min(SCAN_BYTES, to - position), position);
    if (read === 0) return;
    visit(buffer.subarray(0, read));
    position += read;
  }
}

/** UTF-16 code units of valid UTF-8 bytes (a four-byte sequence is two units). */
function utf16Units(bytes: Buffer): number {
  let units = 0;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i] as number;
    if ((byte & 0xc0) !== 0x80) units += byte >= 0xf0 ? 2 : 1;
  }
  return units;
}

/** The line (from 1) and the column's code units before `offset` (all well-formed bytes). */
function positionOf(fd: number, stop: StopPoint): { line: number; units: number } {
  let line = 1;
  let units = 0;
  eachPiece(fd, stop.bom, stop.offset, (piece) => {
    const last = piece.lastIndexOf(LF);
    if (last === -1) {
      units += utf16Units(piece);
      return;
    }
    for (let at = piece.indexOf(LF); at !== -1; at = piece.indexOf(LF, at + 1)) line++;
    units = utf16Units(piece.subarray(last + 1));
  });
  return { line, units };
}

/** How far the bytes end in a whole character: before a trailing sequence's first byte. */
function wholeCharacters(bytes: Buffer): number {
  let end = bytes.length;
  for (let back = 0; back < 3 && end > 0 && ((bytes[end - 1] as number) & 0xc0) === 0x80; back++) {
    end--;
  }
  if (end > 0 && (bytes[end - 1] as number) >= 0xc0) end--;
  return end;
}

/**
 * The whole reader's first two checks, from the stop on: the first line that is not UTF-8,
 * else the line where brackets outside strings first nest deeper than `MAX_NESTING` (counted
 * as `refuseDeepNesting` counts them: a closing bracket never takes the depth below 0).
 */
function encodingOrNesting(fd: number, stop: StopPoint, firstLine: number): RowsError | null {
  let line = firstLine;
  let deepAt: number | null = null;
  let badAt: number | null = null;
  const nest = { depth: 1, inString: false, backslashes: 0 };
  let carry = Buffer.alloc(0);
  const take = (bytes: Buffer, final: boolean) => {
    const end = final ? bytes.length : wholeCharacters(bytes);
    const whole = bytes.subarray(0, end);
    if (!isUtf8(whole)) {
      let start = 0;
      for (;;) {
        const lf = whole.indexOf(LF, start);
        if (!isUtf8(whole.subarray(start, lf === -1 ? whole.length : lf))) break;
        line++;
        start = lf + 1;
      }
      badAt = line;
      return Buffer.alloc(0);
    }
    if (deepAt === null) deepAt = deepestLine(whole, nest, line);
    for (let at = whole.indexOf(LF); at !== -1; at = whole.indexOf(LF, at + 1)) line++;
    return Buffer.from(bytes.subarray(end));
  };
  const size = fstatSync(fd).size;
  eachPiece(fd, stop.offset, size, (piece) => {
    if (badAt !== null) return;
    carry = take(carry.length === 0 ? piece : Buffer.concat([carry, piece]), false);
  });
  if (badAt === null && carry.length > 0) take(carry, true);
  if (badAt !== null) {
    return new RowsError(`line ${badAt}: not valid UTF-8 (dirq reads text files as UTF-8)`);
  }
  if (deepAt !== null) {
    return new RowsError(
      `line ${deepAt}: nested deeper than ${MAX_NESTING} levels (dirq's limit for arrays and objects)`,
    );
  }
  return null;
}

/**
 * Scans `bytes` on from `nest`; the line of the bracket that passes the limit, or `null`.
 * `line` is the line `bytes` starts on.
 */
function deepestLine(
  bytes: Buffer,
  nest: { depth: number; inString: boolean; backslashes: number },
  line: number,
): number | null {
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i] as number;
    if (nest.inString) {
      if (byte === BACKSLASH) nest.backslashes++;
      else {
        if (byte === QUOTE && nest.backslashes % 2 === 0) nest.inString = false;
        nest.backslashes = 0;
      }
    } else if (byte === QUOTE) {
      nest.inString = true;
      nest.backslashes = 0;
    } else if (byte === 0x5b || byte === 0x7b) {
      if (++nest.depth > MAX_NESTING) {
        let at = line;
        for (let lf = bytes.indexOf(LF); lf !== -1 && lf < i; lf = bytes.indexOf(LF, lf + 1)) at++;
        return at;
      }
    } else if (byte === 0x5d || byte === 0x7d) {
      nest.depth = Math.max(0, nest.depth - 1);
    }
  }
  return null;
}

/**
 * The whole reader's syntax error, found from the stop on: the elements before it are
 * well-formed, so the parser is given the text from there after a prefix that puts it in the
 * same state (inside the array, after a comma, or the file's own opening), in a window that
 * grows while the error lies at its end. `null` when the rest of the file parses.
 */
function syntaxError(
  fd: number,
  stop: StopPoint,
  start: { line: number; units: number },
): RowsError | null {
  const size = fstatSync(fd).size;
  const prefix = stop.afterOpen ? readText(fd, stop.bom, stop.offset) : "[0,";
  for (let bytes = FIRST_WINDOW_BYTES; ; bytes *= 2) {
    const reachesEnd = stop.offset + bytes >= size;
    const raw = readBytes(fd, stop.offset, Math.min(bytes, size - stop.offset));
    const window = reachesEnd ? raw : raw.subarray(0, wholeCharacters(raw));
    const text = prefix + window.toString("utf8");
    const error = losslessObjection(text);
    if (error === null || error.position === null) {
      if (reachesEnd || error !== null) return null;
      continue;
    }
    if (!reachesEnd && error.position >= text.length - WINDOW_MARGIN) continue;
    const local = text.slice(prefix.length, error.position);
    const lastLf = local.lastIndexOf("\n");
    let line = start.line;
    for (let at = local.indexOf("\n"); at !== -1; at = local.indexOf("\n", at + 1)) line++;
    const column = lastLf === -1 ? start.units + local.length + 1 : local.length - lastLf;
    return new RowsError(`line ${line}, column ${column}: ${error.reason} (not valid JSON)`);
  }
}

function readBytes(fd: number, from: number, length: number): Buffer {
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const read = readSync(fd, buffer, filled, length - filled, from + filled);
    if (read === 0) break;
    filled += read;
  }
  return buffer.subarray(0, filled);
}

function readText(fd: number, from: number, to: number): string {
  return readBytes(fd, from, to - from).toString("utf8");
}

/**
 * The error the whole reader gives a file the streamed reader stopped in at `stop`: its
 * encoding's, nesting's or syntax's, else `null` (the rest parses: the whole reader is left
 * to name what it refuses).
 */
export function brokenArrayError(fd: number, stop: StopPoint): RowsError | null {
  const start = positionOf(fd, stop);
  return encodingOrNesting(fd, stop, start.line) ?? syntaxError(fd, stop, start);
}
