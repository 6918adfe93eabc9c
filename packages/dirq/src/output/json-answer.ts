import type { SqlValue } from "../shared/sql-value.js";
import { jsonChunks, toJson } from "./json.js";
import { firstAnswerJsRows, MAX_SQLITE_JSON_ROWS, type RealText } from "./sqlite-json.js";

/** A statement's answer, and (when it can be) a way to have SQLite write it as JSON. */
export interface JsonSource {
  columns: readonly string[];
  /** Each iteration runs the statement anew. */
  rows: Iterable<SqlValue[]>;
  /** The answer as SQLite writes it, `null` past `maxRows` or when it must go the JS way. */
  jsonFromSqlite?: (maxRows: number, realText?: RealText) => Buffer | null;
}

/** The answer as JSON: SQLite's bytes (without the final newline), or chunks written in JS. */
export type JsonAnswer = { bytes: Buffer } | { chunks: Iterable<string> };

/**
 * A one-shot answer as JSON. A short one is written the JS way (wrapping the statement for
 * SQLite costs more than writing a few rows). Past that, SQLite writes the whole answer: it
 * makes no JS value per row, and making the JS strings is most of the JS way's time in a fresh
 * process. It does so only for answers of at most about `budgetBytes`, estimated from the
 * first rows' size, since SQLite builds the answer as one string; longer answers, and those
 * with values SQLite would write differently (a REAL, a BLOB), go the JS way from the start,
 * which runs the statement again. `realText`: how SQLite may write REAL values (see RealText).
 */
export function jsonAnswer(
  source: JsonSource,
  budgetBytes: number,
  realText: RealText = "js",
): JsonAnswer {
  const { columns, rows, jsonFromSqlite } = source;
  if (jsonFromSqlite === undefined) return { chunks: jsonChunks(columns, rows) };
  const limit = firstAnswerJsRows();
  const first: SqlValue[][] = [];
  const iterator = rows[Symbol.iterator]();
  for (let next = iterator.next(); next.done !== true; next = iterator.next()) {
    if (first.length === limit) {
      // Stops the statement where it is: SQLite runs it anew, wrapped.
      iterator.return?.();
      const bytes = jsonFromSqlite(rowsWithin(budgetBytes, columns, first), realText);
      return bytes === null ? { chunks: jsonChunks(columns, rows) } : { bytes };
    }
    first.push(next.value);
  }
  return { chunks: jsonChunks(columns, first) };
}

/** How many rows like `sample` fit in `budgetBytes` of JSON. */
function rowsWithin(budgetBytes: number, columns: readonly string[], sample: SqlValue[][]): number {
  if (sample.length === 0) return MAX_SQLITE_JSON_ROWS;
  const perRow = Buffer.byteLength(toJson(columns, sample)) / sample.length;
  return Math.max(1, Math.floor(budgetBytes / perRow));
}
