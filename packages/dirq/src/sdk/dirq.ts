import { resolve } from "node:path";
import { loadConfigs } from "../config/load-config.js";
import { EMPTY_CONFIG } from "../config/types.js";
import { bindArguments, type DirqIndex } from "../engine.js";
import { DirqError } from "../errors.js";
import type { ProgressReporter } from "../progress/reporter.js";
import type { SkippedPath } from "../scan/walk.js";
import { LiveSession } from "../live/live-session.js";
import { codeTables, type TableDefinition, withCodeTables } from "./code-tables.js";
import { toRows } from "./row-values.js";
import type { Row } from "./types.js";
import { RowEventStream } from "./row-event-stream.js";
import { type LiveOptions, LiveRows } from "./live-rows.js";
import { LiveQueries, type LiveQueryRequest, type LiveSubscription } from "../live/live-queries.js";
import { parseExtensionArgument } from "../extensions/load-extensions.js";
import type { QueryParameters } from "../query/parameters.js";
import { parseJsonExact } from "../parse/hook-rows.js";
import { jsonAnswer } from "../output/json-answer.js";
import type { QueryResult } from "../query/in-process.js";

/** What `open` takes. Every key is optional. */
export interface OpenOptions {
  /** The index root; default: the current working directory. */
  root?: string;
  /**
   * `.dirq.toml` files, loaded and merged in order as `-c` does (relative paths resolve
   * against the current working directory). Nothing is ever discovered.
   */
  configs?: readonly string[];
  /** Named tables defined in code, after the config files' tables. */
  tables?: readonly TableDefinition[];
  /** A hook command for every path-table a statement names, as `--on-file`. */
  onFile?: string;
  /** The `onFile` hook's time limit in seconds, as `--hook-timeout` (default 60; 0 = none). */
  hookTimeout?: number;
  /** Scan files a `.gitignore` would hide, as `--no-ignore`. */
  noIgnore?: boolean;
  /** Extra globs relative to the root that are always skipped. */
  ignore?: readonly string[];
  /**
   * SQLite extensions for every connection, written as `--extension` takes them (`<path>` or
   * `<path>::<entrypoint>`, relative to the current working directory). When any is given,
   * the configs' `[[dirq.extension]]` entries are not loaded.
   */
  extensions?: readonly string[];
  /**
   * Keep every built table current with a file watcher from the start (`ready` waits for it).
   * `watch()` starts the watcher too. Without either, tables are as of when they were built.
   */
  live?: boolean;
  /**
   * Keep the index in a SQLite cache file, as `--persist`: `true` for `<root>/.dirq/cache.db`,
   * or a path (relative to the root). A later `open` on the same root re-parses only the
   * files that changed. `notices` says when a cache had to be rebuilt.
   */
  persist?: string | true;
  /**
   * Progress lines on stderr, as `DIRQ_PROGRESS` says (the default, as in the CLI), or `false`
   * for none, or a reporter of your own.
   */
  progress?: ProgressReporter | false;
}

/** What `watch()` takes. */
export interface WatchOptions {
  /** Ends the iteration (quietly, as `break` does) when aborted. */
  signal?: AbortSignal;
  /**
   * How many events a consumer may fall behind; past it (or past the index's event history,
   * 65,536 events or 32 MiB) it gets one `{ action: "reset" }` and then the newer events.
   * Default 10,000.
   */
  buffer?: number;
  /**
   * Continue after this event (a stream's `lastEventId`), as an SSE client does with
   * `Last-Event-ID`: the events after it still in the history come first; when they are gone,
   * or the id is another index's, the stream starts with a reset.
   */
  lastEventId?: string;
}

/** A file the index could not read or parse, and why; its other rows and files stand. */
export type SkippedFile = SkippedPath;

/** What `query` takes besides the statement. */
export interface QueryOptions {
  /**
   * With the watcher running: first wait until every change made to the tree before the call
   * is in the index (pending events handed over, and the hooks of changed files done for the
   * tables the statement reads), so the rows are the files as they are now. Default `true`;
   * `false` reads the index as it is.
   */
  settle?: boolean;
  /**
   * Cancels the statement: aborting it stops the statement's work (it runs in a query
   * process, which is killed) and the query rejects with a `QUERY_CANCELLED` DirqError.
   */
  signal?: AbortSignal;
}

/** What `queryJson` takes besides the statement and its parameters. */
export interface QueryJsonOptions {
  /** As `query`'s. */
  settle?: boolean;
  /**
   * How REAL values are written. `js` (default): as the CLI writes them, JavaScript's shortest
   * form, byte for byte. `same-value`: as SQLite writes them where that is the same number to
   * any JSON parser (`1.5e-07` for `1.5e-7`; a whole REAL below 2^53 still an integer), so
   * that SQLite can write a long answer with REAL columns too, which is faster.
   */
  realText?: "js" | "same-value";
}

const DEFAULT_EVENT_BUFFER = 10_000;

/** `queryJson`: SQLite writes an answer of up to about this size as one string. */
const JSON_ANSWER_BUDGET_BYTES = 64 * 1024 * 1024;
const NEWLINE = Buffer.from("\n");

const OPTION_KEYS = new Set(["settle", "signal"]);

/**
 * Whether `query`'s second argument is its options rather than named parameters: only
 * `settle` and `signal` keys, with their types. No parameter value is a boolean or an
 * AbortSignal, so named parameters called `settle` or `signal` are still told apart.
 */
function isQueryOptions(value: unknown): value is QueryOptions {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  if (value instanceof Uint8Array) return false;
  const { settle, signal } = value as Record<string, unknown>;
  return (
    Object.keys(value).every((key) => OPTION_KEYS.has(key)) &&
    (settle === undefined || typeof settle === "boolean") &&
    (signal === undefined || signal instanceof AbortSignal)
  );
}

function cancelled(): DirqError {
  return new DirqError("QUERY_CANCELLED", "interrupted: the statement was stopped");
}

/** Rejects as soon as `signal` aborts; `work` goes on (a build finishes in the background). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  work.catch(() => undefined);
  if (signal.aborted) return Promise.reject(cancelled());
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(cancelled());
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * A directory tree as a read-only SQLite database, in-process. Made by `open`; the CLI, the
 * server and this class run the same core (read-only rules, values, hooks, watcher).
 */
export class Dirq implements AsyncDisposable {
  /** The index root, resolved (real path). */
  readonly root: string;
  /**
   * Resolves once the named tables (config files' and code's) are built, and the watcher is
   * running when `live` is set. Rejects when a table cannot be built at all (a hook program
   * that cannot start, a failing `ddl`); `query` then rejects with the same error.
   */
  readonly ready: Promise<void>;
  private readonly session: LiveSession;
  private readonly index: DirqIndex;
  private readonly streams = new Set<RowEventStream>();
  private readonly lives = new Set<LiveRows>();
  /** The live queries of `live()`, made at the first. */
  private liveQueries: LiveQueries | null = null;
  private readonly skippedFiles: SkippedFile[] = [];
  /** The watcher's start, once `live` or `watch()` asked for it. */
  private watching: Promise<void> | null = null;
  /** Statements running now: `close` lets them finish before the database closes. */
  private readonly running = new Set<Promise<unknown>>();
  private closing: Promise<void> | null = null;

  /** Use `open`. */
  constructor(options: OpenOptions = {}) {
    const root = resolve(options.root ?? ".");
    const configs = options.configs ?? [];
    const fromFiles = configs.length === 0 ? EMPTY_CONFIG : loadConfigs(configs, process.cwd());
    const config = withCodeTables(fromFiles, codeTables(options.tables ?? [], root));
    this.session = new LiveSession({
      index: {
        root,
        config,
        onFile: options.onFile,
        hookTimeLimit:
          options.hookTimeout === undefined
            ? undefined
            : { seconds: options.hookTimeout, setBy: `hookTimeout: ${options.hookTimeout}` },
        noIgnore: options.noIgnore,
        ignore: options.ignore,
        extensions: options.extensions?.map((argument) =>
          parseExtensionArgument(argument, process.cwd()),
        ),
        progress: options.progress,
        persist: options.persist,
        // Whole rows from the start, so that watch events carry what a query would return.
        fillAllColumns: true,
      },
      folderPrefix: "dirq-sdk-",
      // However the program ends (a kill, a crash, an exit without close), its hooks end with
      // it and the folder goes: the reaper, one per program, exits when the program does.
      reaper: true,
      // No time or answer limit: a library caller decides with its signal.
      runner: {
        timeoutMs: Number.POSITIVE_INFINITY,
        maxAnswerBytes: Number.MAX_SAFE_INTEGER,
        maxProcesses: 1,
        keepAlive: false,
      },
      onWatchError: (error) =>
        void this.session.publish([
          { action: "error", table: null, file_path: "", error: `watcher: ${String(error)}` },
        ]),
    });
    this.index = this.session.index;
    this.root = this.index.root;
    const index = this.index;
    this.ready = (async () => {
      this.skippedFiles.push(...(await index.build()));
      if (options.live) await this.startWatcher();
    })();
    // Nobody may be listening yet: the error is seen by `await db.ready` and by `query`.
    this.ready.catch(() => undefined);
  }

  /** One-line notices from opening the index (a `persist` cache that had to be rebuilt). */
  get notices(): readonly string[] {
    return this.index.notices;
  }

  /**
   * Files skipped so far (unreadable, or their hook or extract failed) while building tables
   * for `ready` and for queries: a partial scan, where the CLI would exit 23. Later failures
   * arrive as `error` events on `watch()`.
   */
  get skipped(): readonly SkippedFile[] {
    return this.skippedFiles;
  }

  private checkOpen(): void {
    if (this.closing !== null) {
      throw new DirqError("INDEX_CLOSED", "this dirq index is closed: open a new one");
    }
  }

  /**
   * Runs one read-only statement and returns its rows as objects, with the values the CLI's
   * JSON holds. Writes, ATTACH, PRAGMA assignments, several statements and `_dirq_` tables are
   * rejected with a `DirqError` before anything runs. Path-tables it names are built on first
   * use. A statement never waits for a refresh's hooks unless it settles (see `QueryOptions`).
   */
  async query(sql: string, options?: QueryOptions): Promise<Row[]>;
  async query(
    sql: string,
    parameters: QueryParameters | undefined,
    options?: QueryOptions,
  ): Promise<Row[]>;
  async query(
    sql: string,
    parametersOrOptions?: QueryParameters | QueryOptions,
    moreOptions?: QueryOptions,
  ): Promise<Row[]> {
    let parameters: QueryParameters | undefined;
    let options: QueryOptions;
    if (moreOptions === undefined && isQueryOptions(parametersOrOptions)) {
      options = parametersOrOptions;
    } else {
      parameters = parametersOrOptions as QueryParameters | undefined;
      options = moreOptions ?? {};
    }
    const args = this.checkedArguments(sql, parameters);
    const { signal } = options;
    if (signal !== undefined) return this.queryCancellable(sql, args, { ...options, signal });
    const result = await this.runInIndex(sql, parameters, options);
    return toRows(result.columns, result.rows);
  }

  /**
   * `query`'s answer as the CLI's JSON text (UTF-8, a final newline): the same rows and values,
   * integers beyond 2^53 written exactly. For handing an answer on (an HTTP body, another
   * process) without making a JS object per row: a long answer is written by SQLite itself.
   * Takes `settle` and parameters as `query` does; not `signal`. See `QueryJsonOptions`.
   */
  async queryJson(
    sql: string,
    parameters?: QueryParameters,
    options: QueryJsonOptions = {},
  ): Promise<Buffer> {
    this.checkedArguments(sql, parameters);
    const result = await this.runInIndex(sql, parameters, options);
    const answer = jsonAnswer(result, JSON_ANSWER_BUDGET_BYTES, options.realText ?? "js");
    if ("bytes" in answer) return Buffer.concat([answer.bytes, NEWLINE]);
    return Buffer.from([...answer.chunks].join(""), "utf8");
  }

  /** The statement's bound values, checked before anything is built (wrong values fail at once). */
  private checkedArguments(sql: string, parameters: QueryParameters | undefined): unknown[] {
    this.checkOpen();
    return bindArguments(sql, parameters);
  }

  /** Runs a statement on the index's own connection, settled first unless told not to. */
  private async runInIndex(
    sql: string,
    parameters: QueryParameters | undefined,
    options: QueryOptions,
  ): Promise<QueryResult> {
    await this.ready;
    if (options.settle !== false && this.watching !== null) {
      await this.watching;
      await this.session.prepare(sql, { parameters: true });
    }
    this.checkOpen();
    const running = this.index.query(sql, { bind: { values: parameters } });
    this.running.add(running);
    const result = await running.finally(() => this.running.delete(running));
    this.skippedFiles.push(...result.skipped);
    return result;
  }

  /**
   * A statement with a `signal`: prepared here (tables built), run in a query process that
   * aborting kills (SQLite in this process cannot be interrupted), answered as JSON.
   */
  private async queryCancellable(
    sql: string,
    args: unknown[],
    options: QueryOptions & { signal: AbortSignal },
  ): Promise<Row[]> {
    const { signal } = options;
    // The query process is left unreferenced (an idle one must not keep a script alive):
    // this keeps the process alive while the statement is out.
    const hold = setInterval(() => {}, 2 ** 30);
    const work = (async () => {
      await untilAborted(this.ready, signal);
      if (this.watching !== null) await untilAborted(this.watching, signal);
      const prepared = await this.session.prepare(sql, {
        parameters: true,
        settle: options.settle,
        signal,
      });
      this.checkOpen();
      const body = await this.session.run(prepared, {
        signal,
        args: args.length === 0 ? undefined : args,
      });
      const text = typeof body === "string" ? body : Buffer.from(body).toString("utf8");
      const rows = parseJsonExact(text) as Row[];
      this.skippedFiles.push(...prepared.skipped);
      return rows;
    })();
    this.running.add(work);
    try {
      return await work;
    } finally {
      this.running.delete(work);
      clearInterval(hold);
    }
  }

  private startWatcher(): Promise<void> {
    this.watching ??= this.session.watch();
    return this.watching;
  }

  /**
   * Row changes as files change, as an async iterable of the server's SSE `row` event data,
   * and `{ action: "reset" }` when events were lost to it (query again). Starts the watcher
   * (once per index) and keeps every built table current. End it with `break`, `signal` or
   * `close()`. `await stream.ready` before changing files you expect events for.
   */
  watch(options: WatchOptions = {}): RowEventStream {
    this.checkOpen();
    const history = this.session.events;
    const start = history.startPoint(options.lastEventId);
    const reset = "reset" in start;
    const cursor = history.cursor(
      reset ? history.head : start.after,
      options.buffer ?? DEFAULT_EVENT_BUFFER,
    );
    const stream = new RowEventStream(history, cursor, reset, () => this.streams.delete(stream));
    this.streams.add(stream);
    if (options.signal) {
      const { signal } = options;
      if (signal.aborted) stream.end();
      else signal.addEventListener("abort", () => stream.end(), { once: true });
    }
    stream.setReady(this.ready.then(() => this.startWatcher()));
    return stream;
  }

  /**
   * A live query: `rows` holds the statement's current answer (after `await live.ready`), in
   * its order, and iterating gives each change as files change (see docs/live-queries.md).
   * Starts the watcher. One evaluator serves every `live()` of the same statement, values and
   * key. End it with `break`, `signal` or `close()`.
   */
  live(sql: string, parameters?: QueryParameters, options: LiveOptions = {}): LiveRows {
    this.checkOpen();
    const opened = this.liveSubscription({ sql, params: parameters, key: options.key });
    const rows = new LiveRows(opened, (ended) => this.lives.delete(ended));
    this.lives.add(rows);
    const { signal } = options;
    if (signal?.aborted) rows.close();
    else signal?.addEventListener("abort", () => rows.close(), { once: true });
    return rows;
  }

  /**
   * @internal A live query's frames as the core makes them, for the adapters that forward
   * them as they are (`dirq sdk-stdio`, `dirq watch`). Starts the watcher.
   */
  async liveSubscription(request: LiveQueryRequest): Promise<LiveSubscription> {
    this.checkOpen();
    await this.ready;
    await this.startWatcher();
    this.checkOpen();
    // In one process nothing reconnects: a query nobody follows stops at once.
    this.liveQueries ??= new LiveQueries(this.session, {
      timeoutMs: Number.POSITIVE_INFINITY,
      lingerMs: 0,
    });
    return this.liveQueries.open({ ...request, settle: true });
  }

  /**
   * Stops the watcher, ends every `watch()` and `live()` iteration, waits for work in
   * progress and closes the database. Calling it again returns the same promise.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const stream of [...this.streams]) stream.end();
      for (const live of [...this.lives]) live.close();
      this.liveQueries?.close();
      // A table still being built finishes (or fails) before its database closes.
      await this.ready.catch(() => undefined);
      await Promise.allSettled([...this.running]);
      await this.session.close();
    })();
    return this.closing;
  }

  /** `await using db = open(...)` closes it at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * Opens an index over a directory. Options are checked at once: a root that is not a
 * directory, a config file that cannot load or a bad table definition throws a `DirqError`
 * here. Building the named tables starts at once; `await db.ready` to wait for it.
 */
export function open(options: OpenOptions = {}): Dirq {
  return new Dirq(options);
}
