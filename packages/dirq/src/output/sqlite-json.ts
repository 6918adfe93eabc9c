import type { Statement } from "@rocicorp/zero-sqlite3";
import type { SqliteDatabase } from "../indexer/database.js";
import { quoteLiteral } from "../shared/sql-quote.js";
import type { ColumnPlan } from "../query/execute.js";
import type { StatementAnalysis } from "../query/statement-analysis.js";

/** SQLite's default limit on a function's arguments; json_object takes two per column. */
const MAX_FUNCTION_ARGUMENTS = 127;
/**
 * Answers with more rows go the JS way, which checks the size limit as it goes: SQLite builds
 * the whole array before anything can look at its size.
 */
export const MAX_SQLITE_JSON_ROWS = 10_000;
/**
 * A statement whose last answer had at most this share of the row bound runs without it: it
 * could only outgrow the bound by growing tenfold between two runs.
 */
const SMALL_ANSWER_SHARE = 10;

/**
 * How many rows of a statement's first answer are written the JS way before SQLite writes
 * it instead (see `answerInSqlite` of the query process, and the CLI's JSON output).
 * Wrapping a statement for SQLite's JSON compiles another statement (costlier than a one-row
 * answer the JS way); it pays off only for longer answers.
 * `DIRQ_FIRST_ANSWER_JS_ROWS` changes the bound: tests set 0, so that SQLite writes every
 * answer it can, or a huge number, so that the JS way writes them all, and compare the bytes.
 */
export function firstAnswerJsRows(): number {
  const fromEnv = Number(process.env.DIRQ_FIRST_ANSWER_JS_ROWS ?? Number.NaN);
  return Number.isSafeInteger(fromEnv) && fromEnv >= 0 ? fromEnv : 64;
}

/**
 * A statement wrapped so that SQLite writes its JSON answer, in two forms. The bounded one
 * stops reading at `maxRows` + 1 rows (MAX_SQLITE_JSON_ROWS unless told), so a huge answer
 * never becomes one huge string; its LIMIT makes SQLite copy every row through a subquery, a
 * cost worth avoiding. The unbounded one reads every row and serves statements whose answers
 * have been small. Each is compiled when first needed: a statement whose answers stay small
 * never compiles the bounded one.
 */
export interface JsonStatement {
  readonly db: SqliteDatabase;
  /** The wrapped statement up to its FROM, which names the answer with or without a bound. */
  readonly head: string;
  bounded: Statement | null;
  unbounded: Statement | null;
  /** Rows of the last answer; -1 before the first. */
  lastRows: number;
  /** The bounded form's bound: longer answers go the JS way. */
  maxRows: number;
}

/** The one form of a wrapped statement the next answer runs, compiled on first use. */
function jsonForm(wrapped: JsonStatement, bounded: boolean): Statement {
  const { db } = wrapped;
  if (bounded) {
    wrapped.bounded ??= db
      .prepare(`${wrapped.head} (SELECT * FROM _dirq_answer LIMIT ${wrapped.maxRows + 1})`)
      .raw(true);
    return wrapped.bounded;
  }
  wrapped.unbounded ??= db.prepare(`${wrapped.head} _dirq_answer`).raw(true);
  return wrapped.unbounded;
}

/** Whether the next answer runs the bounded form: its last answer was not small. */
function runsBounded(wrapped: JsonStatement): boolean {
  return wrapped.lastRows < 0 || wrapped.lastRows > wrapped.maxRows / SMALL_ANSWER_SHARE;
}

/** TEXT affinity (SQLite's rule 2): such a column stores numbers as text, never as REAL. */
function hasTextAffinity(declared: string | null): boolean {
  const type = (declared ?? "").toUpperCase();
  return !type.includes("INT") && /CHAR|CLOB|TEXT/.test(type);
}

/** A STRICT table's INT or INTEGER column: only whole numbers (or NULL) get in. */
function isWholeNumberType(declared: string | null): boolean {
  const type = (declared ?? "").toUpperCase();
  return type === "INT" || type === "INTEGER";
}

/**
 * The STRICT tables of a connection, as `schema.name`: their column types are enforced, so a
 * column's type says what its values are. They change only with the schema: keep them for
 * as long as its version holds.
 */
export function strictTableNames(db: SqliteDatabase): Set<string> {
  const rows = db.prepare("SELECT schema, name FROM pragma_table_list WHERE strict").all() as {
    schema: string;
    name: string;
  }[];
  return new Set(rows.map((row) => `${row.schema}.${row.name}`));
}

/** Where a result column's values come from, as SQLite reports it. */
interface ColumnOrigin {
  column: string | null;
  table: string | null;
  database: string | null;
  type: string | null;
}

/**
 * How REAL values may be written. `js`: only as `jsonChunks` writes them (JavaScript's
 * shortest form, `1` for 1.0), so an answer holding one goes the JS way. `same-value`: as
 * SQLite writes them (`1.5e-07` for 1.5e-7), which any JSON parser reads as the same number;
 * a whole REAL below 2^53 is written as an integer, as in JS, so a parser makes the same
 * kind of number of it. A REAL at or past 2^53 and below 1e21 (JS writes its digits, an
 * integer to a parser; SQLite an exponent) and an infinity (JS: null) still go the JS way.
 */
export type RealText = "js" | "same-value";

/**
 * A REAL value `c` as `same-value` writes it, and the check that sends its row the JS way (a
 * BLOB too). CASE, not AND: SQLite evaluates both sides of an AND in a value, and the abs()
 * calls on every value of every row would double the time SQLite takes to write the answer.
 */
function realSameValue(c: string): { real: string; odd: string } {
  const beyondSafe = `abs(${c}) < 1e21 OR abs(${c}) > 1.7976931348623157e308`;
  return {
    real: `CASE WHEN ${c} = CAST(${c} AS INTEGER) AND abs(${c}) < 9007199254740992 THEN CAST(${c} AS INTEGER) ELSE ${c} END`,
    odd: `CASE typeof(${c}) WHEN 'real' THEN CASE WHEN abs(${c}) < 9007199254740992 THEN 0 ELSE ${beyondSafe} END WHEN 'blob' THEN 1 ELSE 0 END`,
  };
}

/**
 * How one column goes into json_object, and what says its row must go the JS way. A value
 * read straight from a table column never carries a JSON subtype (only function results do);
 * one of a TEXT-affinity column is never REAL, and an INT or INTEGER column of a STRICT table
 * (path-tables are STRICT) holds neither REAL nor BLOB: such columns go in as they are, the
 * cheapest form (the checks cost more than json_object itself; even the one REAL check of an
 * INTEGER column is a noticeable part of an answer). A BLOB makes json_object fail, which
 * sends the answer the JS way too.
 */
function columnJson(
  name: string,
  position: number,
  origin: ColumnOrigin | undefined,
  direct: boolean,
  strictTables: ReadonlySet<string>,
  realText: RealText,
): { value: string; odd: string | null } {
  const c = `c${position}`;
  const key = quoteLiteral(name);
  if (direct && origin?.column) {
    const plain =
      hasTextAffinity(origin.type) ||
      (isWholeNumberType(origin.type) &&
        strictTables.has(`${origin.database ?? ""}.${origin.table ?? ""}`));
    if (plain) return { value: `${key}, ${c}`, odd: null };
    if (realText === "js") return { value: `${key}, ${c}`, odd: `typeof(${c}) = 'real'` };
    const { real, odd } = realSameValue(c);
    return { value: `${key}, CASE typeof(${c}) WHEN 'real' THEN ${real} ELSE ${c} END`, odd };
  }
  if (realText === "js") {
    return {
      value: `${key}, CASE typeof(${c}) WHEN 'text' THEN ${c} || '' WHEN 'integer' THEN ${c} END`,
      odd: `typeof(${c}) IN ('real', 'blob')`,
    };
  }
  const { real, odd } = realSameValue(c);
  return {
    value: `${key}, CASE typeof(${c}) WHEN 'text' THEN ${c} || '' WHEN 'integer' THEN ${c} WHEN 'real' THEN ${real} END`,
    odd,
  };
}

/** What `wrapForJson` takes besides the statement; every key has a default. */
export interface WrapOptions {
  /** The connection's STRICT tables (`strictTableNames`); default: read now. */
  strictTables?: ReadonlySet<string>;
  /** The rows of an answer given before, if any, which decides the form compiled now. */
  lastRows?: number;
  /** The bounded form's bound (MAX_SQLITE_JSON_ROWS). */
  maxRows?: number;
  /** How REAL values may be written (default `js`). */
  realText?: RealText;
}

/**
 * The statement wrapped so that SQLite writes the whole JSON array itself (json_group_array
 * of json_object): faster for a long answer than making every value a JS value and encoding
 * it again. The rows keep the statement's order: SQLite keeps a FROM-subquery's ORDER BY
 * under an aggregate other than count/min/max. It also says
 * whether a row holds a REAL or a BLOB, which SQLite would write differently from
 * `jsonChunks` (`1.0` for `1`, an error for a BLOB), and how many rows there were: such
 * answers, and long ones, go the JS way. TEXT computed by an expression goes through `|| ''`,
 * which drops a JSON subtype, so `json(...)` values stay strings as they do in JS. `null` when
 * the statement cannot be wrapped (PRAGMA, EXPLAIN, a trailing `;`, too many columns): the
 * caller uses the JS way.
 */
export function wrapForJson(
  db: SqliteDatabase,
  statement: Statement,
  analysis: StatementAnalysis,
  plan: ColumnPlan,
  options: WrapOptions = {},
): JsonStatement | null {
  const { lastRows = -1, maxRows = MAX_SQLITE_JSON_ROWS, realText = "js" } = options;
  const strictTables = options.strictTables ?? strictTableNames(db);
  const { sql } = analysis;
  const origins = statement.columns();
  const width = origins.length;
  const shown = plan.keep ?? Array.from({ length: width }, (_, i) => i);
  if (width === 0 || shown.length * 2 > MAX_FUNCTION_ARGUMENTS) return null;
  const names = Array.from({ length: width }, (_, i) => `c${i}`);
  const direct = !analysis.isCompound;
  const columns = shown.map((position, i) =>
    columnJson(plan.columns[i] ?? "", position, origins[position], direct, strictTables, realText),
  );
  const pairs = columns.map((column) => column.value);
  const checks = columns.flatMap((column) => (column.odd === null ? [] : [column.odd]));
  const odd = checks.length === 0 ? "0" : `max(${checks.join(" OR ")})`;
  // As a BLOB: its UTF-8 bytes reach JS as one Buffer, which goes into the frame as it is (a
  // TEXT value is decoded into a JS string and encoded again). The body's final newline is
  // the caller's: appending it here would copy the whole array once more.
  const json = `json_group_array(json_object(${pairs.join(", ")}))`;
  // The statement on lines of its own: a trailing `-- comment` ends with its line.
  const head = `WITH _dirq_answer(${names.join(", ")}) AS (\n${sql}\n) SELECT CAST(${json} AS BLOB), ${odd}, count(*) FROM`;
  const wrapped: JsonStatement = { db, head, bounded: null, unbounded: null, lastRows, maxRows };
  try {
    jsonForm(wrapped, runsBounded(wrapped));
    return wrapped;
  } catch {
    return null;
  }
}

/**
 * Runs a wrapped statement: the answer's UTF-8 bytes as `jsonChunks` writes them, without the
 * final newline, or `null` when it must be written the JS way (a REAL or BLOB value, more
 * than its `maxRows` rows from the bounded form, or an error, which the JS way then
 * reports as the statement's own). Throws `tooLarge()` past `maxBytes`.
 */
export function jsonFromSqlite(
  wrapped: JsonStatement,
  maxBytes: number,
  tooLarge: () => Error,
): Buffer | null {
  const bounded = runsBounded(wrapped);
  let json: Buffer;
  let odd: number | null;
  let count: number;
  try {
    const statement = jsonForm(wrapped, bounded);
    [json, odd, count] = statement.get() as [Buffer, number | null, number];
  } catch {
    return null;
  }
  wrapped.lastRows = count;
  if (odd || (bounded && count > wrapped.maxRows)) return null;
  if (json.length > maxBytes) throw tooLarge();
  return json;
}
