import { DirqError } from "../errors.js";
import type { HookCommand } from "../parse/hook-command.js";
import { type HookRow, inferColumns, type StoredValue } from "../parse/hook-rows.js";
import { type ParsedFile, parseFiles } from "../parse/parse-files.js";
import type { ProgressReporter } from "../progress/reporter.js";
import type { PathSelection } from "../scan/path-selection.js";
import { type SkippedPath, walkSelection } from "../scan/walk.js";
import { quoteIdentifier, type SqliteDatabase } from "./database.js";

/** Hidden columns of every parsed table: which file a row came from and its place there. */
export const FILE_PATH_COLUMN = "_dirq_file_path";
export const ROW_INDEX_COLUMN = "_dirq_row_index";

/** A table whose rows a hook prints: a config `[[table]]` or a path-table with `--on-file`. */
export interface ParsedTableSpec {
  name: string;
  /** The files to parse; `null` when the table's path names nothing yet. */
  selection: PathSelection | null;
  command: HookCommand;
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

function insertRows(
  db: SqliteDatabase,
  spec: ParsedTableSpec,
  columns: string[],
  files: ParsedFile[],
): void {
  const names = [...columns, FILE_PATH_COLUMN, ROW_INDEX_COLUMN].map(quoteIdentifier);
  const insert = db.prepare(
    `INSERT INTO ${quoteIdentifier(spec.name)} (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`,
  );
  const position = new Map(columns.map((column, i) => [column.toLowerCase(), i]));
  const values: StoredValue[] = new Array(names.length);
  const writeRow = (row: HookRow, path: string, index: number) => {
    values.fill(null);
    for (const [key, value] of row) {
      const at = position.get(key.toLowerCase());
      if (at !== undefined) values[at] = value;
    }
    values[columns.length] = path;
    values[columns.length + 1] = BigInt(index);
    insert.run(values);
  };
  db.transaction(() => {
    for (const file of files) file.rows.forEach((row, i) => writeRow(row, file.path, i));
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
): Promise<SkippedPath[]> {
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
  const parsed = await parseFiles(spec.command, walked.paths, {
    root: options.root,
    concurrency: options.concurrency,
    phase,
  });
  phase.finish((duration) => `indexed ${walked.paths.length} files in ${duration}`);
  const columns = spec.schema
    ? spec.schema.map(([column]) => column)
    : inferColumns(parsed.files.map((file) => file.rows));
  createTable(db, spec, columns);
  insertRows(db, spec, columns, parsed.files);
  return [...walked.skipped, ...parsed.skipped];
}
