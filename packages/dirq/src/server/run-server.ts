import { setMaxListeners } from "node:events";
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Writable } from "node:stream";
import { loadConfigs } from "../config/load-config.js";
import type { DirqConfig } from "../config/types.js";
import { type DirqIndex, openIndex } from "../engine.js";
import { parseExtensionArgument } from "../extensions/load-extensions.js";
import { DirqError, isDirqError } from "../errors.js";
import { type RowChange, rowChangeJson } from "../indexer/row-changes.js";
import type { SkippedPath } from "../scan/walk.js";
import { LiveIndex } from "../live/live-index.js";
import { stopRunningHooks } from "../parse/run-hook.js";
import { createRequestHandler } from "./app.js";
import {
  applyHttpLimits,
  hostChecker,
  MAX_CONNECTIONS,
  SERVER_LIMIT_OPTIONS,
} from "./http-limits.js";
import { EventHub } from "./event-hub.js";
import { QueryPool, stoppingError } from "../runner/query-pool.js";
import { removeIndexDirectory, startReaper } from "../reaper/reaper.js";
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
/** Largest answer the server sends (bytes of JSON); past it, 413 naming the limit. */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
/** Total size of the answers kept for repeated statements (characters). */
const RESULT_CACHE_CHARS = 64 * 1024 * 1024;
/**
 * What keeping one answer costs besides its statement and its bytes (the entry, the key, the
 * copy's Buffer): measured about 500 bytes of RSS each. Counted, so that a stream of distinct
 * statements with small answers keeps about a hundred thousand of them, not millions.
 */
const RESULT_ENTRY_OVERHEAD = 512;
/** Events published between two turns of the event loop. */
const PUBLISH_SLICE = 64;
/** How long shutdown waits for in-flight requests before it closes connections itself. */
const DRAIN_MS = 5_000;
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
  index: DirqIndex;
  pool: QueryPool;
  live: LiveIndex;
  directory: string;
  /** `stopping` is set at shutdown: a refresh cut short then is not worth a message. */
  shutdownState: { stopping: boolean };
  /** Aborted at shutdown: statements still waiting for their tables are answered then. */
  statements: AbortController;
}

/** `signal` aborts when the client goes away: the statement is stopped. */
type Query = (sql: string, arrival: number, signal: AbortSignal) => Promise<string | Uint8Array>;

/**
 * Rejects with a 408 DirqError at `deadline`, or with the reason of the first of `signals` to
 * abort, unless `work` settles first. The work itself goes on: a table build is not stopped
 * halfway, only nobody waits for it.
 */
function beforeDeadline<T>(
  work: Promise<T>,
  deadline: number,
  signals: readonly AbortSignal[],
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort = (_: Event): void => {};
  const expired = new Promise<never>((_, reject) => {
    const aborted = signals.find((signal) => signal.aborted);
    if (aborted !== undefined) return reject(aborted.reason);
    onAbort = (event) => reject((event.target as AbortSignal).reason);
    for (const signal of signals) signal.addEventListener("abort", onAbort, { once: true });
    timer = setTimeout(
      () => {
        const seconds = Math.round(QUERY_TIMEOUT_MS / 1000);
        reject(
          new DirqError(
            "QUERY_TIMEOUT",
            `query exceeded the ${seconds}-second timeout while its tables were being built; try again later`,
          ),
        );
      },
      Math.max(0, deadline - Date.now()),
    );
  });
  return Promise.race([work, expired]).finally(() => {
    clearTimeout(timer);
    for (const signal of signals) signal.removeEventListener("abort", onAbort);
  });
}

async function startLive(
  options: ServerOptions,
  config: DirqConfig,
  events: EventHub,
): Promise<{ live: Live; query: Query }> {
  const directory = mkdtempSync(join(tmpdir(), "dirq-index-"));
  startReaper(directory);
  let index: DirqIndex;
  try {
    // With --persist the cache is the index the query processes read: one index, not two.
    index = openIndex({
      root: options.root,
      noIgnore: options.noIgnore,
      config,
      databasePath: join(directory, "index.db"),
      persist: options.persist ?? undefined,
      fillAllColumns: true,
      // A big table fills on a thread of its own: requests and event streams go on meanwhile.
      fillOnThread: true,
      extensions: (options.extensions ?? []).map((arg) =>
        parseExtensionArgument(arg, options.root),
      ),
    });
  } catch (error) {
    removeIndexDirectory(directory);
    throw error;
  }
  for (const notice of index.notices) options.stderr.write(`dirq: ${notice}\n`);
  const databasePath = index.databasePath as string;
  const publish = async (changes: readonly RowChange[]) => {
    for (let i = 0; i < changes.length; i++) {
      events.publish(rowChangeJson(changes[i] as RowChange));
      // Let the sockets drain between slices: a large change set must not overflow the
      // buffer of a subscriber that keeps up.
      if (i % PUBLISH_SLICE === PUBLISH_SLICE - 1) await new Promise(setImmediate);
    }
  };
  try {
    await index.build();
  } catch (error) {
    index.close();
    removeIndexDirectory(directory);
    throw error;
  }
  const shutdownState = { stopping: false };
  // Query processes open their connections with the index's extensions and functions.
  const pool = new QueryPool({
    databasePath,
    timeoutMs: QUERY_TIMEOUT_MS,
    maxAnswerBytes: MAX_ANSWER_BYTES,
    profile: index.connectionProfile,
  });
  pool.warm();
  // Commits come one after another while hooks run in the background: their events go out
  // in commit order.
  let published: Promise<void> = Promise.resolve();
  const live = await LiveIndex.watch(index, {
    onChanges: (changes) => {
      published = published.then(() => publish(changes));
    },
    onError: (error) => {
      if (!shutdownState.stopping)
        options.stderr.write(`dirq: watcher: ${(error as Error).message}\n`);
    },
  });
  const answers = new ResultCache(
    RESULT_CACHE_CHARS,
    (sql, answer) => RESULT_ENTRY_OVERHEAD + sql.length + answer.length,
  );
  // An answer holds while the tables it read and the schema stay as they were.
  const stampOf = (tables: readonly string[]) => index.tableGenerations(tables);
  const statements = new AbortController();
  // Every statement waiting for its tables listens on it, for as long as it waits.
  setMaxListeners(0, statements.signal);
  const query: Query = async (sql, arrival, signal) => {
    const deadline = arrival + QUERY_TIMEOUT_MS;
    const cached = answers.get(sql, stampOf);
    if (cached !== undefined) return cached;
    // A statement that needs nothing built is checked at once: no promise, no timer.
    const prepared =
      index.preparedAlready(sql) ??
      (await beforeDeadline(index.prepare(sql), deadline, [signal, statements.signal]));
    if (prepared.skipped.length > 0) await publish(skippedToChanges(prepared.skipped));
    // Taken before the query process reads: a commit after this point moves the stamp.
    const before = prepared.cacheable ? stampOf(prepared.tables) : null;
    const answer = await pool.run(prepared.sql, {
      deadline,
      signal,
      callsWorkers: prepared.callsWorkers,
    });
    if (answer.ok) {
      // Kept only when none of its tables changed while it ran: it may hold rows from before
      // and after such a change, current for neither stamp.
      if (before !== null && stampOf(prepared.tables) === before) {
        answers.set(sql, prepared.tables, before, answer.body);
      }
      return answer.body;
    }
    if (answer.tooLarge) throw new DirqError("ANSWER_TOO_LARGE", answer.message);
    if (answer.user) throw new DirqError("SQL_ERROR", answer.message);
    throw new Error(answer.message);
  };
  return { live: { index, pool, live, directory, shutdownState, statements }, query };
}

async function stopLive(live: Live): Promise<void> {
  live.shutdownState.stopping = true;
  stopRunningHooks();
  await live.live.close();
  live.pool.close();
  live.index.close();
  removeIndexDirectory(live.directory);
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
  live.pool.close();
  live.statements.abort(stoppingError());
}

async function shutdown(server: Server, events: EventHub, live: Live | null): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  events.closeAll();
  server.closeIdleConnections();
  // Before any connection is closed, so that their clients get the 503 instead of a reset.
  if (live) stopStatements(live);
  // A connection whose answer is out is closed then; node does not on its own after close().
  const drained = setInterval(() => server.closeIdleConnections(), DRAIN_CHECK_MS);
  const grace = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
  await closed;
  clearInterval(drained);
  clearTimeout(grace);
}

/**
 * `dirq server`: binds, keeps the index current, answers `POST /query` and streams row
 * changes on `GET /events`, until `stopSignal`. A config that cannot load leaves the server
 * degraded (503 on both endpoints) instead of stopping it. Resolves with the exit code.
 */
export async function runServer(options: ServerOptions): Promise<number> {
  const events = new EventHub();
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
      live === null ? Promise.reject(new Error("not serving")) : live.index.resultColumns(sql),
    allowsHost: hostChecker(options.host),
    events,
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
  // Set when a signal came before the start-up build finished: what it starts is stopped.
  let abandoned = false;
  const starting = (async () => {
    const config = loadConfigs(options.configs, options.root);
    const started = await startLive(options, config, events);
    if (abandoned) return stopLive(started.live);
    ({ live, query } = started);
  })().catch((error: unknown) => {
    if (!isDirqError(error)) throw error;
    degraded =
      error.code === "EXTENSION_LOAD_FAILED"
        ? `failed to load an extension: ${error.message}`
        : error.code === "CACHE_BUSY" || error.code === "CACHE_UNUSABLE"
          ? error.message
          : `failed to load config: ${error.message}`;
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
    if (isNonLoopback(options.host)) {
      options.stderr.write(
        `dirq: warning: listening on ${options.host}, not a loopback address; there is no authentication, so anyone who can reach it can read every answer\n`,
      );
    }
    options.stdout.write(`Running at ${options.host}:${port}\n`);
    await stopped;
  } else {
    abandoned = true;
  }
  try {
    await shutdown(server, events, live);
    if (live) await stopLive(live);
    // A start-up build still running (a hung hook) must not keep the process alive.
    stopRunningHooks();
    return 0;
  } catch (error) {
    options.stderr.write(`dirq: error during shutdown: ${(error as Error).message}\n`);
    return 1;
  }
}

function isNonLoopback(host: string): boolean {
  return !/^(localhost|127\.\d+\.\d+\.\d+|::1|\[::1\])$/i.test(host);
}
