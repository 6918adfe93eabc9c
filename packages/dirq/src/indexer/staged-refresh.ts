import { statSync } from "node:fs";
import { isReaderExtractor, type ReaderExtractor } from "../parse/format-extractor.js";
import { shapeOf } from "../parse/row-shape.js";
import { FILE_PATH_COLUMN, HIDDEN_COLUMNS, ROW_INDEX_COLUMN } from "../shared/reserved-names.js";
import { quoteIdentifier, type SqliteDatabase } from "./database.js";
import { type LiveParsedTable, type ParsedTableSpec, storedColumns } from "./parsed-tables.js";
import type { FilledOffThread, StagedTable } from "./staging-worker.js";
import { ReaderTableBuild } from "./reader-fill.js";
import { type RowChange, rowJson } from "./row-changes.js";

/**
 * The live refresh of a large file of a built-in format. Its rows are not held in memory and
 * compared one by one in JavaScript (which costs the main thread time and memory in proportion
 * to the whole file, however little changed): they are read into a staging table as a table
 * build reads them (a piece at a time, CSV natively) and compared with the file's rows in SQL;
 * only the rows that differ are
 * written, and turned into events: the same events, in the same order, as a small file's
 * refresh gives (updates by position, then inserts, then deletes).
 */

/** Files from this size on are refreshed through the staging table. */
export const STAGED_REFRESH_BYTES = 1 << 20;

/** The staging table of a refresh on the index's own connection (one at a time there). */
const STAGE = "_dirq_stage";

/**
 * Whether the refresh of `path` goes through the staging table: a built-in format and a large
 * file, of a table without a `ddl` unless `ddlToo` (see `readsOffThread`).
 */
export function refreshesStaged(
  table: LiveParsedTable,
  absolute: string,
  ddlToo: boolean,
): boolean {
  return readsOffThread(table.spec, absolute, ddlToo);
}

/**
 * Whether a file of the table at `absolute` is one the staging thread reads: a built-in
 * format and a large file. A table with a `ddl` only when `ddlToo`: the connection that
 * writes its rows must run what the `ddl` made (its triggers, indexes, full-text tables),
 * which another connection does only when the index loads no extension and declares no
 * function that the `ddl` could name.
 */
export function readsOffThread(spec: ParsedTableSpec, absolute: string, ddlToo = false): boolean {
  if (!isReaderExtractor(spec.extractor) || (spec.ddl !== null && !ddlToo)) return false;
  try {
    return statSync(absolute).size >= STAGED_REFRESH_BYTES;
  } catch {
    return false; // the ordinary read reports a file that cannot be read
  }
}

/** What the staging thread needs of a table of a built-in format (see `StagedTable`). */
export function stagedTableOf(spec: ParsedTableSpec): StagedTable {
  const extractor = spec.extractor as ReaderExtractor;
  return {
    name: spec.name,
    label: spec.label,
    schema: spec.schema,
    origin: spec.origin,
    format: extractor.format,
    each: extractor.each,
    shape: shapeOf(extractor),
  };
}

/**
 * Reads the file at `path` into the table `spec` names, as its build reads each file (under a
 * savepoint: a file that fails leaves nothing): the staging thread's part of a table build.
 * The table is created by its first rows when it has none yet (a table without a schema).
 * Call inside a transaction.
 */
export function fillOneFile(
  db: SqliteDatabase,
  spec: ParsedTableSpec,
  path: string,
  root: string,
): FilledOffThread {
  if (!isReaderExtractor(spec.extractor)) throw new Error(`${spec.name} has no built-in format`);
  const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  const existing = exists.get(spec.name) === undefined ? null : storedColumns(db, spec.name);
  const into = existing === null ? null : { name: spec.name, columns: existing };
  const build = new ReaderTableBuild(db, spec, spec.extractor, root, false, into);
  const { reason, rows } = build.fillFile(path);
  const created = existing !== null || exists.get(spec.name) !== undefined;
  return { reason, rows, columns: created ? build.columns : null };
}

/** The table's columns a user sees, with their declared types. */
function visibleColumns(db: SqliteDatabase, table: string): { name: string; type: string }[] {
  return (
    db.prepare("SELECT name, type FROM pragma_table_info(?)").all(table) as {
      name: string;
      type: string;
    }[]
  ).filter(({ name }) => !HIDDEN_COLUMNS.has(name));
}

/** The staging table: the table's columns with their declared types, rows keyed by position. */
function createStage(db: SqliteDatabase, table: string, stage: string): string[] {
  const visible = visibleColumns(db, table);
  const columns = visible.map(({ name }) => name);
  const definitions = visible.map(({ name, type }) => `${quoteIdentifier(name)} ${type}`.trim());
  definitions.push(`${FILE_PATH_COLUMN} TEXT NOT NULL`, `${ROW_INDEX_COLUMN} INTEGER PRIMARY KEY`);
  db.exec(`DROP TABLE IF EXISTS temp.${stage}`);
  db.exec(`CREATE TEMP TABLE ${stage} (${definitions.join(", ")})`);
  return columns;
}

/**
 * Reads the file at `path` into the staging table `stage` (made anew, in the connection's
 * temporary schema: nothing of the index is written) as a build reads it. Returns the staged
 * columns, or the reason the file has no rows.
 */
export function stageFile(
  db: SqliteDatabase,
  spec: ParsedTableSpec,
  path: string,
  root: string,
  stage: string,
): string[] | string {
  if (!isReaderExtractor(spec.extractor)) throw new Error(`${spec.name} has no built-in format`);
  const before = createStage(db, spec.name, stage);
  const build = new ReaderTableBuild(db, spec, spec.extractor, root, false, {
    name: stage,
    columns: before,
  });
  const { reason } = build.fillFile(path);
  return reason ?? build.columns;
}

/**
 * Writes the changes from the rows of `path` in the table to the staged ones: keys the file
 * brought that the table does not have yet become columns (a table without a schema). Call
 * inside a transaction.
 */
export function swapStaged(
  db: SqliteDatabase,
  spec: ParsedTableSpec,
  path: string,
  stage: string,
  columns: readonly string[],
): RowChange[] {
  const name = quoteIdentifier(spec.name);
  const present = new Set(
    (db.prepare("SELECT name FROM pragma_table_info(?)").pluck().all(spec.name) as string[]).map(
      (column) => column.toLowerCase(),
    ),
  );
  for (const column of columns) {
    if (!present.has(column.toLowerCase())) {
      db.exec(`ALTER TABLE ${name} ADD COLUMN ${quoteIdentifier(column)}`);
    }
  }
  return swapIn(db, spec, path, stage, columns);
}

/** A file that left a table with at least this many rows there loses them off the thread. */
export const STAGED_DELETE_ROWS = 10_000;

/**
 * Whether the rows of `path` leave the table on the staging thread: a built-in format, no
 * `ddl` unless `ddlToo` (see `readsOffThread`), and many rows. The file is gone, so its rows
 * tell its size.
 */
export function leavesOffThread(
  db: SqliteDatabase,
  spec: ParsedTableSpec,
  path: string,
  ddlToo: boolean,
): boolean {
  if (!isReaderExtractor(spec.extractor) || (spec.ddl !== null && !ddlToo)) return false;
  try {
    const many = db.prepare(
      `SELECT 1 FROM ${quoteIdentifier(spec.name)} WHERE ${FILE_PATH_COLUMN} = ? LIMIT 1 OFFSET ?`,
    );
    return many.get(path, STAGED_DELETE_ROWS - 1) !== undefined;
  } catch {
    return false; // no such table yet: nothing to delete
  }
}

/** The rows of `path` in a table, as the delete changes of the file leaving it. */
export interface LeavingRows {
  columns: string[];
  changes: RowChange[];
}

/**
 * The rows of `path` in the table as delete changes, in the order of the file's rows: the
 * events a small file's refresh gives for them. Reads only (no writer needed).
 */
export function leavingRows(db: SqliteDatabase, spec: ParsedTableSpec, path: string): LeavingRows {
  const columns = visibleColumns(db, spec.name).map(({ name }) => name);
  const list = columns.length === 0 ? "NULL" : columns.map(quoteIdentifier).join(", ");
  const rows = db
    .prepare(
      `SELECT ${list} FROM ${quoteIdentifier(spec.name)} WHERE ${FILE_PATH_COLUMN} = ? ` +
        `ORDER BY ${ROW_INDEX_COLUMN}`,
    )
    .raw(true)
    .safeIntegers(true)
    .all(path) as unknown[][];
  const label = spec.label ?? spec.name;
  const changes = rows.map((values): RowChange => ({
    action: "delete",
    table: label,
    file_path: path,
    row: rowJson(columns, values),
    old_row: null,
  }));
  return { columns, changes };
}

/**
 * Deletes the rows of `path` from the table; their delete changes. `read` (from `leavingRows`
 * before the writer was taken) stands while the table's columns and the file's row count are
 * the same (no other refresh writes the file's rows meanwhile); else they are read again.
 * Call inside a transaction.
 */
export function clearRows(
  db: SqliteDatabase,
  spec: ParsedTableSpec,
  path: string,
  read: LeavingRows | undefined,
): RowChange[] {
  const name = quoteIdentifier(spec.name);
  const count = Number(
    db.prepare(`SELECT count(*) FROM ${name} WHERE ${FILE_PATH_COLUMN} = ?`).pluck().get(path),
  );
  const columns = visibleColumns(db, spec.name).map(({ name: column }) => column);
  const stands =
    read !== undefined &&
    read.changes.length === count &&
    read.columns.join("\u0000") === columns.join("\u0000");
  const rows = stands ? read : leavingRows(db, spec, path);
  db.prepare(`DELETE FROM ${name} WHERE ${FILE_PATH_COLUMN} = ?`).run(path);
  return rows.changes;
}

/** Drops the staging table `stage`, if it is there. */
export function dropStage(db: SqliteDatabase, stage: string): void {
  db.exec(`DROP TABLE IF EXISTS temp.${stage}`);
}

/**
 * Replaces the rows of `path` in `table` with the file's rows as it is now, through the staging
 * table; the changes, or the reason the file has no rows (the caller then treats it as any
 * file that failed). Call inside the refresh's transaction.
 */
export function replaceFileRowsStaged(
  db: SqliteDatabase,
  table: LiveParsedTable,
  path: string,
  root: string,
): RowChange[] | string {
  const { spec } = table;
  try {
    const staged = stageFile(db, spec, path, root, STAGE);
    if (typeof staged === "string") return staged;
    return swapStaged(db, spec, path, STAGE, staged);
  } finally {
    dropStage(db, STAGE);
  }
}

/** The changes from the file's rows to the staged ones, written into the table. */
function swapIn(
  db: SqliteDatabase,
  spec: ParsedTableSpec,
  path: string,
  stage: string,
  columns: readonly string[],
): RowChange[] {
  const [name, label] = [quoteIdentifier(spec.name), spec.label ?? spec.name];
  const list = (alias: string) =>
    columns.length === 0 ? "NULL" : columns.map((c) => `${alias}.${quoteIdentifier(c)}`).join(", ");
  const same =
    columns.length === 0
      ? "1"
      : columns.map((c) => `o.${quoteIdentifier(c)} IS s.${quoteIdentifier(c)}`).join(" AND ");
  const rows = (sql: string, ...parameters: unknown[]) =>
    db
      .prepare(sql)
      .raw(true)
      .safeIntegers(true)
      .all(...parameters) as unknown[][];
  const count = (sql: string, ...parameters: unknown[]) =>
    Number(
      db
        .prepare(sql)
        .pluck()
        .get(...parameters),
    );
  const oldCount = count(`SELECT count(*) FROM ${name} WHERE ${FILE_PATH_COLUMN} = ?`, path);
  const newCount = count(`SELECT count(*) FROM ${stage}`);
  const width = Math.max(columns.length, 1);
  const json = (values: unknown[]) => rowJson(columns, values);
  const change = (action: "insert" | "update" | "delete", row: string, old: string | null) =>
    ({ action, table: label, file_path: path, row, old_row: old }) as RowChange;
  const changes: RowChange[] = [];
  const updated = rows(
    `SELECT ${list("o")}, ${list("s")} FROM ${name} AS o JOIN ${stage} AS s ` +
      `ON s.${ROW_INDEX_COLUMN} = o.${ROW_INDEX_COLUMN} ` +
      `WHERE o.${FILE_PATH_COLUMN} = ? AND NOT (${same}) ORDER BY o.${ROW_INDEX_COLUMN}`,
    path,
  );
  for (const values of updated) {
    changes.push(change("update", json(values.slice(width)), json(values.slice(0, width))));
  }
  const added = rows(
    `SELECT ${list("s")} FROM ${stage} AS s WHERE s.${ROW_INDEX_COLUMN} >= ? ORDER BY s.${ROW_INDEX_COLUMN}`,
    oldCount,
  );
  for (const values of added) changes.push(change("insert", json(values), null));
  const removed = rows(
    `SELECT ${list("o")} FROM ${name} AS o WHERE o.${FILE_PATH_COLUMN} = ? AND o.${ROW_INDEX_COLUMN} >= ? ` +
      `ORDER BY o.${ROW_INDEX_COLUMN}`,
    path,
    newCount,
  );
  for (const values of removed) changes.push(change("delete", json(values), null));
  // Only what differs is written: an edit or an append to a large file costs its scan and
  // its changes, not a rewrite of every row.
  if (updated.length > 0) {
    const assigned = columns.map(quoteIdentifier).join(", ");
    db.prepare(
      `UPDATE ${name} AS o SET (${assigned}) = (${list("s")}) FROM ${stage} AS s ` +
        `WHERE o.${FILE_PATH_COLUMN} = ? AND s.${ROW_INDEX_COLUMN} = o.${ROW_INDEX_COLUMN} AND NOT (${same})`,
    ).run(path);
  }
  if (removed.length > 0) {
    db.prepare(
      `DELETE FROM ${name} WHERE ${FILE_PATH_COLUMN} = ? AND ${ROW_INDEX_COLUMN} >= ?`,
    ).run(path, newCount);
  }
  if (added.length > 0) {
    const targets = [...columns, FILE_PATH_COLUMN, ROW_INDEX_COLUMN]
      .map(quoteIdentifier)
      .join(", ");
    db.prepare(
      `INSERT INTO ${name} (${targets}) SELECT ${targets} FROM ${stage} ` +
        `WHERE ${ROW_INDEX_COLUMN} >= ? ORDER BY ${ROW_INDEX_COLUMN}`,
    ).run(oldCount);
  }
  return changes;
}
