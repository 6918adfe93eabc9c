import { isDirqError } from "../errors.js";
import { openSqlite, type SqliteDatabase } from "../indexer/database.js";
import { jsonChunks } from "../output/json.js";
import { executeSql } from "../query/execute.js";

/**
 * A query process of the server: reads the shared index (WAL) and runs statements the server
 * has already checked and prepared. A process, not a thread, so a runaway statement can be
 * killed: SQLite here has no interrupt, and a blocked worker thread cannot be terminated.
 */
const databasePath = process.argv[2] as string;
let db: SqliteDatabase | null = null;

interface QueryRequest {
  id: number;
  sql: string;
}

process.on("message", (request: QueryRequest) => {
  try {
    db ??= openSqlite(databasePath, { readonly: true });
    const { columns, rows } = executeSql(db, request.sql);
    const body = Array.from(jsonChunks(columns, rows)).join("");
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
