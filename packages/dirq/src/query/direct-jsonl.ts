import { crypto } from "../lazy-module.js";
import { join } from "node:path";
import type { WorkerFunctions } from "../functions/worker-functions.js";
import type { SqliteDatabase } from "../indexer/database.js";
import { loadNativeRows } from "../scan/native-fs.js";
import { FILE_PATH_COLUMN, ROW_INDEX_COLUMN } from "../shared/reserved-names.js";
import { foldName } from "../shared/sql-names.js";
import { quoteIdentifier, quoteLiteral } from "../shared/sql-quote.js";
import type { SqlValue, StatementRows } from "./execute.js";
import { checkReadOnlyStatement } from "./read-only-guard.js";
import { compileStatement, runCompiled } from "./run-statement.js";
import { analyzeStatement, type StatementAnalysis } from "./statement-analysis.js";
import { namedTables } from "./table-names.js";

/**
 * One-shot statements over JSON Lines files read straight from the files: a statement that
 * reads one path-table once, and only some of its columns, runs over a TEMP VIEW of the native
 * reader's `dirq_jsonl_file` (native/dirq-jsonl.c) instead of a table filled first: the rows
 * are never inserted, and a 1 GB file costs its parse, not its parse and an insert and a scan.
 *
 * The answer is held, not handed out, until the statement is done, and kept only when it is
 * the answer the filled table gives: every file read once to its end, natively (no line left
 * to the JavaScript reader: a bad line, a key with an escape, a nested value the statement
 * names), each column the statement reads a key of some file, first spelled as the statement
 * spells it. Anything else (or more than `HELD_BYTES` of answer) and the answer is dropped:
 * the caller builds the table as always, which reads the files and reports what is wrong.
 */

/** Bytes of answer held at most before the direct read gives up (rows, as JavaScript sizes). */
export const HELD_BYTES = 64 * 1024 * 1024;

/** `HELD_BYTES`, or what `DIRQ_DIRECT_HELD_BYTES` says (only tests set it). */
function heldBytes(): number {
  const set = Number(process.env.DIRQ_DIRECT_HELD_BYTES);
  return Number.isInteger(set) && set > 0 ? set : HELD_BYTES;
}

/** Separates names in the native reader's arguments (native/dirq-jsonl.c). */
const NAME_SEPARATOR = "\u001f";
/** Columns one `dirq_jsonl_file` gives at most (less its `row_index`). */
const MOST_COLUMNS = 1990;
const NO_SUCH_COLUMN = /^no such column: ([\s\S]+)$/;
/** Files one view reads at most: one UNION ALL arm each, and SQLite compiles 500 at most. */
const MOST_FILES = 500;

/** What a direct read needs of the index. */
export interface DirectReadHost {
  db: SqliteDatabase;
  root: string;
  functions: WorkerFunctions;
  /** The files of a path-table when all are read natively as JSON Lines (see the registry). */
  jsonlFiles(path: string): string[] | null;
  /** Whether a table or view of this name exists already. */
  tableExists(name: string): boolean;
}

/** The one path-table a statement reads, when a direct read may answer it. */
function directTable(analysis: StatementAnalysis): string | null {
  if (analysis.isExplain || analysis.namedColumns === null) return null;
  if (analysis.describedTables.length > 0 || analysis.tableNames.length !== 1) return null;
  // An empty name (a `''` in the statement) is a key no column of a filled table may take.
  if (analysis.namedColumns.has("")) return null;
  const table = analysis.tableNames[0];
  if (table === undefined || table.place !== "from" || table.token.kind !== "string") return null;
  return table.token.value;
}

/** The column SQLite did not find, unqualified (`a.x` read from the table `a` or its alias). */
function missingColumn(analysis: StatementAnalysis, message: string): string | null {
  const reference = NO_SUCH_COLUMN.exec(message)?.[1];
  if (reference === undefined) return null;
  const dot = reference.indexOf(".");
  if (dot === -1) return reference;
  const qualifier = reference.slice(0, dot).toLowerCase();
  const [table] = namedTables(analysis.tokens, analysis.tableNames);
  const named =
    table?.name.toLowerCase() === qualifier || table?.alias?.toLowerCase() === qualifier;
  return named ? reference.slice(dot + 1) : null;
}

/** The TEMP VIEW named `name` over the files, with `columns` (plus the hidden two). */
function viewSql(
  name: string,
  root: string,
  files: readonly string[],
  columns: readonly string[],
  named: readonly string[],
  token: string,
): string {
  // Keys the statement may name beyond the view's columns are read too: a line the filled
  // table would leave to JavaScript (a nested value under such a key) fails here as well.
  const read = [...columns, ...named.filter((name) => !columns.some((c) => foldName(c) === name))];
  const arms = files.map((file, slot) => {
    const values = [
      ...columns.map((_, i) => `c${i}`),
      `CAST(${quoteLiteral(file)} AS TEXT)`,
      "row_index",
    ];
    const args = [join(root, file), read.join(NAME_SEPARATOR), named.join(NAME_SEPARATOR)];
    return (
      `SELECT ${values.join(", ")} FROM dirq_jsonl_file(` +
      `${args.map(quoteLiteral).join(", ")}, ${slot}, ${quoteLiteral(token)})`
    );
  });
  const names = [...columns, FILE_PATH_COLUMN, ROW_INDEX_COLUMN].map(quoteIdentifier);
  return `CREATE TEMP VIEW ${quoteIdentifier(name)} (${names.join(", ")}) AS ${arms.join(" UNION ALL ")}`;
}

/** One file's part of `dirq_jsonl_file_report()`. */
interface FileReport {
  scans: number;
  complete: boolean;
  /** Per column: "0" no key, "1" first spelled as the column, "2" otherwise. */
  seen: string;
}

function readReport(db: SqliteDatabase): FileReport[] {
  const text = db.prepare("SELECT dirq_jsonl_file_report()").pluck().get() as string;
  return text.split(";").map((part) => {
    const [scans, complete, seen] = part.split(" ");
    return { scans: Number(scans), complete: complete === "1", seen: seen ?? "" };
  });
}

/** Whether the report says the filled table would give the answer the view gave. */
function sameAsFilled(reports: readonly FileReport[], files: number, columns: number): boolean {
  if (reports.length !== files) return false;
  if (!reports.every((report) => report.scans === 1 && report.complete)) return false;
  for (let c = 0; c < columns; c++) {
    const first = reports.map((report) => report.seen[c]).find((seen) => seen !== "0");
    if (first !== "1") return false;
  }
  return true;
}

/** Rows read into memory, or `null` past `heldBytes()`. */
function holdRows(rows: Iterable<SqlValue[]>): SqlValue[][] | null {
  const most = heldBytes();
  const held: SqlValue[][] = [];
  let bytes = 0;
  for (const row of rows) {
    for (const value of row) {
      bytes += 16;
      if (typeof value === "string") bytes += value.length * 2;
      else if (value instanceof Uint8Array) bytes += value.length;
    }
    if (bytes > most) return null;
    held.push(row);
  }
  return held;
}

/** The view and compiled statement, its columns given as SQLite asks for them; or `null`. */
function compileOverView(
  host: DirectReadHost,
  analysis: StatementAnalysis,
  name: string,
  files: readonly string[],
  token: string,
): { columns: string[]; run: () => StatementRows } | null {
  const named = [...(analysis.namedColumns ?? [])].filter((n) => !n.includes(NAME_SEPARATOR));
  const columns: string[] = [];
  for (;;) {
    host.db.exec(`DROP VIEW IF EXISTS temp.${quoteIdentifier(name)}`);
    host.db.exec(viewSql(name, host.root, files, columns, named, token));
    try {
      const compiled = compileStatement(host.db, host.functions, analysis, {
        lookForWorkers: true,
        parameters: false,
      });
      if (compiled.workerCalls.length > 0 || !compiled.statement.readonly) return null;
      return { columns, run: () => runCompiled(compiled) };
    } catch (error) {
      const column = missingColumn(analysis, error instanceof Error ? error.message : "");
      if (column === null || column.includes(NAME_SEPARATOR)) return null;
      if (columns.some((known) => foldName(known) === foldName(column))) return null;
      if (columns.length >= MOST_COLUMNS) return null;
      columns.push(column);
    }
  }
}

/**
 * The answer of `sql` read straight from its JSON Lines files, held in memory; `null` when a
 * direct read does not apply or does not give the filled table's answer (nothing is left
 * behind: the caller then runs the statement the usual way).
 */
export function queryDirect(host: DirectReadHost, sql: string): StatementRows | null {
  const analysis = analyzeStatement(sql);
  const name = directTable(analysis);
  if (name === null || host.tableExists(name)) return null;
  try {
    checkReadOnlyStatement(analysis);
  } catch {
    return null;
  }
  if (analysis.tokens.some((token) => /^load_extension$/i.test(token.value))) return null;
  const files = host.jsonlFiles(name);
  if (files === null || files.length > MOST_FILES) return null;
  const { db } = host;
  if (!loadNativeRows(db)) return null;
  const token = crypto().randomUUID();
  let answer: StatementRows | null = null;
  try {
    db.prepare("SELECT dirq_jsonl_file_arm(?, ?)").get(token, files.length);
    const view = compileOverView(host, analysis, name, files, token);
    if (view === null) return null;
    const result = view.run();
    const rows = holdRows(result.rows);
    if (rows === null) return null;
    if (!sameAsFilled(readReport(db), files.length, view.columns.length)) return null;
    answer = { columns: result.columns, rows };
    return answer;
  } catch {
    return null;
  } finally {
    if (answer === null) db.exec(`DROP VIEW IF EXISTS temp.${quoteIdentifier(name)}`);
    db.prepare("SELECT dirq_jsonl_file_arm(NULL, 0)").get();
  }
}
