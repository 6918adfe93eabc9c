import { jsonValue } from "../output/json.js";
import type { RowChangeOf } from "../shared/row-change.js";
import type { SqlValue } from "../shared/sql-value.js";
import { cachedStatement, quoteIdentifier, type SqliteDatabase } from "./database.js";

/** One row-level change, as the event stream sends it. Rows are JSON object text. */
export type RowChange = RowChangeOf<string>;

/** A row as JSON object text, values serialized exactly like query results. */
export function rowJson(columns: readonly string[], values: readonly unknown[]): string {
  const fields = columns.map(
    (column, i) => `${JSON.stringify(column)}:${jsonValue(values[i] as SqlValue)}`,
  );
  return `{${fields.join(",")}}`;
}

/** The event's JSON text, fields in the order of the spec's table. */
export function rowChangeJson(change: RowChange): string {
  const head = `{"action":"${change.action}","table":${JSON.stringify(change.table)},"file_path":${JSON.stringify(change.file_path)}`;
  if (change.action === "error") return `${head},"error":${JSON.stringify(change.error)}}`;
  return `${head},"row":${change.row},"old_row":${change.old_row ?? "null"}}`;
}

/** Reads a file's current rows (visible columns only) as JSON texts, in row order. */
export function currentRows(
  db: SqliteDatabase,
  table: string,
  columns: readonly string[],
  where: { column: string; value: string; orderBy?: string },
): string[] {
  // A table may have no visible column yet (a schema-less table whose files printed nothing):
  // each row is then `{}`, and the list still needs one expression.
  const list = columns.length === 0 ? "NULL" : columns.map(quoteIdentifier).join(", ");
  const order = where.orderBy ? ` ORDER BY ${where.orderBy}` : "";
  const statement = cachedStatement(
    db,
    `SELECT ${list} FROM ${quoteIdentifier(table)} WHERE ${quoteIdentifier(where.column)} = ?${order}`,
  )
    .raw(true)
    .safeIntegers(true);
  return (statement.all(where.value) as unknown[][]).map((values) => rowJson(columns, values));
}

/**
 * The changes that turn a file's old rows into its new rows, matched by position: a row at
 * the same position is an update when it differs, extra rows are inserts or deletes.
 */
export function diffRows(
  table: string,
  path: string,
  before: readonly string[],
  after: readonly string[],
): RowChange[] {
  const changes: RowChange[] = [];
  const common = Math.min(before.length, after.length);
  for (let i = 0; i < common; i++) {
    if (before[i] !== after[i]) {
      changes.push({
        action: "update",
        table,
        file_path: path,
        row: after[i] as string,
        old_row: before[i] as string,
      });
    }
  }
  const added = (action: "insert" | "delete", rows: readonly string[]) => {
    for (let i = common; i < rows.length; i++) {
      changes.push({ action, table, file_path: path, row: rows[i] as string, old_row: null });
    }
  };
  added("insert", after);
  added("delete", before);
  return changes;
}
