import type { SqliteDatabase } from "../indexer/database.js";

/** What a compiled statement reads: table name → column positions read through its cursor. */
export type TablesRead = Map<string, Set<number>>;

interface ExplainRow {
  opcode: string;
  p1: number;
  p2: number;
  p3: number;
}

/** Root page → table name for the main schema (indexes map to the table they index). */
function tablesByRootPage(db: SqliteDatabase): Map<number, string> {
  const rows = db
    .prepare("SELECT tbl_name AS name, rootpage FROM main.sqlite_schema WHERE rootpage > 0")
    .all() as { name: string; rootpage: number }[];
  return new Map(rows.map((row) => [row.rootpage, row.name]));
}

/**
 * Reads the statement's bytecode (EXPLAIN, which compiles but runs nothing) to learn which
 * tables it opens and which of their columns it reads. Views, CTEs and subqueries are already
 * expanded there, so this sees through every way of reaching a table.
 */
export function tablesReadBy(db: SqliteDatabase, sql: string): TablesRead {
  const program = db.prepare(`EXPLAIN ${sql}`).all() as ExplainRow[];
  const byRootPage = tablesByRootPage(db);
  const cursorTable = new Map<number, string>();
  const read: TablesRead = new Map();
  for (const step of program) {
    if ((step.opcode === "OpenRead" || step.opcode === "ReopenIdx") && step.p3 === 0) {
      const table = byRootPage.get(step.p2);
      if (table === undefined) continue;
      cursorTable.set(step.p1, table);
      if (!read.has(table)) read.set(table, new Set());
    } else if (step.opcode === "Column") {
      const table = cursorTable.get(step.p1);
      if (table !== undefined) read.get(table)?.add(step.p2);
    }
  }
  return read;
}
