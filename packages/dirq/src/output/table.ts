import stringWidth from "string-width";
import type { SqlValue } from "../shared/sql-value.js";
import { escapeControlCharacters } from "./escape.js";

/** Cells longer than this many characters are cut, ending in an ellipsis. */
export const MAX_CELL_CHARACTERS = 60;

export { escapeControlCharacters };

function truncate(text: string): string {
  // A string of at most this many UTF-16 units has at most as many characters: nothing to cut,
  // and no need to split it into characters (most cells).
  if (text.length <= MAX_CELL_CHARACTERS) return text;
  const characters = Array.from(text);
  if (characters.length <= MAX_CELL_CHARACTERS) return text;
  return `${characters.slice(0, MAX_CELL_CHARACTERS - 1).join("")}…`;
}

/** One value as a table cell: `NULL` spelled out, BLOB as hex, escaped and truncated. */
export function cellText(value: SqlValue | undefined): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "string") return truncate(escapeControlCharacters(value));
  if (Buffer.isBuffer(value)) return truncate(value.toString("hex"));
  return truncate(String(value));
}

/** Printable ASCII only: one column per character. Cells have no control characters left. */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * Columns `text` takes on a terminal. Measured, string-width was where a table's time went
 * (most cells are ASCII, for which it is the length): it is asked only about the rest.
 */
export function displayWidth(text: string): number {
  return PRINTABLE_ASCII.test(text) ? text.length : stringWidth(text);
}

function isNumeric(value: SqlValue | undefined): boolean {
  return typeof value === "bigint" || typeof value === "number";
}

/** Output is yielded in pieces of about this many characters. */
const CHUNK_SIZE = 64 * 1024;

/**
 * The result as an aligned text table: header, a rule of dashes, one line per row (numbers
 * right-aligned, everything else left-aligned), then `(N rows)`. Widths need every row, so
 * the rows are held (they are read once, lazily, from SQLite); a first pass measures the
 * columns, a second writes the lines, yielded in chunks: the table never exists as one string,
 * so its size is limited only by the memory the held rows take.
 */
export function* tableChunks(
  columns: readonly string[],
  rows: Iterable<SqlValue[]>,
): Generator<string> {
  const header = columns.map((name) => truncate(escapeControlCharacters(name)));
  const widths = header.map(displayWidth);
  const held: SqlValue[][] = [];
  for (const row of rows) {
    held.push(row);
    for (let i = 0; i < widths.length; i++) {
      const width = displayWidth(cellText(row[i]));
      if (width > (widths[i] as number)) widths[i] = width;
    }
  }
  const spaces = " ".repeat(Math.max(0, ...widths));
  const line = (cells: readonly string[], rightAligned: (i: number) => boolean): string => {
    let text = "";
    for (let i = 0; i < cells.length; i++) {
      const cell = cells[i] as string;
      const fill = spaces.slice(0, Math.max(0, (widths[i] as number) - displayWidth(cell)));
      if (i > 0) text += "  ";
      text += rightAligned(i) ? fill + cell : cell + fill;
    }
    return `${text.trimEnd()}\n`;
  };
  let chunk = "";
  if (columns.length > 0) {
    chunk += line(header, () => false);
    chunk += line(
      widths.map((width) => "-".repeat(width)),
      () => false,
    );
    const cells: string[] = new Array<string>(columns.length);
    for (let r = 0; r < held.length; r++) {
      const row = held[r] as SqlValue[];
      for (let i = 0; i < cells.length; i++) cells[i] = cellText(row[i]);
      chunk += line(cells, (i) => isNumeric(row[i]));
      // Let go of each row once written: the rows printed need no memory any more.
      held[r] = EMPTY_ROW;
      if (chunk.length >= CHUNK_SIZE) {
        yield chunk;
        chunk = "";
      }
    }
  }
  yield `${chunk}(${held.length} ${held.length === 1 ? "row" : "rows"})\n`;
}

const EMPTY_ROW: SqlValue[] = [];

/** The whole table as one string: for small results (tests, short answers). */
export function renderTable(columns: readonly string[], rows: Iterable<SqlValue[]>): string {
  return Array.from(tableChunks(columns, rows)).join("");
}
