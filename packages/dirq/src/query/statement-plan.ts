import type { SqliteDatabase } from "../indexer/database.js";

/**
 * What a compiled statement reads: table name → column positions read through its cursor, and
 * `ROWID` when it reads or seeks a row id.
 */
export type TablesRead = Map<string, Set<number>>;

/** The "column" of a `TablesRead` entry that stands for the row id. */
export const ROWID = -1;

/** Opcodes that read a row id through a cursor (p1), or seek one. */
const ROWID_OPCODES = new Set(["Rowid", "SeekRowid", "NotExists", "IdxRowid", "DeferredSeek"]);

/** The name the plan gives the schema table itself (`sqlite_master`), at root page 1. */
export const SCHEMA_TABLE = "sqlite_schema";

/** What a statement's bytecode says about it, read in one pass over one EXPLAIN. */
export interface StatementPlan {
  /** SQLite's own flag: the statement writes nothing (an EXPLAIN has its statement's flag). */
  readonly: boolean;
  /** Lower-cased names of the SQL functions it calls, also through views. */
  functions: Set<string>;
  /**
   * Tables of the main schema it opens and the columns it reads through them. Views, CTEs and
   * subqueries are expanded in the bytecode, so this sees through every way of reaching a
   * table; reading `sqlite_master` is reading `SCHEMA_TABLE`.
   */
  tables: TablesRead;
  /**
   * It reads something besides table rows and the schema, so that the rows of `tables` do not
   * settle its answer.
   */
  readsOutside: boolean;
}

/** Root page → table name of the main schema (indexes map to the table they index). */
export type RootPages = ReadonlyMap<number, string>;

/**
 * The root pages of one connection's main schema, read again only when the schema version
 * moves: a table or index created or dropped is the only thing that changes them.
 */
export class RootPageMap {
  private pages: RootPages | null = null;
  private version = -1;

  constructor(private readonly db: SqliteDatabase) {}

  at(schemaVersion: number): RootPages {
    if (this.pages === null || this.version !== schemaVersion) {
      const rows = this.db
        .prepare("SELECT rootpage, tbl_name FROM main.sqlite_schema WHERE rootpage > 0")
        .raw(true)
        .all() as [number, string][];
      this.pages = new Map([[1, SCHEMA_TABLE], ...rows]);
      this.version = schemaVersion;
    }
    return this.pages;
  }
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

/** `f(-1)` in EXPLAIN's p4 column: the function a Function or PureFunc opcode calls. */
const EXPLAINED_FUNCTION = /^([^()]+)\(-?\d+\)$/;

/** EXPLAIN's columns, read raw: addr, opcode, p1, p2, p3, p4, p5, comment. */
type ExplainRow = [number, string, number, number, number, unknown, unknown, unknown];

/**
 * Compiles `EXPLAIN <sql>` (which runs nothing) and reads its program once for everything the
 * checks ask: one pass over raw rows with the root pages kept costs far less than a pass per
 * check over object rows with the root pages queried each time, and this runs for every
 * statement the server has not seen. Throws SQLite's error when the statement does not compile.
 */
export function planStatement(
  db: SqliteDatabase,
  sql: string,
  rootPages: RootPages,
  /** NULL for each parameter of a statement that has some (`nullArguments`). */
  args: readonly unknown[] = [],
): StatementPlan {
  const explain = db.prepare(`EXPLAIN ${sql}`).raw(true);
  const program = explain.all(...args) as ExplainRow[];
  const functions = new Set<string>();
  const tables: TablesRead = new Map();
  const cursorTable = new Map<number, string>();
  let readsOutside = false;
  for (const [, opcode, p1, p2, p3, p4] of program) {
    if (opcode === "Column") {
      const table = cursorTable.get(p1);
      if (table !== undefined) tables.get(table)?.add(p2);
    } else if (ROWID_OPCODES.has(opcode)) {
      const table = cursorTable.get(p1);
      if (table !== undefined) tables.get(table)?.add(ROWID);
    } else if (opcode === "OpenRead" || opcode === "ReopenIdx") {
      // A database other than main (temp, attached): nothing keeps track of its rows.
      if (p3 !== 0) {
        readsOutside = true;
        continue;
      }
      const table = rootPages.get(p2);
      if (table === undefined) continue;
      cursorTable.set(p1, table);
      if (!tables.has(table)) tables.set(table, new Set());
    } else if (OUTSIDE_TABLES.has(opcode)) {
      readsOutside = true;
    } else if (opcode.includes("Func") && typeof p4 === "string") {
      const name = EXPLAINED_FUNCTION.exec(p4)?.[1];
      if (name !== undefined) functions.add(name.toLowerCase());
    }
  }
  return { readonly: explain.readonly, functions, tables, readsOutside };
}
