import { mkdtempSync, rmSync } from "node:fs";
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
import { type TreeWatcher, watchTree } from "../watch/file-watcher.js";
import { createRequestHandler } from "./app.js";
import { EventHub } from "./event-hub.js";
import { QueryPool } from "./query-pool.js";
import { ResultCache } from "./result-cache.js";

export interface ServerOptions {
  root: string;
  configs: readonly string[];
  host: string;
  port: number;
  noIgnore: boolean;
  /** `--extension` arguments; when any is given the config's extensions are not loaded. */
  extensions?: readonly string[];
  stdout: Writable;
  stderr: Writable;
  /** Resolves when the server should shut down (the CLI wires SIGINT and SIGTERM to it). */
  stopSignal: Promise<unknown>;
}

/** Per-query time limit of the server (408 past it). */
export const QUERY_TIMEOUT_MS = 30_000;
/** Total size of the answers kept for repeated statements (characters). */
const RESULT_CACHE_CHARS = 64 * 1024 * 1024;
/** Events published between two turns of the event loop. */
const PUBLISH_SLICE = 64;
/** How long shutdown waits for in-flight requests before it closes connections itself. */
const DRAIN_MS = 5_000;

/** Runs one writer task at a time: building tables and applying file changes both write. */
function createWriterLock() {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(task: () => Promise<T>): Promise<T> => {
    const result = tail.then(task);
    tail = result.catch(() => undefined);
    return result;
  };
}

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
  watcher: TreeWatcher;
  directory: string;
}

async function startLive(
  options: ServerOptions,
  config: DirqConfig,
  events: EventHub,
): Promise<{ live: Live; query: (sql: string) => Promise<string> }> {
  const directory = mkdtempSync(join(tmpdir(), "dirq-index-"));
  const databasePath = join(directory, "index.db");
  const index = openIndex({
    root: options.root,
    noIgnore: options.noIgnore,
    config,
    databasePath,
    fillAllColumns: true,
    extensions: (options.extensions ?? []).map((arg) => parseExtensionArgument(arg, options.root)),
  });
  const withWriter = createWriterLock();
  const publish = async (changes: readonly RowChange[]) => {
    for (let i = 0; i < changes.length; i++) {
      events.publish(rowChangeJson(changes[i] as RowChange));
      // Let the sockets drain between slices: a large change set must not overflow the
      // buffer of a subscriber that keeps up.
      if (i % PUBLISH_SLICE === PUBLISH_SLICE - 1) await new Promise(setImmediate);
    }
  };
  try {
    await withWriter(() => index.build());
  } catch (error) {
    index.close();
    rmSync(directory, { recursive: true, force: true });
    throw error;
  }
  // Query processes open their connections with the index's extensions and functions.
  const pool = new QueryPool(databasePath, QUERY_TIMEOUT_MS, undefined, index.connectionProfile);
  pool.warm();
  const watcher = watchTree(index.root, {
    onBatch: async (batch) => {
      const changes = await withWriter(async () => {
        if (batch.rescan) return index.rescan();
        const changed = await index.refresh(batch.paths);
        const rechecked = await index.refresh(batch.recheck, { onlyIfChanged: true });
        return [...changed, ...rechecked];
      });
      await publish(changes);
    },
    onError: (error) => options.stderr.write(`dirq: watcher: ${(error as Error).message}\n`),
  });
  await watcher.ready;
  const answers = new ResultCache(RESULT_CACHE_CHARS);
  const query = async (sql: string) => {
    const cached = answers.get(sql, index.generation);
    if (cached !== undefined) return cached;
    const prepared = await withWriter(() => index.prepare(sql));
    await publish(skippedToChanges(prepared.skipped));
    const generation = index.generation;
    const answer = await pool.run(prepared.sql);
    if (answer.ok) {
      if (prepared.cacheable) answers.set(sql, generation, answer.body);
      return answer.body;
    }
    if (answer.user) throw new DirqError("SQL_ERROR", answer.message);
    throw new Error(answer.message);
  };
  return { live: { index, pool, watcher, directory }, query };
}

async function stopLive(live: Live): Promise<void> {
  await live.watcher.close();
  live.pool.close();
  live.index.close();
  rmSync(live.directory, { recursive: true, force: true });
}

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : port);
    });
  });
}

async function shutdown(server: Server, events: EventHub): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  events.closeAll();
  server.closeIdleConnections();
  const grace = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
  await closed;
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
  let query: (sql: string) => Promise<string> = () => Promise.reject(new Error("not serving"));
  try {
    const config = loadConfigs(options.configs, options.root);
    ({ live, query } = await startLive(options, config, events));
  } catch (error) {
    if (!isDirqError(error)) throw error;
    degraded =
      error.code === "EXTENSION_LOAD_FAILED"
        ? `failed to load an extension: ${error.message}`
        : `failed to load config: ${error.message}`;
    options.stderr.write(`dirq: ${degraded}\n`);
  }
  const handler = createRequestHandler({
    degraded,
    query,
    events,
    logFault: (error) => options.stderr.write(`dirq: internal error: ${(error as Error).stack}\n`),
  });
  const server = createServer(handler);
  let port: number;
  try {
    port = await listen(server, options.host, options.port);
  } catch (error) {
    options.stderr.write(
      `dirq: cannot listen on ${options.host}:${options.port}: ${(error as Error).message}\n`,
    );
    if (live) await stopLive(live);
    return 1;
  }
  options.stdout.write(`Running at ${options.host}:${port}\n`);
  await options.stopSignal;
  try {
    await shutdown(server, events);
    if (live) await stopLive(live);
    return 0;
  } catch (error) {
    options.stderr.write(`dirq: error during shutdown: ${(error as Error).message}\n`);
    return 1;
  }
}
