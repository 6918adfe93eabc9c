import type { Statement } from "better-sqlite3";
import type { SqliteDatabase } from "../indexer/database.js";
import type { ColumnPlan } from "../query/execute.js";

/** SQLite's default limit on a function's arguments; json_object takes two per column. */
const MAX_FUNCTION_ARGUMENTS = 127;

function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/**
 * The statement wrapped so that SQLite writes each row's JSON object itself: measured, about
 * four times faster for a 1,000-row answer than making every value a JS value and encoding it
 * again. Each row also says whether it holds a REAL or a BLOB, which SQLite would write
 * differently from `jsonChunks` (`1.0` for `1`, an error for a BLOB): such an answer goes the
 * JS way. TEXT goes through `|| ''`, which drops a JSON subtype, so `json(...)` values stay
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
  const wrapped = `WITH _dirq_answer(${names.join(", ")}) AS (\n${sql}\n) SELECT json_object(${pairs.join(", ")}), ${odd} FROM _dirq_answer`;
  try {
    return db.prepare(wrapped).raw(true);
  } catch {
    return null;
  }
}

/**
 * Runs a wrapped statement: the answer as `jsonChunks` writes it, or `null` when a row holds a
 * value SQLite would write differently (run the statement the JS way). Throws `tooLarge()`
 * past `maxChars` characters.
 */
export function jsonFromSqlite(
  wrapped: Statement,
  maxChars: number,
  tooLarge: () => Error,
): string | null {
  const rows: string[] = [];
  let size = 3;
  for (const [json, odd] of wrapped.iterate() as Iterable<[string, number]>) {
    if (odd) return null;
    size += json.length + 1;
    if (size > maxChars) throw tooLarge();
    rows.push(json);
  }
  return `[${rows.join(",")}]\n`;
}
