import { csvRecord } from "../src/output/csv-field.js";
import { type Cell, ExactNumber } from "./api.js";

/** Cells longer than this are cut in the table; the full value is on hover and on click. */
export const CELL_PREVIEW_CHARS = 200;

/** The text of a value as the table shows it (`null` is shown apart, see `isNull`). */
export function cellText(value: Cell | undefined): string {
  if (value === null || value === undefined) return "NULL";
  if (value instanceof ExactNumber) return value.digits;
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

export function isNull(value: Cell | undefined): boolean {
  return value === null || value === undefined;
}

export function isNumeric(value: Cell | undefined): boolean {
  return typeof value === "number" || value instanceof ExactNumber;
}

/**
 * One line of preview: control characters shown as the CLI's table format shows them
 * (`\n`, `\t`, `\u{..}`), then cut to `CELL_PREVIEW_CHARS`. CSS cuts it further to the column.
 */
export function previewText(text: string): string {
  const escaped = text.replace(/[\u0000-\u001f\u007f]/g, (char) => {
    if (char === "\n") return "\\n";
    if (char === "\t") return "\\t";
    if (char === "\r") return "\\r";
    return `\\u{${char.charCodeAt(0).toString(16)}}`;
  });
  return escaped.length > CELL_PREVIEW_CHARS ? `${escaped.slice(0, CELL_PREVIEW_CHARS)}…` : escaped;
}

/** Whether the preview hides part of the value (then the cell offers the full value). */
export function isCut(text: string): boolean {
  return text.length > 40 || /[\u0000-\u001f\u007f]/.test(text);
}

export interface FieldChange {
  column: string;
  before: string;
  after: string;
}

/** The columns whose values differ between `old` and `next` (an update's compact diff). */
export function changedFields(
  old: Record<string, Cell>,
  next: Record<string, Cell>,
): FieldChange[] {
  const columns = new Set([...Object.keys(old), ...Object.keys(next)]);
  const changes: FieldChange[] = [];
  for (const column of columns) {
    const before = cellText(old[column]);
    const after = cellText(next[column]);
    if (before !== after || isNull(old[column]) !== isNull(next[column])) {
      changes.push({ column, before, after });
    }
  }
  return changes;
}

/** A short `key=value, ...` summary of a row, cut to `maxChars`. */
export function rowSummary(row: Record<string, Cell>, maxChars = 160): string {
  const text = Object.entries(row)
    .map(([column, value]) => `${column}=${previewText(cellText(value))}`)
    .join(", ");
  return text.length > maxChars ? `${text.slice(0, maxChars)}…` : text;
}

/** `1234567` → `1,234,567` (the page is English). */
export function count(n: number): string {
  return n.toLocaleString("en-US");
}

export function milliseconds(ms: number): string {
  return ms < 10
    ? `${ms.toFixed(1)} ms`
    : ms < 10_000
      ? `${Math.round(ms)} ms`
      : `${(ms / 1000).toFixed(1)} s`;
}

/** Columns whose whole numbers are Unix times in seconds (the path-tables' stat columns). */
const TIME_COLUMNS = /^(mtime|ctime)$/i;

/**
 * A readable local date for a Unix time in a `mtime`/`ctime` column (`2026-11-23 13:17:45`);
 * `null` for any other column or value, which shows as it is.
 */
export function readableTime(column: string, value: Cell | undefined): string | null {
  if (!TIME_COLUMNS.test(column) || typeof value !== "number" || !Number.isFinite(value)) {
    return null;
  }
  const date = new Date(value * 1000);
  if (Number.isNaN(date.getTime())) return null;
  const two = (n: number) => String(n).padStart(2, "0");
  const year = date.getFullYear();
  if (year < 1 || year > 9999) return null;
  return `${String(year).padStart(4, "0")}-${two(date.getMonth() + 1)}-${two(date.getDate())} ${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
}

/** SQLite's order of storage classes: NULL, then numbers, then text (then anything else). */
function storageRank(value: Cell | undefined): number {
  if (isNull(value)) return 0;
  if (isNumeric(value)) return 1;
  if (typeof value === "string") return 2;
  return 3;
}

/** UTF-16 code units reordered so that comparing them compares code points (as UTF-8 bytes do). */
function codePointOrder(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

/** Strings in SQLite's BINARY order: by their UTF-8 bytes, which is code point order. */
export function compareText(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointOrder(x) - codePointOrder(y);
  }
  return a.length - b.length;
}

function compareNumbers(a: number | ExactNumber, b: number | ExactNumber): number {
  if (typeof a === "number" && typeof b === "number") return a < b ? -1 : a > b ? 1 : 0;
  // At least one exact integer beyond 2^53: compare exactly when both are whole.
  const whole = (n: number | ExactNumber) => typeof n !== "number" || Number.isInteger(n);
  if (whole(a) && whole(b)) {
    const x = BigInt(typeof a === "number" ? a : a.digits);
    const y = BigInt(typeof b === "number" ? b : b.digits);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  const x = Number(String(a));
  const y = Number(String(b));
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Two cells in the order SQLite's `ORDER BY` puts them (BINARY collation). */
export function compareCells(a: Cell | undefined, b: Cell | undefined): number {
  const rank = storageRank(a) - storageRank(b);
  if (rank !== 0) return rank;
  if (isNull(a)) return 0;
  if (isNumeric(a)) return compareNumbers(a as number | ExactNumber, b as number | ExactNumber);
  return compareText(cellText(a), cellText(b));
}

/**
 * The rows as CSV with a header line, as `sqlite3 -csv -header` writes them and as
 * `dirq --format csv` does (one encoder, src/output/csv-field.ts), so a spreadsheet or a
 * script reads all three the same way.
 */
export function toCsv(columns: readonly string[], rows: readonly Cell[][]): string {
  const fields = (row: readonly Cell[]) =>
    row.map((value) => (isNull(value) ? null : cellText(value)));
  return [columns, ...rows.map(fields)].map((record) => csvRecord(record)).join("");
}

function jsonCell(value: Cell | undefined): string {
  if (value === undefined || value === null) return "null";
  if (value instanceof ExactNumber) return value.digits;
  return JSON.stringify(value);
}

/**
 * The rows as dirq writes JSON (`dirq --format json`, the server's answer): an array of
 * objects with keys in column order, a repeated column name repeated as a key.
 */
export function toJsonText(columns: readonly string[], rows: readonly Cell[][]): string {
  const keys = columns.map((name) => `${JSON.stringify(name)}:`);
  const objects = rows.map(
    (row) => `{${keys.map((key, index) => `${key}${jsonCell(row[index])}`).join(",")}}`,
  );
  return `[${objects.join(",")}]\n`;
}
