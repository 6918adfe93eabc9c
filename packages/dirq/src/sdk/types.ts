/**
 * The SDK's value types. They import nothing, so the declarations a consumer type-checks never
 * reach the engine's (and its SQLite binding's) internals.
 */

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

/**
 * Events were lost to a `watch()` stream: it fell more than its buffer behind, or resumed from
 * an id the history no longer reaches (or of another index). Query again for the current rows;
 * the events after it follow. The SSE stream's `reset` frame.
 */
export interface ResetEvent {
  action: "reset";
}

/** What a `watch()` stream yields. */
export type WatchEvent = RowEvent | ResetEvent;
