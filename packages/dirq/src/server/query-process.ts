import type { Statement } from "better-sqlite3";
import { Worker } from "node:worker_threads";
import { isDirqError } from "../errors.js";
import { applyProfile, type ConnectionProfile, functionsCalledBy } from "../connection/profile.js";
import type { WorkerFunctions, WorkerSpec } from "../functions/worker-functions.js";
import { openSqlite, type SqliteDatabase } from "../indexer/database.js";
import { createProgressReporter } from "../progress/reporter.js";
import { jsonChunks } from "../output/json.js";
import type { AnswerFormat } from "./query-pool.js";
import { jsonFromSqlite, wrapForJson } from "./sqlite-json.js";
import {
  type ColumnPlan,
  columnPlan,
  executeStatement,
  sqlError,
  type StatementRows,
} from "../query/execute.js";

/**
 * A query process of the server (and the REPL): reads the shared index (WAL) and runs
 * statements already checked and prepared. A process, not a thread, so a runaway statement
 * can be killed: SQLite here has no interrupt, and a blocked worker thread cannot be
 * terminated.
 */
const databasePath = process.argv[2] as string;
const maxAnswerBytes = Number(process.argv[3] ?? Number.MAX_SAFE_INTEGER);
/** The index's extensions and worker functions: the same profile as the index's connection. */
const profile = JSON.parse(
  process.argv[4] ?? '{"extensions":[],"functions":[]}',
) as ConnectionProfile;
let connection: { db: SqliteDatabase; functions: WorkerFunctions } | null = null;
const progress = createProgressReporter(process.stderr);

/**
 * An answer larger than this leaves the process behind it: the heap it grew is only given
 * back to the system when the process ends.
 */
const RETIRE_AFTER_BYTES = 16 * 1024 * 1024;

interface PreparedStatement {
  statement: Statement;
  /** Its shown columns, worked out on the first run (a reader statement only). */
  plan?: ColumnPlan;
  /** It wrapped so SQLite writes the JSON (see sqlite-json.ts); `null`: it cannot be. */
  json?: Statement | null;
  /** The worker-backed functions it calls (then it runs in passes). */
  workerCalls: WorkerSpec[];
}

/**
 * Prepared statements by SQL text, valid for one schema version: a statement prepared before
 * a column was added reports the old column list until it has run once.
 */
const statements = new Map<string, PreparedStatement>();
let statementsSchema = -1;
const STATEMENTS_KEPT = 500;
/** `PRAGMA schema_version`, prepared once: it is asked before every statement. */
let schemaVersion: Statement | null = null;

function open(): { db: SqliteDatabase; functions: WorkerFunctions } {
  if (connection === null) {
    const db = openSqlite(databasePath, { readonly: true });
    // Workers share this process's group: the pool kills the group on a timeout.
    connection = { db, functions: applyProfile(db, profile, { sharedGroup: true }) };
  }
  return connection;
}

function statementFor(sql: string): PreparedStatement {
  const { db, functions } = open();
  schemaVersion ??= db.prepare("PRAGMA schema_version").pluck();
  const schema = schemaVersion.get() as number;
  if (schema !== statementsSchema) {
    statements.clear();
    statementsSchema = schema;
    // This connection still holds the old schema (a statement prepared now would report the
    // old column list); reading sqlite_master makes SQLite load the new one.
    db.prepare("SELECT 1 FROM sqlite_master LIMIT 1").get();
  }
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

interface QueryRequest {
  id: number;
  sql: string;
  format?: AnswerFormat;
}

class AnswerTooLarge extends Error {}

function limitText(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

/**
 * The answer: an aligned table (the REPL) as text, or the JSON body as UTF-8 bytes, within the
 * size limit. Bytes, so the server writes them to the socket as they are: encoded once, here.
 */
async function render(
  result: StatementRows,
  format: AnswerFormat | undefined,
): Promise<string | Uint8Array> {
  if (format === "table") {
    // Loaded on demand: only the REPL asks for tables (and sets no answer limit).
    return (await import("../output/table.js")).renderTable(result.columns, result.rows);
  }
  const chunks: string[] = [];
  let size = 0;
  for (const chunk of jsonChunks(result.columns, result.rows)) {
    // Characters, an underestimate of bytes for non-ASCII text; exact enough for a limit.
    size += chunk.length;
    if (size > maxAnswerBytes) throw new AnswerTooLarge();
    chunks.push(chunk);
  }
  return Buffer.from(chunks.length === 1 ? (chunks[0] as string) : chunks.join(""), "utf8");
}

/** Runs a prepared statement, its column plan worked out once. */
function execute(prepared: PreparedStatement, sql: string): StatementRows {
  const { statement } = prepared;
  if (statement.reader) {
    prepared.plan ??= columnPlan(statement, sql);
  }
  return executeStatement(statement, sql, prepared.plan);
}

/** The JSON answer as SQLite writes it, or `null` when it must be written the JS way. */
function answerInSqlite(prepared: PreparedStatement, sql: string): Uint8Array | null {
  const { statement } = prepared;
  if (!statement.reader) return null;
  prepared.plan ??= columnPlan(statement, sql);
  if (prepared.json === undefined) {
    prepared.json = wrapForJson(open().db, statement, sql, prepared.plan);
  }
  if (prepared.json === null) return null;
  let text: string | null;
  try {
    text = jsonFromSqlite(prepared.json, maxAnswerBytes, () => new AnswerTooLarge());
  } catch (error) {
    throw sqlError(error);
  }
  return text === null ? null : Buffer.from(text, "utf8");
}

/** A statement's answer; one with worker calls runs in passes (docs/extensions.md). */
async function answer(sql: string, format: AnswerFormat | undefined): Promise<string | Uint8Array> {
  const prepared = statementFor(sql);
  const { workerCalls } = prepared;
  if (workerCalls.length === 0) {
    const fromSqlite = format === "table" ? null : answerInSqlite(prepared, sql);
    return fromSqlite ?? render(execute(prepared, sql), format);
  }
  const rendered = await open().functions.run(
    (pending) => {
      const { columns, rows } = execute(prepared, sql);
      // Rows of a pass with unanswered calls are thrown away: read them without keeping them.
      const kept = [];
      for (const row of rows) if (!pending()) kept.push(row);
      return pending() ? null : render({ columns, rows: kept }, format);
    },
    progress,
    workerCalls,
  );
  return (await rendered) ?? "";
}

process.on("message", async (request: QueryRequest) => {
  let size = 0;
  try {
    const body = await answer(request.sql, request.format);
    size = body.length;
    reply({ id: request.id, body }, size);
  } catch (error) {
    if (error instanceof AnswerTooLarge) {
      const message = `the answer is larger than the server's limit of ${limitText(maxAnswerBytes)}; narrow the query (WHERE, LIMIT, fewer columns) or run it with the dirq CLI`;
      reply({ id: request.id, error: message, user: true, tooLarge: true }, maxAnswerBytes);
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

// The pool decides when query processes end (a Ctrl-C reaches the whole process group, and
// in-flight queries must still finish while the server drains): ignore the signals, and leave
// when the parent goes away.
process.on("SIGINT", () => {});
process.on("SIGTERM", () => {});
process.on("disconnect", () => {
  connection?.functions.close();
  process.exit(0);
});

// `disconnect` cannot fire while a statement runs (SQLite holds this thread). A watchdog
// thread notices when the parent is gone, even after `kill -9`, and ends this process's
// group (it leads one: its worker-function processes go with it).
const watchdog = new Worker(
  `const { workerData } = require("node:worker_threads");
   setInterval(() => {
     if (process.ppid === workerData.parent) return;
     try { process.kill(-process.pid, "SIGKILL"); } catch {}
     process.kill(process.pid, "SIGKILL");
   }, 250);`,
  { eval: true, workerData: { parent: process.ppid } },
);
watchdog.unref();
