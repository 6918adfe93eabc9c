import type { Statement } from "better-sqlite3";
import { DirqError } from "../errors.js";
import type { Extractor } from "../parse/extractor.js";
import { type HookRow, inferColumns, type StoredValue } from "../parse/hook-rows.js";
import { type ParsedFile, parseFiles } from "../parse/parse-files.js";
import type { ProgressReporter } from "../progress/reporter.js";
import type { PathSelection } from "../scan/path-selection.js";
import { type SkippedPath, walkSelection } from "../scan/walk.js";
import { quoteIdentifier, type SqliteDatabase } from "./database.js";
import { currentRows, diffRows, type RowChange, rowJson } from "./row-changes.js";

/** Hidden columns of every parsed table: which file a row came from and its place there. */
export const FILE_PATH_COLUMN = "_dirq_file_path";
export const ROW_INDEX_COLUMN = "_dirq_row_index";

/**
 * A table whose rows an extractor produces: a config `[[table]]`, a path-table with
 * `--on-file`, or a table defined in code with an `extract` function.
 */
export interface ParsedTableSpec {
  name: string;
  /** The files to parse; `null` when the table's path names nothing yet. */
  selection: PathSelection | null;
  /** What turns each file into rows (an on-file hook or an in-process function). */
  extractor: Extractor;
  /** Fixed columns and their declared types; `null` infers them from the output. */
  schema: [string, string][] | null;
  ddl: string | null;
  /** Where the spec came from, for messages (`config.toml: table[0]`). */
  origin: string;
}

export interface ParsedTableOptions {
  root: string;
  useGitignore: boolean;
  extraIgnores?: readonly string[];
  progress: ProgressReporter;
  concurrency?: number;
}

function createTable(db: SqliteDatabase, spec: ParsedTableSpec, columns: string[]): void {
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

/** A hook row's values in the table's column order (keys outside the columns are dropped). */
export function rowValues(columns: readonly string[], row: HookRow): StoredValue[] {
  const position = new Map(columns.map((column, i) => [column.toLowerCase(), i]));
  const values: StoredValue[] = new Array(columns.length).fill(null);
  for (const [key, value] of row) {
    const at = position.get(key.toLowerCase());
    if (at !== undefined) values[at] = value;
  }
  return values;
}

/** Insert statements by connection and text: preparing one per file cost a third of a build. */
const insertStatements = new WeakMap<SqliteDatabase, Map<string, Statement>>();

function preparedInsert(db: SqliteDatabase, sql: string): Statement {
  let statements = insertStatements.get(db);
  if (statements === undefined) insertStatements.set(db, (statements = new Map()));
  let statement = statements.get(sql);
  if (statement === undefined) statements.set(sql, (statement = db.prepare(sql)));
  return statement;
}

/** Inserts one file's rows, with the hidden columns. Call inside a transaction. */
export function insertFileRows(
  db: SqliteDatabase,
  table: string,
  columns: readonly string[],
  path: string,
  rows: readonly HookRow[],
): void {
  const names = [...columns, FILE_PATH_COLUMN, ROW_INDEX_COLUMN].map(quoteIdentifier);
  const insert = preparedInsert(
    db,
    `INSERT INTO ${quoteIdentifier(table)} (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`,
  );
  rows.forEach((row, index) => insert.run([...rowValues(columns, row), path, BigInt(index)]));
}

function insertRows(
  db: SqliteDatabase,
  table: string,
  columns: string[],
  files: ParsedFile[],
): void {
  db.transaction(() => {
    for (const file of files) insertFileRows(db, table, columns, file.path, file.rows);
  })();
}

/**
 * Builds a parsed table: walks its files, runs the hook on each (in parallel), creates the
 * table (schema, or columns inferred from the output), runs its `ddl`, inserts the rows.
 * Files whose hook failed are returned as skipped; the other rows stand.
 */
export async function buildParsedTable(
  db: SqliteDatabase,
  spec: ParsedTableSpec,
  options: ParsedTableOptions,
): Promise<{ skipped: SkippedPath[]; columns: string[] }> {
  const scan = options.progress.start();
  const walked = spec.selection
    ? walkSelection({
        root: options.root,
        selection: spec.selection,
        useGitignore: options.useGitignore,
        extraIgnores: options.extraIgnores,
        onProgress: (found) => scan.update(`scanning ${found} files`),
      })
    : { paths: [], skipped: [] };
  scan.finish((duration) => `scanned ${walked.paths.length} files in ${duration}`);
  const phase = options.progress.start();
  const parsed = await parseFiles(spec.extractor, walked.paths, {
    root: options.root,
    concurrency: options.concurrency,
    phase,
  });
  phase.finish((duration) => `indexed ${walked.paths.length} files in ${duration}`);
  const columns = spec.schema
    ? spec.schema.map(([column]) => column)
    : inferColumns(parsed.files.map((file) => file.rows));
  createTable(db, spec, columns);
  insertRows(db, spec.name, columns, parsed.files);
  return { skipped: [...walked.skipped, ...parsed.skipped], columns };
}

/** A built parsed table, as the watcher keeps it current. */
export interface LiveParsedTable {
  spec: ParsedTableSpec;
  /** Current visible columns; grows when an inferred table's hook prints a new key. */
  columns: string[];
  matches: (path: string) => boolean;
}

/**
 * Replaces one file's rows with `rows` (none when the file is gone) and returns the row
 * changes, matched by position. Without a schema, new keys become new columns. Call inside a
 * transaction.
 */
export function replaceFileRows(
  db: SqliteDatabase,
  table: LiveParsedTable,
  path: string,
  rows: readonly HookRow[],
): RowChange[] {
  const name = table.spec.name;
  if (table.spec.schema === null) {
    for (const column of inferColumns([rows])) {
      if (table.columns.some((known) => known.toLowerCase() === column.toLowerCase())) continue;
      db.exec(`ALTER TABLE ${quoteIdentifier(name)} ADD COLUMN ${quoteIdentifier(column)}`);
      table.columns.push(column);
    }
  }
  const before = currentRows(db, name, table.columns, {
    column: FILE_PATH_COLUMN,
    value: path,
    orderBy: ROW_INDEX_COLUMN,
  });
  const after = rows.map((row) => rowJson(table.columns, rowValues(table.columns, row)));
  const changes = diffRows(name, path, before, after);
  if (changes.length === 0) return [];
  db.prepare(`DELETE FROM ${quoteIdentifier(name)} WHERE ${FILE_PATH_COLUMN} = ?`).run(path);
  insertFileRows(db, name, table.columns, path, rows);
  return changes;
}
