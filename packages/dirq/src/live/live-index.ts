import type { DirqIndex, PreparedStatement, PrepareOptions } from "../engine.js";
import type { Commit } from "../indexer/row-changes.js";
import type { UnwatchedCheckStats } from "../watch/unwatched-check.js";
import { InclusionCheck } from "../scan/inclusion.js";
import { type TreeWatcher, watchTree } from "../watch/file-watcher.js";

export interface LiveIndexOptions {
  /** Each commit with row changes, in commit order (`error` changes included). */
  onChanges: (commit: Commit) => void;
  /** What the watcher could not do (a watch limit reached): reported, never fatal. */
  onError: (error: unknown) => void;
  /**
   * Aborted when the owner stops before the watcher sees the whole tree: the walk of a big
   * tree stops then, and `watch` rejects with the signal's reason.
   */
  signal?: AbortSignal;
}

/** The first wait before files whose commit failed are applied again; doubled up to the last. */
const RETRY_FIRST_MS = 250;
const RETRY_LAST_MS = 8_000;

/**
 * Applies again the files whose commit failed (a full disk, a busy database), until one
 * commits: each failure waits longer, up to `RETRY_LAST_MS`. A failure is reported once until
 * a commit succeeds, so a disk that stays full is one line, not one a retry.
 */
class CommitRetry {
  private timer: NodeJS.Timeout | null = null;
  private waitMs = RETRY_FIRST_MS;
  private reported: string | null = null;
  /** Set once the watcher exists: hands the files to it as a recheck. */
  recheck: ((files: string[]) => void) | null = null;

  constructor(
    private readonly index: DirqIndex,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** A commit succeeded: the next failure is news again. */
  committed(): void {
    this.reported = null;
    this.waitMs = RETRY_FIRST_MS;
  }

  failed(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    if (message !== this.reported) this.onError(error);
    this.reported = message;
    if (this.timer !== null || this.index.unsettledFiles().length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.recheck?.(this.index.unsettledFiles());
    }, this.waitMs).unref();
    this.waitMs = Math.min(this.waitMs * 2, RETRY_LAST_MS);
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.recheck = null;
  }
}

/**
 * `DIRQ_MAX_WATCHES`: a cap on the watcher's folder watches below the system's own limit, so
 * the fallback past the limit can be seen (and tested) without changing the machine's.
 */
function watchCap(): number | undefined {
  const value = Number(process.env.DIRQ_MAX_WATCHES ?? "");
  return Number.isInteger(value) && value >= 0 && process.env.DIRQ_MAX_WATCHES ? value : undefined;
}

/** Lets the loop run once more: an event of a change made before now is then delivered. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * An index kept current with its tree: the one live path of the server, the REPL and the SDK.
 * Its watcher skips the folders the index's ignore rules exclude (one watch per folder that
 * can hold rows); each batch of changes commits the path-table rows at once and parses each
 * changed file on its own (see `DirqIndex.startRefresh`), so a slow hook never holds back
 * another file. Reads never wait for it: they read the last commit.
 */
export class LiveIndex {
  private constructor(
    readonly index: DirqIndex,
    private readonly watcher: TreeWatcher,
    private readonly retry: CommitRetry,
  ) {}

  /** Starts watching `index`'s tree; resolves once the watcher sees the whole tree. */
  static async watch(index: DirqIndex, options: LiveIndexOptions): Promise<LiveIndex> {
    const retry = new CommitRetry(index, options.onError);
    const onCommit = (commit: Commit) => {
      retry.committed();
      if (commit.size > 0) options.onChanges(commit);
    };
    const watcher = watchTree(index.root, {
      ignoredFolders: () => {
        const check = new InclusionCheck(index.root, index.inclusionRules);
        // A folder is ignored when a file in it would be, whatever its name.
        return (path) => !check.includes(`${path}/\u0001`);
      },
      onBatch: async (batch) => {
        // Only the first commit of each refresh is waited for: hooks go on in the background.
        // A failure of the hooks' commits (a full disk) is reported, like the batch's own,
        // and its files are applied again later.
        const started = (run: { done: Promise<void> }) =>
          void run.done.catch((error: unknown) => retry.failed(error));
        if (batch.rescan) {
          started(await index.startRefresh([""], { onCommit, keepUnchanged: true }));
          return;
        }
        // An empty refresh is skipped: its commit of nothing would tell a full disk is fine.
        if (batch.paths.size > 0 || batch.moves.length > 0) {
          const { moves } = batch;
          started(await index.startRefresh(batch.paths, { onCommit, moves }));
        }
        if (batch.recheck.size > 0) {
          const recheck = { onlyIfChanged: true, onCommit };
          started(await index.startRefresh(batch.recheck, recheck));
        }
      },
      onError: (error) => retry.failed(error),
      maxWatches: watchCap(),
    });
    retry.recheck = (files) => watcher.recheck(files);
    const stop = () => void watcher.close();
    if (options.signal?.aborted) stop();
    options.signal?.addEventListener("abort", stop, { once: true });
    try {
      await watcher.ready;
    } finally {
      options.signal?.removeEventListener("abort", stop);
    }
    if (options.signal?.aborted) {
      retry.stop();
      await watcher.close();
      throw options.signal.reason;
    }
    index.keepLookupsReady(watcher.folders + watcher.unwatchedCount);
    return new LiveIndex(index, watcher, retry);
  }

  /** Folders watched now (one inotify watch each). */
  get watchedFolders(): number {
    return this.watcher.folders;
  }

  /** What the checks of the folders without a watch (past the watch limit) have done. */
  get unwatchedChecks(): UnwatchedCheckStats {
    return this.watcher.unwatchedChecks;
  }

  /** The folders without a watch now (reported paths), past the watch limit. */
  unwatchedFolders(): string[] {
    return this.watcher.unwatchedFolders();
  }

  /**
   * Prepares a statement (`DirqIndex.prepare`) over the files as they are now: events of
   * changes made before the call are delivered, the open batch is handed over at once, and
   * the hooks still running for a table the statement reads are waited for (a statement that
   * reads no parsed table never waits for a hook). What the REPL and the SDK do before a
   * statement, so a program that writes a file and then asks about it sees the file.
   */
  async prepareCurrent(sql: string, options: PrepareOptions = {}): Promise<PreparedStatement> {
    await nextTurn();
    await nextTurn();
    await this.watcher.settle();
    const prepared = await this.index.prepare(sql, options);
    await this.index.refreshesDone(prepared.tables);
    return prepared;
  }

  /** Stops watching; hooks still running for changed files are stopped. */
  async close(): Promise<void> {
    this.retry.stop();
    await this.watcher.close();
  }
}
