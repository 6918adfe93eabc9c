import type { SqlValue } from "../shared/sql-value.js";
import { csvRecord } from "./csv-field.js";
import { CHUNK_SIZE } from "./json.js";

/**
 * A value's text in CSV, as the web console exports it from the JSON answer: NULL (and NaN,
 * ±Infinity, which JSON makes null) an empty field, integers with their exact digits, a REAL
 * as JavaScript writes the number (`2.5`, `1e+21`), BLOB as lowercase hex.
 */
function csvText(value: SqlValue | undefined): string | null {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case "bigint":
    case "string":
      return String(value);
    case "number":
      return Number.isFinite(value) ? String(value) : null;
    default:
      return value.toString("hex");
  }
}

/**
 * The result as CSV (`--format csv`): a header line of the column names, then a line per row,
 * produced in chunks so a million-row result never exists as one string.
 */
export function* csvChunks(
  columns: readonly string[],
  rows: Iterable<SqlValue[]>,
): Generator<string> {
  let chunk = csvRecord(columns);
  for (const row of rows) {
    chunk += csvRecord(columns.map((_, i) => csvText(row[i])));
    if (chunk.length >= CHUNK_SIZE) {
      yield chunk;
      chunk = "";
    }
  }
  yield chunk;
}
