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
 * string-width, for the text the fast paths leave to it, loaded when a table first has such a
 * cell: loading it makes an `Intl.Segmenter`, and loading ICU's segmentation data is a large
 * part of a start that prints a table, for text that is nearly always ASCII.
 */
let stringWidth: ((text: string) => number) | undefined;

async function loadStringWidth(): Promise<(text: string) => number> {
  stringWidth ??= (await import("./string-width.js")).stringWidth;
  return stringWidth;
}

/**
 * What quickWidth leaves to string-width. Past any real width: a cell is at most 60
 * characters of at most two columns each, so widths fit a byte with this to spare.
 */
const UNMEASURED = 255;

/**
 * Columns `text` takes on a terminal, when it is printable ASCII (its length) or text of
 * characters that never combine (its length plus one per wide character); `UNMEASURED`
 * otherwise. string-width is costly (it segments every string into graphemes): only other
 * text goes through it.
 */
function quickWidth(text: string): number {
  if (PRINTABLE_ASCII.test(text)) return text.length;
  if (SIMPLE_TEXT.test(text)) return text.length + (text.match(WIDE_CHARACTER)?.length ?? 0);
  return UNMEASURED;
}

/** Columns `text` takes on a terminal. */
export async function displayWidth(text: string): Promise<number> {
  const width = quickWidth(text);
  return width === UNMEASURED ? (await loadStringWidth())(text) : width;
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
export async function* tableChunks(
  columns: readonly string[],
  rows: Iterable<SqlValue[]>,
): AsyncGenerator<string> {
  const header = columns.map((name) => truncate(escapeControlCharacters(name)));
  const headerWidths = header.map(quickWidth);
  let unmeasured = headerWidths.includes(UNMEASURED);
  const widths = headerWidths.map((width) => (width === UNMEASURED ? 0 : width));
  const held: SqlValue[][] = [];
  // Each cell's width, kept for the second pass (a cell is at most 60 characters of at most
  // two columns each: a byte holds it). The rows are read in one pass with nothing awaited,
  // as before the answer was a table: string-width is loaded after it when a cell needs it.
  const cellWidths: Uint8Array[] = [];
  for (const row of rows) {
    held.push(row);
    const measured = new Uint8Array(widths.length);
    for (let i = 0; i < widths.length; i++) {
      const width = quickWidth(cellText(row[i]));
      measured[i] = width;
      if (width === UNMEASURED) unmeasured = true;
      else if (width > (widths[i] as number)) widths[i] = width;
    }
    cellWidths.push(measured);
  }
  if (unmeasured) await measureTheRest(header, headerWidths, held, cellWidths, widths);
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

/** Measures what quickWidth left (header names and cells) with string-width, and widens columns. */
async function measureTheRest(
  header: readonly string[],
  headerWidths: number[],
  held: readonly SqlValue[][],
  cellWidths: readonly Uint8Array[],
  widths: number[],
): Promise<void> {
  const width = await loadStringWidth();
  const widen = (i: number, measured: number) => {
    if (measured > (widths[i] as number)) widths[i] = measured;
  };
  header.forEach((name, i) => {
    if (headerWidths[i] !== UNMEASURED) return;
    headerWidths[i] = width(name);
    widen(i, headerWidths[i] as number);
  });
  held.forEach((row, r) => {
    const measured = cellWidths[r] as Uint8Array;
    for (let i = 0; i < measured.length; i++) {
      if (measured[i] !== UNMEASURED) continue;
      measured[i] = width(cellText(row[i]));
      widen(i, measured[i] as number);
    }
  });
}

/** The whole table as one string: for small results (tests, short answers). */
export async function renderTable(
  columns: readonly string[],
  rows: Iterable<SqlValue[]>,
): Promise<string> {
  let text = "";
  for await (const chunk of tableChunks(columns, rows)) text += chunk;
  return text;
}
