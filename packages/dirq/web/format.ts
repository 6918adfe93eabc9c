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
