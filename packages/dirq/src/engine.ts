import { existsSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Statement } from "@rocicorp/zero-sqlite3";
import { type DirqConfig, EMPTY_CONFIG } from "./config/types.js";
import {
  applyProfile,
  type ConnectionProfile,
  type ExtensionSpec,
  functionsCalledBy,
  profileOf,
} from "./connection/profile.js";
import { DirqError } from "./errors.js";
import type { WorkerFunctions } from "./functions/worker-functions.js";
import {
  cacheIgnorePatterns,
  defaultCachePath,
  isStorageError,
  openCache,
  storageError,
} from "./indexer/cache-file.js";
import { Catalog } from "./indexer/catalog.js";
import { openIndexDatabase, type SqliteDatabase } from "./indexer/database.js";
import { FillWorker } from "./indexer/fill-worker.js";
import {
  buildParsedTable,
  type LiveParsedTable,
  type ParsedTableSpec,
  storedColumns,
} from "./indexer/parsed-tables.js";
import { ALL_COLUMN_GROUPS, type ColumnGroups, PathTables } from "./indexer/path-tables.js";
import {
  configTableSpec,
  definitionChange,
  onFileSpec,
  parsedSpecText,
  sweepCatalog,
} from "./indexer/table-specs.js";
import { Refresher, type WriterLock } from "./indexer/refresh.js";
import type { RowChange } from "./indexer/row-changes.js";
import { selectionMatcher } from "./scan/inclusion.js";
import { commandExtractor, type Extractor } from "./parse/extractor.js";
import { parseHookCommand } from "./parse/hook-command.js";
import { createProgressReporter, type ProgressReporter } from "./progress/reporter.js";
import { jsonFromSqlite, wrapForJson } from "./output/sqlite-json.js";
import {
  type ColumnPlan,
  columnPlan,
  executeStatement,
  type SqlValue,
  type StatementRows,
  sqlError,
} from "./query/execute.js";
import { CaseVariants } from "./query/case-variants.js";
import { TableGenerations } from "./indexer/table-generations.js";
import { isExplain } from "./query/read-only-guard.js";
import { analyzeStatement } from "./query/statement-analysis.js";
import { ROWID } from "./query/statement-plan.js";
import {
  type PreparedStatement,
  type PrepareOptions,
  type PreparerHost,
  StatementPreparer,
} from "./query/statement-preparer.js";
import { bindArguments, nullArguments, type QueryParameters } from "./query/parameters.js";
import { parsePathTableName } from "./scan/path-selection.js";
import type { SkippedPath } from "./scan/walk.js";
import { realPath } from "./shared/real-path.js";

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
  /**
   * SQLite extensions to load (`--extension`, see `parseExtensionArgument`). When any is
   * given, the config's `[[dirq.extension]]` entries are not loaded.
   */
  extensions?: readonly ExtensionSpec[];
  /** Hooks run at once; default one per CPU core. */
  hookConcurrency?: number;
  /**
   * Keep the index in this SQLite file (WAL mode) instead of memory, so that other processes
   * can read it (the server's query processes).
   */
  databasePath?: string;
  /**
   * Keep the index in this SQLite file across runs (`--persist`): a later index over the same
   * root re-parses only the files that changed since. `true`: `<root>/.dirq/cache.db`; a
   * relative path resolves against the root. Takes precedence over `databasePath` (the file
   * is in WAL mode too, so other processes can read it).
   */
  persist?: string | true;
  /**
   * Fill every column of a path-table on first use, not only the ones the statement reads
   * (the server does, so the watcher keeps whole rows current).
   */
  fillAllColumns?: boolean;
  /**
   * A statement that reads no column of a path-table (`count(*)`, `EXISTS`) fills it with
   * rows that have an empty path, and a later statement that reads a column fills it again
   * (the one-shot CLI: one statement reads the index). Off by default: a live index looks
   * its rows up by path.
   */
  pathlessFills?: boolean;
  /**
   * With `pathlessFills`, a statement that reads no column and no row id of a path-table
   * (`count(*)`, `EXISTS`) gets, in the table's place, a view of as many blank rows as the walk
   * counted: no row is written. The next statement checked turns it back into the empty table,
   * which a statement reading it then fills. For an in-memory index that runs one statement at
   * a time and that nothing else writes (the one-shot CLI); a persisted index keeps writing
   * rows. Needs dirq's native extension; without it rows are written.
   */
  countedFills?: boolean;
  /**
   * Fill path-tables on a thread of their own, with its own connection to the index file
   * (needs `databasePath` or `persist`): the calling thread stays free while a big table
   * fills (the server's event loop). Default: fills run on the calling thread.
   */
  fillOnThread?: boolean;
  /**
   * Progress reporting. Default: lines on stderr as `DIRQ_PROGRESS` says (so every client of
   * the library behaves like the CLI). `false` turns it off.
   */
  progress?: ProgressReporter | false;
}

export type { SqlValue };

export interface QueryResult extends StatementRows {
  /**
   * Files the scan for this query could not read, and files whose hook failed: a partial scan.
   */
  skipped: SkippedPath[];
  /**
   * The whole answer as JSON written by SQLite: the UTF-8 bytes `jsonChunks` writes for the
   * rows, without the final newline. `null` when it must be written the JS way: more than
   * `maxRows` rows, a REAL or BLOB value SQLite would write differently, a statement that
   * cannot be wrapped, or an error (which reading `rows` then reports). Absent for a
   * statement with bound values or worker calls.
   */
  jsonFromSqlite?: (maxRows: number) => Buffer | null;
}

export type { PreparedStatement, PrepareOptions };
/** Checks values for a statement's parameters (the SDK checks them before anything runs). */
export { bindArguments };

/** What `DirqIndex.query` takes besides the statement. */
export interface IndexQueryOptions {
  /**
   * Values for the statement's parameters (the SDK): with it the statement may have them, and
   * must get exactly their values (`values` undefined: none). Without it, a statement with
   * parameters is refused, as the CLI and HTTP have no values to bind.
   */
  bind?: { values: QueryParameters | undefined };
}

function removedFilesTable(): DirqError {
  return new DirqError(
    "TABLE_REMOVED",
    "no such table: files. The implicit table 'files' was removed: query the root as a path-table instead, as in SELECT * FROM './'",
  );
}

/**
 * The index's one writer: tasks run one at a time, in order, and a failed task never blocks
 * the next. Reads never take it.
 */
function createWriterLock(): WriterLock {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(task: () => T | Promise<T>): Promise<T> => {
    const result = tail.then(task);
    tail = result.catch(() => undefined);
    return result;
  };
}

function resolveRoot(root: string): string {
  try {
    if (statSync(root, { throwIfNoEntry: false })?.isDirectory()) return realPath(root);
  } catch (error) {
    // A folder on the way that cannot be searched, a loop of symlinks: the system's reason.
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new DirqError("ROOT_INVALID", `root '${root}' cannot be opened (${reason})`, {
      cause: error,
    });
  }
  throw new DirqError("ROOT_INVALID", `root '${root}' is not a directory`);
}

/**
 * A directory tree as a read-only SQLite database. Path-tables (`FROM './docs/*.md'`) are
 * built the first time a statement names them.
 */
export class DirqIndex {
  readonly root: string;
  private readonly db: SqliteDatabase;
  private readonly pathTables: PathTables;
  private readonly refresher: Refresher;
  private readonly config: DirqConfig;
  private readonly onFile: Extractor | null;
  private readonly parsedOptions: ConstructorParameters<typeof PathTables>[1] & {
    concurrency?: number;
    signal?: AbortSignal;
  };
  /**
   * `--on-file` tables kept from a persisted index whose files are not compared with the tree
   * yet (lower-cased names): the first statement that reads one brings it up to date, as a
   * config table is before the first statement.
   */
  private readonly unreconciled = new Set<string>();
  /** Ignore patterns the user gave (`--ignore`, `[dirq] ignore`): part of a definition. */
  private readonly userIgnores: readonly string[];
  /** Parsed tables built so far, by lower-cased name: each is built once per index. */
  private readonly parsedTables = new Map<string, LiveParsedTable>();
  private readonly fillAllColumns: boolean;
  private readonly progress: ProgressReporter;
  /** Extensions and worker functions of every connection to this index. */
  readonly connectionProfile: ConnectionProfile;
  private readonly functions: WorkerFunctions;
  /** The thread path-table fills run on (`fillOnThread`), or `null`: this one. */
  private readonly fillWorker: FillWorker | null = null;
  private readonly caseVariants = new CaseVariants();
  /** Checks statements and builds what they read (see `StatementPreparer`). */
  private readonly preparer: StatementPreparer;
  /** Config tables are built before the first statement runs (views in a `ddl` need them). */
  private configTablesBuilt = false;
  /** Counts of changes per table, for the server's result cache. */
  private readonly generations = new TableGenerations(
    // A row change's `table` is the path-table name the user wrote, also for a case
    // variant's SQLite name.
    (name) => this.caseVariants.pathOf(name),
    () => this.schemaVersion,
  );
  private readonly writerLock = createWriterLock();
  /**
   * Aborted by `close`: hooks a table build still runs are stopped. Made when a build first
   * asks for its signal: a statement that runs no hook never loads Node's AbortController
   * (a module of its own, compiled on first use) nor dispatches its abort at close.
   */
  private closing: AbortController | null = null;

  private closingSignal(): AbortSignal {
    this.closing ??= new AbortController();
    return this.closing.signal;
  }

  /**
   * Runs a write task under the index's one writer. A full or read-only disk under the index
   * file is an error naming the file, not an internal one.
   */
  private withWriter<T>(task: () => T | Promise<T>): Promise<T> {
    const tracked = async () => {
      this.writers.active++;
      this.writers.epoch++;
      try {
        return await task();
      } finally {
        this.writers.active--;
        this.writers.epoch++;
      }
    };
    return this.writerLock(tracked).catch((error: unknown) => {
      if (this.databasePath !== null && isStorageError(error)) {
        throw storageError(this.databasePath, error);
      }
      throw error;
    });
  }
  /** The record of tables and files of a persisted index; `null` for one that is not. */
  private readonly catalog: Catalog | null;
  private readonly releaseCache: () => void;
  /**
   * One-line notices from opening the index (a persisted cache that had to be rebuilt), for
   * the caller to show.
   */
  readonly notices: string[] = [];
  /** The SQLite file that holds the index, or `null` when it lives in memory. */
  readonly databasePath: string | null;

  /**
   * A stamp of the rows of `tables` (SQLite names, as `prepare` lists them): it differs from an
   * earlier one once any of them may have changed (see `TableGenerations`).
   */
  tableGenerations(tables: readonly string[]): string {
    return this.generations.stamp(tables);
  }

  private tablesChanged(tables: Iterable<string | null> | null): void {
    this.generations.changed(tables);
  }

  /** What the preparer may do to this index: look tables up, build them, take the writer. */
  private preparerHost(): PreparerHost {
    return {
      db: this.db,
      caseVariants: this.caseVariants,
      schemaVersion: () => this.schemaVersion,
      configTablesBuilt: () => this.configTablesBuilt,
      buildConfigTables: () => this.buildConfigTables(),
      pathTableNames: () => this.pathTableNames(),
      tableExists: (name) => this.tableExists(name),
      createMissingTable: (name) => this.createMissingTable(name),
      missingTableError: (name, error) => this.missingTableError(name, error),
      needsFill: (table, columns) =>
        this.unreconciled.has(table.toLowerCase()) ||
        this.pathTables.needsFill(table, this.groupsFor(columns)),
      fill: (table, columns, readsSchema) =>
        this.unreconciled.has(table.toLowerCase())
          ? this.reconcileOnFileTable(table)
          : this.pathTables.fill(table, this.groupsFor(columns), {
              readsRowid: columns.has(ROWID),
              readsSchema,
            }),
      beforeStatement: () => this.pathTables.revertCounted(),
      touch: (tables) => this.pathTables.touch(tables),
      callsWorkers: (functions) => this.functions.calledIn(functions).length > 0,
      withWriter: (task) => this.withWriter(task),
      tablesChanged: (tables) => this.tablesChanged(tables),
    };
  }

  /** The column groups a fill brings in for reading these columns. */
  private groupsFor(columns: ReadonlySet<number>): ColumnGroups {
    return this.fillAllColumns ? ALL_COLUMN_GROUPS : PathTables.groupsFor(columns);
  }

  /** The tables a refresh's row changes touched; `null` (all) when a trigger may write others. */
  private tablesTouchedBy(changes: readonly RowChange[]): (string | null)[] | null {
    if (changes.length === 0) return [];
    // A `ddl` trigger writes tables of its own choosing; no row change names them.
    const trigger = this.db
      .prepare("SELECT 1 FROM main.sqlite_schema WHERE type = 'trigger' LIMIT 1")
      .get();
    if (trigger !== undefined) return null;
    return [...new Set(changes.map((change) => change.table))];
  }

  constructor(options: OpenIndexOptions = {}) {
    this.root = resolveRoot(options.root ?? process.cwd());
    this.config = options.config ?? EMPTY_CONFIG;
    this.onFile =
      options.onFile === undefined ? null : commandExtractor(parseHookCommand(options.onFile));
    const progress: ProgressReporter =
      options.progress === false
        ? { start: () => ({ update() {}, finish() {} }) }
        : (options.progress ?? createProgressReporter(process.stderr));
    const persist =
      options.persist === undefined
        ? undefined
        : options.persist === true
          ? defaultCachePath(this.root)
          : resolve(this.root, options.persist);
    this.userIgnores = [...(options.ignore ?? []), ...this.config.ignore];
    const closingSignal = () => this.closingSignal();
    this.parsedOptions = {
      root: this.root,
      useGitignore: !options.noIgnore,
      extraIgnores: [
        ...this.userIgnores,
        ...(persist === undefined ? [] : cacheIgnorePatterns(this.root, persist)),
      ],
      progress,
      concurrency: options.hookConcurrency,
      get signal() {
        return closingSignal();
      },
      pathlessFills: options.pathlessFills === true && options.fillAllColumns !== true,
      countedFills:
        options.countedFills === true &&
        options.pathlessFills === true &&
        options.fillAllColumns !== true,
    };
    this.progress = progress;
    this.fillAllColumns = options.fillAllColumns ?? false;
    this.connectionProfile = profileOf(this.config, options.extensions);
    // A persisted cache is checked with the extensions loaded (its `ddl` may use them).
    let applied: WorkerFunctions | null = null;
    if (persist !== undefined) {
      const cache = openCache(persist, this.root, (db) => {
        applied = applyProfile(db, this.connectionProfile);
      });
      this.db = cache.db;
      this.releaseCache = cache.release;
      if (cache.notice !== null) this.notices.push(cache.notice);
      this.databasePath = persist;
    } else {
      this.db = openIndexDatabase(this.root, options.databasePath);
      this.releaseCache = () => {};
      this.databasePath = options.databasePath ?? null;
    }
    try {
      // Before any table is built: a config table's ddl may use an extension.
      this.functions = applied ?? applyProfile(this.db, this.connectionProfile);
      this.catalog = persist === undefined ? null : new Catalog(this.db);
      if (options.fillOnThread && this.databasePath !== null) {
        this.fillWorker = new FillWorker({
          databasePath: this.databasePath,
          synchronous: this.db.pragma("synchronous", { simple: true }) as number,
        });
        this.fillWorker.start();
      }
      const fillWorker = this.fillWorker;
      this.pathTables = new PathTables(
        this.db,
        this.parsedOptions,
        this.catalog,
        fillWorker ? (job, progress) => fillWorker.run(job, progress) : undefined,
      );
      if (this.catalog !== null) {
        // Only tables this index would build the same way are kept.
        sweepCatalog(this.db, this.catalog, (table) => {
          if (table.kind !== "parsed") {
            return table.kind === "path" && this.onFile === null && this.pathTables.restore(table);
          }
          const expected = this.expectedParsedSpec(table.name);
          if (table.spec === expected) return true;
          // Built again in this run (a config table, or an --on-file one of this command):
          // say why its files are all parsed again.
          if (expected !== null) {
            this.notices.push(
              `rebuilding table ${table.name}: ${definitionChange(table.spec, expected)}`,
            );
          }
          return false;
        });
        // A first build stopped part way left its parsed files staged: kept for the same table.
        this.catalog.sweepStaged((name, spec) => this.expectedParsedSpec(name) === spec);
        for (const table of this.catalog.tables()) {
          const name = table.name.toLowerCase();
          const configured = this.config.tables.some((t) => t.name.toLowerCase() === name);
          if (table.kind === "parsed" && !configured) this.unreconciled.add(name);
        }
      }
    } catch (error) {
      void this.fillWorker?.close();
      this.db.close();
      this.releaseCache();
      if (this.databasePath !== null && isStorageError(error)) {
        throw storageError(this.databasePath, error);
      }
      throw error;
    }
    this.refresher = new Refresher(
      this.db,
      this.root,
      { pathTables: this.pathTables, parsedTables: this.parsedTables },
      this.parsedOptions,
      (task) => this.withWriter(task),
      this.catalog,
    );
    this.preparer = new StatementPreparer(this.preparerHost());
  }

  /** A parsed table's definition in this index (see `parsedSpecText`). */
  private parsedSpecText(spec: ParsedTableSpec): string {
    return parsedSpecText(spec, {
      root: this.root,
      useGitignore: this.parsedOptions.useGitignore,
      ignore: this.userIgnores,
      extensions: this.connectionProfile.extensions,
      functions: this.connectionProfile.functions,
      contentHash: (absolute) => this.catalog?.programHash(absolute) ?? null,
    });
  }

  /** The spec a persisted parsed table must have to be reused in this index, if any. */
  private expectedParsedSpec(name: string): string | null {
    const table = this.config.tables.find((t) => t.name.toLowerCase() === name.toLowerCase());
    try {
      if (table !== undefined) return this.parsedSpecText(configTableSpec(table, this.root));
      if (this.onFile === null) return null;
      const selection = parsePathTableName(name, this.root);
      return selection === null
        ? null
        : this.parsedSpecText(onFileSpec(name, selection, this.onFile));
    } catch {
      return null;
    }
  }

  /** Builds a parsed table; returns the files skipped. */
  private async buildParsed(spec: ParsedTableSpec): Promise<SkippedPath[]> {
    const matches = spec.selection ? selectionMatcher(spec.selection) : () => false;
    const catalog = this.catalog;
    const definition = catalog === null ? null : this.parsedSpecText(spec);
    const stored = catalog?.table(spec.name);
    if (catalog !== null && stored?.spec === definition && this.tableExists(spec.name)) {
      // Persisted with the same definition: parse only what changed since.
      const live: LiveParsedTable = { spec, columns: storedColumns(this.db, spec.name), matches };
      this.parsedTables.set(spec.name.toLowerCase(), live);
      const { skipped, changes } = await this.refresher.reconcile(live, catalog);
      return [...skipped, ...skippedFromChanges(changes)];
    }
    if (catalog !== null && stored !== undefined) catalog.dropTable(stored);
    const persisted =
      catalog !== null && definition !== null ? { catalog, spec: definition } : null;
    const { skipped, columns } = await buildParsedTable(
      this.db,
      spec,
      this.parsedOptions,
      persisted,
    );
    this.parsedTables.set(spec.name.toLowerCase(), { spec, columns, matches });
    return skipped;
  }

  /**
   * Builds every config table, in config order, once per index: a `ddl` view or trigger may
   * read another table, and `sqlite_master` should list them all from the first statement.
   */
  private async buildConfigTables(): Promise<SkippedPath[]> {
    const skipped: SkippedPath[] = [];
    if (this.configTablesBuilt) return skipped;
    this.configTablesBuilt = true;
    for (const table of this.config.tables) {
      if (!this.parsedTables.has(table.name.toLowerCase())) {
        skipped.push(...(await this.buildParsed(configTableSpec(table, this.root))));
      }
    }
    return skipped;
  }

  /**
   * Builds every config table now rather than before the first statement (the server does
   * this at start). Returns the files skipped on the way.
   */
  async build(): Promise<SkippedPath[]> {
    return this.withWriter(async () => {
      const skipped = await this.buildConfigTables();
      this.tablesChanged(null);
      return skipped;
    });
  }

  /**
   * Creates the path-table a statement names when it is missing: parsed by `--on-file`, or a
   * plain one (filled later, with only the columns the statement reads). Returns the files
   * skipped; `null` when the name is not a path-table.
   */
  private async createMissingTable(name: string): Promise<SkippedPath[] | null> {
    if (name.toLowerCase() === "files") throw removedFilesTable();
    const path = this.caseVariants.pathOf(name);
    if (this.onFile === null) {
      const before = this.pathTables.names();
      const created = this.pathTables.create(name, path);
      // Making room drops idle path-tables: the watcher no longer keeps their rows current.
      const kept = new Set(this.pathTables.names());
      this.tablesChanged(before.filter((table) => !kept.has(table)));
      return created ? [] : null;
    }
    const selection = parsePathTableName(path, this.root);
    if (selection === null) return null;
    return this.buildParsed({ ...onFileSpec(path, selection, this.onFile), name });
  }

  /**
   * Brings an `--on-file` table kept from a persisted index up to date with the tree (only
   * the files that changed are parsed again). Returns the files skipped.
   */
  private async reconcileOnFileTable(name: string): Promise<SkippedPath[]> {
    this.unreconciled.delete(name.toLowerCase());
    const path = this.caseVariants.pathOf(name);
    const selection = this.onFile === null ? null : parsePathTableName(path, this.root);
    if (this.onFile === null || selection === null) return [];
    return this.buildParsed({ ...onFileSpec(path, selection, this.onFile), name });
  }

  /**
   * "no such table", with a hint when the name is a file or folder under the root written
   * without its `./` (`FROM 'docs'`).
   */
  private missingTableError(name: string, error: unknown): unknown {
    const plain = !name.includes("/") && !name.includes("\0") && name !== "." && name !== "..";
    if (!plain || !existsSync(join(this.root, name))) return sqlError(error);
    return new DirqError(
      "SQL_ERROR",
      `no such table: ${name}. '${name}' is a file or folder under the root: a path-table starts with './', as in FROM './${name}'`,
    );
  }

  private tableExists(name: string): boolean {
    const found = this.db
      .prepare(
        "SELECT 1 FROM main.sqlite_schema WHERE type IN ('table', 'view') AND name = ? COLLATE NOCASE",
      )
      .get(name);
    return found !== undefined;
  }

  /**
   * Runs one read-only statement. Rejects writes, ATTACH/DETACH, VACUUM, PRAGMA assignments,
   * transactions, several statements and internal tables with a `DirqError` before anything
   * runs.
   */
  async query(sql: string, options: IndexQueryOptions = {}): Promise<QueryResult> {
    const { bind } = options;
    // A wrong count or name fails before anything is built.
    const args = bind === undefined ? [] : bindArguments(sql, bind.values);
    // Builds what the statement needs under the writer; a statement that needs nothing
    // built never waits for it (a refresh committing, a hook running).
    const prepared = await this.prepare(sql, { parameters: bind !== undefined });
    let statement: Statement;
    let called = new Set<string>();
    try {
      statement = this.db.prepare(prepared.sql);
      if (prepared.callsWorkers && !isExplain(prepared.sql)) {
        const nulls = bind === undefined ? [] : nullArguments(prepared.sql);
        called = functionsCalledBy(this.db, prepared.sql, nulls);
      }
    } catch (error) {
      throw sqlError(error);
    }
    const workerCalls = this.functions.calledIn(called);
    const { skipped } = prepared;
    if (workerCalls.length === 0) {
      if (bind !== undefined || !statement.reader) {
        return { ...executeStatement(statement, sql, undefined, args), skipped };
      }
      const plan = columnPlan(statement, sql);
      return {
        ...executeStatement(statement, sql, plan, args),
        skipped,
        jsonFromSqlite: (maxRows) => this.answerInSqlite(statement, prepared.sql, plan, maxRows),
      };
    }
    // Run in passes until every worker call is answered (see WorkerFunctions); the rows of
    // the last pass are the answer.
    const result = await this.functions.run(
      (pending) => {
        const { columns, rows } = executeStatement(statement, sql, undefined, args);
        const kept: SqlValue[][] = [];
        for (const row of rows) if (!pending()) kept.push(row);
        return { columns, rows: kept };
      },
      this.progress,
      workerCalls,
    );
    return { ...result, skipped };
  }

  /** See `QueryResult.jsonFromSqlite`. */
  private answerInSqlite(
    statement: Statement,
    sql: string,
    plan: ColumnPlan,
    maxRows: number,
  ): Buffer | null {
    const analysis = analyzeStatement(sql);
    const wrapped = wrapForJson(this.db, statement, analysis, plan, undefined, -1, maxRows);
    if (wrapped === null) return null;
    // No byte limit here: `maxRows` bounds the answer's size.
    return jsonFromSqlite(wrapped, Number.POSITIVE_INFINITY, () => new RangeError("no limit"));
  }

  /** Path-table names in use, as SQLite knows them. */
  private pathTableNames(): string[] {
    const parsed = [...this.parsedTables.values()].map((table) => table.spec.name);
    return [...this.pathTables.names(), ...parsed];
  }

  /**
   * Checks a statement and builds every table it reads, without running it: what a query
   * does before its rows are read. The server runs the statement itself in a separate
   * process, which a timeout can kill. Returns the statement to run (rewritten when a
   * path-table name differs only in case from another's) and the files skipped while
   * building tables. A statement that needs nothing built never waits for the writer (a
   * refresh committing, a hook running).
   */
  prepare(sql: string, options: PrepareOptions = {}): Promise<PreparedStatement> {
    return this.preparer.prepare(sql, options);
  }

  /**
   * `prepare`'s answer at once, synchronously, when nothing the statement reads is missing or
   * unfilled (checked before against this very schema, or checked now without the writer);
   * `null` otherwise, and when the statement fails a check (`prepare` then says why). The
   * server asks this for every request: no lock, no promise.
   */
  preparedAlready(sql: string): PreparedStatement | null {
    return this.preparer.atOnce(sql);
  }

  /**
   * The names of the columns a statement answers with, in order and with repeats (`SELECT 1
   * AS a, 2 AS a` has two), hidden columns left out as in its rows; none for a statement that
   * returns no rows. Compiles the statement without running it, so an empty answer has its
   * names too (the server's `"columns": true` and the web console's header ask this).
   */
  async resultColumns(sql: string): Promise<string[]> {
    const prepared = this.preparedAlready(sql) ?? (await this.prepare(sql));
    let statement: Statement;
    try {
      statement = this.db.prepare(prepared.sql);
    } catch (error) {
      throw sqlError(error);
    }
    return statement.reader ? columnPlan(statement, prepared.sql).columns : [];
  }

  /** `PRAGMA schema_version`, prepared once: the server asks it twice per request. */
  private schemaVersionStatement: Statement | null = null;
  /**
   * Write tasks running now, and a count that moves whenever one starts or ends: only they
   * change the schema (this connection is the index's one writer).
   */
  private readonly writers = { active: 0, epoch: 0 };
  /** The schema version read while no write task ran, and the epoch it was read at. */
  private schemaSeen: { epoch: number; version: number } | null = null;

  /**
   * SQLite's schema version: moves with every table, column or index created or dropped.
   * Remembered between write tasks (measured, asking SQLite twice per request was a tenth of
   * the server's time for uncached statements).
   */
  get schemaVersion(): number {
    const { active, epoch } = this.writers;
    if (active === 0 && this.schemaSeen?.epoch === epoch) return this.schemaSeen.version;
    this.schemaVersionStatement ??= this.db.prepare("PRAGMA schema_version").pluck();
    const version = this.schemaVersionStatement.get() as number;
    this.schemaSeen = active === 0 ? { epoch, version } : null;
    return version;
  }

  /**
   * A stamp of everything in the index: it differs from an earlier one once any row or the
   * schema may have changed (this connection is the index's one writer).
   */
  contentStamp(): string {
    const changes = this.db.prepare("SELECT total_changes()").pluck().get() as number;
    return `${changes}:${this.schemaVersion}`;
  }

  /**
   * Writes a copy of an index that lives in memory to `path`, as committed (under the writer,
   * so no build is half done), for a query process to read. Returns its `contentStamp`.
   */
  snapshotTo(path: string): Promise<string> {
    return this.withWriter(() => {
      const stamp = this.contentStamp();
      writeFileSync(path, this.db.serialize());
      return stamp;
    });
  }

  /** Runs a statement and collects its rows as objects keyed by column name. */
  async queryObjects(sql: string): Promise<Record<string, SqlValue>[]> {
    const result = await this.query(sql);
    return Array.from(result.rows, (row) =>
      Object.fromEntries(result.columns.map((name, i) => [name, row[i] ?? null])),
    );
  }

  /**
   * Starts bringing every built table up to date with the files at `paths` (relative; files
   * or directories, existing or not) and resolves once the first commit is made (path-table rows, files gone from parsed tables).
   * Each file a parsed table selects is then parsed and committed on its own: `onCommit` gets
   * every commit's changes as it is made, and `done` resolves when the last one is. A later
   * refresh of a file stops the hooks an earlier one still runs for it.
   */
  async startRefresh(
    paths: Iterable<string>,
    options: {
      onlyIfChanged?: boolean;
      /** Leave a file whose hooks still run for the same size and times to them. */
      keepUnchanged?: boolean;
      onCommit: (changes: RowChange[]) => void;
    },
  ): Promise<{ done: Promise<void> }> {
    // A refresh that fails part way may have committed some of its files: every cached
    // answer is suspect then.
    const failed = (error: unknown) => {
      this.tablesChanged(null);
      throw error;
    };
    const run = await this.refresher
      .start(paths, {
        onlyIfChanged: options.onlyIfChanged,
        keepUnchanged: options.keepUnchanged,
        onCommit: (changes) => {
          // After the commit: an answer computed before it was right until now.
          this.tablesChanged(this.tablesTouchedBy(changes));
          options.onCommit(changes);
        },
      })
      .catch(failed);
    return { done: run.done.catch(failed) };
  }

  /**
   * Resolves once every file a refresh started is parsed and committed; with `tables`, once
   * every file parsed for one of those tables is.
   */
  refreshesDone(tables?: readonly string[]): Promise<void> {
    return this.refresher.idle(tables);
  }

  /** What decides whether a path is in the index: the watcher skips folders it excludes. */
  get inclusionRules(): { useGitignore: boolean; extraIgnores: readonly string[] } {
    return {
      useGitignore: this.parsedOptions.useGitignore,
      extraIgnores: this.parsedOptions.extraIgnores ?? [],
    };
  }

  close(): void {
    // Hooks of live refreshes are stopped; nothing they found is written any more.
    this.refresher.abortAll();
    this.closing?.abort();
    void this.fillWorker?.close();
    this.functions.close();
    this.db.close();
    this.releaseCache();
  }
}

/** Files a refresh could not bring in (a hook failed, a rule broke), as skipped paths. */
function skippedFromChanges(changes: readonly RowChange[]): SkippedPath[] {
  return changes
    .filter((change) => change.action === "error")
    .map((change) => ({ path: change.file_path, reason: (change as { error: string }).error }));
}

/** Opens an index over `root` (default: the working directory). */
export function openIndex(options: OpenIndexOptions = {}): DirqIndex {
  return new DirqIndex(options);
}
