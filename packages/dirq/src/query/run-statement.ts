import type { Statement } from "@rocicorp/zero-sqlite3";
import { functionsCalledBy } from "../connection/profile.js";
import type { WorkerFunctions, WorkerSpec } from "../functions/worker-functions.js";
import type { SqliteDatabase } from "../indexer/database.js";
import type { ProgressReporter } from "../progress/reporter.js";
import {
  type ColumnPlan,
  columnPlan,
  executeStatement,
  sqlError,
  type StatementRows,
} from "./execute.js";
import { nullArguments } from "./parameters.js";
import type { StatementAnalysis } from "./statement-analysis.js";

/**
 * The one way a checked statement runs, in this process (`DirqIndex.query`) and in a query
 * process (`runner/query-process.ts`): compiled once on a connection with its analysis, then
 * run any number of times, in passes when it calls worker-backed functions.
 */
export interface CompiledStatement {
  readonly statement: Statement;
  readonly analysis: StatementAnalysis;
  /** The worker-backed functions it calls: it then runs in passes (`runInPasses`). */
  readonly workerCalls: readonly WorkerSpec[];
  /** Its column plan, worked out on the first run. */
  plan?: ColumnPlan;
}

export interface CompileOptions {
  /**
   * Look in its bytecode for worker-backed calls; `false` when whoever checked it vouches that
   * it makes none (`PreparedStatement.callsWorkers`).
   */
  lookForWorkers: boolean;
  /** It has parameters (bound later): its bytecode is read with NULL for each. */
  parameters: boolean;
}

/** Compiles a checked statement on `db`. An SQLite error is a `DirqError` (`SQL_ERROR`). */
export function compileStatement(
  db: SqliteDatabase,
  functions: WorkerFunctions,
  analysis: StatementAnalysis,
  options: CompileOptions,
): CompiledStatement {
  try {
    const statement = db.prepare(analysis.sql);
    // An EXPLAIN calls nothing.
    const look = options.lookForWorkers && !analysis.isExplain;
    const nulls = options.parameters ? nullArguments(analysis) : [];
    const workerCalls = look ? functions.calledIn(functionsCalledBy(db, analysis.sql, nulls)) : [];
    return { statement, analysis, workerCalls };
  } catch (error) {
    throw sqlError(error);
  }
}

/** Runs a compiled statement once (rows are read as they are iterated). */
export function runCompiled(
  compiled: CompiledStatement,
  args: readonly unknown[] = [],
): StatementRows {
  const { statement, analysis } = compiled;
  if (statement.reader) compiled.plan ??= columnPlan(statement, analysis);
  return executeStatement(statement, analysis, compiled.plan, args);
}

/**
 * Runs a statement that calls worker-backed functions: in passes until every call is answered
 * (see `WorkerFunctions.run`); `finish` gets the rows of the last pass.
 */
export async function runInPasses<T>(
  compiled: CompiledStatement,
  functions: WorkerFunctions,
  progress: ProgressReporter,
  args: readonly unknown[],
  finish: (rows: StatementRows) => T,
): Promise<T | null> {
  return functions.run(
    (pending) => {
      const { columns, rows } = runCompiled(compiled, args);
      // Rows of a pass with unanswered calls are thrown away: read without being kept.
      const kept = [];
      for (const row of rows) if (!pending()) kept.push(row);
      return pending() ? null : finish({ columns, rows: kept });
    },
    progress,
    [...compiled.workerCalls],
  );
}
