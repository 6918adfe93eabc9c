import type { SqliteDatabase } from "../indexer/database.js";

/** What a compiled statement reads: table name → column positions read through its cursor. */
export type TablesRead = Map<string, Set<number>>;

interface ExplainRow {
  opcode: string;
  p1: number;
  p2: number;
  p3: number;
}

/** The name `tablesReadBy` gives the schema table itself (`sqlite_master`), at root page 1. */
export const SCHEMA_TABLE = "sqlite_schema";

/** Root page → table name for the main schema (indexes map to the table they index). */
function tablesByRootPage(db: SqliteDatabase): Map<number, string> {
  const rows = db
    .prepare("SELECT tbl_name AS name, rootpage FROM main.sqlite_schema WHERE rootpage > 0")
    .all() as { name: string; rootpage: number }[];
  return new Map([
    [1, SCHEMA_TABLE],
    ...rows.map((row): [number, string] => [row.rootpage, row.name]),
  ]);
}

/**
 * Reads the statement's bytecode (EXPLAIN, which compiles but runs nothing) to learn which
 * tables it opens and which of their columns it reads. Views, CTEs and subqueries are already
 * expanded there, so this sees through every way of reaching a table. A statement that reads
 * `sqlite_master` reads `SCHEMA_TABLE`.
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

/**
 * Opcodes whose answer comes from somewhere other than the rows of the main schema's tables:
 * virtual tables (`json_each`, table-valued pragmas, an extension's tables, which may read
 * the file system or the connection), and pragmas that read the file's header or size
 * (`page_count`, `data_version`, `integrity_check`, ...).
 */
const OUTSIDE_TABLES = new Set([
  "VOpen",
  "Pagecount",
  "MaxPgcnt",
  "ReadCookie",
  "IntegrityCk",
  "JournalMode",
]);

/**
 * Whether the statement reads anything besides table rows and the schema, so that the rows
 * of the tables it reads do not settle its answer.
 */
export function readsOutsideTables(db: SqliteDatabase, sql: string): boolean {
  const program = db.prepare(`EXPLAIN ${sql}`).all() as ExplainRow[];
  return program.some(
    (step) =>
      OUTSIDE_TABLES.has(step.opcode) ||
      // A database other than main (temp, attached): nothing keeps track of its rows.
      ((step.opcode === "OpenRead" || step.opcode === "ReopenIdx") && step.p3 !== 0),
  );
}
