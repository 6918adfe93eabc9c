import type { RowChange } from "../indexer/row-changes.js";
import { rowChangeJson } from "../indexer/row-changes.js";
import { parseJson } from "../parse/hook-rows.js";
import type { SqlValue } from "../query/execute.js";

/**
 * One value as the SDK returns it: what the CLI's JSON output holds, as JavaScript. INTEGER is
 * a number, or a bigint beyond 2^53 (exact, as the CLI prints its digits); REAL a number (NaN
 * and ±Infinity are null); TEXT a string; BLOB a lowercase hex string; NULL null.
 */
export type RowValue = null | number | bigint | string;

/** One result row: column name → value, keys in SELECT order. */
export type Row = Record<string, RowValue>;

/**
 * A row-level change: the data of the server's SSE `row` event, parsed. `row` and `old_row`
 * hold the values a query would return.
 */
export type RowEvent =
  | {
      action: "insert" | "update" | "delete";
      table: string;
      /** Path of the file the row came from, relative to the root. */
      file_path: string;
      row: Row;
      /** The previous row of an `update`; `null` otherwise. */
      old_row: Row | null;
    }
  | {
      action: "error";
      /** The table, or `null` when the failure is not tied to one. */
      table: string | null;
      file_path: string;
      error: string;
    };

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
  return parseJson(rowChangeJson(change)) as RowEvent;
}
