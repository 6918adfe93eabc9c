import type { Statement } from "better-sqlite3";
import { Worker } from "node:worker_threads";
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
const maxAnswerBytes = Number(process.argv[3] ?? Number.MAX_SAFE_INTEGER);
let db: SqliteDatabase | null = null;

/**
 * An answer larger than this leaves the process behind it: the heap it grew is only given
 * back to the system when the process ends.
 */
const RETIRE_AFTER_BYTES = 16 * 1024 * 1024;

/**
 * Prepared statements by SQL text, valid for one schema version: a statement prepared before
 * a column was added reports the old column list until it has run once.
 */
const statements = new Map<string, Statement>();
let statementsSchema = -1;
const STATEMENTS_KEPT = 500;

function statementFor(sql: string): Statement {
  db ??= openSqlite(databasePath, { readonly: true });
  const schema = db.pragma("schema_version", { simple: true }) as number;
  if (schema !== statementsSchema) {
    statements.clear();
    statementsSchema = schema;
    // This connection still holds the old schema (a statement prepared now would report the
    // old column list); reading sqlite_master makes SQLite load the new one.
    db.prepare("SELECT 1 FROM sqlite_master LIMIT 1").get();
  }
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

class AnswerTooLarge extends Error {}

function limitText(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

process.on("message", async (request: QueryRequest) => {
  let size = 0;
  try {
    const { columns, rows } = executeStatement(statementFor(request.sql), request.sql);
    if (request.format === "table") {
      // Loaded on demand: only the REPL asks for tables (and sets no answer limit).
      const body = (await import("../output/table.js")).renderTable(columns, rows);
      reply({ id: request.id, body }, body.length);
      return;
    }
    const chunks: string[] = [];
    for (const chunk of jsonChunks(columns, rows)) {
      // Characters, an underestimate of bytes for non-ASCII text; exact enough for a limit.
      size += chunk.length;
      if (size > maxAnswerBytes) throw new AnswerTooLarge();
      chunks.push(chunk);
    }
    const body = chunks.join("");
    chunks.length = 0;
    reply({ id: request.id, body }, size);
  } catch (error) {
    if (error instanceof AnswerTooLarge) {
      const message = `the answer is larger than the server's limit of ${limitText(maxAnswerBytes)}; narrow the query (WHERE, LIMIT, fewer columns) or run it with the dirq CLI`;
      reply({ id: request.id, error: message, user: true, tooLarge: true }, size);
      return;
    }
    const message = error instanceof Error ? error.message : String(error);
    reply({ id: request.id, error: message, user: isDirqError(error) }, size);
  }
});

function reply(message: Record<string, unknown>, size: number): void {
  const retiring = size > RETIRE_AFTER_BYTES;
  process.send?.({ ...message, retiring }, undefined, undefined, () => {
    if (retiring) process.exit(0);
  });
}

// The server decides when query processes end (a Ctrl-C reaches the whole process group, and
// in-flight queries must still finish while the server drains): ignore the signals, and leave
// when the server goes away.
process.on("SIGINT", () => {});
process.on("SIGTERM", () => {});
process.on("disconnect", () => process.exit(0));

// `disconnect` cannot fire while a statement runs (SQLite holds this thread). A watchdog
// thread notices when the server is gone, even after `kill -9`, and ends this process.
const watchdog = new Worker(
  `const { workerData } = require("node:worker_threads");
   setInterval(() => {
     if (process.ppid !== workerData.parent) process.kill(process.pid, "SIGKILL");
   }, 250);`,
  { eval: true, workerData: { parent: process.ppid } },
);
watchdog.unref();
