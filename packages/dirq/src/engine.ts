import { realpathSync, statSync } from "node:fs";
import type { Statement } from "better-sqlite3";
import { DirqError } from "./errors.js";
import { openIndexDatabase, type SqliteDatabase } from "./indexer/database.js";
import { PathTables } from "./indexer/path-tables.js";
import { createProgressReporter, type ProgressReporter } from "./progress/reporter.js";
import { checkReadOnlyStatement, isExplain } from "./query/read-only-guard.js";
import { tablesReadBy } from "./query/statement-plan.js";
import type { SkippedPath } from "./scan/walk.js";

export interface OpenIndexOptions {
  /** The index root; default: the current working directory. */
  root?: string;
  /** Scan files a `.gitignore` would hide (`--no-ignore`). Built-in skips still apply. */
  noIgnore?: boolean;
  /** Extra ignore globs relative to the root (config `[dirq] ignore`). */
  ignore?: readonly string[];
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
  /** Files and folders the scan for this query could not read (a partial scan). */
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

  constructor(options: OpenIndexOptions = {}) {
    this.root = resolveRoot(options.root ?? process.cwd());
    this.db = openIndexDatabase(this.root);
    const progress =
      options.progress === false
        ? { start: () => ({ update() {}, finish() {} }) }
        : (options.progress ?? createProgressReporter(process.stderr));
    this.pathTables = new PathTables(this.db, {
      root: this.root,
      useGitignore: !options.noIgnore,
      extraIgnores: options.ignore,
      progress,
    });
  }

  /** Prepares the statement, creating each path-table it names that does not exist yet. */
  private prepareCreatingPathTables(sql: string): Statement {
    for (let created = 0; ; created++) {
      try {
        return this.db.prepare(sql);
      } catch (error) {
        const missing = error instanceof Error ? NO_SUCH_TABLE.exec(error.message)?.[1] : undefined;
        if (missing === undefined || created >= MAX_PATH_TABLES_PER_STATEMENT) {
          throw sqlError(error);
        }
        if (missing.toLowerCase() === "files") throw removedFilesTable();
        if (!this.pathTables.create(missing)) throw sqlError(error);
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
    const statement = this.prepareCreatingPathTables(sql);
    if (!statement.readonly) {
      throw new DirqError(
        "QUERY_NOT_READONLY",
        "this statement writes to the database. dirq is read-only: only reads are allowed",
      );
    }
    const skipped = await this.fillTablesRead(sql);
    if (!statement.reader) {
      statement.run();
      return { columns: [], rows: [], skipped };
    }
    statement.raw(true).safeIntegers(true);
    const columns = statement.columns().map((column) => column.name);
    return { columns, rows: iterateRows(statement), skipped };
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

function* iterateRows(statement: Statement): Iterable<SqlValue[]> {
  try {
    yield* statement.iterate() as Iterable<SqlValue[]>;
  } catch (error) {
    throw sqlError(error);
  }
}

/** Opens an index over `root` (default: the working directory). */
export function openIndex(options: OpenIndexOptions = {}): DirqIndex {
  return new DirqIndex(options);
}
