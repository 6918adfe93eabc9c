import type { Statement } from "@rocicorp/zero-sqlite3";
import { HIDDEN_COLUMNS } from "../shared/reserved-names.js";
import { sqlError } from "../shared/sql-errors.js";
import type { SqlValue } from "../shared/sql-value.js";
import { withoutVariantNames } from "./case-variants.js";
import { hiddenNamesSelectedByViews, visibleColumnPositions } from "./hidden-columns.js";
import type { StatementAnalysis } from "./statement-analysis.js";

export type { SqlValue };

/** Result columns and lazily read rows of one statement. */
export interface StatementRows {
  /** Result column names, in SELECT order. */
  columns: string[];
  /** The rows, read lazily from SQLite; each iteration runs the statement anew. */
  rows: Iterable<SqlValue[]>;
}

const HIDDEN = HIDDEN_COLUMNS;

export { sqlError };

function* iterateRows(
  statement: Statement,
  keep: number[] | null,
  args: readonly unknown[],
  oneColumn: boolean,
): Generator<SqlValue[]> {
  try {
    if (oneColumn) {
      // One column: its values alone (`pluck`), each put in a row here, cost less than SQLite
      // rows made as arrays by the binding, and `SELECT path FROM ...` is the common one-column
      // statement.
      statement.pluck(true);
      for (const value of statement.iterate(...args) as Iterable<SqlValue>) yield [value];
      return;
    }
    const rows = statement.iterate(...args) as Iterable<SqlValue[]>;
    if (keep === null) yield* rows;
    else for (const row of rows) yield keep.map((i) => row[i] as SqlValue);
  } catch (error) {
    throw sqlError(error);
  }
}

function viewsOf(statement: Statement): { name: string; sql: string }[] {
  return statement.database
    .prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'view' AND sql IS NOT NULL")
    .all() as { name: string; sql: string }[];
}

/** Which result columns a statement shows: worth keeping beside a statement that runs often. */
export interface ColumnPlan {
  columns: string[];
  /** Positions of the shown columns, `null` when all are shown. */
  keep: number[] | null;
}

/** The columns a reader statement shows (hidden columns of parsed tables left out). */
export function columnPlan(statement: Statement, sql: string | StatementAnalysis): ColumnPlan {
  const all = statement.columns();
  const fromHidden = all.some((column) => HIDDEN.has(column.column?.toLowerCase() ?? ""));
  const keptByViews = fromHidden
    ? hiddenNamesSelectedByViews(() => viewsOf(statement), sql, HIDDEN)
    : new Set<string>();
  const hidden =
    keptByViews.size === 0 ? HIDDEN : new Set([...HIDDEN].filter((name) => !keptByViews.has(name)));
  const shown = visibleColumnPositions(all, sql, hidden);
  const columns = shown.map((i) => withoutVariantNames(all[i]?.name ?? ""));
  return { columns, keep: shown.length === all.length ? null : shown };
}

/**
 * Runs a prepared, already checked statement: exact integers, raw rows, and the hidden
 * columns of parsed tables left out unless named. Shared by the in-process query and the
 * server's query processes, so both return the same bytes. `plan`: the statement's
 * `columnPlan`, when the caller keeps it.
 */
export function executeStatement(
  statement: Statement,
  sql: string | StatementAnalysis,
  plan?: ColumnPlan,
  /** Bound values (`bindArguments`), for a statement with parameters (the SDK). */
  args: readonly unknown[] = [],
): StatementRows {
  if (!statement.reader) {
    statement.run(...args);
    return { columns: [], rows: [] };
  }
  statement.raw(true).safeIntegers(true);
  const { columns, keep } = plan ?? columnPlan(statement, sql);
  const oneColumn = keep === null && columns.length === 1;
  return {
    columns,
    rows: { [Symbol.iterator]: () => iterateRows(statement, keep, args, oneColumn) },
  };
}
