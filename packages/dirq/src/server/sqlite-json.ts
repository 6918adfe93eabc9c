import type { Statement } from "better-sqlite3";
import type { SqliteDatabase } from "../indexer/database.js";
import type { ColumnPlan } from "../query/execute.js";

/** SQLite's default limit on a function's arguments; json_object takes two per column. */
const MAX_FUNCTION_ARGUMENTS = 127;
/**
 * Answers with more rows go the JS way, which checks the size limit as it goes: SQLite builds
 * the whole array before anything can look at its size.
 */
export const MAX_SQLITE_JSON_ROWS = 10_000;

function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/**
 * The statement wrapped so that SQLite writes the whole JSON array itself (json_group_array
 * of json_object): measured, about three times faster for a 1,000-row answer than making
 * every value a JS value and encoding it again. The rows keep the statement's order: SQLite
 * keeps a FROM-subquery's ORDER BY under an aggregate other than count/min/max. It also says
 * whether a row holds a REAL or a BLOB, which SQLite would write differently from
 * `jsonChunks` (`1.0` for `1`, an error for a BLOB), and how many rows there were: such
 * answers, and long ones, go the JS way. TEXT goes through `|| ''`, which drops a JSON subtype, so `json(...)` values stay
 * strings as they do in JS. `null` when the statement cannot be wrapped (PRAGMA, EXPLAIN, a
 * trailing `;`, too many columns): the caller uses the JS way.
 */
export function wrapForJson(
  db: SqliteDatabase,
  statement: Statement,
  sql: string,
  plan: ColumnPlan,
): Statement | null {
  const width = statement.columns().length;
  const shown = plan.keep ?? Array.from({ length: width }, (_, i) => i);
  if (width === 0 || shown.length * 2 > MAX_FUNCTION_ARGUMENTS) return null;
  const names = Array.from({ length: width }, (_, i) => `c${i}`);
  const pairs = shown.map(
    (position, i) =>
      `${sqlString(plan.columns[i] ?? "")}, CASE typeof(c${position}) WHEN 'text' THEN c${position} || '' WHEN 'integer' THEN c${position} END`,
  );
  const odd = shown.map((position) => `typeof(c${position}) IN ('real', 'blob')`).join(" OR ");
  // The statement on lines of its own: a trailing `-- comment` ends with its line.
  const limited = `SELECT * FROM _dirq_answer LIMIT ${MAX_SQLITE_JSON_ROWS + 1}`;
  const wrapped = `WITH _dirq_answer(${names.join(", ")}) AS (\n${sql}\n) SELECT json_group_array(json_object(${pairs.join(", ")})), max(${odd}), count(*) FROM (${limited})`;
  try {
    return db.prepare(wrapped).raw(true);
  } catch {
    return null;
  }
}

/**
 * Runs a wrapped statement: the answer as `jsonChunks` writes it, or `null` when it must be
 * written the JS way (a REAL or BLOB value, or more than MAX_SQLITE_JSON_ROWS rows). Throws
 * `tooLarge()` past `maxChars` characters.
 */
export function jsonFromSqlite(
  wrapped: Statement,
  maxChars: number,
  tooLarge: () => Error,
): string | null {
  const [json, odd, count] = wrapped.get() as [string, number | null, number];
  if (odd || count > MAX_SQLITE_JSON_ROWS) return null;
  if (json.length + 1 > maxChars) throw tooLarge();
  return `${json}\n`;
}
