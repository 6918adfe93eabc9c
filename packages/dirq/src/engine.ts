import { realpathSync, statSync } from "node:fs";
import type { Statement } from "better-sqlite3";
import { type DirqConfig, EMPTY_CONFIG, type TableConfig } from "./config/load-config.js";
import { DirqError } from "./errors.js";
import { openIndexDatabase, type SqliteDatabase } from "./indexer/database.js";
import {
  buildParsedTable,
  FILE_PATH_COLUMN,
  type ParsedTableSpec,
  ROW_INDEX_COLUMN,
} from "./indexer/parsed-tables.js";
import { PathTables } from "./indexer/path-tables.js";
import { type HookCommand, parseHookCommand } from "./parse/hook-command.js";
import { createProgressReporter, type ProgressReporter } from "./progress/reporter.js";
import { checkReadOnlyStatement, isExplain } from "./query/read-only-guard.js";
import { visibleColumnPositions } from "./query/hidden-columns.js";
import { tablesReadBy } from "./query/statement-plan.js";
import { parsePathTableName } from "./scan/path-selection.js";
import type { SkippedPath } from "./scan/walk.js";

export interface OpenIndexOptions {
  /** The index root; default: the current working directory. */
  root?: string;
  /** Scan files a `.gitignore` would hide (`--no-ignore`). Built-in skips still apply. */
  noIgnore?: boolean;
  /** Extra ignore globs relative to the root (config `[dirq] ignore`). */
  ignore?: readonly string[];
  /**
   * A parser command for every path-table (`--on-file`): each file's rows are what the command
   * prints, and the stat columns are not reachable. Never applies to config tables.
   */
  onFile?: string;
  /** Merged config (`loadConfigs`): named tables and ignore patterns. */
  config?: DirqConfig;
  /** Hooks run at once; default one per CPU core. */
  hookConcurrency?: number;
  /**
   * Progress reporting. Default: lines on stderr as `DIRQ_PROGRESS` says (so every client of
   * the library behaves like the CLI). `false` turns it off.
   */
  progress?: ProgressReporter | false;
}

/** One SQLite value as dirq returns it: INTEGER as bigint (exact), BLOB as Buffer. */
export type SqlValue = null | bigint | number | string | Buffer;

export interface QueryResult {
  /** Result column names, in SELECT order. */
  columns: string[];
  /** The rows, read lazily from SQLite: iterate once. */
  rows: Iterable<SqlValue[]>;
  /**
   * Files the scan for this query could not read, and files whose hook failed: a partial scan.
   */
  skipped: SkippedPath[];
}

/** Too many distinct missing tables in one statement means something else is wrong. */
const MAX_PATH_TABLES_PER_STATEMENT = 64;

const NO_SUCH_TABLE = /^no such table: (.+)$/;

function removedFilesTable(): DirqError {
  return new DirqError(
    "TABLE_REMOVED",
    "no such table: files. The implicit table 'files' was removed: query the root as a path-table instead, as in SELECT * FROM './'",
  );
}

function sqlError(error: unknown): unknown {
  if (error instanceof Error && error.name === "SqliteError") {
    return new DirqError("SQL_ERROR", error.message, { cause: error });
  }
  if (error instanceof RangeError && /parameter/i.test(error.message)) {
    return new DirqError(
      "SQL_ERROR",
      "the statement has parameters (?, :name, @name or $name), which dirq cannot bind: write the values into the SQL",
      { cause: error },
    );
  }
  return error;
}

function resolveRoot(root: string): string {
  const stats = statSync(root, { throwIfNoEntry: false });
  if (!stats?.isDirectory()) {
    throw new DirqError("ROOT_INVALID", `root '${root}' is not a directory`);
  }
  return realpathSync(root);
}

/**
 * A directory tree as a read-only SQLite database. Path-tables (`FROM './docs/*.md'`) are
 * built the first time a statement names them.
 */
export class DirqIndex {
  readonly root: string;
  private readonly db: SqliteDatabase;
  private readonly pathTables: PathTables;
  private readonly config: DirqConfig;
  private readonly onFile: HookCommand | null;
  private readonly parsedOptions: ConstructorParameters<typeof PathTables>[1] & {
    concurrency?: number;
  };
  /** Parsed tables built so far (lower-cased name), so each is built once per index. */
  private readonly builtTables = new Set<string>();
  /** Files skipped while building tables for the statement being prepared. */
  private pendingSkipped: SkippedPath[] = [];
  /** Config tables are built before the first statement runs (views in a `ddl` need them). */
  private configTablesBuilt = false;

  constructor(options: OpenIndexOptions = {}) {
    this.root = resolveRoot(options.root ?? process.cwd());
    this.config = options.config ?? EMPTY_CONFIG;
    this.onFile = options.onFile === undefined ? null : parseHookCommand(options.onFile);
    const progress =
      options.progress === false
        ? { start: () => ({ update() {}, finish() {} }) }
        : (options.progress ?? createProgressReporter(process.stderr));
    this.parsedOptions = {
      root: this.root,
      useGitignore: !options.noIgnore,
      extraIgnores: [...(options.ignore ?? []), ...this.config.ignore],
      progress,
      concurrency: options.hookConcurrency,
    };
    this.db = openIndexDatabase(this.root);
    this.pathTables = new PathTables(this.db, this.parsedOptions);
  }

  private async buildParsed(spec: ParsedTableSpec): Promise<void> {
    const skipped = await buildParsedTable(this.db, spec, this.parsedOptions);
    this.builtTables.add(spec.name.toLowerCase());
    this.pendingSkipped.push(...skipped);
  }

  private configTableSpec(table: TableConfig): ParsedTableSpec {
    let selection: ParsedTableSpec["selection"];
    try {
      selection = parsePathTableName(`./${table.glob}`, this.root);
    } catch (error) {
      if ((error as DirqError).code !== "PATH_NOT_FOUND") throw error;
      selection = null;
    }
    return {
      name: table.name,
      selection,
      command: parseHookCommand(table.onFile, table.baseDir),
      schema: table.schema,
      ddl: table.ddl,
      origin: table.origin,
    };
  }

  /**
   * Builds every config table, in config order, once per index: a `ddl` view or trigger may
   * read another table, and `sqlite_master` should list them all from the first statement.
   */
  private async buildConfigTables(): Promise<void> {
    if (this.configTablesBuilt) return;
    this.configTablesBuilt = true;
    for (const table of this.config.tables) {
      if (!this.builtTables.has(table.name.toLowerCase())) {
        await this.buildParsed(this.configTableSpec(table));
      }
    }
  }

  /**
   * Creates the path-table a statement names when it is missing: parsed by `--on-file`, or a
   * plain one (filled later, with only the columns the statement reads). `false` when the
   * name is not a path-table.
   */
  private async createMissingTable(name: string): Promise<boolean> {
    if (name.toLowerCase() === "files") throw removedFilesTable();
    if (this.onFile === null) return this.pathTables.create(name);
    const selection = parsePathTableName(name, this.root);
    if (selection === null) return false;
    await this.buildParsed({
      name,
      selection,
      command: this.onFile,
      schema: null,
      ddl: null,
      origin: "--on-file",
    });
    return true;
  }

  /** Prepares the statement, creating each table it names that does not exist yet. */
  private async prepareCreatingTables(sql: string): Promise<Statement> {
    for (let created = 0; ; created++) {
      try {
        return this.db.prepare(sql);
      } catch (error) {
        const missing = error instanceof Error ? NO_SUCH_TABLE.exec(error.message)?.[1] : undefined;
        if (missing === undefined || created >= MAX_PATH_TABLES_PER_STATEMENT) {
          throw sqlError(error);
        }
        if (!(await this.createMissingTable(missing))) throw sqlError(error);
      }
    }
  }

  /** Fills the path-tables the statement reads; denies any internal table it would read. */
  private async fillTablesRead(sql: string): Promise<SkippedPath[]> {
    if (isExplain(sql)) return [];
    const skipped: SkippedPath[] = [];
    for (const [table, columns] of tablesReadBy(this.db, sql)) {
      if (/^_dirq_/i.test(table)) {
        throw new DirqError(
          "QUERY_INTERNAL_TABLE",
          `${table} is an internal dirq table and cannot be queried (reached through a view)`,
        );
      }
      skipped.push(...(await this.pathTables.fill(table, PathTables.groupsFor(columns))));
    }
    return skipped;
  }

  /**
   * Runs one read-only statement. Rejects writes, ATTACH/DETACH, VACUUM, PRAGMA assignments,
   * transactions, several statements and internal tables with a `DirqError` before anything
   * runs.
   */
  async query(sql: string): Promise<QueryResult> {
    checkReadOnlyStatement(sql);
    this.pendingSkipped = [];
    await this.buildConfigTables();
    const statement = await this.prepareCreatingTables(sql);
    if (!statement.readonly) {
      throw new DirqError(
        "QUERY_NOT_READONLY",
        "this statement writes to the database. dirq is read-only: only reads are allowed",
      );
    }
    const skipped = [...this.pendingSkipped, ...(await this.fillTablesRead(sql))];
    if (!statement.reader) {
      statement.run();
      return { columns: [], rows: [], skipped };
    }
    statement.raw(true).safeIntegers(true);
    const shown = visibleColumnPositions(statement.columns(), sql, HIDDEN);
    const columns = shown.map((i) => statement.columns()[i]?.name ?? "");
    const all = shown.length === statement.columns().length;
    return { columns, rows: iterateRows(statement, all ? null : shown), skipped };
  }

  /** Runs a statement and collects its rows as objects keyed by column name. */
  async queryObjects(sql: string): Promise<Record<string, SqlValue>[]> {
    const result = await this.query(sql);
    return Array.from(result.rows, (row) =>
      Object.fromEntries(result.columns.map((name, i) => [name, row[i] ?? null])),
    );
  }

  close(): void {
    this.db.close();
  }
}

const HIDDEN = new Set([FILE_PATH_COLUMN, ROW_INDEX_COLUMN]);

function* iterateRows(statement: Statement, keep: number[] | null): Iterable<SqlValue[]> {
  try {
    const rows = statement.iterate() as Iterable<SqlValue[]>;
    if (keep === null) yield* rows;
    else for (const row of rows) yield keep.map((i) => row[i] as SqlValue);
  } catch (error) {
    throw sqlError(error);
  }
}

/** Opens an index over `root` (default: the working directory). */
export function openIndex(options: OpenIndexOptions = {}): DirqIndex {
  return new DirqIndex(options);
}
