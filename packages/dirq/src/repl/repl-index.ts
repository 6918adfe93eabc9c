import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DirqConfig } from "../config/types.js";
import type { ExtensionSpec } from "../connection/profile.js";
import { type DirqIndex, openIndex } from "../engine.js";
import { DirqError } from "../errors.js";
import type { RowChange } from "../indexer/row-changes.js";
import type { SkippedPath } from "../scan/walk.js";
import { type AnswerFormat, QueryPool } from "../runner/query-pool.js";
import { removeIndexDirectory, startReaper } from "../reaper/reaper.js";
import { LiveIndex } from "../live/live-index.js";

export interface ReplIndexOptions {
  root: string;
  config: DirqConfig;
  noIgnore: boolean;
  onFile: string | null;
  /** `--extension` arguments; when any is given the config's extensions are not loaded. */
  extensions: readonly ExtensionSpec[];
  /** `--persist`: the index lives in this cache file (`true`: the default one). */
  persist: string | true | null;
  /** Row changes the watcher could not apply (a file's hook failed): reported, not fatal. */
  onChangeErrors: (changes: RowChange[]) => void;
  onWatchError: (error: unknown) => void;
}

export interface Answer {
  /** The result as the requested format prints it (JSON as UTF-8 bytes). */
  body: string | Uint8Array;
  /** Files skipped while building the tables the statement reads. */
  skipped: SkippedPath[];
}

/**
 * The REPL's index: built once, kept current by the core's `LiveIndex` (the server's and the
 * SDK's too), and read by a killable query process (the server's), so that Ctrl-C really stops
 * a statement: SQLite here has no interrupt.
 */
export interface ReplIndex {
  /** The index root, resolved. */
  readonly root: string;
  /** Files skipped while building the config tables, before the first statement. */
  readonly skipped: SkippedPath[];
  /** One-line notices from opening the index (a cache that was rebuilt). */
  readonly notices: string[];
  run(sql: string, options: { format: AnswerFormat; signal: AbortSignal }): Promise<Answer>;
  close(): Promise<void>;
}

function cancelled(): DirqError {
  return new DirqError("QUERY_CANCELLED", "interrupted: the statement was stopped");
}

/**
 * Resolves with `work`, or rejects as soon as `signal` aborts. Building the tables a statement
 * reads cannot be stopped half-way (its writes are committed file by file); it finishes in the
 * background, and the next statement waits for it.
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(cancelled());
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      work.catch(() => undefined);
      reject(cancelled());
    };
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** Builds the index (config tables first) and starts watching. Throws a DirqError. */
export async function openReplIndex(options: ReplIndexOptions): Promise<ReplIndex> {
  const directory = mkdtempSync(join(tmpdir(), "dirq-repl-"));
  startReaper(directory);
  let index: DirqIndex | null = null;
  try {
    index = openIndex({
      root: options.root,
      noIgnore: options.noIgnore,
      config: options.config,
      onFile: options.onFile ?? undefined,
      extensions: options.extensions,
      databasePath: join(directory, "index.db"),
      persist: options.persist ?? undefined,
      // Only the columns a statement reads, as one-shot runs do: `SELECT count(*)` on a big
      // tree stats nothing, and a later statement that reads `size` fills the stats then.
      // Rows the watcher updates keep the table's groups (PathTables.refreshFile).
    });
    const opened = index;
    const databasePath = opened.databasePath as string;
    const skipped = await opened.build();
    // No time limit and no answer limit: the REPL is a local session.
    const pool = new QueryPool({
      databasePath,
      timeoutMs: Number.POSITIVE_INFINITY,
      maxAnswerBytes: Number.MAX_SAFE_INTEGER,
      maxProcesses: 1,
      profile: opened.connectionProfile,
    });
    pool.warm();
    const live = await LiveIndex.watch(opened, {
      onChanges: (changes) => {
        const errors = changes.filter((change) => change.action === "error");
        if (errors.length > 0) options.onChangeErrors(errors);
      },
      onError: options.onWatchError,
    });
    return {
      root: opened.root,
      skipped,
      notices: opened.notices,
      async run(sql, { format, signal }) {
        // A statement sees the files as they are: changes made before it are in the index.
        const prepared = await untilAborted(live.prepareCurrent(sql), signal);
        const answer = await pool.run(prepared.sql, {
          format,
          signal,
          callsWorkers: prepared.callsWorkers,
        });
        if (!answer.ok) {
          if (answer.user) throw new DirqError("SQL_ERROR", answer.message);
          throw new Error(answer.message);
        }
        return { body: answer.body, skipped: prepared.skipped };
      },
      async close() {
        await live.close();
        pool.close();
        opened.close();
        removeIndexDirectory(directory);
      },
    };
  } catch (error) {
    index?.close();
    removeIndexDirectory(directory);
    throw error;
  }
}
