import { statSync } from "node:fs";
import { resolve } from "node:path";
import { type DirqConfig, EMPTY_CONFIG } from "../config/types.js";
import {
  applyProfile,
  type ConnectionProfile,
  type ExtensionSpec,
  profileOf,
} from "../connection/profile.js";
import { DirqError } from "../errors.js";
import type { WorkerFunctions } from "../functions/worker-functions.js";
import { commandExtractor, type Extractor } from "../parse/extractor.js";
import { hookTimeoutProblem, type HookTimeLimit } from "../parse/hook-timeout.js";
import { formatExtractor } from "../parse/format-extractor.js";
import type { FormatName } from "../parse/formats/format-names.js";
import { parseHookCommand } from "../parse/hook-command.js";
import { createProgressReporter, type ProgressReporter } from "../progress/reporter.js";
import { realPath } from "../shared/real-path.js";
import type { EmptyTableListener } from "../scan/empty-selection.js";
import { cacheIgnorePatterns, defaultCachePath, openCache } from "./cache-file.js";
import { openIndexDatabase, type SqliteDatabase } from "./database.js";
import type { ParsedTableOptions } from "./parsed-tables.js";
import type { PathTableOptions } from "./path-tables.js";

/** Opening an index: its options, what they come to, and the database that holds it. */

export interface OpenIndexOptions {
  /** The index root; default: the current working directory. */
  root?: string;
  /** Scan files a `.gitignore` would hide (`--no-ignore`). Built-in skips still apply. */
  noIgnore?: boolean;
  /** Extra ignore globs relative to the root (config `[dirq] ignore`). */
  ignore?: readonly string[];
  /**
   * A parser command for every path-table (`--on-file`): each file's rows are what the command
   * prints, and the stat columns are not reachable. Never applies to config tables.
   */
  onFile?: string;
  /**
   * The time limit of the `onFile` hook (`--hook-timeout`), and what the message of a hook
   * stopped at it says sets it; default 60 seconds.
   */
  hookTimeLimit?: HookTimeLimit;
  /**
   * A built-in format for every path-table (`--parse`): dirq reads each file's rows itself. At
   * most one of `onFile` and `parse`. Never applies to config tables.
   */
  parse?: FormatName;
  /** Merged config (`loadConfigs`): named tables and ignore patterns. */
  config?: DirqConfig;
  /**
   * SQLite extensions to load (`--extension`, see `parseExtensionArgument`). When any is
   * given, the config's `[[dirq.extension]]` entries are not loaded.
   */
  extensions?: readonly ExtensionSpec[];
  /** Hooks run at once; default one per CPU core. */
  hookConcurrency?: number;
  /**
   * Keep the index in this SQLite file (WAL mode) instead of memory, so that other processes
   * can read it (the server's query processes).
   */
  databasePath?: string;
  /**
   * Keep the index in this SQLite file across runs (`--persist`): a later index over the same
   * root re-parses only the files that changed since. `true`: `<root>/.dirq/cache.db`; a
   * relative path resolves against the root. Takes precedence over `databasePath` (the file
   * is in WAL mode too, so other processes can read it).
   */
  persist?: string | true;
  /**
   * Fill every column of a path-table on first use, not only the ones the statement reads
   * (the server does, so the watcher keeps whole rows current).
   */
  fillAllColumns?: boolean;
  /**
   * A statement that reads no column of a path-table (`count(*)`, `EXISTS`) fills it with
   * rows that have an empty path, and a later statement that reads a column fills it again
   * (the one-shot CLI: one statement reads the index). Off by default: a live index looks
   * its rows up by path.
   */
  pathlessFills?: boolean;
  /**
   * With `pathlessFills`, a statement that reads no column and no row id of a path-table
   * (`count(*)`, `EXISTS`) gets, in the table's place, a view of as many blank rows as the walk
   * counted: no row is written. The next statement checked turns it back into the empty table,
   * which a statement reading it then fills. For an in-memory index that runs one statement at
   * a time and that nothing else writes (the one-shot CLI); a persisted index keeps writing
   * rows. Needs dirq's native extension; without it rows are written.
   */
  countedFills?: boolean;
  /**
   * A path-table read by a built-in format (`parse`) loads only the columns the statement that
   * builds it may name (every word and string in it; all for `SELECT *`), not every key of its
   * files; a later statement that may read a key it left out builds it again with that key
   * (`ParsedTableRegistry.widen`). For the one-shot CLI and the REPL: a persisted index keeps
   * every column, and so do the server and the SDK, whose statements come from many clients.
   */
  readNamedColumns?: boolean;
  /**
   * A statement that reads one path-table of JSON Lines files once, and some of its columns,
   * is answered straight from the files when it can be (`query/direct-jsonl.ts`), the table
   * filled only when not. With `"only"` (tests) a statement that cannot be fails instead. For
   * the one-shot CLI: never with `persist` or `fillAllColumns`.
   */
  directReads?: boolean | "only";
  /**
   * Find out why each path-table a statement builds that lists no file is empty, for
   * `PreparedStatement.emptyTables` (the CLI and the REPL tell it on stderr). Off by default:
   * finding out may list folders the walk skips (up to 50,000 entries), on the calling thread,
   * and the server and the SDK do not show it.
   */
  tellEmptyTables?: boolean;
  /**
   * Fill path-tables on a thread of their own, with its own connection to the index file
   * (needs `databasePath` or `persist`): the calling thread stays free while a big table
   * fills (the server's event loop). Default: fills run on the calling thread.
   */
  fillOnThread?: boolean;
  /**
   * Progress reporting. Default: lines on stderr as `DIRQ_PROGRESS` says (so every client of
   * the library behaves like the CLI). `false` turns it off.
   */
  progress?: ProgressReporter | false;
}

/** What the tables of an index are built with: the options of both kinds of table. */
export type TableOptions = ParsedTableOptions & PathTableOptions & { useGitignore: boolean };

/** What an index's options come to, checked. */
export interface IndexSettings {
  root: string;
  config: DirqConfig;
  /** The extractor of every path-table (`onFile`, `parse`), or `null`: plain path-tables. */
  onFile: Extractor | null;
  progress: ProgressReporter;
  /** The persisted cache file, resolved; `undefined`: not persisted. */
  persist: string | undefined;
  /** Ignore patterns the user gave (`--ignore`, `[dirq] ignore`): part of a definition. */
  userIgnores: readonly string[];
  tableOptions: TableOptions;
  fillAllColumns: boolean;
  /** See `OpenIndexOptions.readNamedColumns`: never with `fillAllColumns` or `persist`. */
  readNamedColumns: boolean;
  /** See `OpenIndexOptions.directReads`: never without `readNamedColumns`. */
  directReads: false | true | "only";
  profile: ConnectionProfile;
}

export function resolveRoot(root: string): string {
  try {
    if (statSync(root, { throwIfNoEntry: false })?.isDirectory()) return realPath(root);
  } catch (error) {
    // A folder on the way that cannot be searched, a loop of symlinks: the system's reason.
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new DirqError("ROOT_INVALID", `root '${root}' cannot be opened (${reason})`, {
      cause: error,
    });
  }
  throw new DirqError("ROOT_INVALID", `root '${root}' is not a directory`);
}

function extractorOf(options: OpenIndexOptions): Extractor | null {
  if (options.onFile !== undefined && options.parse !== undefined) {
    throw new DirqError("USAGE", "give onFile (a parser command) or parse (a format), not both");
  }
  if (options.parse !== undefined) return formatExtractor(options.parse, null);
  if (options.onFile === undefined) return null;
  const limit = options.hookTimeLimit;
  const problem = limit === undefined ? null : hookTimeoutProblem(limit.seconds);
  if (problem !== null) throw new DirqError("USAGE", `${limit?.setBy}: ${problem}`);
  return commandExtractor(parseHookCommand(options.onFile), limit);
}

/**
 * Checks an index's options. `closingSignal` gives the signal hooks of a build stop on (made
 * on first use: a statement that runs no hook never loads AbortController).
 */
export function indexSettings(
  options: OpenIndexOptions,
  closingSignal: () => AbortSignal,
  onEmpty?: EmptyTableListener,
): IndexSettings {
  const root = resolveRoot(options.root ?? process.cwd());
  const config = options.config ?? EMPTY_CONFIG;
  const onFile = extractorOf(options);
  const progress: ProgressReporter =
    options.progress === false
      ? { start: () => ({ update() {}, finish() {} }) }
      : (options.progress ?? createProgressReporter(process.stderr));
  // `false` from JavaScript callers (the type says string | true) means no cache, not a path.
  const persist =
    options.persist === undefined || (options.persist as unknown) === false
      ? undefined
      : options.persist === true
        ? defaultCachePath(root)
        : resolve(root, options.persist);
  const userIgnores = [...(options.ignore ?? []), ...config.ignore];
  const fillAllColumns = options.fillAllColumns ?? false;
  const pathlessFills = options.pathlessFills === true && !fillAllColumns;
  const tableOptions: TableOptions = {
    root,
    useGitignore: !options.noIgnore,
    extraIgnores: [
      ...userIgnores,
      ...(persist === undefined ? [] : cacheIgnorePatterns(root, persist)),
    ],
    progress,
    concurrency: options.hookConcurrency,
    get signal() {
      return closingSignal();
    },
    pathlessFills,
    countedFills: options.countedFills === true && pathlessFills,
    onEmpty: options.tellEmptyTables === true ? onEmpty : undefined,
  };
  const profile = profileOf(config, options.extensions);
  return {
    root,
    config,
    onFile,
    progress,
    persist,
    userIgnores,
    tableOptions,
    fillAllColumns,
    readNamedColumns: options.readNamedColumns === true && !fillAllColumns && persist === undefined,
    directReads:
      options.readNamedColumns === true && !fillAllColumns && persist === undefined
        ? (options.directReads ?? false)
        : false,
    profile,
  };
}

/** The database that holds an index, with the connection profile applied. */
export interface IndexStore {
  db: SqliteDatabase;
  functions: WorkerFunctions;
  /** The SQLite file, or `null` when the index lives in memory. */
  databasePath: string | null;
  /** A notice from opening it (a persisted cache that had to be rebuilt), or `null`. */
  notice: string | null;
  /** Lets go of the persisted cache's lock (nothing for other indexes). */
  release: () => void;
}

/**
 * Opens the database of an index: the persisted cache, a file, or SQLite's private temporary
 * database. The profile is applied before any table is built: a `ddl` may use an extension,
 * and a persisted cache is checked with them loaded.
 */
export function openStore(settings: IndexSettings, databasePath: string | undefined): IndexStore {
  const { root, persist, profile } = settings;
  if (persist === undefined) {
    const db = openIndexDatabase(root, databasePath);
    try {
      return {
        db,
        functions: applyProfile(db, profile),
        databasePath: databasePath ?? null,
        notice: null,
        release: () => {},
      };
    } catch (error) {
      db.close();
      throw error;
    }
  }
  let applied: WorkerFunctions | null = null;
  const cache = openCache(persist, root, (db) => {
    applied = applyProfile(db, profile);
  });
  try {
    const functions = applied ?? applyProfile(cache.db, profile);
    return {
      db: cache.db,
      functions,
      databasePath: persist,
      notice: cache.notice,
      release: cache.release,
    };
  } catch (error) {
    cache.db.close();
    cache.release();
    throw error;
  }
}
