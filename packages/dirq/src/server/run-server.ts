import { setMaxListeners } from "node:events";
import { createServer, type Server } from "node:http";
import type { Writable } from "node:stream";
import { getHeapSpaceStatistics } from "node:v8";
import { loadConfigs } from "../config/load-config.js";
import type { DirqConfig } from "../config/types.js";
import { parseExtensionArgument } from "../extensions/load-extensions.js";
import { isDirqError } from "../errors.js";
import type { RowChange } from "../indexer/row-changes.js";
import type { SkippedPath } from "../scan/walk.js";
import { LiveSession, type LiveSessionOptions, stoppingError } from "../live/live-session.js";
import { LiveQueries, type LiveQueryRequest, type LiveSubscription } from "../live/live-queries.js";
import { stopRunningHooks } from "../parse/run-hook.js";
import { createRequestHandler } from "./app.js";
import {
  applyHttpLimits,
  hostChecker,
  MAX_CONNECTIONS,
  SERVER_LIMIT_OPTIONS,
} from "./http-limits.js";
import { EventHub, historyBoundsFromEnv, stallMsFromEnv } from "./event-hub.js";
import { ResultCache } from "./result-cache.js";

export interface ServerOptions {
  root: string;
  configs: readonly string[];
  host: string;
  port: number;
  noIgnore: boolean;
  /** `--extension` arguments; when any is given the config's extensions are not loaded. */
  extensions?: readonly string[];
  /** `--persist`: the index lives in this cache file (`true`: the default one). */
  persist?: string | true | null;
  stdout: Writable;
  stderr: Writable;
  /** Resolves when the server should shut down (the CLI wires SIGINT and SIGTERM to it). */
  stopSignal: Promise<unknown>;
}

/** Per-query time limit of the server (408 past it). */
export const QUERY_TIMEOUT_MS = 30_000;

/**
 * The per-query time limit: `DIRQ_QUERY_TIMEOUT_MS` in the environment sets another (tests use a
 * few seconds, so that their runaway statements do not spin for 30 s each); default 30 s.
 */
export function queryTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const fromEnv = Number(env.DIRQ_QUERY_TIMEOUT_MS);
  return Number.isSafeInteger(fromEnv) && fromEnv > 0 ? fromEnv : QUERY_TIMEOUT_MS;
}
/**
 * A live query setting from the server's environment, from `least` up (else the default):
 * `DIRQ_LIVE_LINGER_MS`, how long a live query nobody follows goes on (benchmarks shorten it);
 * `DIRQ_LIVE_DIFF_THREAD_BYTES`, from what size a whole answer is diffed on the diff thread
 * (benchmarks compare with it off: a size no answer reaches); `DIRQ_LIVE_HISTORY_BYTES`, what
 * the histories of all live queries keep together; `DIRQ_LIVE_HISTORY_MS`, how long they keep
 * a frame.
 */
function liveSettingFromEnv(name: string, least: number): number | undefined {
  const fromEnv = Number(process.env[name]);
  return Number.isSafeInteger(fromEnv) && fromEnv >= least ? fromEnv : undefined;
}

/** Largest answer the server sends (bytes of JSON); past it, 413 naming the limit. */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
/** Total size of the answers kept for repeated statements (characters). */
const RESULT_CACHE_CHARS = 64 * 1024 * 1024;
/**
 * What keeping one answer costs besides its statement and its bytes (the entry, the key, the
 * copy's Buffer), in bytes of RSS. Counted, so that a stream of distinct statements with small
 * answers keeps about a hundred thousand of them, not millions.
 */
const RESULT_ENTRY_OVERHEAD = 512;
/** How long shutdown lets requests in flight finish, statements included. */
const DRAIN_MS = 5_000;
/** After the drain, how long the 503 answers of the statements stopped then get to go out. */
const STOPPED_ANSWER_MS = 1_000;
/** How often shutdown closes the connections whose answer is out meanwhile. */
const DRAIN_CHECK_MS = 20;

function skippedToChanges(skipped: readonly SkippedPath[]): RowChange[] {
  return skipped.map((file) => ({
    action: "error",
    table: null,
    file_path: file.path,
    error: file.reason,
  }));
}

/** The live parts of a serving (not degraded) server. */
interface Live {
  session: LiveSession;
  /** Aborted at shutdown: statements still waiting for their tables are answered then. */
  statements: AbortController;
  /** The live queries of `GET /live`. */
  queries: LiveQueries;
}

/** `signal` aborts when the client goes away: the statement is stopped. */
type Query = (sql: string, arrival: number, signal: AbortSignal) => Promise<string | Uint8Array>;

/** The server's live session: every column filled, big tables on a thread, its own reaper. */
function sessionOptions(
  options: ServerOptions,
  config: DirqConfig,
  timeoutMs: number,
): LiveSessionOptions {
  return {
    index: {
      root: options.root,
      noIgnore: options.noIgnore,
      config,
      persist: options.persist ?? undefined,
      fillAllColumns: true,
      // A big table fills on a thread of its own: requests and event streams go on meanwhile.
      fillOnThread: true,
      extensions: (options.extensions ?? []).map((arg) =>
        parseExtensionArgument(arg, options.root),
      ),
    },
    folderPrefix: "dirq-index-",
    reaper: true,
    collectAfterBursts: true,
    runner: { timeoutMs, maxAnswerBytes: MAX_ANSWER_BYTES },
    onWatchError: (error) => options.stderr.write(`dirq: watcher: ${(error as Error).message}\n`),
    history: historyBoundsFromEnv(),
  };
}

/**
 * Builds the session's tables and starts its watcher. `abandon` aborts when the server stops
 * first: the session is closed at once (its build and the watcher's walk of a big tree stop,
 * its threads end), and this rejects once it is.
 */
async function startSession(session: LiveSession, abandon: AbortSignal): Promise<void> {
  const close = () => void session.close();
  abandon.addEventListener("abort", close, { once: true });
  try {
    await session.build();
    session.warm();
    await session.watch();
  } catch (error) {
    await session.close();
    throw error;
  } finally {
    abandon.removeEventListener("abort", close);
  }
}

async function startLive(
  options: ServerOptions,
  config: DirqConfig,
  events: EventHub,
  abandon: AbortSignal,
): Promise<{ live: Live; query: Query }> {
  const timeoutMs = queryTimeoutMs();
  const session = new LiveSession(sessionOptions(options, config, timeoutMs));
  for (const notice of session.notices) options.stderr.write(`dirq: ${notice}\n`);
  // Numbered from the start, so that every row frame has its id.
  events.attach(session.events);
  await startSession(session, abandon);
  const answers = new ResultCache(
    RESULT_CACHE_CHARS,
    (sql, answer) => RESULT_ENTRY_OVERHEAD + sql.length + answer.length,
  );
  // An answer holds while the tables it read and the schema stay as they were.
  const stampOf = (tables: readonly string[]) => session.tableStamp(tables);
  const statements = new AbortController();
  // Every statement waiting for its tables listens on it, for as long as it waits.
  setMaxListeners(0, statements.signal);
  const query: Query = async (sql, arrival, signal) => {
    const deadline = arrival + timeoutMs;
    const cached = answers.get(sql, stampOf);
    if (cached !== undefined) return cached;
    // A statement that needs nothing built is checked at once: no promise, no timer.
    const prepared =
      session.index.preparedAlready(sql) ??
      (await session.prepare(sql, {
        settle: false,
        deadline,
        signal: AbortSignal.any([signal, statements.signal]),
      }));
    if (prepared.skipped.length > 0) await session.publish(skippedToChanges(prepared.skipped));
    // Taken before the query process reads: a commit after this point moves the stamp.
    const before = prepared.cacheable ? stampOf(prepared.tables) : null;
    const body = await session.run(prepared, { deadline, signal });
    // Kept only when none of its tables changed while it ran: it may hold rows from before
    // and after such a change, current for neither stamp.
    if (before !== null && stampOf(prepared.tables) === before) {
      answers.set(sql, prepared.tables, before, body);
    }
    return body;
  };
  const queries = new LiveQueries(session, {
    timeoutMs,
    lingerMs: liveSettingFromEnv("DIRQ_LIVE_LINGER_MS", 1),
    diffThreadBytes: liveSettingFromEnv("DIRQ_LIVE_DIFF_THREAD_BYTES", 0),
    historyTotalBytes: liveSettingFromEnv("DIRQ_LIVE_HISTORY_BYTES", 1),
    historyMs: liveSettingFromEnv("DIRQ_LIVE_HISTORY_MS", 1),
    // Only `GET /live/stats` reports it: a benchmark's measure, not every run's cost. Reading
    // the clock costs a run about as much as its own work, so a benchmark that compares the
    // runs' CPU from outside turns it off (`DIRQ_LIVE_STATS_CPU=0`).
    measureCpu: process.env.DIRQ_LIVE_STATS === "1" && process.env.DIRQ_LIVE_STATS_CPU !== "0",
  });
  return { live: { session, statements, queries }, query };
}

function openLive(
  live: Live | null,
  request: LiveQueryRequest,
  lastEventId: string | undefined,
): Promise<LiveSubscription> {
  if (live === null) return Promise.reject(new Error("not serving"));
  return live.queries.open(request, lastEventId);
}

/** `GET /live/stats` when `DIRQ_LIVE_STATS=1` (benchmarks count runs with it), else none. */
function liveStatsRoute(live: () => Live | null): (() => unknown) | undefined {
  if (process.env.DIRQ_LIVE_STATS !== "1") return undefined;
  return async () => {
    const current = live();
    return {
      // Past the watch limit: files the checks stat'ed and the changed ones they handed over.
      unwatchedChecks: (await current?.session.unwatchedChecks()) ?? null,
      // Which folders those are (a benchmark tells the writes there from the watched ones').
      unwatchedFolders: (await current?.session.unwatchedFolders()) ?? null,
      commit: current?.session.commitSeq ?? 0,
      // Heap beside RSS: whether memory that grows is kept or only not yet collected.
      memory: process.memoryUsage(),
      // Which of V8's spaces holds the heap's committed size: kept objects, or free pages.
      heapSpaces: getHeapSpaceStatistics().map((space) => ({
        name: space.space_name,
        size: space.space_size,
        used: space.space_used_size,
        available: space.space_available_size,
      })),
      // The other bounded history beside the live queries': what it holds while it fills.
      eventHistory: current
        ? { ...current.session.events.size, heldBytes: current.session.events.heldBytes() }
        : { frames: 0, bytes: 0, dropped: 0, heldBytes: 0 },
      // What bounds both histories: a benchmark tells a filling history from a growing one.
      historyBounds: current && {
        events: current.session.events.bounds,
        live: current.queries.historyBounds,
      },
      queries: current?.queries.stats() ?? [],
    };
  };
}

async function stopLive(live: Live): Promise<void> {
  stopRunningHooks();
  await live.session.close();
}

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    // A backlog for every connection the server accepts (Node's default, 511, is a quarter of
    // them): past it, a burst of clients waits on the kernel's SYN-ACK retries, seconds each.
    server.listen({ port, host, backlog: MAX_CONNECTIONS }, () => {
      server.off("error", reject);
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : port);
    });
  });
}

/** Stops every statement still out: queued, running or waiting for its tables (503 each). */
function stopStatements(live: Live): void {
  live.session.stopStatements();
  live.statements.abort(stoppingError());
}

/**
 * Drains: stops accepting, ends the event streams, and lets every request in flight finish
 * for DRAIN_MS; statements still out then are stopped (their clients get 503), and any
 * connection still open a moment later is closed.
 */
async function shutdown(server: Server, events: EventHub, live: Live | null): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  events.closeAll();
  live?.queries.close();
  server.closeIdleConnections();
  // A connection whose answer is out is closed then; node does not on its own after close().
  const drained = setInterval(() => server.closeIdleConnections(), DRAIN_CHECK_MS);
  // Before any connection is closed, so that their clients get the 503 instead of a reset.
  const overdue = setTimeout(() => live && stopStatements(live), DRAIN_MS);
  const grace = setTimeout(() => server.closeAllConnections(), DRAIN_MS + STOPPED_ANSWER_MS);
  await closed;
  clearInterval(drained);
  clearTimeout(overdue);
  clearTimeout(grace);
}

/**
 * `dirq server`: binds, keeps the index current, answers `POST /query` and streams row
 * changes on `GET /events`, until `stopSignal`. A config that cannot load leaves the server
 * degraded (503 on both endpoints) instead of stopping it. Resolves with the exit code.
 */
export async function runServer(options: ServerOptions): Promise<number> {
  const events = new EventHub(stallMsFromEnv());
  let degraded: string | null = null;
  let live: Live | null = null;
  let query: Query = () => Promise.reject(new Error("not serving"));
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  const handler = createRequestHandler({
    ready,
    degraded: () => degraded,
    query: (sql, arrival, signal) => query(sql, arrival, signal),
    resultColumns: (sql) =>
      live === null
        ? Promise.reject(new Error("not serving"))
        : live.session.index.resultColumns(sql),
    allowsHost: hostChecker(options.host),
    events,
    openLive: (request, lastEventId) => openLive(live, request, lastEventId),
    liveStats: liveStatsRoute(() => live),
    logFault: (error) => options.stderr.write(`dirq: internal error: ${(error as Error).stack}\n`),
  });
  const server = createServer(SERVER_LIMIT_OPTIONS, handler);
  applyHttpLimits(server);
  // Bind first: a port in use is reported at once, not after the start-up build.
  let port: number;
  try {
    port = await listen(server, options.host, options.port);
  } catch (error) {
    options.stderr.write(
      `dirq: cannot listen on ${options.host}:${options.port}: ${(error as Error).message}\n`,
    );
    return 1;
  }
  const stopped = options.stopSignal.then(() => "stop" as const);
  // Aborted when a signal comes before the start-up build finished: what it started stops.
  const abandon = new AbortController();
  const starting = (async () => {
    const config = loadConfigs(options.configs, options.root);
    const started = await startLive(options, config, events, abandon.signal);
    if (abandon.signal.aborted) return stopLive(started.live);
    ({ live, query } = started);
  })().catch((error: unknown) => {
    // Stopped part way: whatever failed then is the stop's doing, not the user's config.
    if (abandon.signal.aborted) return;
    degraded = degradedMessage(error);
    options.stderr.write(`dirq: ${degraded}\n`);
  });
  let outcome: "started" | "stop";
  try {
    outcome = await Promise.race([starting.then(() => "started" as const), stopped]);
  } catch (error) {
    // An internal fault while starting: do not leave the port bound with nobody serving.
    server.closeAllConnections();
    server.close();
    stopRunningHooks();
    throw error;
  }
  if (outcome === "started") {
    markReady();
    announce(options, port);
    await stopped;
  } else {
    abandon.abort();
  }
  try {
    await shutdown(server, events, live);
    if (live) await stopLive(live);
    // A start-up stopped part way: its session is closed (threads ended, folder removed).
    else await starting;
    // A start-up build still running (a hung hook) must not keep the process alive.
    stopRunningHooks();
    return 0;
  } catch (error) {
    options.stderr.write(`dirq: error during shutdown: ${(error as Error).message}\n`);
    return 1;
  }
}

/** Says where the server listens (and warns when anyone on the network can reach it). */
function announce(options: ServerOptions, port: number): void {
  if (isNonLoopback(options.host)) {
    options.stderr.write(
      `dirq: warning: listening on ${options.host}, not a loopback address; there is no authentication, so anyone who can reach it can read every answer\n`,
    );
  }
  options.stdout.write(`Running at ${options.host}:${port}\n`);
}

/** Why the server answers 503: what stopped it from serving (a user error), else rethrown. */
function degradedMessage(error: unknown): string {
  if (!isDirqError(error)) throw error;
  if (error.code === "EXTENSION_LOAD_FAILED")
    return `failed to load an extension: ${error.message}`;
  if (error.code === "CACHE_BUSY" || error.code === "CACHE_UNUSABLE") return error.message;
  return `failed to load config: ${error.message}`;
}

function isNonLoopback(host: string): boolean {
  return !/^(localhost|127\.\d+\.\d+\.\d+|::1|\[::1\])$/i.test(host);
}
