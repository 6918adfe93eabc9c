import type { Statement } from "@rocicorp/zero-sqlite3";
import type { WorkerFunctions } from "../functions/worker-functions.js";
import type { SqliteDatabase } from "../indexer/database.js";
import { jsonFromSqlite, type RealText, wrapForJson } from "../output/sqlite-json.js";
import type { ProgressReporter } from "../progress/reporter.js";
import type { EmptyPathTable } from "../scan/empty-selection.js";
import type { SkippedPath } from "../scan/walk.js";
import { columnPlan, type StatementRows, sqlError } from "./execute.js";
import { bindArguments, type QueryParameters } from "./parameters.js";
import {
  type CompiledStatement,
  compileStatement,
  runCompiled,
  runInPasses,
} from "./run-statement.js";
import type { PreparedStatement, PrepareOptions } from "./statement-preparer.js";

/** Running a statement in the index's own process (the one-shot CLI, the SDK's `query`). */

export interface QueryResult extends StatementRows {
  /**
   * Files the scan for this query could not read, and files whose hook failed: a partial scan.
   */
  skipped: SkippedPath[];
  /** Path-tables the statement built that list no file, and why (see `EmptyPathTable`). */
  emptyTables: EmptyPathTable[];
  /**
   * The whole answer as JSON written by SQLite: the UTF-8 bytes `jsonChunks` writes for the
   * rows, without the final newline. `null` when it must be written the JS way: more than
   * `maxRows` rows, a REAL or BLOB value SQLite would write differently, a statement that
   * cannot be wrapped, or an error (which reading `rows` then reports). Absent for a
   * statement with bound values or worker calls.
   */
  jsonFromSqlite?: (maxRows: number, realText?: RealText) => Buffer | null;
}

/** What `DirqIndex.query` takes besides the statement. */
export interface IndexQueryOptions {
  /**
   * Values for the statement's parameters (the SDK): with it the statement may have them, and
   * must get exactly their values (`values` undefined: none). Without it, a statement with
   * parameters is refused, as the CLI and HTTP have no values to bind.
   */
  bind?: { values: QueryParameters | undefined };
}

/** What running in the index's process needs of the index. */
export interface InProcessHost {
  db: SqliteDatabase;
  functions: WorkerFunctions;
  progress: ProgressReporter;
  /** Checks the statement and builds what it reads (`DirqIndex.prepare`). */
  prepare(sql: string, options: PrepareOptions): Promise<PreparedStatement>;
}

/** Prepares, compiles and runs one statement on the index's own connection. */
export async function queryInProcess(
  host: InProcessHost,
  sql: string,
  options: IndexQueryOptions,
): Promise<QueryResult> {
  const { bind } = options;
  // A wrong count or name fails before anything is built.
  const args = bind === undefined ? [] : bindArguments(sql, bind.values);
  // Builds what the statement needs under the writer; a statement that needs nothing
  // built never waits for it (a refresh committing, a hook running).
  const prepared = await host.prepare(sql, { parameters: bind !== undefined });
  const compiled = compileStatement(host.db, host.functions, prepared.analysis, {
    lookForWorkers: prepared.callsWorkers,
    parameters: bind !== undefined,
  });
  const { skipped, emptyTables } = prepared;
  if (compiled.workerCalls.length > 0) {
    const last = await runInPasses(compiled, host.functions, host.progress, args, (rows) => rows);
    return { columns: last?.columns ?? [], rows: last?.rows ?? [], skipped, emptyTables };
  }
  const result = runCompiled(compiled, args);
  // SQLite's JSON wrapper runs the statement text again, without bound values.
  if (args.length > 0 || !compiled.statement.reader) return { ...result, skipped, emptyTables };
  return {
    ...result,
    skipped,
    emptyTables,
    jsonFromSqlite: (maxRows, realText) => answerInSqlite(host.db, compiled, maxRows, realText),
  };
}

/** See `QueryResult.jsonFromSqlite`. */
function answerInSqlite(
  db: SqliteDatabase,
  compiled: CompiledStatement,
  maxRows: number,
  realText: RealText = "js",
): Buffer | null {
  const { statement, analysis } = compiled;
  compiled.plan ??= columnPlan(statement, analysis);
  const wrapped = wrapForJson(db, statement, analysis, compiled.plan, { maxRows, realText });
  if (wrapped === null) return null;
  // No byte limit here: `maxRows` bounds the answer's size.
  return jsonFromSqlite(wrapped, Number.POSITIVE_INFINITY, () => new RangeError("no limit"));
}

/** The names of the columns a prepared statement answers with (see `DirqIndex.resultColumns`). */
export function resultColumnsOf(db: SqliteDatabase, prepared: PreparedStatement): string[] {
  let statement: Statement;
  try {
    statement = db.prepare(prepared.sql);
  } catch (error) {
    throw sqlError(error);
  }
  return statement.reader ? columnPlan(statement, prepared.analysis).columns : [];
}
