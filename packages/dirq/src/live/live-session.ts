import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type DirqIndex,
  type OpenIndexOptions,
  openIndex,
  type PreparedStatement,
} from "../engine.js";
import { DirqError, isDirqError } from "../errors.js";
import { type Commit, commitJsonRuns, type RowChange } from "../indexer/row-changes.js";
import { type AnswerFormat, QueryPool } from "../runner/query-pool.js";

export { stoppingError } from "../runner/query-pool.js";
export type { AnswerFormat };
import { removeIndexDirectory, startReaper } from "../reaper/reaper.js";
import type { BoundArguments } from "../query/parameters.js";
import type { SkippedPath } from "../scan/walk.js";
import { BurstCollector } from "./burst-collector.js";
import { EventHistory, type HistoryBounds } from "./event-history.js";
import type { UnwatchedCheckStats } from "../watch/unwatched-check.js";
import { LiveIndex } from "./live-index.js";

/** How the session's query processes run statements. */
export interface SessionRunnerOptions {
  /** Per-statement limit, counted from `deadline`'s origin; `Infinity`: none. */
  timeoutMs: number;
  /** Largest answer (bytes of JSON); past it the statement fails with `ANSWER_TOO_LARGE`. */
  maxAnswerBytes: number;
  /** Query processes for quick statements (see `QueryPool`). */
  maxProcesses?: number;
  /** Whether an idle query process keeps this process alive (see `QueryPoolOptions`). */
  keepAlive?: boolean;
}

export interface LiveSessionOptions {
  /** The index; its file is the session's (in its temporary folder) unless `persist` says. */
  index: Omit<OpenIndexOptions, "databasePath">;
  /** Prefix of the temporary folder that holds the index file (`dirq-index-`, ...). */
  folderPrefix: string;
  /**
   * Start the reaper (a helper process, one per process, that removes the folder and stops
   * hooks when this process dies, `kill -9` included): the CLI's long-lived commands and the
   * SDK do. Without it the folder is removed at close or at this process's exit.
   */
  reaper: boolean;
  runner: SessionRunnerOptions;
  /** What the watcher could not do (a watch limit reached): reported, never fatal. */
  onWatchError: (error: unknown) => void;
  /** How much of the recent changes `events` keeps (default: `HISTORY_FRAMES`, `HISTORY_BYTES`). */
  history?: HistoryBounds;
  /**
   * Run full garbage collections once a large burst of changes settles (the CLI's own
   * processes). Off for the SDK: a library does not force collections in its user's process.
   */
  collectAfterBursts?: boolean;
}

/** What `prepare` takes. */
export interface SessionPrepareOptions {
  /** Stops waiting for the tables (they finish building in the background). */
  signal?: AbortSignal;
  /** Time limit (ms since the epoch): past it, a `QUERY_TIMEOUT` DirqError. */
  deadline?: number;
  /**
   * With the watcher running, first take in every change made before the call (default
   * `true`): a program that writes a file and then asks about it sees the file.
   */
  settle?: boolean;
  /** The statement may have parameters (the SDK binds them). */
  parameters?: boolean;
}

/** What `run` takes. */
export interface SessionRunOptions {
  format?: AnswerFormat;
  signal?: AbortSignal;
  deadline?: number;
  args?: BoundArguments;
}

/** Gets a commit's changes, and the commit (its sequence number) they belong to. */
type ChangeListener = (changes: readonly RowChange[], commit: Commit) => void | Promise<void>;

/** Changes numbered into the history between two turns of the event loop, at most... */
const HISTORY_SLICE = 256;
/** ...and at most this many bytes of them (past it, the slice ends after the change). */
const HISTORY_SLICE_BYTES = 1024 * 1024;

function cancelled(): DirqError {
  return new DirqError("QUERY_CANCELLED", "interrupted: the statement was stopped");
}

/** Why a wait stopped: the signal's own DirqError (a client gone, a shutdown), else "interrupted". */
function abortReason(signal: AbortSignal): unknown {
  return isDirqError(signal.reason) ? signal.reason : cancelled();
}

function buildTimeout(timeoutMs: number): DirqError {
  const seconds = Math.round(timeoutMs / 1000);
  return new DirqError(
    "QUERY_TIMEOUT",
    `query exceeded the ${seconds}-second timeout while its tables were being built; try again later`,
  );
}

function closedError(): DirqError {
  return new DirqError("INDEX_CLOSED", "the index was closed");
}

/** Folders of sessions without a reaper, removed at exit if `close()` did not. */
const foldersToRemove = new Set<string>();
let exitHookInstalled = false;

function removeAtExit(folder: string): void {
  foldersToRemove.add(folder);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const each of foldersToRemove) removeIndexDirectory(each);
  });
}

/**
 * One live index with everything around it: its temporary folder (and the reaper that removes
 * it), the index, the build of its named tables, the watcher, the query processes that run
 * statements killably, the mapping of their answers to errors, the fan-out of row changes, and
 * the close that undoes it all. The server, the REPL and the SDK are adapters over it.
 */
export class LiveSession {
  readonly index: DirqIndex;
  private readonly folder: string;
  private readonly listeners = new Set<ChangeListener>();
  private live: Promise<LiveIndex> | null = null;
  private history: EventHistory | null = null;
  private readonly burst: BurstCollector | null;
  private pool: QueryPool | null = null;
  /** Commits come one after another: their changes reach listeners in commit order. */
  private delivered: Promise<void> = Promise.resolve();
  private closed: Promise<void> | null = null;
  /**
   * Aborted at close: a watcher error or a refresh cut short then is not worth a message, and
   * a watcher still walking the tree stops.
   */
  private readonly stopping = new AbortController();

  /** Opens the index at once: a bad root, config or cache throws a `DirqError` here. */
  constructor(private readonly options: LiveSessionOptions) {
    this.burst = options.collectAfterBursts === true ? new BurstCollector() : null;
    this.folder = mkdtempSync(join(tmpdir(), options.folderPrefix));
    if (options.reaper) startReaper(this.folder);
    else removeAtExit(this.folder);
    try {
      // With `persist` the cache is the file the query processes read: one index, not two.
      this.index = openIndex({ ...options.index, databasePath: join(this.folder, "index.db") });
    } catch (error) {
      this.removeFolder();
      throw error;
    }
  }

  get root(): string {
    return this.index.root;
  }

  /** One-line notices from opening the index (a persisted cache that had to be rebuilt). */
  get notices(): readonly string[] {
    return this.index.notices;
  }

  /** Builds the named tables (config and code tables); returns the files skipped. */
  build(): Promise<SkippedPath[]> {
    return this.index.build();
  }

  /** Starts a query process now, so the first statement does not wait for one. */
  warm(): void {
    // Closed meanwhile (a stop during the start-up build): no query process is wanted.
    if (!this.stopping.signal.aborted) this.runner().warm();
  }

  /**
   * In a big tree, a warmed pool starts the rest of its processes once the watcher is ready. A
   * burst there (a checkout) slows the statements asked meanwhile, and a statement that runs
   * a while makes the pool start a process for the next: started in the burst, its start (a
   * fork of the server, then Node's start-up) took CPU from the burst while a statement waited
   * for it.
   */
  private fillPoolForBursts(): void {
    const pool = this.pool;
    if (pool === null || this.stopping.signal.aborted || !this.index.readyForBursts) return;
    pool.warm(pool.maxProcesses);
  }

  /**
   * Gets every commit's row changes (`error` changes included), in commit order, from the
   * watcher and from `publish`. Returns the unsubscribe function.
   */
  subscribe(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * The numbered history of row changes (as SSE `row` data) that streams read and resume from;
   * it starts at the first call, which the server makes before watching.
   */
  get events(): EventHistory {
    this.history ??= new EventHistory(this.options.history);
    return this.history;
  }

  /**
   * Hands changes that no commit made (files a build skipped, a watcher error) to the history
   * and every listener, after those published before: they carry the newest commit's number.
   */
  publish(changes: readonly RowChange[]): Promise<void> {
    const seq = this.index.commitSeq;
    return this.publishCommit({ seq, size: changes.length, changes, parts: changes });
  }

  /** Hands a commit to the history and every listener, after those published before. */
  private publishCommit(commit: Commit): Promise<void> {
    if (commit.size === 0) return this.delivered;
    this.delivered = this.delivered.then(async () => {
      await this.record(commit);
      this.burst?.recorded(commit.size);
      for (const listener of this.listeners) await listener(commit.changes, commit);
    });
    return this.delivered;
  }

  /** The sequence number of the newest commit (see `Commit`). */
  get commitSeq(): number {
    return this.index.commitSeq;
  }

  /**
   * A stamp of the rows of `tables` (SQLite names, as a prepared statement lists them): it
   * differs from an earlier one once any of them may have changed. The one source of stamps
   * for the server's result cache and for live queries.
   */
  tableStamp(tables: readonly string[]): string {
    return this.index.tableGenerations(tables);
  }

  /** Keeps the path-tables among `tables` from being dropped until the returned call. */
  pinTables(tables: readonly string[]): () => void {
    return this.index.pinTables(tables);
  }

  /**
   * Numbers the changes into the history a slice at a time, letting readers take each slice
   * before the next: a large change set must not push frames out of the history before a
   * reader that keeps up has read them.
   */
  private async record(commit: Commit): Promise<void> {
    const history = this.history;
    if (history === null) return;
    // Text frames are numbered a slice at a time (one copy and one wake-up per run of them).
    let texts: string[] = [];
    let bytes = 0;
    for (const run of commitJsonRuns(commit)) {
      for (const data of run) {
        if (typeof data === "string") texts.push(data);
        else {
          history.appendJsonTexts(texts);
          texts = [];
          history.append(data.utf8());
        }
        bytes += data.length;
        if (texts.length === HISTORY_SLICE || bytes >= HISTORY_SLICE_BYTES) {
          history.appendJsonTexts(texts);
          texts = [];
          bytes = 0;
          await new Promise(setImmediate);
        }
      }
    }
    history.appendJsonTexts(texts);
  }

  /** What the checks of the folders without a watch have done (none below the limit). */
  async unwatchedChecks(): Promise<UnwatchedCheckStats | null> {
    return this.live === null ? null : (await this.live).unwatchedChecks;
  }

  /** The folders without a watch now (none below the limit; `null` before watching). */
  async unwatchedFolders(): Promise<string[] | null> {
    return this.live === null ? null : (await this.live).unwatchedFolders();
  }

  /** Starts the watcher (once); resolves when it sees the whole tree. */
  watch(): Promise<void> {
    if (this.stopping.signal.aborted) return Promise.reject(closedError());
    this.live ??= LiveIndex.watch(this.index, {
      onChanges: (commit) => void this.publishCommit(commit),
      onError: (error) => {
        if (!this.stopping.signal.aborted) this.options.onWatchError(error);
      },
      signal: this.stopping.signal,
    }).then((live) => {
      this.fillPoolForBursts();
      return live;
    });
    return this.live.then(() => undefined);
  }

  /**
   * Checks a statement and builds what it reads. A signal or deadline stops the wait, not a
   * build begun: its writes are committed file by file, and it finishes in the background (a
   * statement still queued for the writer when its signal aborts builds nothing).
   */
  async prepare(sql: string, options: SessionPrepareOptions = {}): Promise<PreparedStatement> {
    const prepareOptions = { parameters: options.parameters, signal: options.signal };
    if (options.settle !== false && this.live !== null) {
      const live = await this.live;
      return this.waitFor(live.prepareCurrent(sql, prepareOptions), options);
    }
    // `DirqIndex.prepare` answers a statement that needs nothing built without the writer.
    return this.waitFor(this.index.prepare(sql, prepareOptions), options);
  }

  /** Runs a prepared statement in a query process; aborting it kills that process. */
  async run(
    prepared: PreparedStatement,
    options: SessionRunOptions = {},
  ): Promise<string | Uint8Array> {
    const answer = await this.runner().run(prepared.sql, {
      format: options.format,
      signal: options.signal,
      deadline: options.deadline,
      callsWorkers: prepared.callsWorkers,
      args: options.args,
    });
    if (answer.ok) return answer.body;
    if (answer.tooLarge) throw new DirqError("ANSWER_TOO_LARGE", answer.message);
    if (answer.user) throw new DirqError("SQL_ERROR", answer.message);
    throw new Error(answer.message);
  }

  /** Stops every statement out on the query processes (each rejects). */
  stopStatements(): void {
    this.pool?.close();
  }

  /**
   * Stops the watcher, the hooks of live refreshes and the query processes, closes the index
   * and removes the temporary folder. Calling it again returns the same promise.
   */
  close(): Promise<void> {
    this.closed ??= (async () => {
      // A watcher still walking the tree (a big one) stops at once, not when it is done.
      this.stopping.abort(closedError());
      this.burst?.close();
      const live = await this.live?.catch(() => null);
      await live?.close();
      this.pool?.close();
      this.index.close();
      // The index file goes only once the index's threads have exited, however long that
      // takes: a thread's SQLite call that fails on a file removed under it while the thread is
      // being stopped aborts the whole process. No time bound: the process cannot exit before
      // its threads have anyway (Node joins them at exit).
      await this.index.stopped;
      this.removeFolder();
    })();
    return this.closed;
  }

  private runner(): QueryPool {
    // After close, a new pool would start query processes nothing stops.
    if (this.pool === null && this.stopping.signal.aborted) throw closedError();
    this.pool ??= new QueryPool({
      databasePath: this.index.databasePath as string,
      timeoutMs: this.options.runner.timeoutMs,
      maxAnswerBytes: this.options.runner.maxAnswerBytes,
      maxProcesses: this.options.runner.maxProcesses,
      keepAlive: this.options.runner.keepAlive,
      // Query processes open their connections with the index's extensions and functions.
      profile: this.index.connectionProfile,
    });
    return this.pool;
  }

  private removeFolder(): void {
    removeIndexDirectory(this.folder);
    foldersToRemove.delete(this.folder);
  }

  /** `work`, or a rejection when the signal aborts or the deadline passes first. */
  private waitFor<T>(work: Promise<T>, options: SessionPrepareOptions): Promise<T> {
    const { signal, deadline } = options;
    if (signal === undefined && deadline === undefined) return work;
    work.catch(() => undefined);
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    let timer: NodeJS.Timeout | undefined;
    let onAbort = (): void => {};
    const stopped = new Promise<never>((_, reject) => {
      onAbort = () => reject(abortReason(signal as AbortSignal));
      signal?.addEventListener("abort", onAbort, { once: true });
      if (deadline !== undefined) {
        const timeoutMs = this.options.runner.timeoutMs;
        timer = setTimeout(
          () => reject(buildTimeout(timeoutMs)),
          Math.max(0, deadline - Date.now()),
        );
      }
    });
    return Promise.race([work, stopped]).finally(() => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    });
  }
}
