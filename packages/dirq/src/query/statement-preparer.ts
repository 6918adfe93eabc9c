import type { Statement } from "@rocicorp/zero-sqlite3";
import { refuseLoadExtension, volatileFunctions } from "../connection/profile.js";
import { DirqError } from "../errors.js";
import type { SqliteDatabase } from "../indexer/database.js";
import type { EmptyPathTable } from "../scan/empty-selection.js";
import type { SkippedPath } from "../scan/walk.js";
import { INTERNAL_PREFIX } from "../shared/reserved-names.js";
import { isStorageError } from "../shared/sql-errors.js";
import type { CaseVariants } from "./case-variants.js";
import { sqlError } from "./execute.js";
import { nullArguments } from "./parameters.js";
import { checkReadOnlyStatement } from "./read-only-guard.js";
import { keywordOf } from "./sql-tokens.js";
import { analyzeStatement, type StatementAnalysis } from "./statement-analysis.js";
import { namedTables } from "./table-names.js";
import { planStatement, RootPageMap, SCHEMA_TABLE, type StatementPlan } from "./statement-plan.js";

/** A statement checked, with every table it reads built and filled: ready to run. */
export interface PreparedStatement {
  /** The statement to run (rewritten when a path-table name differs only in case). */
  sql: string;
  /** `sql` analyzed once: running it needs no analysis of its own. */
  analysis: StatementAnalysis;
  /** Files skipped while building the tables it reads. */
  skipped: SkippedPath[];
  /** Path-tables it built that list no file, and why: told to the user, not an error. */
  emptyTables: EmptyPathTable[];
  /**
   * Whether its answer is settled by the rows of `tables` and the schema: it calls no function
   * that may answer differently by itself and reads nothing but tables.
   */
  cacheable: boolean;
  /** SQLite names of the tables it reads, also through views and subqueries. */
  tables: readonly string[];
  /**
   * Whether it calls a worker-backed function (also through a view): only then must whoever
   * runs it look for the calls (they run in passes). A query process told it does not skips
   * its own look at the bytecode.
   */
  callsWorkers: boolean;
}

/**
 * What preparing statements needs from the index: its connection and schema version, its
 * tables (to look up, create, fill and mark used) and its one writer. Building lives in the
 * index; deciding what a statement needs, and remembering it, lives here.
 */
export interface PreparerHost {
  readonly db: SqliteDatabase;
  readonly caseVariants: CaseVariants;
  /** SQLite's schema version, remembered between writes. */
  schemaVersion(): number;
  /** Config tables are built before the first statement runs (a `ddl` view may need them). */
  configTablesBuilt(): boolean;
  /** Builds the config tables if they are not yet; returns the files skipped. */
  buildConfigTables(): Promise<SkippedPath[]>;
  /** Path-table names in use, as SQLite knows them. */
  pathTableNames(): Iterable<string>;
  /** A table or view of this name exists (ASCII case ignored, as SQLite matches names). */
  tableExists(name: string): boolean;
  /**
   * Creates the path-table a statement names; `null` when the name is not a path-table, else
   * the files skipped while building it. `columns`: the names the statement may read columns
   * by (see `StatementAnalysis.namedColumns`), `null` for every column.
   */
  createMissingTable(
    name: string,
    columns: ReadonlySet<string> | null,
  ): Promise<SkippedPath[] | null>;
  /**
   * Whether a table the statement names was built with only the columns earlier statements
   * named and must be built again for this one (see `ParsedTableRegistry.needsWidening`).
   */
  needsWidening(analysis: StatementAnalysis): boolean;
  /** Builds those tables again with the columns this statement names; the files skipped. */
  widenTables(analysis: StatementAnalysis): Promise<SkippedPath[]>;
  /** SQLite's "no such table" for a name that is not a path-table, with a hint where one helps. */
  missingTableError(name: string, error: unknown): unknown;
  /** Whether reading these columns of the table needs a fill first (`false`: not a path-table). */
  needsFill(table: string, columns: ReadonlySet<number>): boolean;
  /**
   * Fills the table for reading these columns (nothing for a table that is not a path-table).
   * `readsSchema`: the statement also reads the schema or something other than table rows (a
   * table-valued pragma such as `pragma_table_info`), so the table must stay what it is.
   */
  fill(table: string, columns: ReadonlySet<number>, readsSchema: boolean): Promise<SkippedPath[]>;
  /** The tables a statement reads were used now (idle path-tables are the first dropped). */
  touch(tables: Iterable<string>): void;
  /**
   * Called before each statement is checked: takes back what served only the statement
   * before (counted path-tables, see `OpenIndexOptions.countedFills`).
   */
  beforeStatement(): void;
  /** Whether any of these functions (lower-cased names) is worker-backed. */
  callsWorkers(functions: ReadonlySet<string>): boolean;
  /**
   * Gives `column` to `table` when it is a parsed table no file has shaped yet (inferred
   * columns, no row); whether it did.
   */
  acceptColumn(table: string, column: string): boolean;
  /**
   * The path-tables built since the last call that list no file (see `EmptyPathTable`). Called
   * with the writer held, once a statement's building ends.
   */
  takeEmptyTables(): EmptyPathTable[];
  /** Runs a task under the index's one writer. */
  withWriter<T>(task: () => Promise<T>): Promise<T>;
  /**
   * The rows of these tables (SQLite names; `null`: of any table) may differ now from what an
   * earlier answer saw: they were built or filled.
   */
  tablesChanged(tables: readonly string[] | null): void;
}

export interface PrepareOptions {
  /**
   * The statement may have bound parameters: the caller binds their values (the SDK). The
   * CLI and HTTP have none to bind, and refuse such a statement.
   */
  parameters?: boolean;
  /**
   * The caller's signal, as `run` takes one: aborted before the writer is free, the statement
   * builds nothing and `prepare` rejects with its reason. A build that has begun finishes (its
   * writes commit file by file, and other statements may wait for the same tables).
   */
  signal?: AbortSignal;
}

/** What `prepare` remembers of a statement, valid for one schema version. */
interface Checked {
  /** The statement to run, analyzed: what runs it needs no analysis of its own. */
  runnable: StatementAnalysis;
  schemaVersion: number;
  tables: readonly string[];
  cacheable: boolean;
  callsWorkers: boolean;
}

/** How many checked statements are remembered before the memo starts over. */
const CHECKED_STATEMENTS_KEPT = 1000;

/** Too many distinct missing tables in one statement means something else is wrong. */
const MAX_PATH_TABLES_PER_STATEMENT = 64;

const NO_SUCH_TABLE = /^no such table: ([\s\S]+)$/;
const NO_SUCH_COLUMN = /^no such column: ([\s\S]+)$/;

/** Columns `compileCreatingTables` gives empty parsed tables at most, in one statement. */
const MAX_ACCEPTED_COLUMNS = 2000;

function tooManyPathTables(): DirqError {
  return new DirqError(
    "QUERY_TOO_MANY_TABLES",
    `a statement may name at most ${MAX_PATH_TABLES_PER_STATEMENT} path-tables: split it into several statements, or use one glob (FROM './{a,b}/**') in place of many paths`,
  );
}

function notReadOnly(): DirqError {
  return new DirqError(
    "QUERY_NOT_READONLY",
    "this statement writes to the database. dirq is read-only: only reads are allowed",
  );
}

function internalTable(table: string): DirqError {
  return new DirqError(
    "QUERY_INTERNAL_TABLE",
    `${table} is an internal dirq table and cannot be queried (reached through a view)`,
  );
}

/**
 * Checks statements against an index and builds what they read, in two ways. At once: a
 * statement checked before against this schema, or one that needs nothing created, built or
 * filled, is answered synchronously without the writer, so it never waits behind a hook, a
 * refresh or a big fill (the server asks this for every request). Building: under the writer,
 * the full checks with their errors, creating and filling every table it reads.
 */
export class StatementPreparer {
  private readonly checked = new Map<string, Checked>();
  /** The same for statements prepared with `parameters` (the SDK binds their values). */
  private readonly checkedWithParameters = new Map<string, Checked>();
  private readonly rootPages: RootPageMap;
  /** The connection's volatile functions: all of them are registered when it opens. */
  private volatileNames: ReadonlySet<string> | null = null;
  /**
   * The last statement `atOnce` could not answer: `prepare` then goes straight to building
   * instead of trying again what just failed.
   */
  private missed: string | null = null;
  /** The last statement analyzed (see `analyze`). */
  private lastAnalysis: StatementAnalysis | null = null;

  constructor(private readonly host: PreparerHost) {
    this.rootPages = new RootPageMap(host.db);
  }

  /**
   * `prepare`'s answer without waiting, when nothing needs to be created, built or filled;
   * `null` otherwise, and whenever anything fails: the building way then reports the error.
   */
  atOnce(sql: string, options: PrepareOptions = {}): PreparedStatement | null {
    this.host.beforeStatement();
    const schemaVersion = this.host.schemaVersion();
    const known = this.memo(options).get(sql);
    if (known !== undefined && known.schemaVersion === schemaVersion) {
      this.host.touch(known.tables);
      return prepared(known, []);
    }
    const checked = this.checkWithoutBuilding(sql, schemaVersion, options);
    if (checked === null) {
      this.missed = sql;
      return null;
    }
    this.remember(sql, checked, options);
    return prepared(checked, []);
  }

  private memo(options: PrepareOptions): Map<string, Checked> {
    return options.parameters === true ? this.checkedWithParameters : this.checked;
  }

  /**
   * Checks a statement and builds every table it reads, without running it. Returns the
   * statement to run (rewritten when a path-table name differs only in case from another's)
   * and the files skipped while building tables.
   */
  async prepare(sql: string, options: PrepareOptions = {}): Promise<PreparedStatement> {
    const tried = this.missed === sql;
    this.missed = null;
    const ready = tried ? null : this.atOnce(sql, options);
    if (ready !== null) return ready;
    options.signal?.throwIfAborted();
    return this.host.withWriter(async () => {
      options.signal?.throwIfAborted();
      const configTablesBuilt = this.host.configTablesBuilt();
      const state: { tables: readonly string[] } = { tables: [] };
      let built: { checked: Checked; skipped: SkippedPath[] };
      let emptyTables: EmptyPathTable[] = [];
      try {
        // Bound parameters surface as a RangeError or TypeError from better-sqlite3 (running
        // EXPLAIN): a user error (400), never an internal one.
        built = await this.build(sql, state, options).catch((error: unknown) => {
          if (isStorageError(error)) throw error;
          const unbound = error instanceof TypeError && /parameter/i.test(error.message);
          throw sqlError(unbound ? new RangeError(error.message) : error);
        });
      } finally {
        // What it built or filled (also on the way to failing) may hold other rows than an
        // answer computed before saw.
        this.host.tablesChanged(configTablesBuilt ? state.tables : null);
        // Taken on a failure too: they belong to this statement, never to the next one.
        emptyTables = this.host.takeEmptyTables();
      }
      this.remember(sql, built.checked, options);
      return prepared(built.checked, built.skipped, emptyTables);
    });
  }

  private remember(sql: string, checked: Checked, options: PrepareOptions): void {
    const memo = this.memo(options);
    if (memo.size >= CHECKED_STATEMENTS_KEPT) memo.clear();
    memo.set(sql, checked);
  }

  /**
   * The lock-free check: the same checks as `build`, `null` at the first thing that would need
   * building or that fails. The statement is compiled once, as its EXPLAIN, whose read-only
   * flag is the statement's own.
   */
  private checkWithoutBuilding(
    sql: string,
    schemaVersion: number,
    options: PrepareOptions,
  ): Checked | null {
    if (!this.host.configTablesBuilt()) return null;
    try {
      const analysis = this.analyze(sql);
      checkReadOnlyStatement(analysis, options);
      if (analysis.isExplain) return null;
      const runnableAnalysis = this.runnable(analysis);
      const runnable = runnableAnalysis.sql;
      for (const name of runnableAnalysis.describedTables) {
        if (!this.host.tableExists(name)) return null;
      }
      if (this.host.needsWidening(runnableAnalysis)) return null;
      const args = options.parameters === true ? nullArguments(runnableAnalysis) : [];
      const plan = planStatement(this.host.db, runnable, this.rootPages.at(schemaVersion), args);
      if (!plan.readonly) return null;
      refuseLoadExtension(plan.functions);
      for (const [table, columns] of plan.tables) {
        if (INTERNAL_PREFIX.test(table)) return null;
        if (this.host.needsFill(table, columns)) return null;
      }
      const tables = [...plan.tables.keys()];
      this.host.touch(tables);
      return this.checkedFrom(runnableAnalysis, schemaVersion, tables, plan);
    } catch {
      return null;
    }
  }

  /**
   * The statement's analysis: the check without the writer and the building way that follows
   * it when that check cannot answer share one.
   */
  private analyze(sql: string): StatementAnalysis {
    if (this.lastAnalysis?.sql !== sql) this.lastAnalysis = analyzeStatement(sql);
    return this.lastAnalysis;
  }

  /** The statement to run, tokenized again only when the case-variant rewrite changed it. */
  private runnable(analysis: StatementAnalysis): StatementAnalysis {
    const runnable = this.host.caseVariants.rewrite(analysis, () => this.host.pathTableNames());
    return runnable === analysis.sql ? analysis : analyzeStatement(runnable);
  }

  private checkedFrom(
    runnable: StatementAnalysis,
    schemaVersion: number,
    tables: readonly string[],
    plan: StatementPlan | null,
  ): Checked {
    return {
      runnable,
      schemaVersion,
      tables,
      // An EXPLAIN (no plan) answers with the program, which only the schema settles.
      cacheable: plan === null || this.settledByRows(plan),
      callsWorkers: plan !== null && this.host.callsWorkers(plan.functions),
    };
  }

  /**
   * Whether the rows a statement reads settle its answer: it calls no function that may answer
   * differently by itself (the functions come from its bytecode, so views count) and reads
   * nothing but tables. Worker functions are in the registry too, flagged as they were
   * declared.
   */
  private settledByRows(plan: StatementPlan): boolean {
    // The volatile names come from a query of SQLite's whole function list (hundreds of rows):
    // a statement that calls no function, such as `SELECT 1`, needs none.
    if (plan.functions.size > 0) {
      this.volatileNames ??= volatileFunctions(this.host.db);
      for (const name of plan.functions) if (this.volatileNames.has(name)) return false;
    }
    return !plan.readsOutside;
  }

  /**
   * The building way, under the writer: every check with its error, then every table the
   * statement names or reads created and filled. `state.tables` holds the tables read as soon
   * as they are known, so that a failure part way still counts what it filled as changed.
   */
  private async build(
    sql: string,
    state: { tables: readonly string[] },
    options: PrepareOptions,
  ): Promise<{ checked: Checked; skipped: SkippedPath[] }> {
    const analysis = this.analyze(sql);
    checkReadOnlyStatement(analysis, options);
    const args = options.parameters === true ? nullArguments(analysis) : [];
    const skipped = await this.host.buildConfigTables();
    const runnableAnalysis = this.runnable(analysis);
    const runnable = runnableAnalysis.sql;
    for (const name of runnableAnalysis.describedTables) {
      if (!this.host.tableExists(name))
        skipped.push(...((await this.host.createMissingTable(name, null)) ?? []));
    }
    skipped.push(...(await this.host.widenTables(runnableAnalysis)));
    const statement = await this.compileCreatingTables(runnableAnalysis, skipped);
    if (!statement.readonly) throw notReadOnly();
    if (runnableAnalysis.isExplain) {
      // It runs nothing, but its program names what the statement would call: the same
      // refusal as for the statement itself.
      const inner = explained(runnableAnalysis);
      const innerArgs = options.parameters === true ? nullArguments(inner) : [];
      refuseLoadExtension(planStatement(this.host.db, inner, new Map(), innerArgs).functions);
      const checked = this.checkedFrom(runnableAnalysis, this.host.schemaVersion(), [], null);
      return { checked, skipped };
    }
    const rootPages = this.rootPages.at(this.host.schemaVersion());
    const plan = planStatement(this.host.db, runnable, rootPages, args);
    refuseLoadExtension(plan.functions);
    const tables = [...plan.tables.keys()];
    state.tables = tables;
    const readsSchema = plan.readsOutside || plan.tables.has(SCHEMA_TABLE);
    for (const [table, columns] of plan.tables) {
      if (INTERNAL_PREFIX.test(table)) throw internalTable(table);
      skipped.push(...(await this.host.fill(table, columns, readsSchema)));
    }
    // Checked against the schema as the building left it.
    const checked = this.checkedFrom(runnableAnalysis, this.host.schemaVersion(), tables, plan);
    return { checked, skipped };
  }

  /**
   * Compiles the statement, creating each table it names that does not exist yet, and giving
   * a parsed table that no file has shaped the columns the statement names of it.
   */
  private async compileCreatingTables(
    analysis: StatementAnalysis,
    skipped: SkippedPath[],
  ): Promise<Statement> {
    let created = 0;
    let accepted = 0;
    for (;;) {
      try {
        return this.host.db.prepare(analysis.sql);
      } catch (error) {
        const message = error instanceof Error ? error.message : "";
        const column = NO_SUCH_COLUMN.exec(message)?.[1];
        if (column !== undefined && accepted++ < MAX_ACCEPTED_COLUMNS) {
          if (this.acceptColumn(analysis, column)) continue;
        }
        const missing = NO_SUCH_TABLE.exec(message)?.[1];
        if (missing === undefined) throw sqlError(error);
        if (created++ >= MAX_PATH_TABLES_PER_STATEMENT) throw tooManyPathTables();
        const built = await this.host.createMissingTable(missing, analysis.namedColumns);
        if (built === null) throw this.host.missingTableError(missing, error);
        skipped.push(...built);
      }
    }
  }

  /**
   * Gives the column SQLite did not find (`title`, or `p.title` qualified by a table or its
   * alias) to the first table it may belong to that accepts it (see `acceptColumn`).
   */
  private acceptColumn(analysis: StatementAnalysis, reference: string): boolean {
    const tables = namedTables(analysis.tokens, analysis.tableNames);
    let column = reference;
    let candidates = tables;
    for (let dot = reference.indexOf("."); dot !== -1; dot = reference.indexOf(".", dot + 1)) {
      const qualifier = reference.slice(0, dot).toLowerCase();
      const named = tables.filter(
        (table) =>
          table.name.toLowerCase() === qualifier || table.alias?.toLowerCase() === qualifier,
      );
      if (named.length === 0) continue;
      column = reference.slice(dot + 1);
      candidates = named;
      break;
    }
    return candidates.some((table) => this.host.acceptColumn(table.name, column));
  }
}

/** The statement an EXPLAIN or EXPLAIN QUERY PLAN explains. */
function explained(analysis: StatementAnalysis): string {
  const { tokens, sql } = analysis;
  const plan = keywordOf(tokens[1]) === "QUERY" && keywordOf(tokens[2]) === "PLAN";
  return sql.slice(tokens[plan ? 3 : 1]?.start ?? sql.length);
}

function prepared(
  checked: Checked,
  skipped: SkippedPath[],
  emptyTables: EmptyPathTable[] = [],
): PreparedStatement {
  return {
    sql: checked.runnable.sql,
    analysis: checked.runnable,
    skipped,
    emptyTables,
    cacheable: checked.cacheable,
    tables: checked.tables,
    callsWorkers: checked.callsWorkers,
  };
}
