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

/**
 * The named parameter the files to read are bound to (a JSON array): one statement, prepared
 * once, reads the rows of whichever files a commit changed.
 */
const FILES_PARAMETER = "_dirq_live_files";

/**
 * The named parameter of the usual run's one changed file. `IN (@file)`, not `= @file`: SQLite
 * compiles both to the same program, yet the `=` form took twice as long per run here
 * (SQLite built with STAT4 likely prepares it again for each bound value); and a file bound
 * as it is needs neither the JSON list nor `json_each`.
 */
const FILE_PARAMETER = "_dirq_live_file_path";

/** What reading the rows of some files needs: the statement with its file column first. */
export interface IncrementalPlan {
  /** `SELECT <file column> AS _dirq_live_file, <the statement's columns> FROM ... WHERE ...`. */
  withFiles: string;
  /** `withFiles` restricted to the files bound to `FILES_PARAMETER`. */
  ofFiles: string;
  /** `withFiles` restricted to the one file bound to `FILE_PARAMETER`. */
  ofFile: string;
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
  const ofFiles = `SELECT * FROM (${withFiles}) WHERE ${FILE_ALIAS} IN (SELECT value FROM json_each(@${FILES_PARAMETER}))`;
  const ofFile = `SELECT * FROM (${withFiles}) WHERE ${FILE_ALIAS} IN (@${FILE_PARAMETER})`;
  return { withFiles, ofFiles, ofFile };
}

/**
 * The statement's own arguments with one more named value, which each run sets: its named
 * values (or a statement without any) take one more name, positional ones an object of their
 * own after them. The list is made once: a run only sets the value.
 */
class ArgumentsWith {
  private readonly named: Record<string, unknown>;
  private readonly list: unknown[];

  constructor(
    args: readonly unknown[],
    private readonly name: string,
  ) {
    const last = args.at(-1);
    const isNamed =
      last !== null &&
      typeof last === "object" &&
      !Array.isArray(last) &&
      !ArrayBuffer.isView(last);
    this.named = isNamed ? { ...(last as object) } : {};
    this.list = isNamed ? [...args.slice(0, -1), this.named] : [...args, this.named];
  }

  /** The arguments with `value` under the name. */
  bind(value: string): readonly unknown[] {
    this.named[this.name] = value;
    return this.list;
  }
}

/** Runs a statement of the plan with these arguments (a reader made once per statement). */
export type StatementReader = (sql: string) => (args: readonly unknown[]) => RawRows;

/**
 * Reads the rows of some files with the plan's statements: one changed file (the usual run)
 * with `ofFile`, several with `ofFiles`. Each statement is made at its first use.
 */
export function filesReader(
  plan: IncrementalPlan,
  args: readonly unknown[],
  reader: StatementReader,
): (files: readonly string[]) => RawRows {
  const one = new ArgumentsWith(args, FILE_PARAMETER);
  const many = new ArgumentsWith(args, FILES_PARAMETER);
  let readOne: ((args: readonly unknown[]) => RawRows) | null = null;
  let readMany: ((args: readonly unknown[]) => RawRows) | null = null;
  return (files) => {
    if (files.length === 1) {
      readOne ??= reader(plan.ofFile);
      return readOne(one.bind(files[0] as string));
    }
    readMany ??= reader(plan.ofFiles);
    return readMany(many.bind(JSON.stringify(files)));
  };
}

/**
 * The rows of the files `files`, as row texts grouped by file (every file has its list);
 * `read` reads them (`filesReader`). `null` when the columns after the file column are no
 * longer `expected`.
 */
export function rowsOfFiles(
  files: readonly string[],
  read: (files: readonly string[]) => RawRows,
  expected: readonly string[],
): Map<string, string[]> | null {
  const { columns, rows } = read(files);
  if (!sameColumnsAfterFile(columns, expected)) return null;
  return groupByFile(columns, rows, files);
}

function sameColumnsAfterFile(columns: readonly string[], expected: readonly string[]): boolean {
  if (columns.length !== expected.length + 1) return false;
  return expected.every((name, i) => columns[i + 1] === name);
}

/**
 * The columns after the file column, one list per column list: a reader gives the same list
 * run after run, and `rowJson` makes each list's JSON keys once (it knows a list by identity).
 */
const namesAfterFile = new WeakMap<readonly string[], string[]>();

/** Rows whose first value is their file, as row texts of the other columns, by file. */
export function groupByFile(
  columns: readonly string[],
  rows: readonly unknown[][],
  files: readonly string[] = [],
): Map<string, string[]> {
  let names = namesAfterFile.get(columns);
  if (names === undefined) {
    names = columns.slice(1);
    namesAfterFile.set(columns, names);
  }
  const byFile = new Map<string, string[]>();
  for (const file of files) byFile.set(file, []);
  for (const row of rows) {
    const file = String(row[0]);
    const text = rowJson(names, row.slice(1));
    const list = byFile.get(file);
    if (list === undefined) byFile.set(file, [text]);
    else list.push(text);
  }
  return byFile;
}
