import type { Statement } from "@rocicorp/zero-sqlite3";
import { Socket } from "node:net";
import { Worker } from "node:worker_threads";
import { DirqError, isDirqError } from "../errors.js";
import { analyzeStatement } from "../query/statement-analysis.js";
import { type BoundArguments, decodeArguments } from "../query/parameters.js";
import { applyProfile, type ConnectionProfile } from "../connection/profile.js";
import type { WorkerFunctions } from "../functions/worker-functions.js";
import { openSqlite, type SqliteDatabase } from "../indexer/database.js";
import { createProgressReporter } from "../progress/reporter.js";
import { jsonChunks } from "../output/json.js";
import { monotonicMs } from "../shared/clock.js";
import type { AnswerFormat } from "./pooled-process.js";
import {
  type JsonStatement,
  firstAnswerJsRows,
  jsonFromSqlite,
  strictTableNames,
  wrapForJson,
} from "../output/sqlite-json.js";
import {
  AnswerKind,
  encodeFrame,
  FrameReader,
  frameHeader,
  NO_WORKER_CALLS,
  REAPED,
  RequestKind,
  RETIRING,
} from "./query-frames.js";
import { columnPlan, type SqlValue, type StatementRows } from "../query/execute.js";
import {
  type CompiledStatement,
  compileStatement,
  runCompiled,
  runInPasses,
} from "../query/run-statement.js";

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

/** A statement compiled here (see `query/run-statement.ts`) and what its answers taught. */
interface PreparedStatement extends CompiledStatement {
  /** It wrapped so SQLite writes the JSON (see sqlite-json.ts); `null`: it cannot be. */
  json?: JsonStatement | null;
  /** Answers given so far. */
  runs: number;
  /** Rows of its last answer written the JS way; -1: none yet. */
  lastRows: number;
}

/**
 * Prepared statements by SQL text, valid for one schema version: a statement prepared before
 * a column was added reports the old column list until it has run once.
 */
const statements = new Map<string, PreparedStatement>();
let statementsSchema = -1;
const STATEMENTS_KEPT = 500;
/** The STRICT tables of the schema `statements` were prepared for; read on first need. */
let strictTables: ReadonlySet<string> | null = null;
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

/**
 * `workersChecked`: the pool says the statement calls no worker function (the server read its
 * bytecode already), so its bytecode is not read again here.
 */
function statementFor(
  sql: string,
  workersChecked: boolean,
  args: BoundArguments | undefined,
): PreparedStatement {
  const { db, functions } = open();
  schemaVersion ??= db.prepare("PRAGMA schema_version").pluck();
  const schema = schemaVersion.get() as number;
  if (schema !== statementsSchema) {
    statements.clear();
    strictTables = null;
    statementsSchema = schema;
    // This connection still holds the old schema (a statement prepared now would report the
    // old column list); reading sqlite_master makes SQLite load the new one.
    db.prepare("SELECT 1 FROM sqlite_master LIMIT 1").get();
  }
  let prepared = statements.get(sql);
  if (prepared === undefined) {
    // Analyzed once per statement text and schema: the analysis stays with the statement.
    const analysis = analyzeStatement(sql);
    // A connection without worker functions needs no look for their calls.
    const compiled = compileStatement(db, functions, analysis, {
      lookForWorkers: !workersChecked && profile.functions.length > 0,
      parameters: args !== undefined,
    });
    prepared = { ...compiled, runs: 0, lastRows: -1 };
    if (statements.size >= STATEMENTS_KEPT) statements.clear();
    statements.set(sql, prepared);
  }
  return prepared;
}

interface QueryRequest {
  id: number;
  sql: string;
  format?: AnswerFormat;
  /** The pool vouches that it calls no worker function. */
  workersChecked: boolean;
  /** Values bound to its parameters (the SDK's statements only). */
  args?: BoundArguments;
}

class AnswerTooLarge extends Error {}

function limitText(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

/**
 * The answer: an aligned table or CSV (the REPL), or the JSON body within the size limit. Its
 * UTF-8 bytes are written once, into the frame; the server sends them to the socket as they are.
 */
function render(result: StatementRows, format: AnswerFormat | undefined): Answer | Promise<Answer> {
  // Loaded on demand: only the REPL asks for tables and CSV (and sets no answer limit).
  if (format === "table") {
    return import("../output/table.js").then(({ tableChunks }) =>
      renderText(tableChunks(result.columns, result.rows), "table"),
    );
  }
  if (format === "csv") {
    return import("../output/csv.js").then(({ csvChunks }) =>
      renderText(csvChunks(result.columns, result.rows), "CSV"),
    );
  }
  return renderJson(result);
}

/** A frame's length is a u32: the most one answer can hold. */
const MAX_FRAME_BYTES = 0xffff_ffff;

/** A table or CSV as the bytes of its chunks (it may be larger than the longest string). */
async function renderText(
  chunks: AsyncIterable<string> | Iterable<string>,
  what: "table" | "CSV",
): Promise<Buffer[]> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of chunks) {
    const part = Buffer.from(chunk, "utf8");
    size += part.length;
    if (size > MAX_FRAME_BYTES) {
      throw new DirqError(
        "ANSWER_TOO_LARGE",
        `the ${what} is larger than 4 GiB; narrow the query (WHERE, LIMIT, fewer columns) or run it with \`dirq query\``,
      );
    }
    parts.push(part);
  }
  return parts;
}

/** The JSON body within the size limit. */
function renderJson(result: StatementRows): string {
  const chunks: string[] = [];
  let size = 0;
  for (const chunk of jsonChunks(result.columns, result.rows)) {
    // Characters, an underestimate of bytes for non-ASCII text; exact enough for a limit.
    size += chunk.length;
    if (size > maxAnswerBytes) throw new AnswerTooLarge();
    chunks.push(chunk);
  }
  return chunks.length === 1 ? (chunks[0] as string) : chunks.join("");
}

/** Runs a prepared statement, its column plan worked out once. */
function execute(prepared: PreparedStatement, args: BoundArguments = []): StatementRows {
  return runCompiled(prepared, args);
}

/** The body's final newline, after an answer SQLite wrote. */
const NEWLINE = Buffer.from("\n");

/** A statement's first answer is written the JS way when it has at most this many rows. */
const FIRST_ANSWER_JS_ROWS = firstAnswerJsRows();

/**
 * The first answer of a statement the JS way, or `null` once it has more than
 * FIRST_ANSWER_JS_ROWS rows: SQLite then writes it (the rows read so far are dropped).
 */
function firstAnswerInJs(prepared: PreparedStatement): string | null {
  const { columns, rows } = execute(prepared);
  const taken: SqlValue[][] = [];
  const iterator = rows[Symbol.iterator]();
  for (let next = iterator.next(); next.done !== true; next = iterator.next()) {
    if (taken.length === FIRST_ANSWER_JS_ROWS) {
      // Stops the statement where it is: SQLite runs it anew for the wrapped form.
      iterator.return?.();
      return null;
    }
    taken.push(next.value);
  }
  prepared.lastRows = taken.length;
  return renderJson({ columns, rows: taken });
}

/**
 * The JSON answer's bytes as SQLite writes them, and the final newline, or `null` when it must
 * be written the JS way.
 */
function answerInSqlite(prepared: PreparedStatement): Buffer[] | null {
  const { statement } = prepared;
  if (!statement.reader) return null;
  prepared.plan ??= columnPlan(statement, prepared.analysis);
  if (prepared.json === undefined) {
    // Once per statement text: whole-number columns of STRICT tables, as path-tables are,
    // need no REAL or BLOB check (sqlite-json.ts).
    const { db } = open();
    strictTables ??= strictTableNames(db);
    prepared.json = wrapForJson(db, statement, prepared.analysis, prepared.plan, {
      strictTables,
      lastRows: prepared.lastRows,
    });
  }
  if (prepared.json === null) return null;
  const json = jsonFromSqlite(prepared.json, maxAnswerBytes, () => new AnswerTooLarge());
  return json === null ? null : [json, NEWLINE];
}

type Answer = string | Buffer[];

/**
 * A statement's answer: at once for a JSON answer, a promise for a table (its renderer loads
 * on demand) and for a statement with worker calls, which runs in passes (docs/extensions.md).
 */
function answer(request: QueryRequest): Answer | Promise<Answer> {
  const { format, args } = request;
  const prepared = statementFor(request.sql, request.workersChecked, args);
  if (prepared.workerCalls.length > 0) return answerInPasses(prepared, format, args);
  // Bound values: the JS way (SQLite's JSON wrapper would run the statement without them).
  if (args !== undefined) return renderJson(execute(prepared, args));
  const first = prepared.runs++ === 0;
  if (format === "table" || format === "csv") return render(execute(prepared), format);
  const small =
    first && FIRST_ANSWER_JS_ROWS > 0 && prepared.statement.reader
      ? firstAnswerInJs(prepared)
      : null;
  return small ?? answerInSqlite(prepared) ?? renderJson(execute(prepared));
}

async function answerInPasses(
  prepared: PreparedStatement,
  format: AnswerFormat | undefined,
  args: BoundArguments = [],
): Promise<Answer> {
  const rendered = await runInPasses(prepared, open().functions, progress, args, (rows) =>
    render(rows, format),
  );
  return (await rendered) ?? "";
}

/** The answer a request kind asks for (JSON unless named here). */
const ANSWER_FORMATS = new Map<number, AnswerFormat>([
  [RequestKind.Table, "table"],
  [RequestKind.Csv, "csv"],
]);

const channel = new Socket({ fd: 3, readable: true, writable: true });
const reader = new FrameReader();
/** Statements received and not yet started, in order. */
const queue: QueryRequest[] = [];
let serving = false;
/** After a large answer: every answer says so, and the process leaves once the pool lets go. */
let retiring = false;
/** The pool closed its end: leave once the statement in hand is answered. */
let ended = false;

/** A payload: text, or bytes in parts that go out as they are. */
function send(id: number, kind: number, payload: string | readonly Uint8Array[]): void {
  const flags = retiring ? RETIRING : 0;
  if (typeof payload === "string") {
    channel.write(encodeFrame(id, kind, payload, flags));
    return;
  }
  // After their header, in one writev: no copy into a frame.
  const length = payload.reduce((total, part) => total + part.length, 0);
  channel.cork();
  channel.write(frameHeader(id, kind, length, flags));
  for (const part of payload) channel.write(part);
  channel.uncork();
}

function sendAnswer(id: number, body: Answer): void {
  // Characters of a string: at most its bytes, exact enough here.
  const size =
    typeof body === "string" ? body.length : body.reduce((total, part) => total + part.length, 0);
  if (size > RETIRE_AFTER_BYTES) retiring = true;
  send(id, AnswerKind.Body, body);
}

function sendFailure(id: number, error: unknown): void {
  if (error instanceof AnswerTooLarge) {
    retiring = true;
    const message = `the answer is larger than the server's limit of ${limitText(maxAnswerBytes)}; narrow the query (WHERE, LIMIT, fewer columns) or run it with the dirq CLI`;
    send(id, AnswerKind.Error, JSON.stringify({ message, user: true, tooLarge: true }));
    return;
  }
  const message = error instanceof Error ? error.message : String(error);
  send(id, AnswerKind.Error, JSON.stringify({ message, user: isDirqError(error) }));
}

/** Answers a statement; a promise only when its answer takes one (see `answer`). */
function serve(request: QueryRequest): Promise<void> | null {
  let body: Answer | Promise<Answer>;
  try {
    body = answer(request);
  } catch (error) {
    sendFailure(request.id, error);
    return null;
  }
  if (!(body instanceof Promise)) {
    sendAnswer(request.id, body);
    return null;
  }
  return body.then(
    (settled) => sendAnswer(request.id, settled),
    (error: unknown) => sendFailure(request.id, error),
  );
}

let firstAnswerListener: (() => void) | null = null;

/**
 * Calls `listener` once, on a turn of the event loop after this process has answered its first
 * statements. The npm launcher, which runs this program from the CLI's bundle (bin/dirq.cjs),
 * writes its V8 code cache then: a cache written at the start would hold only the start's code,
 * and one written at exit is never written, since a query process usually ends by `SIGKILL`.
 */
export function afterFirstAnswer(listener: () => void): void {
  firstAnswerListener = listener;
}

function leave(): void {
  connection?.functions.close();
  process.exit(0);
}

/**
 * How long a process answers queued statements in a row before the event loop reads the
 * channel again: their answers go out together, in one write when the batch ends.
 */
const BATCH_MS = 1;

/**
 * Statements run one at a time, in the order they came. Quick ones are answered in a row and
 * their answers written together (one write per answer is a large part of a process's CPU for
 * statements it has not seen);
 * once a batch has taken BATCH_MS, the event loop reads the channel, so a cancel for a
 * statement still queued is seen before it would start.
 */
function serveNext(): void {
  if (serving) return;
  serving = true;
  const started = monotonicMs();
  let waiting: Promise<void> | null = null;
  channel.cork();
  try {
    for (let request = queue.shift(); request !== undefined; request = queue.shift()) {
      waiting = serve(request);
      if (waiting !== null || monotonicMs() - started >= BATCH_MS) break;
    }
  } finally {
    channel.uncork();
  }
  const next = () => {
    serving = false;
    if (firstAnswerListener !== null) {
      setImmediate(firstAnswerListener);
      firstAnswerListener = null;
    }
    if (queue.length > 0) setImmediate(serveNext);
    else if (ended) leave();
  };
  if (waiting === null) next();
  else void waiting.finally(next);
}

channel.on("data", (chunk: Buffer) => {
  for (const frame of reader.push(chunk)) {
    if (frame.kind === RequestKind.Cancel) {
      const at = queue.findIndex((request) => request.id === frame.id);
      if (at !== -1) queue.splice(at, 1);
      continue;
    }
    const format = ANSWER_FORMATS.get(frame.kind) ?? "json";
    const workersChecked = (frame.flags & NO_WORKER_CALLS) !== 0;
    const text = frame.payload.toString("utf8");
    if (frame.kind === RequestKind.JsonBound) {
      const split = text.indexOf("\n");
      const args = decodeArguments(text.slice(0, split));
      queue.push({ id: frame.id, sql: text.slice(split + 1), format, workersChecked, args });
      continue;
    }
    queue.push({ id: frame.id, sql: text, format, workersChecked });
  }
  serveNext();
});
// The pool ended the channel (this process retires), or the server went away.
channel.on("end", () => {
  ended = true;
  if (!serving) leave();
});
channel.on("error", () => leave());
// The pool sends statements only to a process that has said it is up.
channel.write(encodeFrame(0, AnswerKind.Ready));

// The pool decides when query processes end (a Ctrl-C reaches the whole process group, and
// in-flight queries must still finish while the server drains): ignore the signals.
process.on("SIGINT", () => {});
process.on("SIGTERM", () => {});

// The channel's end cannot be seen while a statement runs (SQLite holds this thread). When the
// parent has a reaper, the reaper ends this process's group once the parent is gone, even after
// `kill -9` (the group: its worker-function processes go with it). Otherwise a watchdog thread
// notices it and does the same.
if (process.argv[5] !== REAPED) watchParent();

function watchParent(): void {
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
}
