/**
 * The SDK's value types. They import only the row-change shape (which imports nothing), so the
 * declarations a consumer type-checks never reach the engine's (and its SQLite binding's)
 * internals.
 */
import type { RowChangeOf } from "../shared/row-change.js";

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
 * hold the values a query would return; `commit` is the number of the index's commit that
 * made it (a live query's frames carry the same numbers).
 */
export type RowEvent = RowChangeOf<Row> & { commit: number };

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
