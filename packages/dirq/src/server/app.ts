import { setMaxListeners } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { DirqError, type DirqErrorCode, isDirqError } from "../errors.js";
import { isConsolePath, serveConsole } from "./console.js";
import type { EventHub } from "./event-hub.js";
import type { LiveQueryRequest, LiveSubscription } from "../live/live-queries.js";
import {
  BodyTooLargeError,
  EventStreamResponse,
  readBody,
  refuseBody,
  sendJson,
  sendText,
} from "./http-helpers.js";

/** What the HTTP layer needs from the rest of the server. */
export interface ServerState {
  /** Resolves once the server has built its index (or knows it is degraded). */
  ready: Promise<void>;
  /** The `failed to load config: ...` diagnostic when degraded, else `null`. */
  degraded(): string | null;
  /**
   * Runs one statement that arrived at `arrival` (ms since the epoch; the timeout counts from
   * there); resolves with the JSON body (UTF-8 bytes from the query process, sent as they
   * are); rejects with a DirqError for the user. `signal` aborts when the client goes away:
   * the statement is stopped.
   */
  query: (sql: string, arrival: number, signal: AbortSignal) => Promise<string | Uint8Array>;
  /** The names of a statement's result columns, in order and with repeats (`"columns": true`). */
  resultColumns: (sql: string) => Promise<string[]>;
  /** Whether a Host header names this server (a loopback name or the bound address). */
  allowsHost: (host: string | undefined) => boolean;
  events: EventHub;
  /**
   * Subscribes to a live query, after the frame `lastEventId` names when it can; rejects with
   * a DirqError for the user (a statement that cannot run, a key not in its answer).
   */
  openLive: (
    request: LiveQueryRequest,
    lastEventId: string | undefined,
  ) => Promise<LiveSubscription>;
  /**
   * `GET /live/stats`: the running live queries and what each cost so far; `undefined` (the
   * route is not there) unless the server was started with `DIRQ_LIVE_STATS=1`.
   */
  liveStats?: () => unknown;
  /** Logs an internal fault (its details never reach the client). */
  logFault: (error: unknown) => void;
}

/** Request bodies beyond this are refused with 413. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** A comment line on idle event streams at least this often. */
export const KEEP_ALIVE_MS = 15_000;

/** `DIRQ_KEEP_ALIVE_MS` shortens the keep-alive interval (tests use it); default 15 s. */
function keepAliveMs(): number {
  const fromEnv = Number(process.env.DIRQ_KEEP_ALIVE_MS);
  return Number.isSafeInteger(fromEnv) && fromEnv > 0 ? fromEnv : KEEP_ALIVE_MS;
}

/** The one table that maps core error codes to HTTP statuses; other DirqErrors are 400. */
const STATUS_BY_CODE: Partial<Record<DirqErrorCode, number>> = {
  QUERY_TIMEOUT: 408,
  ANSWER_TOO_LARGE: 413,
  SERVER_DEGRADED: 503,
  SERVER_STOPPING: 503,
  // Only at shutdown: a table still filling when the index closes.
  INDEX_CLOSED: 503,
};

function cancelledByClient(): DirqError {
  return new DirqError("QUERY_CANCELLED", "the client went away before the answer");
}

/** Aborted when its connection closes, for every statement of the connection's requests. */
const connectionGone = new WeakMap<Socket, AbortSignal>();

/**
 * The signal that the client of a connection went away. One per connection, not per request:
 * an AbortController, a close listener and an abort listener per request are a noticeable part
 * of the server's CPU per statement it has not seen (the pool adds one listener per signal).
 */
function goneSignal(socket: Socket): AbortSignal {
  let signal = connectionGone.get(socket);
  if (signal === undefined) {
    const gone = new AbortController();
    // Pipelined requests of one connection may all wait for their tables at once.
    setMaxListeners(0, gone.signal);
    socket.once("close", () => gone.abort(cancelledByClient()));
    signal = gone.signal;
    connectionGone.set(socket, signal);
  }
  return signal;
}

function errorBody(message: string): string {
  return JSON.stringify({ error: message });
}

/** What a `POST /query` body asks: the statement, and whether to name the columns apart. */
interface QueryRequest {
  sql: string;
  /** `"columns": true`: answer `{"columns": [...], "rows": [...]}` (docs/http.md). */
  withColumns: boolean;
}

function requestOf(body: string): QueryRequest | { problem: string } {
  let request: unknown;
  try {
    request = JSON.parse(body);
  } catch (error) {
    return { problem: `request body is not valid JSON: ${(error as Error).message}` };
  }
  const { sql, columns } = (request ?? {}) as { sql?: unknown; columns?: unknown };
  if (typeof sql !== "string" || sql.trim() === "") {
    const why =
      sql === undefined ? "is missing" : typeof sql !== "string" ? "must be a string" : "is empty";
    return { problem: `"sql" ${why}: send {"sql": "<one read-only statement>"}` };
  }
  if (columns !== undefined && typeof columns !== "boolean") {
    return {
      problem: `"columns" must be true or false (got ${JSON.stringify(columns) ?? typeof columns}): true answers {"columns": [...], "rows": [...]}`,
    };
  }
  return { sql, withColumns: columns === true };
}

const COLUMNS_OPEN = Buffer.from('{"columns":');
const ROWS_KEY = Buffer.from(',"rows":');
const OBJECT_CLOSE = Buffer.from("}\n");

/**
 * `{"columns": [...], "rows": <the rows as they are>}`: the rows' bytes are the same as
 * without `"columns"` (their final newline moves after the closing brace).
 */
function withColumnNames(columns: readonly string[], rows: string | Uint8Array): Buffer {
  const bytes = typeof rows === "string" ? Buffer.from(rows) : rows;
  const end = bytes[bytes.length - 1] === 0x0a ? bytes.length - 1 : bytes.length;
  return Buffer.concat([
    COLUMNS_OPEN,
    Buffer.from(JSON.stringify(columns)),
    ROWS_KEY,
    bytes.subarray(0, end),
    OBJECT_CLOSE,
  ]);
}

/** `application/json`, with or without parameters (`; charset=utf-8`). */
function isJsonContentType(value: string | undefined): boolean {
  return (value ?? "").split(";")[0]?.trim().toLowerCase() === "application/json";
}

async function handleQuery(
  state: ServerState,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const arrival = Date.now();
  if (!isJsonContentType(request.headers["content-type"])) {
    // A form or text/plain post is what a cross-site page can send without asking.
    response.setHeader("connection", "close");
    const message = `POST /query needs Content-Type: application/json (got ${JSON.stringify(request.headers["content-type"] ?? "none")})`;
    return refuseBody(request, response, 415, errorBody(message));
  }
  let body: string;
  try {
    body = await readBody(request, MAX_BODY_BYTES);
  } catch (error) {
    if (error instanceof BodyTooLargeError) {
      return refuseBody(request, response, 413, errorBody(error.message));
    }
    // The client went away (or timed out) mid-body: nobody is left to answer.
    if (!request.complete) return void response.destroy();
    throw error;
  }
  await state.ready;
  const degraded = state.degraded();
  if (degraded !== null) return sendJson(response, 503, errorBody(degraded));
  const parsed = requestOf(body);
  if ("problem" in parsed) return sendJson(response, 400, errorBody(parsed.problem));
  // It may have left while the start-up build was awaited: nobody is left to answer.
  if (request.socket.destroyed) return;
  // Nobody reads the answer of a client that goes away (a console re-running a statement
  // cancels the previous run): its statement stops, and its query process with it. The
  // socket's close, not the response's: a pipelined request's response has no socket yet.
  const gone = goneSignal(request.socket);
  try {
    const rows = await state.query(parsed.sql, arrival, gone);
    if (!parsed.withColumns) return sendJson(response, 200, rows);
    // Asked after the rows, so that a failing statement answers as it does without "columns".
    const columns = await state.resultColumns(parsed.sql);
    if (gone.aborted) return;
    sendJson(response, 200, withColumnNames(columns, rows));
  } catch (error) {
    if (gone.aborted) return;
    if (!isDirqError(error)) throw error;
    sendJson(response, STATUS_BY_CODE[error.code] ?? 400, errorBody(error.message));
  }
}

/**
 * Where a client continues: the `Last-Event-ID` header (an EventSource sends it when it
 * reconnects, so it is newer than the address it was opened with), else `?last_event_id=`.
 */
function lastEventIdOf(request: IncomingMessage): string | undefined {
  const header = request.headers["last-event-id"];
  if (typeof header === "string") return header.trim();
  const query = (request.url ?? "").split("?")[1];
  if (query === undefined) return undefined;
  return new URLSearchParams(query).get("last_event_id")?.trim() ?? undefined;
}

/** A frame of an event stream, or (`encoded` alone) frames as the bytes they are sent as. */
type StreamFrame =
  | { event: string; data: string | readonly Buffer[]; id: string; encoded?: Buffer }
  | { event: string; id: string; encoded: Buffer };

/** What an event stream sends: frames as they come, a keep-alive comment when idle. */
interface FrameSource {
  /** The next frame, `null` after `idleMs` without one, `undefined` at the end. */
  next(idleMs: number): Promise<StreamFrame | null | undefined>;
  /**
   * The next frame if one is there now, else `null`, without waiting: a source that has it
   * is sent on a `held` stream, whose frames go out together once none is left.
   */
  poll?(): StreamFrame | null;
  close(): void;
}

/**
 * Frames a stream sends before it lets other work run: while its client reads as fast as it
 * is written, a backlog of a large commit's frames would otherwise go out in one unbroken
 * chain of promises, and statements would wait for all of it.
 */
const FRAMES_PER_TURN = 256;
/** Bytes of frames a stream sends before it lets other work run: a run of frames is many. */
const BYTES_PER_TURN = 256 * 1024;

/** Sends a subscription's frames until it or the client ends, then ends the stream. */
async function sendFrames(stream: EventStreamResponse, subscription: FrameSource): Promise<void> {
  const keepAlive = keepAliveMs();
  let sent = 0;
  let bytes = 0;
  for (;;) {
    let frame: StreamFrame | null | undefined = subscription.poll?.() ?? null;
    if (frame === null) {
      // Nothing more is ready: what a held stream gathered goes out in one write, now.
      const full = stream.flushHeld();
      if (full !== undefined) await full;
      frame = await subscription.next(keepAlive);
    }
    if (frame === undefined || stream.closed) break;
    if (frame === null) await stream.comment("keep-alive");
    else if ("data" in frame && frame.encoded === undefined) {
      await stream.send(frame.event, frame.data, frame.id);
    } else {
      // Not a frame of data alone: its bytes are there.
      const encoded = frame.encoded as Buffer;
      bytes += encoded.length;
      const full = stream.sendEncoded(encoded);
      if (full !== undefined) await full;
    }
    if (++sent === FRAMES_PER_TURN || bytes >= BYTES_PER_TURN) {
      sent = 0;
      bytes = 0;
      const full = stream.flushHeld();
      if (full !== undefined) await full;
      await new Promise(setImmediate);
    }
  }
  subscription.close();
  stream.end();
}

async function handleEvents(
  state: ServerState,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  await state.ready;
  const degraded = state.degraded();
  if (degraded !== null) return sendJson(response, 503, errorBody(degraded));
  const stream = new EventStreamResponse(response);
  const { subscription, start } = state.events.subscribe(lastEventIdOf(request));
  response.once("close", () => subscription.close());
  // A client that reads is never cut off; one whose socket takes nothing is (docs/http.md).
  subscription.watchSocket(() => response.writableLength);
  if ("readyId" in start) {
    await stream.send("ready", "{}", start.readyId);
  } else {
    await stream.send("ready", "{}");
    await stream.send("reset", "{}", start.resetId);
  }
  await sendFrames(stream, subscription);
}

/** What `GET /live?sql=...&params=...&key=...` asks for, or what is wrong with it. */
export function liveRequestOf(url: string): LiveQueryRequest | { problem: string } {
  const query = new URLSearchParams(url.split("?")[1] ?? "");
  const sql = query.get("sql");
  if (sql === null || sql.trim() === "") {
    return {
      problem: `"sql" ${sql === null ? "is missing" : "is empty"}: send GET /live?sql=<one read-only statement>`,
    };
  }
  const request: LiveQueryRequest = { sql };
  const params = query.get("params");
  if (params !== null) {
    let values: unknown;
    try {
      values = JSON.parse(params);
    } catch (error) {
      return {
        problem: `"params" is not valid JSON: ${(error as Error).message}; send a JSON array (or object) of values`,
      };
    }
    if (values === null || typeof values !== "object") {
      return {
        problem: `"params" must be a JSON array of values (or an object for named parameters), got ${params}`,
      };
    }
    request.params = values as LiveQueryRequest["params"];
  }
  const key = query.get("key");
  if (key !== null) {
    const columns = key.split(",").map((column) => column.trim());
    if (columns.some((column) => column === "")) {
      return {
        problem: `"key" must be one or more column names separated by commas, got ${JSON.stringify(key)}`,
      };
    }
    request.key = columns;
  }
  return request;
}

async function handleLive(
  state: ServerState,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  await state.ready;
  const degraded = state.degraded();
  if (degraded !== null) return sendJson(response, 503, errorBody(degraded));
  const parsed = liveRequestOf(request.url ?? "");
  if ("problem" in parsed) return sendJson(response, 400, errorBody(parsed.problem));
  let subscription: LiveSubscription;
  try {
    subscription = await state.openLive(parsed, lastEventIdOf(request));
  } catch (error) {
    if (!isDirqError(error)) throw error;
    return sendJson(response, STATUS_BY_CODE[error.code] ?? 400, errorBody(error.message));
  }
  if (request.socket.destroyed) return subscription.close();
  const stream = new EventStreamResponse(response, true);
  response.once("close", () => subscription.close());
  await sendFrames(stream, subscription);
}

/** Routes and the method each allows. */
const ROUTES: Record<string, string> = { "/query": "POST", "/events": "GET", "/live": "GET" };

/**
 * The HTTP API: `POST /query`, `GET /events` and `GET /live`. Every error is `{"error": ...}` JSON except
 * 405, which is plain text as the spec says. Plain node:http: the web-stream adapters of HTTP
 * frameworks cost most of the throughput on this path.
 */
export function createRequestHandler(state: ServerState) {
  return (request: IncomingMessage, response: ServerResponse): void => {
    const path = (request.url ?? "/").split("?")[0] ?? "/";
    const allowed = ROUTES[path];
    let handled: Promise<void>;
    if (!state.allowsHost(request.headers.host)) {
      // DNS rebinding: a page on another origin reaching a loopback server by a name of its own.
      const message = `Host ${JSON.stringify(request.headers.host ?? "")} is not this server: use a loopback name (localhost, 127.0.0.1, [::1]) or the address it is bound to`;
      handled = Promise.resolve(sendJson(response, 403, errorBody(message)));
    } else if (isConsolePath(path)) {
      handled = Promise.resolve(serveConsole(request, response, path));
    } else if (path === "/live/stats" && state.liveStats !== undefined) {
      handled = Promise.resolve(state.liveStats()).then((stats) =>
        sendJson(response, 200, JSON.stringify(stats)),
      );
    } else if (allowed === undefined) {
      const message = `no such endpoint: ${request.method} ${path}. The endpoints are POST /query, GET /events and GET /live`;
      handled = Promise.resolve(sendJson(response, 404, errorBody(message)));
    } else if (request.method !== allowed) {
      const text = `Method Not Allowed: use ${allowed} ${path}\n`;
      handled = Promise.resolve(sendText(response, 405, text, { allow: allowed }));
    } else if (path === "/query") {
      handled = handleQuery(state, request, response);
    } else if (path === "/live") {
      handled = handleLive(state, request, response);
    } else {
      handled = handleEvents(state, request, response);
    }
    handled.catch((error: unknown) => {
      state.logFault(error);
      if (!response.headersSent) {
        sendJson(response, 500, errorBody("internal error; the server log has the details"));
      } else {
        response.destroy();
      }
    });
  };
}
