import type { PreparedStatement, RawRows } from "../engine.js";
import { rowJson } from "../indexer/row-changes.js";
import { quoteIdentifier } from "../indexer/database.js";
import { FILE_PATH_COLUMN } from "../shared/reserved-names.js";
import { keywordOf } from "../query/sql-tokens.js";

/**
 * The incremental way of a live query: a statement that reads one table row by row (no
 * aggregate, DISTINCT, LIMIT/OFFSET, window, subquery, join, ORDER BY or volatile function)
 * answers, for each file, with the rows that file's rows give; after a commit only the rows of
 * the files it touched are read again (the table's file column is indexed for the refresh).
 */

/** The name the statement's file column is selected under. */
export const FILE_ALIAS = "_dirq_live_file";

/** Keywords that make a statement's answer more than its rows' answers side by side. */
const WHOLE_ANSWER_WORDS = new Set([
  "ALL",
  "DISTINCT",
  "EXCEPT",
  "FILTER",
  "GROUP",
  "HAVING",
  "INTERSECT",
  "JOIN",
  "LIMIT",
  "OFFSET",
  "ORDER",
  "OVER",
  "UNION",
  "VALUES",
  "WINDOW",
  "WITH",
]);

/** Opcodes of a program that folds rows together (aggregates and windows, built in or not). */
const FOLDING_OPCODES = new Set(["AggStep", "AggStep1", "AggFinal", "AggValue", "AggInverse"]);

/** What reading the rows of some files needs: the statement with its file column first. */
export interface IncrementalPlan {
  /** `SELECT <file column> AS _dirq_live_file, <the statement's columns> FROM ... WHERE ...`. */
  withFiles: string;
}

/** What planning needs of the index: run a statement on its connection. */
export type ReadRows = (sql: string, args?: readonly unknown[]) => RawRows;

/** Whether the statement's tokens allow reading it file by file. */
function rowByRow(prepared: PreparedStatement): boolean {
  const { tokens, tableNames, isCompound } = prepared.analysis;
  if (keywordOf(tokens[0]) !== "SELECT" || isCompound) return false;
  if (tableNames.length !== 1 || prepared.tables.length !== 1 || !prepared.cacheable) return false;
  let selects = 0;
  for (const token of tokens) {
    const keyword = keywordOf(token);
    if (keyword === "SELECT") selects++;
    else if (keyword !== null && WHOLE_ANSWER_WORDS.has(keyword)) return false;
  }
  return selects === 1;
}

/** The file column of the table a statement names: the hidden one, or a path-table's `path`. */
function fileColumnOf(table: string, read: ReadRows): string | null {
  for (const column of [FILE_PATH_COLUMN, "path"]) {
    if (column === "path" && !/^\.{1,2}(\/|$)/.test(table)) continue;
    try {
      read(`SELECT ${quoteIdentifier(column)} FROM ${quoteIdentifier(table)} LIMIT 0`);
      return column;
    } catch {
      // Not this table's file column: a view, or a table of another kind.
    }
  }
  return null;
}

/** Whether SQLite's program for `sql` folds rows together (an aggregate or a window). */
function folds(sql: string, read: ReadRows, args: readonly unknown[]): boolean {
  const program = read(`EXPLAIN ${sql}`, args);
  const opcode = program.columns.indexOf("opcode");
  return program.rows.some((row) => FOLDING_OPCODES.has(String(row[opcode])));
}

/** The incremental plan of a prepared statement, or `null` when it must re-run whole. */
export function incrementalPlan(
  prepared: PreparedStatement,
  read: ReadRows,
  args: readonly unknown[],
): IncrementalPlan | null {
  if (!rowByRow(prepared)) return null;
  const name = prepared.analysis.tableNames[0]?.token.value as string;
  const column = fileColumnOf(name, read);
  const select = prepared.analysis.tokens[0];
  if (column === null || select === undefined) return null;
  const cut = select.start + select.text.length;
  const sql = prepared.sql;
  const withFiles = `${sql.slice(0, cut)} ${quoteIdentifier(column)} AS ${FILE_ALIAS}, ${sql.slice(cut)}`;
  try {
    if (folds(withFiles, read, args)) return null;
  } catch {
    return null;
  }
  return { withFiles };
}

/** A SQL string literal. */
function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** The rows of the files `files`, as row texts grouped by file (every file has its list). */
export function rowsOfFiles(
  plan: IncrementalPlan,
  files: readonly string[],
  read: ReadRows,
  args: readonly unknown[],
): Map<string, string[]> {
  const list = sqlString(JSON.stringify(files));
  const sql = `SELECT * FROM (${plan.withFiles}) WHERE ${FILE_ALIAS} IN (SELECT value FROM json_each(${list}))`;
  const { columns, rows } = read(sql, args);
  return groupByFile(columns, rows, files);
}

/** Rows whose first value is their file, as row texts of the other columns, by file. */
export function groupByFile(
  columns: readonly string[],
  rows: readonly unknown[][],
  files: readonly string[] = [],
): Map<string, string[]> {
  const names = columns.slice(1);
  const byFile = new Map<string, string[]>(files.map((file) => [file, []]));
  for (const row of rows) {
    const file = String(row[0]);
    const text = rowJson(names, row.slice(1));
    const list = byFile.get(file);
    if (list === undefined) byFile.set(file, [text]);
    else list.push(text);
  }
  return byFile;
}
