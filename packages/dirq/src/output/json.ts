import type { SqlValue } from "../shared/sql-value.js";

/** One value as JSON: exact integers, NaN/±Infinity as null, BLOB as lowercase hex. */
export function jsonValue(value: SqlValue | undefined): string {
  if (value === null || value === undefined) return "null";
  switch (typeof value) {
    case "bigint":
      return value.toString();
    case "number":
      return Number.isFinite(value) ? JSON.stringify(value) : "null";
    case "string":
      return JSON.stringify(value);
    default:
      return `"${value.toString("hex")}"`;
  }
}

/** Flush output in pieces of about this many characters. */
export const CHUNK_SIZE = 64 * 1024;

/**
 * The result as a compact JSON array of objects (keys in SELECT order) and a final newline,
 * produced in chunks so a million-row result never exists as one string.
 */
export function* jsonChunks(
  columns: readonly string[],
  rows: Iterable<SqlValue[]>,
): Generator<string> {
  const keys = columns.map((name) => `${JSON.stringify(name)}:`);
  let chunk = "[";
  let first = true;
  for (const row of rows) {
    let object = first ? "{" : ",{";
    first = false;
    for (let i = 0; i < keys.length; i++) {
      object += `${i === 0 ? "" : ","}${keys[i]}${jsonValue(row[i])}`;
    }
    chunk += `${object}}`;
    if (chunk.length >= CHUNK_SIZE) {
      yield chunk;
      chunk = "";
    }
  }
  yield `${chunk}]\n`;
}

/** The whole result as one JSON string (for small results and the HTTP body). */
export function toJson(columns: readonly string[], rows: Iterable<SqlValue[]>): string {
  return Array.from(jsonChunks(columns, rows)).join("");
}
