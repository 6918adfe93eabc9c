import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import type { ConnectionProfile } from "./connection/profile.js";
import { DirqError } from "./errors.js";
import type { WorkerFunctions } from "./functions/worker-functions.js";
import { isStorageError, storageError } from "./indexer/cache-file.js";
import { Catalog } from "./indexer/catalog.js";
import { CatalogStore } from "./indexer/catalog-store.js";
import type { SqliteDatabase, SqliteStatement } from "./indexer/database.js";
import { FillWorker } from "./indexer/fill-worker.js";
import {
  type IndexSettings,
  indexSettings,
  type OpenIndexOptions,
  openStore,
} from "./indexer/index-settings.js";
import { IndexWriter } from "./indexer/index-writer.js";
import { ParsedTableRegistry } from "./indexer/parsed-table-registry.js";
import { ALL_COLUMN_GROUPS, type ColumnGroups, PathTables } from "./indexer/path-tables.js";
import { Refresher } from "./indexer/refresh.js";
import type { FolderMove } from "./indexer/folder-moves.js";
import { StagingWorker } from "./indexer/staging-worker.js";
import { MoveWriter } from "./indexer/move-writer.js";
import { TreeListingHelper } from "./scan/tree-listing-helper.js";
import { LogCheckpoints } from "./indexer/log-checkpoints.js";
import { type Commit, type CommitChange, commitOf } from "./indexer/row-changes.js";
import { TableGenerations, tablesTouchedBy } from "./indexer/table-generations.js";
import { CaseVariants } from "./query/case-variants.js";
import { columnPlan, type SqlValue, sqlError } from "./query/execute.js";
import { bindArguments } from "./query/parameters.js";
import {
  type IndexQueryOptions,
  type InProcessHost,
  type QueryResult,
  queryInProcess,
  resultColumnsOf,
} from "./query/in-process.js";
import { type DirectReadHost, queryDirect } from "./query/direct-jsonl.js";
import type { StatementAnalysis } from "./query/statement-analysis.js";
import { ROWID } from "./query/statement-plan.js";
import {
  type PreparedStatement,
  type PrepareOptions,
  type PreparerHost,
  StatementPreparer,
} from "./query/statement-preparer.js";
import type { EmptyPathTable } from "./scan/empty-selection.js";
import type { SkippedPath } from "./scan/walk.js";

export type { OpenIndexOptions };
export type { SqlValue };

export type { PreparedStatement, PrepareOptions };

/**
 * From this many folders on, a live index starts the threads of a burst of folder moves (see
 * `keepLookupsReady`) before any burst, and a session its query processes (`LiveSession.watch`).
 */
const MOVE_THREADS_READY_FROM_FOLDERS = 1000;

/**
 * Below this many folders, a live tree is small: its fill thread and staging thread start at
 * their first use, not ahead of it (see `keepLookupsReady`).
 */
const SMALL_TREE_FOLDERS = 100;

/**
 * A log smaller than this (bytes) is checkpointed on the index's own thread while the staging
 * thread has not started (see `checkpointLog`).
 */
const CHECKPOINT_HERE_BELOW_BYTES = 1024 * 1024;

/** Checks values for a statement's parameters (the SDK checks them before anything runs). */
export { bindArguments };
export type { IndexQueryOptions, QueryResult };
export type { Commit };

/** Rows a statement read on the index's own connection (`DirqIndex.readRows`). */
export interface RawRows {
  columns: string[];
  rows: SqlValue[][];
}

function removedFilesTable(): DirqError {
  return new DirqError(
    "TABLE_REMOVED",
    "no such table: files. The implicit table 'files' was removed: query the root as a path-table instead, as in SELECT * FROM './'",
  );
}

/**
 * A directory tree as a read-only SQLite database: the facade over the modules that open it
 * (`indexer/index-settings.ts`), write it one task at a time (`indexer/index-writer.ts`), build
 * its tables (`indexer/path-tables.ts`, `indexer/parsed-table-registry.ts`), keep them current
 * (`indexer/refresh.ts`) and check and run statements (`query/`). Path-tables
 * (`FROM './docs/*.md'`) are built the first time a statement names them.
 */
export class DirqIndex {
  readonly root: string;
  /** Extensions and worker functions of every connection to this index. */
  readonly connectionProfile: ConnectionProfile;
  /** The SQLite file that holds the index, or `null` when it lives in memory. */
  readonly databasePath: string | null;
  /** One-line notices from opening the index (a persisted cache that had to be rebuilt). */
  readonly notices: string[] = [];
  private readonly settings: IndexSettings;
  private readonly db: SqliteDatabase;
  private readonly functions: WorkerFunctions;
  private readonly releaseCache: () => void;
  private readonly writer: IndexWriter;
  /** The registry of this index's tables (persisted with it under `--persist`). */
  private readonly catalog: Catalog;
  /** The thread path-table fills run on (`fillOnThread`), or `null`: this one. */
  private readonly fillWorker: FillWorker | null;
  private staging: StagingWorker | null = null;
  private moves: MoveWriter | null = null;
  /** The thread that lists the destinations of a burst of folder moves, made at the first. */
  private lister: TreeListingHelper | null = null;
  /** Checkpoints of the index file's log after refresh commits (see `checkpointLog`). */
  private readonly checkpoints = new LogCheckpoints(() => this.checkpointLog());
  private threadsStopped: Promise<void> = Promise.resolve();
  private readonly pathTables: PathTables;
  private readonly parsed: ParsedTableRegistry;
  private readonly refresher: Refresher;
  /** Whether a watcher keeps this index current (see `keepLookupsReady`). */
  private live = false;
  /** Whether its tree is big enough to be made ready for bursts ahead (`keepLookupsReady`). */
  private bigTree = false;
  private readonly caseVariants = new CaseVariants();
  /** Checks statements and builds what they read (see `StatementPreparer`). */
  private readonly preparer: StatementPreparer;
  /** Counts of changes per table, for the server's result cache. */
  private readonly generations = new TableGenerations(
    // A row change's `table` is the path-table name the user wrote, also for a case
    // variant's SQLite name.
    (name) => this.caseVariants.pathOf(name),
    () => this.schemaVersion,
  );
  /**
   * Aborted by `close`: hooks a table build still runs are stopped. Made when a build first
   * asks for its signal: a statement that runs no hook never loads Node's AbortController.
   */
  private closing: AbortController | null = null;
  /** Path-tables built since the statement being prepared began that list no file. */
  private emptyTables: EmptyPathTable[] = [];
  /** The sequence number of the newest commit of a refresh (0 before the first). */
  private commits = 0;

  constructor(options: OpenIndexOptions = {}) {
    this.settings = indexSettings(
      options,
      () => (this.closing ??= new AbortController()).signal,
      (table) => this.emptyTables.push(table),
    );
    const { root, profile, tableOptions } = this.settings;
    this.root = root;
    this.connectionProfile = profile;
    const store = openStore(this.settings, options.databasePath);
    ({ db: this.db, functions: this.functions, databasePath: this.databasePath } = store);
    this.releaseCache = store.release;
    if (store.notice !== null) this.notices.push(store.notice);
    this.writer = new IndexWriter(this.db, this.databasePath);
    let fillWorker: FillWorker | null = null;
    try {
      this.catalog = new Catalog(
        this.settings.persist === undefined ? null : new CatalogStore(this.db),
      );
      if (options.fillOnThread && this.databasePath !== null) {
        fillWorker = new FillWorker({
          databasePath: this.databasePath,
          synchronous: this.db.pragma("synchronous", { simple: true }) as number,
        });
      }
      const onThread = fillWorker;
      this.pathTables = new PathTables(
        this.db,
        tableOptions,
        this.catalog,
        onThread ? (job, progress) => onThread.run(job, progress) : undefined,
      );
      this.parsed = new ParsedTableRegistry({
        db: this.db,
        root,
        config: this.settings.config,
        onFile: this.settings.onFile,
        options: tableOptions,
        userIgnores: this.settings.userIgnores,
        profile,
        catalog: this.catalog,
        refresher: () => this.refresher,
        tableExists: (name) => this.tableExists(name),
        // Where big tables fill off this thread (the server), so do the large files of a build.
        staging: () => (this.fillWorker === null ? null : this.stagingWorker()),
      });
      // Only tables this index would build the same way are kept.
      this.parsed.restorePersisted(
        (table) => this.settings.onFile === null && this.pathTables.restore(table),
        this.notices,
      );
    } catch (error) {
      void fillWorker?.close();
      this.db.close();
      this.releaseCache();
      if (this.databasePath !== null && isStorageError(error)) {
        throw storageError(this.databasePath, error);
      }
      throw error;
    }
    this.fillWorker = fillWorker;
    this.refresher = new Refresher(
      this.db,
      root,
      this.catalog,
      this.pathTables,
      tableOptions,
      (task) => this.writer.run(task),
      () => this.stagingWorker(),
      () => this.treeLister(),
      () => this.moveWriter(),
    );
    this.preparer = new StatementPreparer(this.preparerHost());
  }

  /**
   * A stamp of the rows of `tables` (SQLite names, as `prepare` lists them): it differs from an
   * earlier one once any of them may have changed (see `TableGenerations`).
   */
  tableGenerations(tables: readonly string[]): string {
    return this.generations.stamp(tables);
  }

  /** The sequence number of the newest refresh commit (see `Commit`); 0 before the first. */
  get commitSeq(): number {
    return this.commits;
  }

  /**
   * Keeps the path-tables among `tables` from being dropped as idle or least recently used
   * until the returned call (a live query holds its tables while it has subscribers).
   */
  pinTables(tables: readonly string[]): () => void {
    return this.pathTables.pin(tables);
  }

  /**
   * Runs a statement the caller built over checked parts (a live query's restriction of a
   * prepared statement to some files) on the index's own connection, synchronously: what
   * it reads is the newest commit. For small reads only: it holds the main thread.
   */
  readRows(sql: string, args: readonly unknown[] = []): RawRows {
    try {
      const statement = this.db.prepare(sql);
      const columns = statement.columns().map((column) => column.name);
      const rows = statement.raw(true).all(...args) as SqlValue[][];
      return { columns, rows };
    } catch (error) {
      throw sqlError(error);
    }
  }

  /**
   * `readRows` for one statement run again and again (a live query's read of the changed
   * files' rows after each commit): prepared once, not at every run. SQLite prepares it again
   * by itself when the schema changes; after a failure it is prepared anew at the next run.
   * Its column names are read again only when the schema moved (a widened table changes what
   * `SELECT *` reads): asking SQLite for them at every run cost about a fifth of a small run.
   * A statement `shownBy` that names every column it reads (no `*`) reads the same columns
   * whatever the schema, so its reader does not ask for the schema's version either (the
   * first run after a commit would read it from SQLite).
   */
  rowReader(sql: string, shownBy?: PreparedStatement): (args: readonly unknown[]) => RawRows {
    let statement: SqliteStatement | null = null;
    let named: { schema: number; columns: string[]; keep: number[] | null } | null = null;
    const fixedColumns = shownBy !== undefined && shownBy.analysis.namedColumns !== null;
    return (args) => {
      try {
        statement ??= this.db.prepare(sql).raw(true);
        // After the run: a statement SQLite prepared again for a new schema has its new columns.
        const rows = statement.all(...args) as SqlValue[][];
        const schema = fixedColumns ? 0 : this.schemaVersion;
        if (named?.schema !== schema) named = { schema, ...this.readerColumns(statement, shownBy) };
        const { columns, keep } = named;
        if (keep === null) return { columns, rows };
        return { columns, rows: rows.map((row) => keep.map((i) => row[i] as SqlValue)) };
      } catch (error) {
        statement = null;
        named = null;
        throw sqlError(error);
      }
    };
  }

  /**
   * A reader's columns; with `shownBy`, the reader's first column and then those the statement
   * `shownBy` shows (its `*` over a parsed table leaves the hidden columns out), which the
   * reader selects after its first.
   */
  private readerColumns(
    statement: SqliteStatement,
    shownBy: PreparedStatement | undefined,
  ): { columns: string[]; keep: number[] | null } {
    const all = statement.columns().map((column) => column.name);
    if (shownBy === undefined) return { columns: all, keep: null };
    const plan = columnPlan(this.db.prepare(shownBy.sql), shownBy.analysis);
    const columns = [all[0] as string, ...plan.columns];
    return { columns, keep: plan.keep === null ? null : [0, ...plan.keep.map((i) => i + 1)] };
  }

  /** SQLite's schema version, remembered between write tasks (see `IndexWriter`). */
  get schemaVersion(): number {
    return this.writer.schemaVersion;
  }

  private tablesChanged(tables: Iterable<string | null> | null): void {
    this.generations.changed(tables);
  }

  /** What the preparer may do to this index: look tables up, build them, take the writer. */
  private preparerHost(): PreparerHost {
    const { pathTables, parsed } = this;
    return {
      db: this.db,
      caseVariants: this.caseVariants,
      schemaVersion: () => this.schemaVersion,
      configTablesBuilt: () => parsed.configTablesBuilt,
      buildConfigTables: () => parsed.buildConfigTables(),
      pathTableNames: () => this.catalog.names(),
      tableExists: (name) => this.tableExists(name),
      createMissingTable: (name, columns) => this.createMissingTable(name, columns),
      needsWidening: (analysis) => this.tablesToWiden(analysis).length > 0,
      widenTables: (analysis) => this.widenTables(analysis),
      missingTableError: (name, error) => this.missingTableError(name, error),
      needsFill: (table, columns) =>
        parsed.needsReconcile(table) || pathTables.needsFill(table, this.groupsFor(columns)),
      fill: (table, columns, readsSchema) =>
        parsed.needsReconcile(table)
          ? parsed.reconcile(table, this.caseVariants.pathOf(table))
          : pathTables
              .fill(table, this.groupsFor(columns), {
                readsRowid: columns.has(ROWID),
                readsSchema,
              })
              .finally(() => this.lookupsSoon()),
      beforeStatement: () => pathTables.revertCounted(),
      touch: (tables) => pathTables.touch(tables),
      callsWorkers: (functions) => this.functions.calledIn(functions).length > 0,
      acceptColumn: (table, column) => parsed.acceptColumn(table, column),
      takeEmptyTables: () => this.emptyTables.splice(0),
      withWriter: (task) => this.writer.run(task),
      tablesChanged: (tables) => this.tablesChanged(tables),
    };
  }

  /** The column groups a fill brings in for reading these columns. */
  private groupsFor(columns: ReadonlySet<number>): ColumnGroups {
    return this.settings.fillAllColumns ? ALL_COLUMN_GROUPS : PathTables.groupsFor(columns);
  }

  /**
   * Builds every config table now rather than before the first statement (the server does
   * this at start). Returns the files skipped on the way.
   */
  async build(): Promise<SkippedPath[]> {
    return this.writer.run(async () => {
      const skipped = await this.parsed.buildConfigTables();
      this.tablesChanged(null);
      return skipped;
    });
  }

  /**
   * Creates the path-table a statement names when it is missing: parsed by the index's
   * extractor, or a plain one (filled later, with only the columns the statement reads).
   * Returns the files skipped; `null` when the name is not a path-table.
   */
  private async createMissingTable(
    name: string,
    columns: ReadonlySet<string> | null,
  ): Promise<SkippedPath[] | null> {
    if (name.toLowerCase() === "files") throw removedFilesTable();
    const path = this.caseVariants.pathOf(name);
    if (this.settings.onFile !== null) {
      return this.parsed.buildPathTable(
        name,
        path,
        this.settings.readNamedColumns ? columns : null,
      );
    }
    const before = this.pathTables.names();
    const created = this.pathTables.create(name, path);
    // Making room drops idle path-tables: the watcher no longer keeps their rows current.
    const kept = new Set(this.pathTables.names());
    this.tablesChanged(before.filter((table) => !kept.has(table)));
    return created ? [] : null;
  }

  /**
   * The path-tables a statement names that were built with only the columns earlier statements
   * named (`readNamedColumns`) and lack some this one may read.
   */
  private tablesToWiden(analysis: StatementAnalysis): string[] {
    if (!this.settings.readNamedColumns) return [];
    const names = new Set(analysis.tableNames.map((name) => name.token.value));
    return [...names].filter((name) => this.parsed.needsWidening(name, analysis.namedColumns));
  }

  /** Builds the tables `tablesToWiden` names again, with this statement's columns too. */
  private async widenTables(analysis: StatementAnalysis): Promise<SkippedPath[]> {
    const skipped: SkippedPath[] = [];
    for (const name of this.tablesToWiden(analysis)) {
      const path = this.caseVariants.pathOf(name);
      skipped.push(...((await this.parsed.widen(name, path, analysis.namedColumns)) ?? []));
      this.tablesChanged([name]);
    }
    return skipped;
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
   * Runs one read-only statement in this process. Rejects writes, ATTACH/DETACH, VACUUM,
   * PRAGMA assignments, transactions, several statements and internal tables with a
   * `DirqError` before anything runs.
   */
  async query(sql: string, options: IndexQueryOptions = {}): Promise<QueryResult> {
    const direct = this.settings.directReads;
    if (direct !== false && options.bind === undefined) {
      const answer = await this.writer.run(async () => queryDirect(this.directHost(), sql));
      if (answer !== null) return { ...answer, skipped: [], emptyTables: [] };
      if (direct === "only") {
        throw new DirqError(
          "USAGE",
          "DIRQ_DIRECT_READS=only: this statement cannot be read straight from its files",
        );
      }
    }
    return queryInProcess(this.inProcess(), sql, options);
  }

  /** What a one-shot statement read straight from JSON Lines files needs (see `queryDirect`). */
  private directHost(): DirectReadHost {
    return {
      db: this.db,
      root: this.root,
      functions: this.functions,
      jsonlFiles: (path) => this.parsed.jsonlFiles(path),
      tableExists: (name) => this.tableExists(name),
    };
  }

  private inProcess(): InProcessHost {
    return {
      db: this.db,
      functions: this.functions,
      progress: this.settings.progress,
      prepare: (sql, options) => this.prepare(sql, options),
    };
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
    return resultColumnsOf(this.db, prepared);
  }

  /** The names of the columns a prepared statement answers with (see `resultColumns`). */
  columnsOf(prepared: PreparedStatement): string[] {
    return resultColumnsOf(this.db, prepared);
  }

  /** Runs a statement and collects its rows as objects keyed by column name. */
  async queryObjects(sql: string): Promise<Record<string, SqlValue>[]> {
    const result = await this.query(sql);
    return Array.from(result.rows, (row) =>
      Object.fromEntries(result.columns.map((name, i) => [name, row[i] ?? null])),
    );
  }

  /**
   * Marks the index live (kept current by a watcher): from now on each path-table's fill makes
   * its lookup index with its rows (`PathTables.keepLookups`), and other filled tables get
   * theirs at once, in the background, not on the first change after it (see
   * `Refresher.prepareLookups`). One-shot queries never pay for those indexes. `folders`: how
   * many folders the watcher found (a measure of how big a fill or a burst of moves can be).
   */
  keepLookupsReady(folders: number): void {
    this.live = true;
    this.pathTables.keepLookups();
    // Each thread's start (a Node isolate, its modules, SQLite) is a real share of a small
    // server's start-up, and most small trees need few of them: a small tree starts each at its
    // first use (its lookup indexes, over few rows, are made on this thread). A big tree has
    // them ready, started while the first statement is awaited: loading their modules takes
    // longer than the first steps of its first fill or burst of moves.
    if (folders >= SMALL_TREE_FOLDERS) {
      this.fillWorker?.start();
      this.stagingWorker()?.start();
    }
    this.bigTree = folders >= MOVE_THREADS_READY_FROM_FOLDERS;
    if (this.bigTree) {
      this.treeLister().start();
      this.moveWriter()?.start();
    }
    this.lookupsSoon();
  }

  /**
   * Whether the live tree has enough folders (`MOVE_THREADS_READY_FROM_FOLDERS`) for what a
   * burst of folder moves needs to be started before any burst (`keepLookupsReady`).
   */
  get readyForBursts(): boolean {
    return this.bigTree;
  }

  /**
   * Checkpoints the index file's log: on the staging thread, or, while that thread has not
   * started and the log is small, on this one (copying a small log takes less than the
   * thread's start).
   */
  private async checkpointLog(): Promise<void> {
    const staging = this.staging;
    if (staging === null || this.databasePath === null) return;
    if (!staging.running) {
      const log = statSync(`${this.databasePath}-wal`, { throwIfNoEntry: false });
      if ((log?.size ?? 0) < CHECKPOINT_HERE_BELOW_BYTES) {
        this.db.pragma("wal_checkpoint(PASSIVE)");
        return;
      }
      staging.start();
    }
    await staging.checkpoint();
  }

  private lookupsSoon(): void {
    // Only off this thread: an index in memory (the SDK's) makes it at its first change, as
    // a statement must not wait for an index the user may never need.
    if (!this.live || this.stagingWorker() === null) return;
    // A failure (a full disk) is the next refresh's to report: it makes the index again.
    this.refresher.prepareLookups().catch(() => {});
  }

  /**
   * Starts bringing every built table up to date with the files at `paths` (relative; files
   * or directories, existing or not) and resolves once the first commit is made (path-table
   * rows, files gone from parsed tables).
   * Each file a parsed table selects is then parsed and committed on its own: `onCommit` gets
   * every commit, numbered (`Commit.seq`), as it is made (the slices of a burst of folder
   * moves once the last of them is), and `done` resolves when the last one is. A later
   * refresh of a file stops the hooks an earlier one still runs for it.
   */
  async startRefresh(
    paths: Iterable<string>,
    options: {
      onlyIfChanged?: boolean;
      /** Leave a file whose hooks still run for the same size and times to them. */
      keepUnchanged?: boolean;
      /** Folders renamed: their rows move, applied before `paths` (see `ChangeBatch.moves`). */
      moves?: readonly FolderMove[];
      onCommit: (commit: Commit) => void;
    },
  ): Promise<{ done: Promise<void> }> {
    // A refresh that fails part way may have committed some of its files: every cached
    // answer is suspect then.
    const failed = (error: unknown) => {
      this.tablesChanged(null);
      throw error;
    };
    // The commits of a burst of moves are handed on once the last is made (see below).
    let held: Commit[] | null = null;
    const run = await this.refresher
      .start(paths, {
        onlyIfChanged: options.onlyIfChanged,
        keepUnchanged: options.keepUnchanged,
        moves: options.moves,
        onCommit: (changes: CommitChange[]) => {
          // After the commit: an answer computed before it was right until now.
          this.tablesChanged(tablesTouchedBy(this.db, changes));
          this.checkpoints.committed();
          const commit = commitOf(++this.commits, changes);
          if (held === null) options.onCommit(commit);
          else held.push(commit);
        },
        // A burst of moves applied on this thread commits in slices. Their events are numbered
        // and sent, and live queries run, after the last slice rather than between slices: the
        // thread spends the burst on the moves, so the index is whole again sooner, and each
        // commit is still handed on with its own number, in order. (A checkout's thousand are
        // written on the move thread, and each of its commits is handed on as it is made.)
        onMovesApplying: (applying) => {
          const commits = held ?? [];
          held = applying ? [] : null;
          for (const commit of commits) options.onCommit(commit);
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

  /** Files whose refresh failed to commit (a full disk): a refresh of them applies them. */
  unsettledFiles(): string[] {
    return this.refresher.unsettledFiles();
  }

  /** What decides whether a path is in the index: the watcher skips folders it excludes. */
  get inclusionRules(): { useGitignore: boolean; extraIgnores: readonly string[] } {
    return {
      useGitignore: this.settings.tableOptions.useGitignore,
      extraIgnores: this.settings.tableOptions.extraIgnores ?? [],
    };
  }

  /**
   * The thread that reads large files for live refreshes (the server's, the REPL's, the
   * SDK's), made at the first; `null` for an index in memory, which no other connection opens.
   */
  private stagingWorker(): StagingWorker | null {
    if (this.databasePath === null) return null;
    const { extensions, functions } = this.connectionProfile;
    this.staging ??= new StagingWorker(
      {
        databasePath: this.databasePath,
        synchronous: this.db.pragma("synchronous", { simple: true }) as number,
      },
      extensions.length === 0 && functions.length === 0,
    );
    return this.staging;
  }

  /**
   * The thread that writes a burst of folder moves (see move-writer.ts), made at the first;
   * `null` for an index in memory, and for one whose tables may compute columns with what
   * only the index's own connection has (an extension, a declared function).
   */
  private moveWriter(): MoveWriter | null {
    if (this.databasePath === null || this.stagingWorker()?.runsDdl !== true) return null;
    this.moves ??= new MoveWriter({
      databasePath: this.databasePath,
      synchronous: this.db.pragma("synchronous", { simple: true }) as number,
    });
    return this.moves;
  }

  private treeLister(): TreeListingHelper {
    this.lister ??= new TreeListingHelper(this.root);
    return this.lister;
  }

  close(): void {
    // Hooks of live refreshes are stopped; nothing they found is written any more.
    this.refresher.abortAll();
    this.checkpoints.close();
    const threads = [
      this.staging?.close(),
      this.fillWorker?.close(),
      this.lister?.close(),
      this.moves?.close(),
    ];
    // Settles however each stop went: the caller waits for it before removing the file.
    this.threadsStopped = Promise.allSettled(threads).then(() => undefined);
    this.closing?.abort();
    this.functions.close();
    this.db.close();
    this.releaseCache();
  }

  /**
   * Settles once the threads with connections of their own (staging, fill) have stopped after
   * `close`. The index file must stay until then: a thread's SQLite call that fails on a file
   * removed under it, while the thread is being stopped, aborts the whole process (the binding
   * cannot raise the error in a stopping thread).
   */
  get stopped(): Promise<void> {
    return this.threadsStopped;
  }
}

/** Opens an index over `root` (default: the working directory). */
export function openIndex(options: OpenIndexOptions = {}): DirqIndex {
  return new DirqIndex(options);
}
