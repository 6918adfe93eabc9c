import stringWidth from "string-width";
import type { SqlValue } from "../shared/sql-value.js";
import { escapeControlCharacters } from "./escape.js";

/** Cells longer than this many characters are cut, ending in an ellipsis. */
export const MAX_CELL_CHARACTERS = 60;

export { escapeControlCharacters };

function truncate(text: string): string {
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

function isNumeric(value: SqlValue | undefined): boolean {
  return typeof value === "bigint" || typeof value === "number";
}

function pad(text: string, width: number, right: boolean): string {
  const fill = " ".repeat(Math.max(0, width - stringWidth(text)));
  return right ? fill + text : text + fill;
}

/**
 * The result as an aligned text table: header, a rule of dashes, one line per row (numbers
 * right-aligned, everything else left-aligned), then `(N rows)`.
 */
export function renderTable(columns: readonly string[], rows: Iterable<SqlValue[]>): string {
  const header = columns.map((name) => truncate(escapeControlCharacters(name)));
  const widths = header.map((name) => stringWidth(name));
  const cells: string[][] = [];
  const numeric: boolean[][] = [];
  for (const row of rows) {
    const line = columns.map((_, i) => cellText(row[i]));
    line.forEach((text, i) => {
      widths[i] = Math.max(widths[i] ?? 0, stringWidth(text));
    });
    cells.push(line);
    numeric.push(columns.map((_, i) => isNumeric(row[i])));
  }
  const joinLine = (parts: string[]) => `${parts.join("  ").trimEnd()}\n`;
  let out = "";
  if (columns.length > 0) {
    out += joinLine(header.map((name, i) => pad(name, widths[i] ?? 0, false)));
    out += joinLine(widths.map((width) => "-".repeat(width)));
    cells.forEach((line, r) => {
      out += joinLine(line.map((text, i) => pad(text, widths[i] ?? 0, numeric[r]?.[i] ?? false)));
    });
  }
  out += `(${cells.length} ${cells.length === 1 ? "row" : "rows"})\n`;
  return out;
}
