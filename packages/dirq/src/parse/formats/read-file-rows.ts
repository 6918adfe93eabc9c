import { isUtf8 } from "node:buffer";
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import type { HookRow } from "../hook-rows.js";
import { batchRows, CsvReader, type RecordBatch } from "./csv-rows.js";
import { readPiecesOnThreads } from "./csv-workers.js";
import { RowsError } from "./document-rows.js";
import {
  AUTO_EXTENSIONS,
  type FileFormat,
  type FormatName,
  formatOfPath,
  NESTED_FORMATS,
} from "./format-names.js";
import {
  type NativeArrayScan,
  nativeArrayScan,
  NotStreamable,
  readJsonArrayPieces,
} from "./json-array-stream.js";
import { jsonLinesRows, jsonRows } from "./json-rows.js";
import { markdownRows } from "./markdown-rows.js";
import { tomlRows } from "./toml-rows.js";
import { yamlRows } from "./yaml-rows.js";

/**
 * Reads one file's rows in a built-in format. Record-per-line formats (JSON Lines, CSV, TSV)
 * larger than a piece are read a piece at a time, each piece cut between two records, and their
 * rows are handed over per piece: a 1 GB JSON Lines file never sits in memory whole. Other
 * formats are one document, read whole.
 */

/** Bytes read at a time from a large file. */
export const PIECE_BYTES = 1 << 20;

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;

/** Occurrences of `byte` in `buffer[from, to)` (never searching past `to`). */
function countByte(buffer: Buffer, byte: number, from: number, to: number): number {
  // Searched in a view that ends at `to`: a search of the whole buffer for a byte that is not
  // there reads to its end, once per call (once per line, walking back over an open quote).
  const bounded = to < buffer.length ? buffer.subarray(0, to) : buffer;
  let count = 0;
  for (let at = bounded.indexOf(byte, from); at !== -1; at = bounded.indexOf(byte, at + 1)) {
    count++;
  }
  return count;
}

/**
 * What `lastRecordEnd` already read of a buffer in which it found no record end, for the next
 * call on the same bytes with more after them: the first `scanned` bytes hold `quotes` quotes and
 * no record end. Without it a quote left open (a file cut short) would make every read look at
 * the whole carried-over part again: time growing with the square of the file's size.
 */
export interface RecordScan {
  scanned: number;
  quotes: number;
}

/**
 * Where the last whole record in `buffer` ends (after its newline), or -1. A newline inside a
 * quoted CSV field ends no record: with `quoted`, only a newline after an even number of quotes
 * does (RFC 4180 doubles a quote inside a quoted field, so the count stays even outside one).
 * With `scan`, its first `scan.scanned` bytes are not read again, and at -1 it is moved on: each
 * byte is read about once however long a record (or an open quote) grows.
 */
export function lastRecordEnd(
  buffer: Buffer,
  quoted: boolean,
  scan: RecordScan = { scanned: 0, quotes: 0 },
): number {
  // Searched in the bytes after the scanned ones: no search reads those again.
  const from = scan.scanned;
  const rest = buffer.subarray(from);
  let newline = rest.lastIndexOf(LF);
  if (newline === -1) {
    if (quoted) scan.quotes += countByte(rest, QUOTE, 0, rest.length);
    scan.scanned = buffer.length;
    return -1;
  }
  if (!quoted) return from + newline + 1;
  const top = newline;
  const topQuotes = scan.quotes + countByte(rest, QUOTE, 0, top);
  let quotes = topQuotes;
  while (quotes % 2 === 1) {
    const previous = newline === 0 ? -1 : rest.lastIndexOf(LF, newline - 1);
    if (previous === -1) {
      scan.scanned = from + top + 1;
      scan.quotes = topQuotes;
      return -1;
    }
    quotes -= countByte(rest, QUOTE, previous, newline);
    newline = previous;
  }
  return from + newline + 1;
}

/** Line breaks in `bytes`: LF, and for CSV also a CR not followed by LF. */
function countLines(bytes: Buffer, loneCr: boolean): number {
  let lines = countByte(bytes, LF, 0, bytes.length);
  if (!loneCr) return lines;
  for (let at = bytes.indexOf(CR); at !== -1; at = bytes.indexOf(CR, at + 1)) {
    if (bytes[at + 1] !== LF) lines++;
  }
  return lines;
}

/** The piece as text, or a `RowsError` naming the first line that is not UTF-8. */
function decode(bytes: Buffer, firstLine: number): string {
  if (isUtf8(bytes)) return bytes.toString("utf8");
  let line = firstLine;
  let start = 0;
  for (;;) {
    const end = bytes.indexOf(LF, start);
    if (!isUtf8(bytes.subarray(start, end === -1 ? bytes.length : end))) break;
    if (end === -1) break;
    line++;
    start = end + 1;
  }
  throw new RowsError(`line ${line}: not valid UTF-8 (dirq reads text files as UTF-8)`);
}

const BOM = "\uFEFF";

function withoutBom(text: string): string {
  return text.startsWith(BOM) ? text.slice(1) : text;
}

/** The format a file is read with: `auto`'s choice by extension, checked against `each`. */
export function fileFormat(format: FormatName, each: string | null, path: string): FileFormat {
  const chosen = format === "auto" ? formatOfPath(path) : format;
  if (chosen === null) {
    throw new RowsError(
      `format 'auto' reads a file by its extension (${AUTO_EXTENSIONS}), and this one has none of them: give the table a format`,
    );
  }
  if (each !== null && !NESTED_FORMATS.has(chosen)) {
    throw new RowsError(`each applies to JSON, JSON Lines, YAML and TOML files, not ${chosen}`);
  }
  return chosen;
}

/**
 * Reads one piece of bytes (the whole file for one-document formats), whose first line is line
 * `firstLine` of the file; `isFirst` for the piece the file starts with (a byte-order mark).
 */
type PieceReader = (bytes: Buffer, firstLine: number, isFirst: boolean) => void;

/** A piece as text: UTF-8 checked, a byte-order mark at the file's start left out. */
function pieceText(bytes: Buffer, firstLine: number, isFirst: boolean): string {
  const text = decode(bytes, firstLine);
  return isFirst ? withoutBom(text) : text;
}

/** A piece's bytes, UTF-8 checked, a byte-order mark at the file's start left out. */
export function pieceBytes(bytes: Buffer, firstLine: number, isFirst: boolean): Buffer {
  if (!isUtf8(bytes)) decode(bytes, firstLine);
  const bom = isFirst && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
  return bom ? bytes.subarray(3) : bytes;
}

/** Whole records of a CSV or TSV file, as bytes, after its header. */
export interface CsvPiece {
  /** The header's names (see `headerNames`). */
  names: readonly string[];
  /** Whole records, UTF-8 checked (never the header, never a byte-order mark). */
  records: Buffer;
  /** The file's line number of the first line of `records`. */
  firstLine: number;
  delimiter: "," | "\t";
}

/** A consumer that parses CSV records itself (natively), up to `maxWidth` fields a record. */
export interface CsvPieceSink {
  maxWidth: number;
  take(piece: CsvPiece): void;
}

/**
 * A consumer that reads JSON Lines pieces itself (natively): `take` a piece of whole lines
 * (UTF-8 checked, no byte-order mark), whose first line is `firstLine`, or with `elements`
 * some whole elements of a large JSON array, separated by commas, with `cuts` (offsets of
 * commas between two of them, from `scanArray`: where it may cut them into ranges); `false`
 * when it leaves the piece to be read here (then nothing of it was taken).
 */
export interface JsonlPieceSink {
  take(piece: Buffer, firstLine: number, elements: boolean, cuts?: readonly number[]): boolean;
  /** With it, a large JSON array's cuts are found natively (see json-array-stream.ts). */
  scanArray?: NativeArrayScan;
}

/** Where a CSV or TSV file's records go, when not as rows. */
export interface RecordSinks {
  /** Records parsed here, without a `Map` per row (a large file's on worker threads). */
  onRecords: (batch: RecordBatch) => void;
  /**
   * With it, each piece's records go here unparsed, after the header read here; a file wider
   * than the sink takes goes to `onRecords`.
   */
  csvPieces?: CsvPieceSink;
  /**
   * The columns (names folded as SQLite compares them) whose fields are kept as written: a
   * schema's TEXT columns (see `CsvReader`).
   */
  textNames?: readonly string[];
  /** With it, a JSON Lines file's pieces (without `each`) go here first. */
  jsonlPieces?: JsonlPieceSink;
}

/** What a file's rows are handed to: rows, and for CSV and TSV records as they come. */
interface RowsSink {
  onRows: (rows: HookRow[]) => void;
  records: RecordSinks | undefined;
}

/**
 * Hands a CSV or TSV file's pieces to `sink.csvPieces` with the header read here; a file wider
 * than it takes is parsed here instead and its records go to `sink.onRecords`.
 */
function csvPieceReader(
  delimiter: "," | "\t",
  sink: RecordSinks,
  csvPieces: CsvPieceSink,
): PieceReader {
  const reader = new CsvReader(delimiter, null, sink.textNames);
  let parsedHere = false;
  return (bytes, firstLine, isFirst) => {
    let records = pieceBytes(bytes, firstLine, isFirst);
    let line = firstLine;
    let names = reader.names;
    if (names === null) {
      const end = reader.readHeader(records, line);
      names = reader.names;
      if (end === null || names === null) return;
      line += countLines(records.subarray(0, end), true);
      records = records.subarray(end);
      parsedHere = names.length > csvPieces.maxWidth;
    }
    if (parsedHere) {
      const batch = reader.piece(records, line);
      if (batch !== null) sink.onRecords(batch);
    } else if (records.length > 0) {
      csvPieces.take({ names, records, firstLine: line, delimiter });
    }
  };
}

function pieceReader(format: FileFormat, each: string | null, sink: RowsSink): PieceReader {
  const whole = (parse: (text: string, firstLine: number, rows: HookRow[]) => void) =>
    ((bytes, firstLine, isFirst) => {
      const rows: HookRow[] = [];
      parse(pieceText(bytes, firstLine, isFirst), firstLine, rows);
      if (rows.length > 0 || isFirst) sink.onRows(rows);
    }) satisfies PieceReader;
  switch (format) {
    case "json":
      return whole((text, _line, rows) => jsonRows(text, each, rows));
    case "jsonl": {
      const parse = whole((text, line, rows) => jsonLinesRows(text, line, each, rows));
      const native = sink.records?.jsonlPieces;
      if (native === undefined || each !== null) return parse;
      return (bytes, firstLine, isFirst) => {
        const lines = pieceBytes(bytes, firstLine, isFirst);
        if (!native.take(lines, firstLine, false)) parse(lines, firstLine, false);
      };
    }
    case "csv":
    case "tsv": {
      const delimiter = format === "csv" ? "," : "\t";
      if (sink.records?.csvPieces !== undefined) {
        return csvPieceReader(delimiter, sink.records, sink.records.csvPieces);
      }
      const reader = new CsvReader(delimiter, null, sink.records?.textNames);
      const emit =
        sink.records?.onRecords ?? ((batch: RecordBatch) => sink.onRows(batchRows(batch)));
      return (bytes, firstLine, isFirst) => {
        const batch = reader.piece(pieceBytes(bytes, firstLine, isFirst), firstLine);
        if (batch !== null) emit(batch);
        else if (isFirst) sink.onRows([]);
      };
    }
    case "yaml":
      // A long list's rows are handed over a batch at a time (see `yamlRows`).
      return (bytes, firstLine, isFirst) => {
        let handed = false;
        yamlRows(pieceText(bytes, firstLine, isFirst), each, (rows) => {
          handed ||= rows.length > 0;
          if (rows.length > 0) sink.onRows(rows);
        });
        if (!handed) sink.onRows([]);
      };
    case "toml":
      return whole((text, _line, rows) => tomlRows(text, each, rows));
    case "markdown":
      return whole((text, _line, rows) => markdownRows(text, rows));
  }
}

function readWhole(fd: number, size: number): Buffer {
  const buffer = Buffer.allocUnsafe(size);
  let filled = 0;
  while (filled < size) {
    const read = readSync(fd, buffer, filled, size - filled, null);
    if (read === 0) break;
    filled += read;
  }
  return filled === size ? buffer : buffer.subarray(0, filled);
}

/** A record that outgrows a piece has its end looked for before its buffer grows. */
const LONG_RECORD_BYTES = PIECE_BYTES;
/** Bytes read at a time while looking for a long record's end (read, searched, dropped). */
const SCAN_BYTES = 64 * 1024;

/**
 * How many bytes from `offset` of the file to just after the next record end, or to the file's
 * end: read ahead and not kept. For quoted CSV, a record ends at a newline
 * after an even number of quotes, `quotes` being how many the record's start before `offset`
 * holds.
 */
function bytesToRecordEnd(fd: number, offset: number, quoted: boolean, quotes: number): number {
  const chunk = Buffer.allocUnsafe(SCAN_BYTES);
  let total = 0;
  let open = quotes % 2;
  for (;;) {
    const read = readSync(fd, chunk, 0, SCAN_BYTES, offset + total);
    if (read === 0) return total;
    const bytes = chunk.subarray(0, read);
    for (let at = 0; ;) {
      const newline = bytes.indexOf(LF, at);
      if (newline === -1) {
        if (quoted) open = (open + countByte(bytes, QUOTE, at, read)) % 2;
        break;
      }
      if (quoted) open = (open + countByte(bytes, QUOTE, at, newline)) % 2;
      if (open === 0) return total + newline + 1;
      at = newline + 1;
    }
    total += read;
  }
}

/**
 * The buffer a piece grows into when `filled` bytes hold no whole record: twice the size, or
 * for a long record (a 100 MB line) just what it needs, its end looked for first, so that its
 * bytes are held once, not also in the smaller buffers doubling leaves behind.
 */
function grownBuffer(
  fd: number,
  buffer: Buffer,
  filled: number,
  offset: number,
  quoted: boolean,
  piece: number,
): Buffer {
  let size = Math.max(2 * buffer.length, filled + piece);
  if (filled >= LONG_RECORD_BYTES) {
    const quotes = quoted ? countByte(buffer, QUOTE, 0, filled) : 0;
    // Room for the read that finds its end (a read takes what room there is, at least this).
    size = filled + bytesToRecordEnd(fd, offset, quoted, quotes) + PIECE_BYTES;
  }
  const grown = Buffer.allocUnsafe(size);
  buffer.copy(grown, 0, 0, filled);
  return grown;
}

/**
 * Calls `visit` with each piece of a large record-per-line file, in order: up to `piece` bytes
 * read at a time, cut after the last whole record (a record longer than that grows its piece).
 * Each read goes after the carried-over part in one buffer. A piece that holds no whole record
 * yet (a long record, a quote left open) keeps its buffer and grows it (`grownBuffer`), and the
 * search for a record end goes on where it stopped: each byte is copied and read a bounded number
 * of times, however long the record. With `reuse`, the consumer keeps nothing of a piece once
 * `visit` returns, and two buffers take turns (no fresh memory per piece); without it, each
 * piece has a buffer of its own (worker threads hold pieces).
 */
function forEachPiece(
  fd: number,
  quoted: boolean,
  visit: (bytes: Buffer, firstLine: number, isFirst: boolean) => void,
  reuse: boolean,
  piece = PIECE_BYTES,
): void {
  let spare: Buffer | undefined;
  let buffer: Buffer = Buffer.alloc(0);
  let filled = 0;
  const scan: RecordScan = { scanned: 0, quotes: 0 };
  let line = 1;
  let first = true;
  let offset = 0;
  for (;;) {
    if (buffer.length - filled < PIECE_BYTES) {
      buffer = grownBuffer(fd, buffer, filled, offset, quoted, piece);
    }
    const bytes = readSync(fd, buffer, filled, Math.min(piece, buffer.length - filled), null);
    offset += bytes;
    const data = buffer.subarray(0, filled + bytes);
    const final = bytes === 0;
    const end = final ? data.length : lastRecordEnd(data, quoted, scan);
    filled = data.length;
    if (end === -1) continue;
    const records = data.subarray(0, end);
    visit(records, line, first);
    first = false;
    if (final) return;
    line += countLines(records, quoted);
    // The rest goes to the start of the next buffer: the spare one, or a fresh one.
    const carry = data.subarray(end);
    let next: Buffer;
    if (carry.length >= LONG_RECORD_BYTES) {
      // A long record's start: its buffer grows to hold it at once (no piece-sized step).
      next = grownBuffer(fd, carry, carry.length, offset, quoted, piece);
    } else {
      next =
        spare !== undefined && spare.length >= carry.length + piece
          ? spare
          : Buffer.allocUnsafe(carry.length + piece);
      carry.copy(next, 0);
    }
    spare = reuse ? buffer : undefined;
    buffer = next;
    filled = carry.length;
    scan.scanned = 0;
    scan.quotes = 0;
  }
}

/**
 * A large JSON file, read element by element when it is an array (see json-array-stream.ts),
 * else whole. A broken array is refused by the streamed reader itself, with the error the
 * whole reader names; only in a case it cannot name (the rest of the file is JSON to
 * lossless-json but not to V8) is the file read whole, which must refuse it. The rows handed
 * over before are then the caller's to discard.
 */
function readLargeJson(
  fd: number,
  size: number,
  onRows: (rows: HookRow[]) => void,
  native: JsonlPieceSink | undefined,
): void {
  let handedOver = false;
  try {
    readJsonArrayPieces(
      fd,
      arrayPieceBytes(),
      (rows) => {
        handedOver = true;
        onRows(rows);
      },
      native &&
        ((elements, cuts) => {
          const taken = isUtf8(elements) && native.take(elements, 1, true, cuts);
          handedOver ||= taken;
          return taken;
        }),
      native?.scanArray && nativeArrayScan(native.scanArray),
    );
    return;
  } catch (error) {
    if (!(error instanceof NotStreamable)) throw error;
    const rows: HookRow[] = [];
    jsonRows(pieceText(readWhole(fd, size), 1, true), null, rows);
    if (handedOver) {
      throw new Error(`the streamed JSON reader stopped (${error.message}) on a file JSON reads`);
    }
    onRows(rows);
  }
}

/**
 * Bytes a JSON array is read at a time, and the size above which a JSON file is read so:
 * `PIECE_BYTES`, or what `DIRQ_JSON_ARRAY_PIECE_BYTES` says. Only tests set it: a few bytes
 * make a small array read element by element, cut at every element and inside every string.
 */
function arrayPieceBytes(): number {
  return bytesSetFor("DIRQ_JSON_ARRAY_PIECE_BYTES", PIECE_BYTES);
}

/** A size in bytes from the environment variable `name` (set only by tests), or `otherwise`. */
function bytesSetFor(name: string, otherwise: number): number {
  const set = Number(process.env[name]);
  return Number.isInteger(set) && set > 0 ? set : otherwise;
}

const NATIVE_JSONL_PIECE_BYTES = 4 * PIECE_BYTES;

/**
 * Bytes a JSON Lines file is read at a time when its pieces go to the native reader
 * (`JsonlPieceSink`), or what `DIRQ_JSONL_PIECE_BYTES` says (only tests set it). Larger than
 * `PIECE_BYTES`: the native reader cuts each piece into ranges that its helper threads parse
 * while SQLite's thread inserts, and at each piece's end that overlap stops (the last range's
 * rows are inserted, the next piece read and bound, the threads started again); fewer, larger
 * pieces keep the helpers busy longer for the same memory bound (a few pieces' bytes).
 */
function nativeJsonlPieceBytes(): number {
  return bytesSetFor("DIRQ_JSONL_PIECE_BYTES", NATIVE_JSONL_PIECE_BYTES);
}

/** CSV and TSV files from this size on are parsed on worker threads (see csv-workers.ts). */
export const THREADED_BYTES = 8 * PIECE_BYTES;

/**
 * Reads `absolute` (its name relative to the root is `path`) and hands its rows to `onRows`,
 * once for a one-document file, once per piece for a large record-per-line file. With
 * `records`, a CSV or TSV file's records are handed there instead: unparsed to its
 * `csvPieces`, else parsed without a `Map` per row to its `onRecords` (a large file on worker
 * threads). Throws a `RowsError` for a file that cannot be read or breaks a rule of its format:
 * rows already handed over are the caller's to discard.
 */
export function readFileRows(
  format: FormatName,
  each: string | null,
  absolute: string,
  path: string,
  onRows: (rows: HookRow[]) => void,
  records?: RecordSinks,
): void {
  const chosen = fileFormat(format, each, path);
  const read = pieceReader(chosen, each, { onRows, records });
  const onRecords = records?.csvPieces === undefined ? records?.onRecords : undefined;
  let fd: number;
  try {
    fd = openSync(absolute, "r");
  } catch (error) {
    throw new RowsError(`cannot read the file: ${(error as Error).message}`);
  }
  try {
    const size = fstatSync(fd).size;
    const csv = chosen === "csv" || chosen === "tsv";
    if (chosen === "json" && each === null && size > arrayPieceBytes()) {
      readLargeJson(fd, size, onRows, records?.jsonlPieces);
    } else if (!(csv || chosen === "jsonl") || size <= PIECE_BYTES) {
      read(readWhole(fd, size), 1, true);
    } else if (csv && onRecords !== undefined && size >= THREADED_BYTES) {
      readPiecesOnThreads(
        (visit) => forEachPiece(fd, true, visit, false),
        chosen === "csv" ? "," : "\t",
        (reader, bytes, firstLine, isFirst) => {
          const batch = reader.piece(pieceBytes(bytes, firstLine, isFirst), firstLine);
          if (batch !== null) onRecords(batch);
        },
        onRecords,
        records?.textNames,
      );
    } else if (chosen === "jsonl" && each === null && records?.jsonlPieces !== undefined) {
      forEachPiece(fd, false, read, true, nativeJsonlPieceBytes());
    } else {
      forEachPiece(fd, chosen !== "jsonl", read, true);
    }
  } catch (error) {
    if (error instanceof RowsError) throw error;
    // A system call's failure (the file went, a read error) is this file's; anything else
    // (an error of `onRows`, such as a constraint the rows break) is the caller's.
    if (typeof (error as NodeJS.ErrnoException).syscall === "string") {
      throw new RowsError(`cannot read the file: ${(error as Error).message}`);
    }
    throw error;
  } finally {
    closeSync(fd);
  }
}
