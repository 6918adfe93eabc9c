import type { RowChange } from "../indexer/row-changes.js";
import { rowChangeJson } from "../indexer/row-changes.js";
import { parseJsonExact } from "../parse/hook-rows.js";
import type { SqlValue } from "../query/execute.js";
import type { Row, RowEvent, RowValue } from "./types.js";

/** A SQLite value as the CLI's JSON would carry it. */
export function toRowValue(value: SqlValue | undefined): RowValue {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case "bigint":
      return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
        ? Number(value)
        : value;
    case "number":
      return Number.isFinite(value) ? value : null;
    case "string":
      return value;
    default:
      return value.toString("hex");
  }
}

/** Rows of a statement as objects (a later column of the same name wins, as in JSON). */
export function toRows(columns: readonly string[], rows: Iterable<SqlValue[]>): Row[] {
  const result: Row[] = [];
  for (const values of rows) {
    const row: Row = {};
    for (let i = 0; i < columns.length; i++) row[columns[i] as string] = toRowValue(values[i]);
    result.push(row);
  }
  return result;
}

/** The event as the server's SSE `row` data, parsed (integers beyond 2^53 exact). */
export function toRowEvent(change: RowChange): RowEvent {
  return parseJsonExact(rowChangeJson(change)) as RowEvent;
}
