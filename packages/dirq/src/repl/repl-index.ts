import type { DirqConfig } from "../config/types.js";
import type { ExtensionSpec } from "../connection/profile.js";
import type { FormatName } from "../parse/formats/format-names.js";
import type { RowChange } from "../indexer/row-changes.js";
import type { EmptyPathTable } from "../scan/empty-selection.js";
import type { SkippedPath } from "../scan/walk.js";
import type { AnswerFormat } from "../live/live-session.js";
import { LiveSession } from "../live/live-session.js";
import { flagTimeLimit } from "../parse/hook-timeout.js";

export interface ReplIndexOptions {
  root: string;
  config: DirqConfig;
  noIgnore: boolean;
  onFile: string | null;
  /** `--hook-timeout`: the `onFile` hook's time limit in seconds; `null`: the default. */
  hookTimeout: number | null;
  /** `--parse`: a built-in format every path-table's files are read with. */
  parse: FormatName | null;
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
  /** Path-tables it built that list no file, and why. */
  emptyTables: EmptyPathTable[];
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

/** Builds the index (config tables first) and starts watching. Throws a DirqError. */
export async function openReplIndex(options: ReplIndexOptions): Promise<ReplIndex> {
  const session = new LiveSession({
    index: {
      root: options.root,
      noIgnore: options.noIgnore,
      config: options.config,
      onFile: options.onFile ?? undefined,
      hookTimeLimit: flagTimeLimit(options.hookTimeout),
      parse: options.parse ?? undefined,
      extensions: options.extensions,
      persist: options.persist ?? undefined,
      // A path-table that lists no file is told on stderr, with why.
      tellEmptyTables: true,
      // Only the columns a statement reads, as one-shot runs do: `SELECT count(*)` on a big
      // tree stats nothing, and a later statement that reads `size` fills the stats then.
      // Rows the watcher updates keep the table's groups (PathTables.refreshFile).
      // A table read by --parse loads the keys the statement names; a later statement that
      // names another builds it again (ParsedTableRegistry.widen).
      readNamedColumns: true,
    },
    folderPrefix: "dirq-repl-",
    reaper: true,
    collectAfterBursts: true,
    // No time limit and no answer limit: the REPL is a local session.
    runner: {
      timeoutMs: Number.POSITIVE_INFINITY,
      maxAnswerBytes: Number.MAX_SAFE_INTEGER,
      maxProcesses: 1,
    },
    onWatchError: options.onWatchError,
  });
  try {
    const skipped = await session.build();
    session.warm();
    session.subscribe((changes) => {
      const errors = changes.filter((change) => change.action === "error");
      if (errors.length > 0) options.onChangeErrors(errors);
    });
    await session.watch();
    return {
      root: session.root,
      skipped,
      notices: [...session.notices],
      async run(sql, { format, signal }) {
        // A statement sees the files as they are: changes made before it are in the index.
        const prepared = await session.prepare(sql, { signal });
        const body = await session.run(prepared, { format, signal });
        return { body, skipped: prepared.skipped, emptyTables: prepared.emptyTables };
      },
      close: () => session.close(),
    };
  } catch (error) {
    await session.close();
    throw error;
  }
}
