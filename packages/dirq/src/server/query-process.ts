import type { Statement } from "better-sqlite3";
import { isDirqError } from "../errors.js";
import { applyProfile, type ConnectionProfile, functionsCalledBy } from "../connection/profile.js";
import type { WorkerFunctions, WorkerSpec } from "../functions/worker-functions.js";
import { openSqlite, type SqliteDatabase } from "../indexer/database.js";
import { createProgressReporter } from "../progress/reporter.js";
import { jsonChunks } from "../output/json.js";
import { executeStatement, sqlError } from "../query/execute.js";

/**
 * A query process of the server: reads the shared index (WAL) and runs statements the server
 * has already checked and prepared. A process, not a thread, so a runaway statement can be
 * killed: SQLite here has no interrupt, and a blocked worker thread cannot be terminated.
 */
const databasePath = process.argv[2] as string;
/** The index's extensions and worker functions: the same profile as the server's connection. */
const profile = JSON.parse(
  process.argv[3] ?? '{"extensions":[],"functions":[]}',
) as ConnectionProfile;
let connection: { db: SqliteDatabase; functions: WorkerFunctions } | null = null;
const progress = createProgressReporter(process.stderr);

interface PreparedStatement {
  statement: Statement;
  /** The worker-backed functions it calls (then it runs in passes). */
  workerCalls: WorkerSpec[];
}

/** Prepared statements by SQL text: SQLite re-prepares one itself when the schema changes. */
const statements = new Map<string, PreparedStatement>();
const STATEMENTS_KEPT = 500;

function open(): { db: SqliteDatabase; functions: WorkerFunctions } {
  if (connection === null) {
    const db = openSqlite(databasePath, { readonly: true });
    // Workers share this process's group: the server kills the group on a timeout.
    connection = { db, functions: applyProfile(db, profile, { sharedGroup: true }) };
  }
  return connection;
}

function statementFor(sql: string): PreparedStatement {
  const { db, functions } = open();
  let prepared = statements.get(sql);
  if (prepared === undefined) {
    try {
      const statement = db.prepare(sql);
      prepared = { statement, workerCalls: functions.calledIn(functionsCalledBy(db, sql)) };
    } catch (error) {
      throw sqlError(error);
    }
    if (statements.size >= STATEMENTS_KEPT) statements.clear();
    statements.set(sql, prepared);
  }
  return prepared;
}

/** The JSON body of a statement's answer; one with worker calls runs in passes. */
async function answer(sql: string): Promise<string> {
  const { statement, workerCalls } = statementFor(sql);
  const body = () => {
    const { columns, rows } = executeStatement(statement, sql);
    return Array.from(jsonChunks(columns, rows)).join("");
  };
  if (workerCalls.length === 0) return body();
  return open().functions.run(
    (pending) => {
      const { columns, rows } = executeStatement(statement, sql);
      // Rows of a pass with unanswered calls are thrown away: read them without keeping them.
      const kept = [];
      for (const row of rows) if (!pending()) kept.push(row);
      return pending() ? "" : Array.from(jsonChunks(columns, kept)).join("");
    },
    progress,
    workerCalls,
  );
}

interface QueryRequest {
  id: number;
  sql: string;
}

process.on("message", async (request: QueryRequest) => {
  try {
    process.send?.({ id: request.id, body: await answer(request.sql) });
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
process.on("disconnect", () => {
  connection?.functions.close();
  process.exit(0);
});
