import { DirqError } from "../errors.js";
import type { Extractor } from "../parse/extractor.js";
import { isReaderExtractor } from "../parse/format-extractor.js";
import { fillFromReader } from "./reader-fill.js";
import {
  createTable,
  insertFileRows,
  recordBuiltTable,
  rowInserter,
  rowValues,
  ruleBroken,
} from "./table-rows.js";
import { type HookRow, inferColumns, type StoredValue } from "../parse/hook-rows.js";
import { isWellFormed } from "../parse/large-text.js";
import { type ParsedFile, parseFiles } from "../parse/parse-files.js";
import type { ProgressPhase, ProgressReporter } from "../progress/reporter.js";
import type { PathSelection } from "../scan/path-selection.js";
import { type EmptyTableListener, emptyTable } from "../scan/empty-selection.js";
import { type SkippedPath, type WalkResult, walkSelection } from "../scan/walk.js";
import {
  type CatalogStore,
  type FileSignature,
  fileSignature,
  schemaObjects,
  unchangedSince,
} from "./catalog-store.js";
import { cachedStatement, quoteIdentifier, type SqliteDatabase } from "./database.js";
import { currentRows, diffRows, type RowChange, type RowText, rowText } from "./row-changes.js";

import { FILE_PATH_COLUMN, HIDDEN_COLUMNS, ROW_INDEX_COLUMN } from "../shared/reserved-names.js";
import { foldName } from "../shared/sql-names.js";

export { FILE_PATH_COLUMN, ROW_INDEX_COLUMN };

/**
 * A table whose rows an extractor produces: a config `[[table]]`, a path-table with
 * `--on-file`, or a table defined in code with an `extract` function.
 */
export interface ParsedTableSpec {
  /** The SQLite name of the table. */
  name: string;
  /** The name events carry: what the user wrote (differs from `name` for case variants). */
  label?: string;
  /** The files to parse; `null` when the table's path names nothing yet. */
  selection: PathSelection | null;
  /** What turns each file into rows (an on-file hook or an in-process function). */
  extractor: Extractor;
  /** Fixed columns and their declared types; `null` infers them from the output. */
  schema: [string, string][] | null;
  ddl: string | null;
  /** Where the spec came from, for messages (`config.toml: table[0]`). */
  origin: string;
  /** How rows are shaped (`columns`, `strict`) as definition text; absent when they are not. */
  shape?: string;
}

export interface ParsedTableOptions {
  root: string;
  useGitignore: boolean;
  extraIgnores?: readonly string[];
  progress: ProgressReporter;
  concurrency?: number;
  /** Aborted when the index closes: hooks still running for a build are stopped. */
  signal?: AbortSignal;
  /** Told when a path-table (`--on-file`, `--parse`) lists no file and skips none. */
  onEmpty?: EmptyTableListener;
}

/** Columns a table may have besides the two hidden ones (SQLite's limit is 2000). */
export const MAX_HOOK_COLUMNS = 1998;

/**
 * Keeps the files whose keys fit in one table: a file that would take the inferred columns
 * past SQLite's limit is skipped with a message naming the count, and the others stand.
 */
function withinColumnLimit(files: ParsedFile[]): { files: ParsedFile[]; tooWide: SkippedPath[] } {
  const known = new Set<string>();
  const kept: ParsedFile[] = [];
  const tooWide: SkippedPath[] = [];
  for (const file of files) {
    const added = new Set<string>();
    for (const row of file.rows) {
      for (const key of row.keys()) {
        const folded = foldName(key);
        if (!known.has(folded)) added.add(folded);
      }
    }
    if (known.size + added.size > MAX_HOOK_COLUMNS) {
      tooWide.push({
        path: file.path,
        reason: `hook printed ${added.size} new keys, more than a table's ${MAX_HOOK_COLUMNS} columns allow with the keys of the other files (give the table a schema to keep only the columns you need)`,
      });
      continue;
    }
    for (const key of added) known.add(key);
    kept.push(file);
  }
  return { files: kept, tooWide };
}

/**
 * Inserts every file's rows in one transaction. A constraint of the table's `ddl` or schema
 * that a file's rows violate fails the whole build with an error naming the file and the
 * config key: which of two clashing files is "the bad one" depends on order, so no answer
 * built without one of them would be right.
 */
function insertRows(
  db: SqliteDatabase,
  spec: ParsedTableSpec,
  columns: string[],
  files: ParsedFile[],
  record: (() => void) | null,
): void {
  const insert = rowInserter(db, spec.name, columns);
  db.transaction(() => {
    record?.();
    for (const file of files) {
      try {
        insert(file.path, file.rows);
      } catch (error) {
        throw ruleBroken(spec, file.path, error);
      }
    }
  })();
}

/**
 * A file's rows as text for the staging table, every value's type kept: an integer (a
 * bigint, exact beyond 2^53) is `{"i":"<digits>"}`, a BLOB `{"b":"<hex>"}`, a real a JSON
 * number, text a string.
 */
function encodeRows(rows: readonly HookRow[]): string {
  return JSON.stringify(
    rows.map((row) =>
      [...row].map(([key, value]) => [
        key,
        typeof value === "bigint"
          ? { i: String(value) }
          : Buffer.isBuffer(value)
            ? { b: value.toString("hex") }
            : value,
      ]),
    ),
  );
}

function decodeRows(text: string): HookRow[] {
  const rows = JSON.parse(text) as [string, StoredValue | { i: string } | { b: string }][][];
  return rows.map(
    (entries) =>
      new Map(
        entries.map(([key, value]): [string, StoredValue] => [
          key,
          value === null || typeof value !== "object"
            ? value
            : "i" in value
              ? BigInt(value.i)
              : Buffer.from((value as { b: string }).b, "hex"),
        ]),
      ),
  );
}

/** A persisted build commits what its hooks parsed this often (files), so a kill loses little. */
const STAGE_BATCH_FILES = 64;
/** ... and at least this often (ms), so a kill loses at most this much finished work. */
const STAGE_BATCH_MS = 500;

/**
 * Parses the files of a persisted table's first build. Each batch of parsed files is
 * committed to the catalog's staging table as it is done, so a build stopped part way (a
 * `kill -9`, Ctrl-C) is resumed by the next run: a file staged with its current state is
 * not parsed again.
 */
async function parseStaged(
  spec: ParsedTableSpec,
  paths: readonly string[],
  signatures: ReadonlyMap<string, FileSignature | null>,
  options: ParsedTableOptions,
  persisted: { store: CatalogStore; spec: string },
  phase: ProgressPhase,
): Promise<{ files: ParsedFile[]; skipped: SkippedPath[] }> {
  const staged = persisted.store.stagedFiles(spec.name, persisted.spec);
  const reused = new Map<string, HookRow[]>();
  for (const path of paths) {
    const entry = staged.get(path);
    if (entry !== undefined && unchangedSince(entry.signature, `${options.root}/${path}`)) {
      reused.set(path, decodeRows(entry.rows));
    }
  }
  let pending: { path: string; signature: FileSignature; rows: string }[] = [];
  const flush = () => {
    if (pending.length > 0) persisted.store.stageFiles(spec.name, persisted.spec, pending);
    pending = [];
  };
  // On a timer, not only when a file finishes: a slow hook after quick ones must not hold
  // their rows back from the catalog.
  const flusher = setInterval(flush, STAGE_BATCH_MS);
  const parsed = await parseFiles(
    spec.extractor,
    paths.filter((path) => !reused.has(path)),
    {
      root: options.root,
      concurrency: options.concurrency,
      phase,
      signal: options.signal,
      onParsed: (result) => {
        const signature = signatures.get(result.path);
        if (!("rows" in result) || !signature) return;
        pending.push({ path: result.path, signature, rows: encodeRows(result.rows) });
        if (pending.length >= STAGE_BATCH_FILES) flush();
      },
    },
  ).finally(() => clearInterval(flusher));
  flush();
  const byPath = new Map(parsed.files.map((file) => [file.path, file.rows]));
  const files: ParsedFile[] = [];
  for (const path of paths) {
    const rows = reused.get(path) ?? byPath.get(path);
    if (rows !== undefined) files.push({ path, rows });
  }
  return { files, skipped: parsed.skipped };
}

/** Tables built for a path-table name, rather than a config's or code's table. */
const PATH_TABLE_ORIGINS: ReadonlySet<string> = new Set(["--on-file", "--parse"]);

/** What walking a parsed table's files needs (see `ParsedTableOptions`). */
export interface TableWalkOptions {
  root: string;
  useGitignore: boolean;
  extraIgnores?: readonly string[];
  onEmpty?: EmptyTableListener;
}

/**
 * The files a parsed table selects (none when its path names nothing yet). A path-table that
 * lists no file and skips none is told to `onEmpty`, with why.
 */
export function walkTableFiles(
  spec: ParsedTableSpec,
  options: TableWalkOptions,
  onProgress?: (found: number) => void,
): WalkResult {
  const { root, useGitignore, extraIgnores, onEmpty } = options;
  if (spec.selection === null) return { paths: [], skipped: [], rawPaths: new Map() };
  const walk = { root, selection: spec.selection, useGitignore, extraIgnores };
  const walked = walkSelection({ ...walk, onProgress });
  if (walked.paths.length === 0 && walked.skipped.length === 0) {
    if (PATH_TABLE_ORIGINS.has(spec.origin)) onEmpty?.(emptyTable(spec.label ?? spec.name, walk));
  }
  return walked;
}

/**
 * Builds a parsed table: walks its files, runs the hook on each (in parallel), creates the
 * table (schema, or columns inferred from the output), runs its `ddl`, inserts the rows.
 * Files whose hook failed are returned as skipped; the other rows stand. With `namedColumns`
 * (folded names), a table dirq reads itself loads only the keys of those names, and says so
 * (`partial`).
 */
export async function buildParsedTable(
  db: SqliteDatabase,
  spec: ParsedTableSpec,
  options: ParsedTableOptions,
  persisted: { store: CatalogStore; spec: string } | null = null,
  namedColumns: ReadonlySet<string> | null = null,
): Promise<{ skipped: SkippedPath[]; columns: string[]; partial?: PartialColumns }> {
  const scan = options.progress.start();
  const walked = walkTableFiles(spec, options, (found) => scan.update(`scanning ${found} files`));
  scan.finish((duration) => `scanned ${walked.paths.length} files in ${duration}`);
  // A hook gets the file's name as an argument, which cannot carry bytes that are not UTF-8.
  const unnameable: SkippedPath[] = [...walked.rawPaths.keys()].map((path) => ({
    path,
    reason: isReaderExtractor(spec.extractor)
      ? "its name is not valid UTF-8, so dirq cannot open it by name"
      : "its name is not valid UTF-8, so it cannot be handed to the on-file command",
  }));
  const paths = walked.paths.filter((path) => !walked.rawPaths.has(path));
  if (isReaderExtractor(spec.extractor)) {
    const read = await fillFromReader(db, spec, spec.extractor, paths, options, {
      persisted,
      namedColumns,
    });
    const skipped = [...walked.skipped, ...unnameable, ...read.skipped];
    // A schema's columns are all loaded (see `fillFromReader`).
    if (namedColumns === null || spec.schema !== null) return { skipped, columns: read.columns };
    return { skipped, columns: read.columns, partial: { named: namedColumns, keys: read.keys } };
  }
  // A persisted index records each file's state as it was before its hook read it.
  const signatures = persisted
    ? new Map(paths.map((path) => [path, fileSignature(`${options.root}/${path}`)]))
    : null;
  const phase = options.progress.start();
  let parsed: Awaited<ReturnType<typeof parseFiles>>;
  try {
    parsed =
      persisted && signatures
        ? await parseStaged(spec, paths, signatures, options, persisted, phase)
        : await parseFiles(spec.extractor, paths, {
            root: options.root,
            concurrency: options.concurrency,
            phase,
            signal: options.signal,
          });
  } catch (error) {
    throw startFailureInConfig(spec, error);
  }
  phase.finish((duration) => `indexed ${walked.paths.length} files in ${duration}`);
  // Without a schema the columns are the union of every file's keys; only when that union is
  // too wide for SQLite are the files checked one by one (the usual case skips that pass).
  const inferred = spec.schema ? null : inferColumns(parsed.files.map((file) => file.rows));
  const { files, tooWide } =
    inferred === null || inferred.length <= MAX_HOOK_COLUMNS
      ? { files: parsed.files, tooWide: [] }
      : withinColumnLimit(parsed.files);
  const columns = spec.schema
    ? spec.schema.map(([column]) => column)
    : tooWide.length === 0 && inferred !== null
      ? inferred
      : inferColumns(files.map((file) => file.rows));
  const before = persisted ? schemaObjects(db) : null;
  createTable(db, spec, columns);
  const record =
    persisted && before && signatures
      ? () => {
          const read = files.flatMap((file): [string, FileSignature][] => {
            const signature = signatures.get(file.path);
            return signature ? [[file.path, signature]] : [];
          });
          recordBuiltTable(db, spec, persisted, before, read);
        }
      : null;
  insertRows(db, spec, columns, files, record);
  return {
    skipped: [...walked.skipped, ...unnameable, ...parsed.skipped, ...tooWide],
    columns,
  };
}

/** A built parsed table, as the watcher keeps it current. */
export interface LiveParsedTable {
  spec: ParsedTableSpec;
  /**
   * Visible columns as of the last commit; grows when an inferred table's hook prints a new
   * key. A cache of SQLite's own column list: re-read after every refresh, never edited ahead
   * of a commit.
   */
  columns: string[];
  matches: (path: string) => boolean;
  /**
   * Set when the table was built with only the keys statements named (`readNamedColumns`):
   * the names they named, folded, and every key its files brought (`null`: not known). Rows a
   * refresh writes later bring all their keys as columns.
   */
  partial?: PartialColumns;
}

/** What a table built with only the named keys holds (see `LiveParsedTable.partial`). */
export interface PartialColumns {
  named: ReadonlySet<string>;
  keys: ReadonlySet<string> | null;
}

/** A parsed table's visible columns as SQLite has them now (the source of truth). */
export function storedColumns(db: SqliteDatabase, table: string): string[] {
  const rows = cachedStatement(db, "SELECT name FROM pragma_table_info(?)")
    .pluck()
    .all(table) as string[];
  return rows.filter((name) => !HIDDEN_COLUMNS.has(name));
}

/**
 * Replaces one file's rows with `rows` (none when the file is gone or failed) and returns the
 * row changes, matched by position. Without a schema, new keys become new columns. Old and
 * new rows are both read back from SQLite, so events carry the values a query returns (the
 * column types applied) and a rewrite that changes no stored row yields no change. Call
 * inside a savepoint: on a throw, the caller rolls back this file alone.
 */
export function replaceFileRows(
  db: SqliteDatabase,
  table: LiveParsedTable,
  path: string,
  rows: readonly HookRow[],
): RowChange[] {
  const name = table.spec.name;
  let columns = storedColumns(db, name);
  if (table.spec.schema === null) {
    for (const column of inferColumns([rows])) {
      if (columns.some((known) => foldName(known) === foldName(column))) continue;
      db.exec(`ALTER TABLE ${quoteIdentifier(name)} ADD COLUMN ${quoteIdentifier(column)}`);
      columns = [...columns, column];
    }
  }
  const where = { column: FILE_PATH_COLUMN, value: path, orderBy: ROW_INDEX_COLUMN };
  const before = currentRows(db, name, columns, where);
  if (before.length === 0 && rows.length === 0) return [];
  cachedStatement(db, `DELETE FROM ${quoteIdentifier(name)} WHERE ${FILE_PATH_COLUMN} = ?`).run(
    path,
  );
  insertFileRows(db, name, columns, path, rows);
  const after = rowsAsStored(table, columns, rows) ?? currentRows(db, name, columns, where);
  return diffRows(table.spec.label ?? name, path, before, after);
}

/**
 * The rows' JSON as reading them back would give it, without reading them back (a row of tens
 * of megabytes costs the main thread as much again): for a table with no declared types and
 * no `ddl`, SQLite stores each value as it is bound. `null` when it may not: a `schema` or
 * `ddl` (types, triggers, defaults), or text SQLite would change (a `LargeText` never is).
 */
function rowsAsStored(
  table: LiveParsedTable,
  columns: readonly string[],
  rows: readonly HookRow[],
): RowText[] | null {
  if (table.spec.schema !== null || table.spec.ddl !== null) return null;
  const stored: RowText[] = [];
  for (const row of rows) {
    const values = rowValues(columns, row);
    for (const value of values) {
      if (typeof value === "string" && !isWellFormed(value)) return null;
    }
    stored.push(rowText(columns, values));
  }
  return stored;
}

/**
 * A config table's program that cannot start is named with the file and key that gave it
 * (`dirq.toml: table[0].on-file: on-file command …: program … not found`), as a wrong
 * `glob` is; a `--on-file` hook's message already says where it came from.
 */
function startFailureInConfig(spec: ParsedTableSpec, error: unknown): unknown {
  if (!(error instanceof DirqError) || error.code !== "HOOK_START_FAILED") return error;
  if (spec.origin === "--on-file") return error;
  return new DirqError("HOOK_START_FAILED", `${spec.origin}.on-file: ${error.message}`, {
    cause: error,
  });
}
