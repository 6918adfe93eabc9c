import type { Statement } from "better-sqlite3";
import { isDirqError } from "../errors.js";
import { openSqlite, type SqliteDatabase } from "../indexer/database.js";
import { jsonChunks } from "../output/json.js";
import type { AnswerFormat } from "./query-pool.js";
import { executeStatement, sqlError } from "../query/execute.js";

/**
 * A query process of the server: reads the shared index (WAL) and runs statements the server
 * has already checked and prepared. A process, not a thread, so a runaway statement can be
 * killed: SQLite here has no interrupt, and a blocked worker thread cannot be terminated.
 */
const databasePath = process.argv[2] as string;
let db: SqliteDatabase | null = null;

/** Prepared statements by SQL text: SQLite re-prepares one itself when the schema changes. */
const statements = new Map<string, Statement>();
const STATEMENTS_KEPT = 500;

function statementFor(sql: string): Statement {
  db ??= openSqlite(databasePath, { readonly: true });
  let statement = statements.get(sql);
  if (statement === undefined) {
    try {
      statement = db.prepare(sql);
    } catch (error) {
      throw sqlError(error);
    }
    if (statements.size >= STATEMENTS_KEPT) statements.clear();
    statements.set(sql, statement);
  }
  return statement;
}

interface QueryRequest {
  id: number;
  sql: string;
  format?: AnswerFormat;
}

process.on("message", async (request: QueryRequest) => {
  try {
    const { columns, rows } = executeStatement(statementFor(request.sql), request.sql);
    const body =
      request.format === "table"
        ? // Loaded on demand: only the REPL asks for tables.
          (await import("../output/table.js")).renderTable(columns, rows)
        : Array.from(jsonChunks(columns, rows)).join("");
    process.send?.({ id: request.id, body });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.send?.({ id: request.id, error: message, user: isDirqError(error) });
  }
});

// The server decides when query processes end (a Ctrl-C reaches the whole process group, and
// in-flight queries must still finish while the server drains): ignore the signals, and leave
// when the server goes away.
process.on("SIGINT", () => {});
process.on("SIGTERM", () => {});
process.on("disconnect", () => process.exit(0));
