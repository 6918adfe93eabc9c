import type { SqlValue } from "../query/execute.js";
import type { Row, RowValue } from "./types.js";

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
