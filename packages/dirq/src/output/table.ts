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
 * Characters that are each a grapheme of their own whatever follows them (no combining marks,
 * joiners, variation selectors, emoji or surrogates): Latin, Greek, Cyrillic, and CJK
 * ideographs, kana, Hangul syllables and full-width forms. `©` and `®` (emoji-capable) and
 * the soft hyphen are left out. A unit test checks every one of them against string-width.
 */
const SIMPLE_TEXT =
  /^[\x20-\x7e\u00a0-\u00a8\u00aa-\u00ac\u00af-\u02ff\u0370-\u0482\u048a-\u052f\u3001-\u3029\u3030-\u303e\u3041-\u3096\u309b-\u30ff\u4e00-\u9fff\uac00-\ud7a3\uff01-\uff60]*$/;
/** The characters of SIMPLE_TEXT that take two columns. */
const WIDE_CHARACTER =
  /[\u3001-\u3029\u3030-\u303e\u3041-\u3096\u309b-\u30ff\u4e00-\u9fff\uac00-\ud7a3\uff01-\uff60]/g;

/**
 * Columns `text` takes on a terminal. Measured, string-width was where a table's time went
 * (it segments every string into graphemes): printable ASCII is its length, text of
 * characters that never combine is its length plus one per wide character, and only other
 * text goes through string-width.
 */
export function displayWidth(text: string): number {
  if (PRINTABLE_ASCII.test(text)) return text.length;
  if (SIMPLE_TEXT.test(text)) return text.length + (text.match(WIDE_CHARACTER)?.length ?? 0);
  return stringWidth(text);
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
  // Each cell's width, kept for the second pass (a cell is at most 60 characters of at most
  // two columns each: a byte holds it).
  const cellWidths: Uint8Array[] = [];
  for (const row of rows) {
    held.push(row);
    const measured = new Uint8Array(widths.length);
    for (let i = 0; i < widths.length; i++) {
      const width = displayWidth(cellText(row[i]));
      measured[i] = width;
      if (width > (widths[i] as number)) widths[i] = width;
    }
    cellWidths.push(measured);
  }
  const spaces = " ".repeat(Math.max(0, ...widths));
  const line = (
    cells: readonly string[],
    cellWidth: (i: number) => number,
    rightAligned: (i: number) => boolean,
  ): string => {
    let text = "";
    for (let i = 0; i < cells.length; i++) {
      const cell = cells[i] as string;
      const fill = spaces.slice(0, Math.max(0, (widths[i] as number) - cellWidth(i)));
      if (i > 0) text += "  ";
      text += rightAligned(i) ? fill + cell : cell + fill;
    }
    return `${text.trimEnd()}\n`;
  };
  let chunk = "";
  if (columns.length > 0) {
    const headerWidths = header.map(displayWidth);
    chunk += line(
      header,
      (i) => headerWidths[i] as number,
      () => false,
    );
    chunk += line(
      widths.map((width) => "-".repeat(width)),
      (i) => widths[i] as number,
      () => false,
    );
    const cells: string[] = new Array<string>(columns.length);
    for (let r = 0; r < held.length; r++) {
      const row = held[r] as SqlValue[];
      for (let i = 0; i < cells.length; i++) cells[i] = cellText(row[i]);
      const measured = cellWidths[r] as Uint8Array;
      chunk += line(
        cells,
        (i) => measured[i] as number,
        (i) => isNumeric(row[i]),
      );
      // Let go of each row once written: the rows printed need no memory any more.
      held[r] = EMPTY_ROW;
      cellWidths[r] = NO_WIDTHS;
      if (chunk.length >= CHUNK_SIZE) {
        yield chunk;
        chunk = "";
      }
    }
  }
  yield `${chunk}(${held.length} ${held.length === 1 ? "row" : "rows"})\n`;
}

const EMPTY_ROW: SqlValue[] = [];
const NO_WIDTHS = new Uint8Array(0);

/** The whole table as one string: for small results (tests, short answers). */
export function renderTable(columns: readonly string[], rows: Iterable<SqlValue[]>): string {
  return Array.from(tableChunks(columns, rows)).join("");
}
