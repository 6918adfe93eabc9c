import type * as CsvParseSync from "csv-parse/sync";
import { lazyModule } from "../../lazy-module.js";
import type { HookRow, StoredValue } from "../hook-rows.js";
import { INTERNAL_PREFIX } from "../../shared/reserved-names.js";
import { foldName } from "../../shared/sql-names.js";
import { RowsError } from "./document-rows.js";

const csvParse = lazyModule<typeof CsvParseSync>("csv-parse/sync");

/**
 * CSV and TSV (RFC 4180, quoted fields may hold newlines and delimiters), parsed by csv-parse.
 * The first record is the header. Every field keeps its text unless it is a number literal as
 * JSON writes one (see `fieldValue`); an empty field is NULL, quoted or not, as DuckDB's
 * `read_csv` reads it by default.
 */

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

const MINUS = 45;
const DOT = 46;
const ZERO = 48;
const NINE = 57;
const PLUS = 43;
const LOWER_E = 101;
const UPPER_E = 69;

/** Where the run of ASCII digits in `text` that starts at `at` ends. */
function digitsEnd(text: string, at: number): number {
  while (at < text.length) {
    const code = text.charCodeAt(at);
    if (code < ZERO || code > NINE) break;
    at++;
  }
  return at;
}

/** What a field is stored as (see `fieldKind`). */
export const enum FieldKind {
  Null = 0,
  Text = 1,
  /** An integer literal of fewer than 16 characters: exact as a double too. */
  Integer = 2,
  /** An integer literal of 16 characters or more: exact within 64 bits, else REAL. */
  LongInteger = 3,
  Real = 4,
}

/**
 * What a field is stored as: NULL when empty; INTEGER for an integer as JSON writes one
 * (`-?(0|[1-9][0-9]*)`: no `+`, no leading zero, so `007` stays text); REAL for a real literal
 * (`-?((0|[1-9][0-9]*)(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?`: `1.5`, `.5`, `1e3`, `-2.`);
 * anything else TEXT, as written. Read a character at a time: this runs for every field.
 */
export function fieldKind(field: string): FieldKind {
  const length = field.length;
  if (length === 0) return FieldKind.Null;
  let at = field.charCodeAt(0) === MINUS ? 1 : 0;
  const whole = at;
  const first = field.charCodeAt(at);
  if (first === ZERO) at++;
  else if (first > ZERO && first <= NINE) at = digitsEnd(field, at + 1);
  const wholeDigits = at - whole;
  if (at === length) {
    if (wholeDigits === 0) return FieldKind.Text;
    return length < 16 ? FieldKind.Integer : FieldKind.LongInteger;
  }
  let code = field.charCodeAt(at);
  if (code === DOT) {
    const fraction = at + 1;
    at = digitsEnd(field, fraction);
    // `.` and `-.` have no digit at all; `.e5` none before its exponent.
    if (wholeDigits === 0 && at === fraction) return FieldKind.Text;
    if (at === length) return FieldKind.Real;
    code = field.charCodeAt(at);
  } else if (wholeDigits === 0) {
    return FieldKind.Text;
  }
  if (code !== LOWER_E && code !== UPPER_E) return FieldKind.Text;
  at++;
  const sign = field.charCodeAt(at);
  if (sign === PLUS || sign === MINUS) at++;
  const exponent = at;
  at = digitsEnd(field, exponent);
  return at === exponent || at !== length ? FieldKind.Text : FieldKind.Real;
}

/** A long integer literal: exact within 64 bits, else the nearest double (REAL). */
export function longIntegerValue(field: string): StoredValue {
  const exact = BigInt(field);
  return exact >= INT64_MIN && exact <= INT64_MAX ? exact : Number(field);
}

/** A field as stored (see `fieldKind`). */
export function fieldValue(field: string): StoredValue {
  switch (fieldKind(field)) {
    case FieldKind.Null:
      return null;
    case FieldKind.Text:
      return field;
    case FieldKind.Integer:
      return BigInt(field);
    case FieldKind.LongInteger:
      return longIntegerValue(field);
    case FieldKind.Real:
      // Past the double range (`1e400`) it is ±Infinity, as DuckDB and SQLite read it.
      return Number(field);
  }
}

/**
 * Column names from the header record: an empty name is `column<i>` (its 0-based position), a
 * name already taken (compared as SQLite compares names, ignoring ASCII case) gets `_1`, `_2`,
 * ... as DuckDB's `read_csv` names them.
 */
export function headerNames(record: readonly string[]): string[] {
  const taken = new Set<string>();
  /** Suffixes handed out per name (folded): a repeat takes the next one. */
  const suffixes = new Map<string, number>();
  const unique = (name: string): string => {
    const folded = foldName(name);
    if (!taken.has(folded)) {
      taken.add(folded);
      return name;
    }
    const suffix = (suffixes.get(folded) ?? 0) + 1;
    suffixes.set(folded, suffix);
    // A name already taken gets a suffix of its own: `a,a_1,a` is `a, a_1, a_1_1`.
    return unique(`${name}_${suffix}`);
  };
  return record.map((field, i) => unique(field === "" ? `column${i}` : field));
}

/**
 * A piece's records without a `Map` per row: `count` records of `names.length` values each,
 * one after another in `values`, in the header's order. `names` are the header's (dirq's own
 * names among them are a consumer's to leave out, see `isOwnName`).
 */
export interface RecordBatch {
  names: readonly string[];
  values: StoredValue[];
  count: number;
}

/**
 * Records packed to move between threads in a few buffers rather than one object per value: per
 * value its kind, its number (`Integer`, `Real`), and where its text ends in `text` (`Text`,
 * `LongInteger`; it starts where the value before it ends).
 */
export interface PackedRecords {
  count: number;
  kinds: Uint8Array;
  numbers: Float64Array;
  ends: Uint32Array;
  text: string;
}

/** Packed records' values as stored, as `CsvReader.piece` gives them. */
export function unpackRecords(packed: PackedRecords): StoredValue[] {
  const { kinds, numbers, ends, text } = packed;
  const values = new Array<StoredValue>(kinds.length);
  let start = 0;
  for (let at = 0; at < kinds.length; at++) {
    switch (kinds[at] as FieldKind) {
      case FieldKind.Null:
        values[at] = null;
        break;
      case FieldKind.Text:
        values[at] = text.slice(start, (start = ends[at] as number));
        break;
      case FieldKind.Integer:
        values[at] = BigInt(numbers[at] as number);
        break;
      case FieldKind.LongInteger:
        values[at] = longIntegerValue(text.slice(start, (start = ends[at] as number)));
        break;
      case FieldKind.Real:
        values[at] = numbers[at] as number;
        break;
    }
  }
  return values;
}

/** Whether a header name is in dirq's namespace (its hidden columns): never a file's column. */
export function isOwnName(name: string): boolean {
  return name.charCodeAt(0) === 95 && INTERNAL_PREFIX.test(name);
}

/** A batch's records as rows (column name → value), dirq's own names left out. */
export function batchRows(batch: RecordBatch): HookRow[] {
  const { names, values, count } = batch;
  const width = names.length;
  const kept = names.map((name) => !isOwnName(name));
  const rows: HookRow[] = [];
  for (let r = 0; r < count; r++) {
    const row: HookRow = new Map();
    for (let i = 0; i < width; i++) {
      if (kept[i]) row.set(names[i] as string, values[r * width + i] as StoredValue);
    }
    rows.push(row);
  }
  return rows;
}

interface CsvFailure {
  code?: string;
  lines?: number;
  message: string;
}

/** A csv-parse error as the reason a file is skipped, its line counted from the file's start. */
function csvReason(error: CsvFailure, lineOffset: number): string {
  const line = lineOffset + (error.lines ?? 1);
  switch (error.code) {
    case "INVALID_OPENING_QUOTE": {
      const value = /value is (".*")$/.exec(error.message)?.[1] ?? "";
      return `line ${line}: a quote inside an unquoted field ${value}: quote the whole field and double the quotes inside it`;
    }
    case "CSV_INVALID_CLOSING_QUOTE": {
      const text = /got (".*?") at line/.exec(error.message)?.[1] ?? "";
      return `line ${line}: text ${text} after a closing quote: a quoted field ends at its closing quote`;
    }
    case "CSV_QUOTE_NOT_CLOSED":
      return `line ${line}: a quoted field is still open at the end of the file (a missing closing quote, or a file cut short)`;
    default:
      return `line ${line}: ${error.message.replace(/ at line \d+|,? on line \d+/, "")}`;
  }
}

/**
 * Reads one CSV or TSV file, a piece at a time (pieces end between records). A reader made with
 * the file's header names reads a piece from the middle of the file (one a worker thread reads).
 */
export class CsvReader {
  private readonly options: CsvParseSync.Options;
  /** Per header field: whether it is kept as its text (see `textNames`); set with the header. */
  private asText: boolean[] | null = null;

  /**
   * `textNames`: the columns (names folded as SQLite compares them) whose fields are stored as
   * written, however they read (a schema's TEXT columns: sqlite3's `.import` keeps `1.50` as
   * it is written in one); an empty field is NULL still.
   */
  constructor(
    delimiter: "," | "\t",
    private header: string[] | null = null,
    private readonly textNames: readonly string[] = [],
  ) {
    this.options = {
      delimiter,
      record_delimiter: ["\r\n", "\n", "\r"],
      quote: '"',
      escape: '"',
      skip_empty_lines: true,
      relax_column_count: true,
    };
  }

  /** The header's names, once the first piece is read. */
  get names(): readonly string[] | null {
    return this.header;
  }

  /**
   * Reads the header record from `input` (UTF-8 bytes without a byte-order mark), whose first
   * line is line `firstLine` of the file: the byte offset where the records after it start, or
   * `null` when `input` holds no record. The records themselves are left for another reader
   * (the native one) to parse. Throws a `RowsError` for a header that breaks a rule.
   */
  readHeader(input: Buffer, firstLine: number): number | null {
    let header: string[] | null = null;
    let end = 0;
    try {
      csvParse().parse(input, {
        ...this.options,
        to: 1,
        on_record: (record: string[], context: { bytes: number }) => {
          header = record;
          end = context.bytes;
          return record;
        },
      });
    } catch (error) {
      throw new RowsError(csvReason(error as CsvFailure, firstLine - 1));
    }
    if (header === null) return null;
    this.header = headerNames(header);
    return end;
  }

  /**
   * The records in `input` (UTF-8 bytes without a byte-order mark, or text), whose first line is
   * line `firstLine` of the file, each with as many fields as the header; the header itself
   * left out. Throws a `RowsError` naming the line of the first record that breaks a rule.
   */
  private records(input: Buffer | string, firstLine: number): string[][] {
    const offset = firstLine - 1;
    let records: string[][];
    try {
      records = csvParse().parse(input, this.options);
    } catch (error) {
      throw new RowsError(csvReason(error as CsvFailure, offset));
    }
    let first = 0;
    if (this.header === null) {
      if (records.length === 0) return records;
      this.header = headerNames(records[0] as string[]);
      first = 1;
    }
    const width = this.header.length;
    for (let r = first; r < records.length; r++) {
      const fields = (records[r] as string[]).length;
      if (fields !== width) {
        throw new RowsError(
          `line ${offset + this.recordLine(input, r)}: ${fields} field${fields === 1 ? "" : "s"}, but the header has ${width}`,
        );
      }
    }
    return first === 0 ? records : records.slice(first);
  }

  /** Which header fields are kept as their text (none without `textNames`). */
  private textFields(): boolean[] | null {
    if (this.textNames.length === 0 || this.header === null) return null;
    const names = new Set(this.textNames);
    this.asText ??= this.header.map((name) => names.has(foldName(name)));
    return this.asText;
  }

  /** The records in `input` (see `records`) with their values as stored; `null` for none. */
  piece(input: Buffer | string, firstLine: number): RecordBatch | null {
    const records = this.records(input, firstLine);
    const names = this.header;
    if (records.length === 0 || names === null) return null;
    const width = names.length;
    const values = new Array<StoredValue>(records.length * width);
    const asText = this.textFields();
    let at = 0;
    for (const record of records) {
      for (let i = 0; i < width; i++) {
        const field = record[i] as string;
        values[at++] = asText?.[i] === true && field !== "" ? field : fieldValue(field);
      }
    }
    return { names, values, count: records.length };
  }

  /** The records in `input` (see `records`) packed to move to another thread; `null` for none. */
  packedPiece(input: Buffer | string, firstLine: number): PackedRecords | null {
    const records = this.records(input, firstLine);
    const width = this.header?.length ?? 0;
    if (records.length === 0) return null;
    const total = records.length * width;
    const kinds = new Uint8Array(total);
    const numbers = new Float64Array(total);
    const ends = new Uint32Array(total);
    // Appended, not joined: V8 keeps the appends as a rope and flattens it once, several times
    // faster than `join` over a piece's tens of thousands of fields.
    let text = "";
    let at = 0;
    const asText = this.textFields();
    for (const record of records) {
      for (let i = 0; i < width; i++, at++) {
        const field = record[i] as string;
        const kind = asText?.[i] === true && field !== "" ? FieldKind.Text : fieldKind(field);
        kinds[at] = kind;
        if (kind === FieldKind.Integer || kind === FieldKind.Real) numbers[at] = Number(field);
        else if (kind !== FieldKind.Null) text += field;
        ends[at] = text.length;
      }
    }
    return { count: records.length, kinds, numbers, ends, text };
  }

  /**
   * The line (in `input`) where record `index` ends: asked of csv-parse again only for a record
   * that breaks a rule, since counting lines for every record is a large part of the parse.
   */
  private recordLine(input: Buffer | string, index: number): number {
    const bytes = typeof input === "string" ? Buffer.from(input) : input;
    let end = bytes.length;
    csvParse().parse(bytes, {
      ...this.options,
      to: index + 1,
      on_record: (record: string[], context: { bytes: number }) => {
        end = context.bytes;
        return record;
      },
    });
    // Line breaks before the record's own: CRLF, LF and a lone CR each end one line.
    const before = bytes
      .subarray(0, end)
      .toString("latin1")
      .replace(/(\r\n|\n|\r)$/, "");
    return 1 + (before.match(/\r\n|\n|\r/g)?.length ?? 0);
  }
}
