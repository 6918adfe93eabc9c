import type { DirqIndex, PreparedStatement, PrepareOptions } from "../engine.js";
import type { RowChange } from "../indexer/row-changes.js";
import { InclusionCheck } from "../scan/inclusion.js";
import { type TreeWatcher, watchTree } from "../watch/file-watcher.js";

export interface LiveIndexOptions {
  /** Row changes of each commit, in commit order (`error` changes included). */
  onChanges: (changes: readonly RowChange[]) => void;
  /** What the watcher could not do (a watch limit reached): reported, never fatal. */
  onError: (error: unknown) => void;
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
  ) {}

  /** Starts watching `index`'s tree; resolves once the watcher sees the whole tree. */
  static async watch(index: DirqIndex, options: LiveIndexOptions): Promise<LiveIndex> {
    const onCommit = (changes: RowChange[]) => {
      if (changes.length > 0) options.onChanges(changes);
    };
    const watcher = watchTree(index.root, {
      ignoredFolders: () => {
        const check = new InclusionCheck(index.root, index.inclusionRules);
        // A folder is ignored when a file in it would be, whatever its name.
        return (path) => !check.includes(`${path}/\u0001`);
      },
      onBatch: async (batch) => {
        // Only the first commit of each refresh is waited for: hooks go on in the background.
        // A failure of the hooks' commits (a full disk) is reported, like the batch's own.
        const started = (run: { done: Promise<void> }) => void run.done.catch(options.onError);
        if (batch.rescan) {
          started(await index.startRefresh([""], { onCommit, keepUnchanged: true }));
          return;
        }
        started(await index.startRefresh(batch.paths, { onCommit }));
        started(await index.startRefresh(batch.recheck, { onlyIfChanged: true, onCommit }));
      },
      onError: options.onError,
    });
    await watcher.ready;
    return new LiveIndex(index, watcher);
  }

  /** Folders watched now (one inotify watch each). */
  get watchedFolders(): number {
    return this.watcher.folders;
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
    await this.watcher.close();
  }
}
