import type { Statement } from "@rocicorp/zero-sqlite3";
import { DirqError } from "../errors.js";
import type { HookRow } from "../parse/hook-rows.js";
import { LargeText, type RowValue } from "../parse/large-text.js";
import { FILE_PATH_COLUMN, ROW_INDEX_COLUMN } from "../shared/reserved-names.js";
import { foldName } from "../shared/sql-names.js";
import { isStorageError } from "./cache-file.js";
import { quoteIdentifier, type SqliteDatabase } from "./database.js";
import type { ParsedTableSpec } from "./parsed-tables.js";
import { type CatalogStore, type FileSignature, schemaObjects } from "./catalog-store.js";

/** Creating a parsed table and inserting files' rows into it: what every way of building one shares. */

/** Creates the table with `columns` and the hidden ones, then runs its `ddl`. */
export function createTable(db: SqliteDatabase, spec: ParsedTableSpec, columns: string[]): void {
  const declared = new Map(spec.schema ?? []);
  const definitions = columns.map((column) => {
    const type = declared.get(column);
    return type ? `${quoteIdentifier(column)} ${type}` : quoteIdentifier(column);
  });
  definitions.push(`${FILE_PATH_COLUMN} TEXT NOT NULL`, `${ROW_INDEX_COLUMN} INTEGER NOT NULL`);
  db.exec(`CREATE TABLE ${quoteIdentifier(spec.name)} (${definitions.join(", ")})`);
  if (spec.ddl === null) return;
  try {
    db.exec(spec.ddl);
  } catch (error) {
    throw new DirqError("CONFIG_INVALID", `${spec.origin}.ddl: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** Column name → position, by the name as spelled and lower-cased (SQLite ignores ASCII case). */
function columnPositions(columns: readonly string[]): Map<string, number> {
  const position = new Map<string, number>();
  columns.forEach((column, i) => {
    position.set(foldName(column), i);
    position.set(column, i);
  });
  return position;
}

/**
 * Fills `values` (from `offset`) with a hook row's values in the table's column order (other
 * keys dropped). Returns whether one of them is a `LargeText`.
 */
function fillRowValues(
  position: ReadonlyMap<string, number>,
  row: HookRow,
  values: RowValue[],
  offset: number,
): boolean {
  let large = false;
  for (const [key, value] of row) {
    // Most keys are spelled as their column: the lower-cased look-up only for the others.
    const at = position.get(key) ?? position.get(foldName(key));
    if (at === undefined) continue;
    values[offset + at] = value;
    if (value instanceof LargeText) large = true;
  }
  return large;
}

/** Rows one multi-row insert writes at most. */
const ROWS_PER_INSERT = 32;
/** Bound parameters one statement may have (SQLite's limit is 32766). */
const MAX_PARAMETERS = 32_000;

/** A hook row's values in the table's column order (keys outside the columns are dropped). */
export function rowValues(columns: readonly string[], row: HookRow): RowValue[] {
  const values: RowValue[] = new Array<RowValue>(columns.length).fill(null);
  fillRowValues(columnPositions(columns), row, values, 0);
  return values;
}

/** Insert statements by connection and text: preparing one per file is a large part of a build. */
const insertStatements = new WeakMap<SqliteDatabase, Map<string, Statement>>();

function preparedInsert(db: SqliteDatabase, sql: string): Statement {
  let statements = insertStatements.get(db);
  if (statements === undefined) insertStatements.set(db, (statements = new Map()));
  let statement = statements.get(sql);
  if (statement === undefined) statements.set(sql, (statement = db.prepare(sql)));
  return statement;
}

/**
 * Inserts files' rows into one table with a fixed column list, the hidden columns added: the
 * statement and column positions are worked out once, not per file or row (that per-row work
 * took ten times SQLite's own insert time). Call inside a transaction.
 */
export function rowInserter(
  db: SqliteDatabase,
  table: string,
  columns: readonly string[],
  firstIndex = 0,
): (path: string, rows: readonly HookRow[]) => void {
  const names = [...columns, FILE_PATH_COLUMN, ROW_INDEX_COLUMN].map(quoteIdentifier);
  const width = names.length;
  const head = `INSERT INTO ${quoteIdentifier(table)} (${names.join(", ")}) VALUES `;
  const tuple = `(${names.map(() => "?").join(", ")})`;
  const insert = preparedInsert(db, head + tuple);
  // Several rows per statement: each run is a call into SQLite with its own setup, which cost
  // about as much as the insert itself for narrow rows.
  const many = Math.min(ROWS_PER_INSERT, Math.floor(MAX_PARAMETERS / width));
  const insertMany =
    many > 1 ? preparedInsert(db, head + Array(many).fill(tuple).join(", ")) : null;
  const position = columnPositions(columns);
  const insertOne = (path: string, row: HookRow, index: number) => {
    const values: RowValue[] = new Array<RowValue>(width).fill(null);
    const large = fillRowValues(position, row, values, 0);
    values[width - 2] = path;
    values[width - 1] = BigInt(firstIndex + index);
    if (large) insertWithLargeTexts(db, head, values);
    else insert.run(values);
  };
  return (path, rows) => {
    let index = 0;
    if (insertMany !== null && rows.length >= many) {
      const values: RowValue[] = new Array<RowValue>(width * many);
      for (; index + many <= rows.length; index += many) {
        values.fill(null);
        let large = false;
        for (let k = 0; k < many; k++) {
          const offset = k * width;
          if (fillRowValues(position, rows[index + k] as HookRow, values, offset)) large = true;
          values[offset + width - 2] = path;
          values[offset + width - 1] = BigInt(firstIndex + index + k);
        }
        if (!large) insertMany.run(values);
        else for (let k = 0; k < many; k++) insertOne(path, rows[index + k] as HookRow, index + k);
      }
    }
    for (; index < rows.length; index++) insertOne(path, rows[index] as HookRow, index);
  };
}

/**
 * Inserts one row that holds a `LargeText`: its UTF-8 is bound as bytes and cast to TEXT in
 * SQL, which stores the same value as binding the string would (the column's affinity applies
 * as it would to bound text), without making a string of it on the main thread.
 */
function insertWithLargeTexts(db: SqliteDatabase, head: string, values: readonly RowValue[]): void {
  const placeholders = values.map((value) =>
    value instanceof LargeText ? "CAST(? AS TEXT)" : "?",
  );
  const bound = values.map((value) => (value instanceof LargeText ? value.utf8 : value));
  preparedInsert(db, `${head}(${placeholders.join(", ")})`).run(bound);
}

/** Inserts one file's rows, with the hidden columns. Call inside a transaction. */
export function insertFileRows(
  db: SqliteDatabase,
  table: string,
  columns: readonly string[],
  path: string,
  rows: readonly HookRow[],
): void {
  rowInserter(db, table, columns)(path, rows);
}

/**
 * A file's rows that break a constraint of the table's `ddl` or schema, as the build's error
 * naming the file and the key; any other error as it is.
 */
export function ruleBroken(spec: ParsedTableSpec, path: string, error: unknown): unknown {
  if (!(error instanceof Error) || error.name !== "SqliteError") return error;
  if (isStorageError(error)) return error;
  const key = spec.ddl === null ? "schema" : "ddl";
  return new DirqError(
    "CONFIG_INVALID",
    `${spec.origin}.${key}: the rows of ${path} break a rule of table '${spec.name}' (${error.message}); fix the file or the table's ${key}`,
    { cause: error },
  );
}

/**
 * Records a persisted parsed table in the catalog once it is built: its definition, the objects
 * its `ddl` made (those not in `before`), and each file's state as it was read. Call inside the
 * transaction that commits the table's last rows.
 */
export function recordBuiltTable(
  db: SqliteDatabase,
  spec: ParsedTableSpec,
  persisted: { store: CatalogStore; spec: string },
  before: ReadonlySet<string>,
  files: Iterable<[string, FileSignature]>,
): void {
  const objects = [...schemaObjects(db)].filter(
    (name) => !before.has(name) && name.toLowerCase() !== spec.name.toLowerCase(),
  );
  persisted.store.saveTable({
    name: spec.name,
    kind: "parsed",
    spec: persisted.spec,
    filled: null,
    objects,
  });
  for (const [path, signature] of files) persisted.store.recordFile(spec.name, path, signature);
  persisted.store.forgetStaged(spec.name);
}
