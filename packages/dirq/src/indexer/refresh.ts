import { lstatSync, readdirSync, realpathSync, statSync } from "node:fs";
import type { ExtractOutcome } from "../parse/extractor.js";
import type { HookRow } from "../parse/hook-rows.js";
import { os } from "../lazy-module.js";
import { statPaths } from "../scan/file-stats.js";
import type { EmptyTableListener } from "../scan/empty-selection.js";
import { InclusionCheck } from "../scan/inclusion.js";
import {
  listTree,
  type TreeListingHelper,
  type TreeListings,
} from "../scan/tree-listing-helper.js";
import { type SkippedPath, walkSelection } from "../scan/walk.js";
import {
  type CatalogStore,
  type FileSignature,
  fileSignature,
  unchangedSince,
} from "./catalog-store.js";
import {
  cachedStatement,
  lookupIndexName,
  lookupIndexSql,
  quoteIdentifier,
  type SqliteDatabase,
} from "./database.js";
import {
  FILE_PATH_COLUMN,
  type LiveParsedTable,
  replaceFileRows,
  storedColumns,
  walkTableFiles,
} from "./parsed-tables.js";
import type { PathTables } from "./path-tables.js";
import type { Catalog } from "./catalog.js";
import { type CommitChange, expandChanges, type RowChange } from "./row-changes.js";
import {
  leavesOffThread,
  refreshesStaged,
  replaceFileRowsStaged,
  stagedTableOf,
} from "./staged-refresh.js";
import { ExtractScheduler, type Job, laneOf } from "./extract-scheduler.js";
import { Slices } from "../shared/slices.js";
import { isStorageError } from "../shared/sql-errors.js";
import type { StagedTable, StagingWorker } from "./staging-worker.js";
import {
  afterMoves,
  applyMove,
  coveredByMove,
  decideMove,
  dependsOnPath,
  type FolderMove,
  type MoveContext,
  moveChanges,
  type MovedTable,
  movedTables,
  type MovePlan,
  type MoveReads,
  type MoveWritten,
  moveWriteOf,
  planMove,
} from "./folder-moves.js";
import type { MoveBurst, MoveStep, MoveWriter } from "./move-writer.js";

export interface RefreshOptions {
  useGitignore: boolean;
  extraIgnores?: readonly string[];
  concurrency?: number;
  /** Told when a restored path-table lists no file (see `walkTableFiles`). */
  onEmpty?: EmptyTableListener;
}

/** Runs a task while no other write to the index runs (the index's one writer). */
export type WriterLock = <T>(task: () => T | Promise<T>) => Promise<T>;

type FileStat = [size: number, mtime: number, ctime: number];

/** What a refresh learned about one file before it writes anything. */
interface Gathered {
  /** Size and times when the file is a row, `null` when it is not (or no longer) one. */
  stat: FileStat | null;
  /** `stat` as the key `fileSignatures` records once the file's rows are committed. */
  key: string;
  /** The file's state before its hooks ran, for the catalog of a persisted index. */
  signature: FileSignature | null;
}

/**
 * How long a refresh's first phase works on the main thread before it lets other work run
 * (requests, event streams): a burst of a hundred thousand moved files is found, stated and
 * committed in slices of about this length, each slice its own commit, so statements are
 * answered from the last commit throughout.
 */
const SLICE_MS = 12;
/**
 * Moves in one refresh from which their destinations are listed on the listing thread, and
 * their rows written on the move thread.
 */
const MOVES_FOR_THREAD = 16;
/**
 * Moves the move thread writes in one commit at most: their events are numbered and sent
 * while it writes the next ones (a checkout's folders hold about a hundred files each).
 */
const MOVES_PER_STEP = 32;

/**
 * Where the move thread's step that starts at move `at` ends: at most `MOVES_PER_STEP` moves,
 * none of whose folders is, holds or lies in a folder of another, or of a move of the step
 * `before` (a step's rows are all read before any of them, or of the step before, is written).
 */
function stepEnd(moves: readonly FolderMove[], at: number, before: readonly FolderMove[]): number {
  const folders = before.flatMap(({ from, to }) => [from, to]);
  let end = at;
  for (; end < moves.length && end - at < MOVES_PER_STEP; end++) {
    const { from, to } = moves[end] as FolderMove;
    if (folders.some((folder) => related(folder, from) || related(folder, to))) break;
    folders.push(from, to);
  }
  return end;
}

/** Whether one of two folders is the other or lies in it. */
function related(a: string, b: string): boolean {
  return a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
}

/** A step of moves sent to the move thread to write: decided from `reads`. */
interface WrittenStep {
  step: MoveStep;
  plans: MovePlan[];
  reads: MoveReads[];
}

/** At most this many names a move covered are kept for their recheck (`coveredNames`). */
const MAX_COVERED_NAMES = 100_000;

/** The stat key of a path that is not a file row. */
const MISSING = "missing";

/**
 * Lookup indexes over this many rows in all are made on the staging thread; fewer, on the
 * index's own (see `ensureLookupIndexes`).
 */
const LOOKUPS_OFF_THREAD_FROM_ROWS = 20_000;

/**
 * At least as many as a table's rows, found without reading them: its largest rowid
 * (`Infinity` when it has none to ask, which leaves its index to the staging thread).
 */
function rowsAtMost(db: SqliteDatabase, table: string): number {
  try {
    const statement = cachedStatement(db, `SELECT max(rowid) FROM ${quoteIdentifier(table)}`);
    return Number(statement.pluck().get() ?? 0);
  } catch {
    return Infinity;
  }
}

/** A file's output for one table read through the staging table when committed. */
const STAGED = Symbol("staged");

/** A large file's rows, read by the staging thread into `stage`, to swap in when committed. */
class StagedOffThread {
  constructor(
    readonly stage: string,
    readonly table: StagedTable,
  ) {}
}

/** A table the file left: the staging thread read its many rows there into `stage`'s place. */
class LeavingOffThread {
  constructor(
    readonly stage: string,
    readonly table: StagedTable,
  ) {}
}

/** The changes the staging thread committed for one table of a file; whether its rows stand. */
class SwappedOffThread {
  constructor(
    readonly changes: RowChange[],
    readonly stands: boolean,
  ) {}
}

/**
 * What committing a file's rows gets for one table: rows, why there are none, `STAGED`, or a
 * large file's rows read off this thread (`StagedOffThread`, then `SwappedOffThread`).
 */
type ParseOutput =
  HookRow[] | string | typeof STAGED | StagedOffThread | LeavingOffThread | SwappedOffThread;

/** One file left to parse after a refresh's first phase, for the tables that select it. */
interface ParseJob {
  file: string;
  signature: FileSignature | null;
  /** The stat key the job parses the file for (see `Gathered.key`). */
  key: string;
  tables: LiveParsedTable[];
  /** Those of `tables` the file left: their rows are deleted off this thread. */
  leaving: ReadonlySet<LiveParsedTable>;
  scope: RefreshScope;
  /** The scheduler's record of it: its signal aborts when a later refresh supersedes it. */
  scheduled: Job;
}

export interface StartOptions {
  onlyIfChanged?: boolean;
  scope?: RefreshScope;
  /** The caller holds the writer already (a table build reconciling a persisted table). */
  writerHeld?: boolean;
  /**
   * With `writerHeld`: the staging thread the caller lets this refresh use without waiting for
   * its turn (a build's, as its first fill uses it); without, such a refresh reads on this
   * thread.
   */
  heldStaging?: StagingWorker | null;
  /**
   * A file whose hooks are still running for the same size and times is left to them (a
   * rescan, which looks at every file, must not restart every slow hook).
   */
  keepUnchanged?: boolean;
  /** Changes of each commit, as it commits (a burst's moved rows held: see `HeldChanges`). */
  onCommit: (changes: CommitChange[]) => void;
  /**
   * Told `true` before the first commit of a burst of moves applied on this thread, `false`
   * after its last (even when it fails part way): the caller may hold back what it does with
   * those commits' changes until then (see `DirqIndex.startRefresh`). Not told of moves the
   * move thread writes: this thread is free to hand on their commits as they are made.
   */
  onMovesApplying?: (applying: boolean) => void;
  /** Folders renamed, applied before `paths` as moves of their rows (see folder-moves.ts). */
  moves?: readonly FolderMove[];
}

/** Which tables one refresh keeps current: all of them, or only these parsed tables. */
type RefreshScope = ReadonlySet<LiveParsedTable> | null;

/** Errors that mean "this path is not a file row now", as a fresh walk would see it. */
const NOT_A_ROW = new Set(["ENOENT", "ENOTDIR", "ELOOP", "EACCES", "EPERM", "ENAMETOOLONG"]);

function isNotARow(error: unknown): boolean {
  return NOT_A_ROW.has((error as NodeJS.ErrnoException | null)?.code ?? "");
}

/**
 * A failure of the index itself (a full disk, a busy or damaged database), never of one file:
 * it fails the whole commit, so no file of it is recorded and each is applied again later.
 */
function isCommitFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    isStorageError(error) || (typeof code === "string" && /^SQLITE_(BUSY|LOCKED|NOMEM)/.test(code))
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The absolute path as raw bytes of a row whose `path` shows U+FFFD for bytes that are not
 * valid UTF-8 (as the walk lists such a name); `null` when the name is plain or no entry of
 * its folder decodes to it.
 */
function rawPathOf(root: string, path: string): Buffer | null {
  if (!path.includes("\uFFFD")) return null;
  let current = Buffer.from(root);
  for (const segment of path.split("/")) {
    let name: Buffer | undefined = Buffer.from(segment);
    if (segment.includes("\uFFFD")) {
      try {
        const entries = readdirSync(current, { encoding: "buffer" });
        name = entries.find((entry) => entry.toString("utf8") === segment);
      } catch {
        return null;
      }
      if (name === undefined) return null;
    }
    current = Buffer.concat([current, Buffer.from("/"), name]);
  }
  return current;
}

/** A file's state as signatures record it: its row stat joined, or `MISSING`. */
function statKey(stat: FileStat | null): string {
  return stat ? stat.join(":") : MISSING;
}

/**
 * Whether the file at `path` is a row, and its size and times (whole seconds, as the walk's
 * stat records them). Symlinks count when they resolve to a regular file inside the root; a
 * link leading outside is never read. Throws only for errors a walk would not explain.
 */
function fileRowStat(root: string, path: string): FileStat | null {
  const raw = rawPathOf(root, path);
  const absolute = raw ?? `${root}/${path}`;
  try {
    const link = lstatSync(absolute, { throwIfNoEntry: false });
    if (link === undefined) return null;
    if (link.isSymbolicLink()) {
      const target = realpathSync(absolute, { encoding: "buffer" });
      if (!target.toString("utf8").startsWith(`${root}/`)) return null;
      if (!statSync(target, { throwIfNoEntry: false })?.isFile()) return null;
    } else if (!link.isFile()) {
      return null;
    }
    // The walk's own stat, so a refreshed row and a freshly built one agree to the second.
    const stats = statPaths(root, [path], raw ? new Map([[path, raw]]) : undefined);
    if (Number.isNaN(stats[0])) return null;
    return [stats[0] as number, stats[1] as number, stats[2] as number];
  } catch (error) {
    if (isNotARow(error)) return null;
    throw error;
  }
}

/**
 * Brings built tables up to date with changed files: the watcher's half of the index. A
 * refresh has two phases. *Gather* (async, nothing locked, nothing written): find the files
 * each changed path stands for, stat them, run the hooks. *Apply* (synchronous, one
 * transaction, under the writer lock): each file and table gets its own savepoint, so one
 * file's failure (a constraint of the `ddl`, a bad value) is an `error` change for that file
 * while every other file commits. In-memory state (column lists) is re-read from SQLite after
 * the transaction, so it can never drift from what committed.
 */
export class Refresher {
  /**
   * Size and times of each file as its last committed refresh read it, to skip re-reading it
   * unchanged. Recorded only once the file's rows are committed: a file whose commit failed
   * (a full disk) is seen as changed by the next recheck.
   */
  private readonly fileSignatures = new Map<string, string>();
  /** Files whose last refresh failed to commit, to apply again (`unsettledFiles`). */
  private readonly unsettled = new Set<string>();
  /**
   * Files whose committed rows came from a read the file may not have lasted through: its
   * size and times after the read differ from before (changed, gone, its folder renamed while
   * a hook ran, which then found nothing there). Rows that cannot be trusted to move with it.
   */
  private readonly unverified = new Set<string>();
  /**
   * Names the last refresh with moves left to them (`coveredByMove`): the moved folder's own
   * watch reports its rename as a name under it, which the watcher's recheck hands back a
   * moment later. Still nothing there and no rows in doubt, the recheck skips it. Each name is
   * taken once; past `MAX_COVERED_NAMES` the set starts again (a name it drops is read again).
   */
  private coveredNames = new Set<string>();
  /** Files being parsed and committed now: when each one's extraction runs. */
  private readonly scheduler: ExtractScheduler;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly root: string,
    /** The index's tables: the catalog's parsed tables and `pathTables` are kept current. */
    private readonly catalog: Catalog,
    private readonly pathTables: PathTables,
    private readonly options: RefreshOptions,
    private readonly withWriter: WriterLock,
    /** The thread that reads large files of built-in formats, or `null`: this one. */
    private readonly staging: () => StagingWorker | null = () => null,
    /** The thread that lists the destinations of a burst of moves, or `null`: this one. */
    private readonly lister: () => TreeListingHelper | null = () => null,
    /** The thread that writes a burst of moves, or `null`: this one. */
    private readonly moveWriter: () => MoveWriter | null = () => null,
  ) {
    this.scheduler = new ExtractScheduler(
      () => this.options.concurrency ?? os().availableParallelism(),
    );
  }

  /**
   * The staging thread a refresh may use: its own turn of it, or for a caller holding the
   * writer (who must not wait for that turn) the one it lends (`heldStaging`).
   */
  private stagingFor(options: Pick<StartOptions, "writerHeld" | "heldStaging">) {
    return options.writerHeld ? (options.heldStaging ?? null) : this.staging();
  }

  /** Live tables with the column that holds each row's file. */
  private liveTables(): [string, string][] {
    return [
      ...this.pathTables.filledTables().map((name): [string, string] => [name, "path"]),
      ...this.catalog.parsedTables().map((t): [string, string] => [t.spec.name, FILE_PATH_COLUMN]),
    ];
  }

  /**
   * Indexes the lookup column of every live table, once: a refresh then costs what changed,
   * not the size of the table. Made on first refresh, so one-shot queries never pay for it
   * (and a table dropped and built again gets its index again).
   */
  private async ensureLookupIndexes(
    withWriter: WriterLock,
    options: Pick<StartOptions, "writerHeld" | "heldStaging">,
  ): Promise<void> {
    const exists = cachedStatement(
      this.db,
      "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?",
    ).pluck();
    const missing: string[] = [];
    let rows = 0;
    for (const [table, column] of this.liveTables()) {
      if (exists.get(lookupIndexName(table)) !== 0) continue;
      missing.push(lookupIndexSql(table, column));
      rows += rowsAtMost(this.db, table);
    }
    if (missing.length === 0) return;
    // An index of a few rows is made here: the staging thread's start would cost more.
    const worker = rows < LOOKUPS_OFF_THREAD_FROM_ROWS ? null : this.stagingFor(options);
    if (worker === null) {
      await withWriter(() => this.db.exec(missing.join(";\n")));
      return;
    }
    if (options.writerHeld) return worker.exec(missing);
    // Indexing a table of millions of rows takes seconds: on the staging thread, in its turn.
    await worker.exclusive(() => withWriter(() => worker.exec(missing)));
  }

  /**
   * Indexes the lookup column of every live table now, in the writer's turn: a live index
   * calls this once a table is filled, so the first change after it waits neither for the index
   * of a table of a million rows nor for the staging thread's start.
   */
  prepareLookups(): Promise<void> {
    return this.ensureLookupIndexes(this.withWriter, {});
  }

  /** Every file some table holds rows for, under `dir` (relative; `""` for all). */
  private indexedFilesUnder(dir: string): Set<string> {
    const files = new Set<string>();
    for (const [table, column] of this.liveTables()) {
      // A range on the indexed column: every path that starts with `dir/` sorts between
      // `dir/` and `dir0` ('0' follows '/').
      const sql =
        dir === ""
          ? `SELECT DISTINCT ${column} FROM ${quoteIdentifier(table)}`
          : `SELECT DISTINCT ${column} FROM ${quoteIdentifier(table)} WHERE ${column} > ? AND ${column} < ?`;
      const statement = cachedStatement(this.db, sql).pluck();
      const rows = (dir === "" ? statement.all() : statement.all(`${dir}/`, `${dir}0`)) as string[];
      for (const file of rows) files.add(file);
    }
    return files;
  }

  /**
   * The files a changed path stands for: itself, what is under it now, what was under it.
   * Folders the walk could not read become error changes; their files are not rows.
   */
  private filesFor(path: string, errors: RowChange[]): Set<string> {
    const files = new Set(this.indexedFilesUnder(path));
    if (path !== "") files.add(path);
    try {
      const stats = lstatSync(`${this.root}/${path}`, { throwIfNoEntry: false });
      if (stats?.isDirectory()) {
        const walked = walkSelection({
          root: this.root,
          selection: { kind: "tree", base: path },
          useGitignore: false,
        });
        for (const file of walked.paths) files.add(file);
        for (const skipped of walked.skipped) {
          errors.push({
            action: "error",
            table: null,
            file_path: skipped.path,
            error: skipped.reason,
          });
        }
      }
    } catch (error) {
      if (!isNotARow(error)) {
        errors.push({ action: "error", table: null, file_path: path, error: messageOf(error) });
      }
    }
    return files;
  }

  /**
   * Brings every built table up to date with the files at `paths` (relative; files or
   * directories, existing or not) and returns the row changes, committed before it returns.
   * A file whose hook fails has no rows (as a fresh scan would show) and yields an `error`
   * change. With `onlyIfChanged`, files whose size and times match the last refresh are left
   * alone.
   */
  async refresh(
    paths: Iterable<string>,
    options: Pick<StartOptions, "onlyIfChanged" | "scope" | "writerHeld" | "heldStaging"> = {},
  ): Promise<RowChange[]> {
    const changes: RowChange[] = [];
    const run = await this.start(paths, {
      ...options,
      onCommit: (committed) => {
        for (const change of expandChanges(committed)) changes.push(change);
      },
    });
    await run.done;
    return changes;
  }

  /**
   * Starts a refresh and resolves once its first phase has committed: every path-table row,
   * and the rows of files that left a parsed table (deleted, renamed, no longer matching).
   * Each file a parsed table still selects is then parsed on its own (in the lanes of
   * `ExtractScheduler`: hooks in parallel in theirs, formats and extract functions in the
   * other) and committed as soon as its extraction is done, so one slow hook never holds back
   * another file's rows. `onCommit` gets the changes of every commit, in
   * commit order; `done` resolves when every file is committed or superseded (a later
   * refresh of the same file stops its hooks: only the newest state is written).
   */
  async start(paths: Iterable<string>, options: StartOptions): Promise<{ done: Promise<void> }> {
    // A caller that already holds the writer (building a table) must not wait for itself.
    const withWriter: WriterLock = options.writerHeld ? async (task) => task() : this.withWriter;
    const list = [...paths];
    let jobs: ParseJob[];
    const reparse: string[] = [];
    try {
      jobs = await this.firstPhase(list, withWriter, options, reparse);
    } catch (error) {
      // Nothing of it committed (a full disk): every path is applied again later.
      for (const path of list) this.unsettled.add(path);
      for (const { from, to } of options.moves ?? []) this.unsettled.add(from).add(to);
      throw error;
    }
    for (const path of list)
      if (!jobs.some((job) => job.file === path)) this.unsettled.delete(path);
    const done = Promise.all(jobs.map((job) => this.track(job, withWriter, options)));
    const tables = new Set(this.catalog.parsedTables().filter(dependsOnPath));
    if (reparse.length === 0 || tables.size === 0) return { done: done.then(() => undefined) };
    // Moved files' rows that hold parts of their path are parsed again, in those tables only.
    const again = await this.start(reparse, { ...options, moves: [], scope: tables });
    return { done: Promise.all([done, again.done]).then(() => undefined) };
  }

  /** Stats the files `paths` stand for and commits what needs no hook; returns the hooks' jobs. */
  private async firstPhase(
    paths: readonly string[],
    withWriter: WriterLock,
    options: StartOptions,
    reparse: string[],
  ): Promise<ParseJob[]> {
    // Listed from now on, while the rest is gathered and moves are applied (`applyMoves`).
    const listings = this.listDestinations(options.moves ?? []);
    try {
      // Before the first look-up: without its index, finding a folder's rows scans the table.
      await this.ensureLookupIndexes(withWriter, options);
      return await this.gatherAndApply(paths, listings, withWriter, options, reparse);
    } finally {
      listings.close();
    }
  }

  /** The files `paths` stand for, but names a move covers (`coveredByMove`). */
  private async candidatesFor(
    paths: readonly string[],
    options: StartOptions,
    errors: RowChange[],
    slices: Slices,
  ): Promise<Set<string>> {
    const candidates = new Set<string>();
    const destinations = new Set((options.moves ?? []).map((move) => move.to));
    const exists = (path: string) => this.exists(path);
    const covered: string[] = [];
    for (const path of paths) {
      if (coveredByMove(destinations, path, exists)) {
        covered.push(path);
        continue;
      }
      if (options.onlyIfChanged && this.stillCovered(path)) continue;
      const files = this.filesFor(path, errors);
      for (const file of files) candidates.add(file);
      await slices.yieldIfDue();
    }
    if (this.coveredNames.size + covered.length > MAX_COVERED_NAMES) this.coveredNames.clear();
    for (const name of covered) this.coveredNames.add(name);
    return candidates;
  }

  /** Gathers what `paths` stand for, then applies the moves and the stats under the writer. */
  private async gatherAndApply(
    paths: readonly string[],
    listings: TreeListings,
    withWriter: WriterLock,
    options: StartOptions,
    reparse: string[],
  ): Promise<ParseJob[]> {
    const errors: RowChange[] = [];
    const slices = new Slices(SLICE_MS);
    const candidates = await this.candidatesFor(paths, options, errors, slices);
    const stats = await this.statAll(candidates, options.onlyIfChanged ?? false, errors, slices);
    const entries = [...stats];
    const jobs: ParseJob[] = [];
    const applyFrom = (at: number): number => {
      let applied: ReturnType<Refresher["applyStats"]>;
      try {
        applied = this.applyStats(entries, at, options, slices);
      } catch (error) {
        // The refresh fails whole: jobs of slices committed before it never run either.
        for (const job of jobs) this.scheduler.withdraw(job.scheduled);
        throw error;
      }
      jobs.push(...applied.jobs);
      options.onCommit(at === 0 ? [...errors, ...applied.changes] : applied.changes);
      return applied.next;
    };
    return withWriter(async () => {
      const applied = (plan: MovePlan) => {
        errors.push(...plan.errors);
        for (const file of plan.files.values()) if (!plan.refresh.has(file)) reparse.push(file);
      };
      const late = await this.applyMoves(options.moves ?? [], listings, applied, options, slices);
      for (const file of stats.keys()) late.delete(file);
      for (const entry of await this.statAll(late, false, errors, slices)) entries.push(entry);
      let at = 0;
      do {
        at = applyFrom(at);
        if (at < entries.length) await slices.yield();
      } while (at < entries.length);
      return jobs;
    });
  }

  /** Whether a recheck of `path` can skip it: a name a move covered, still nothing there. */
  private stillCovered(path: string): boolean {
    return this.coveredNames.delete(path) && !this.unsure(path) && !this.exists(path);
  }

  /** Whether something is at `path` (a name that cannot be looked at counts as something). */
  private exists(path: string): boolean {
    try {
      return lstatSync(`${this.root}/${path}`, { throwIfNoEntry: false }) !== undefined;
    } catch {
      return true;
    }
  }

  /**
   * The moves' destinations, listed in order as they are taken: on the listing thread from
   * the last one back while this thread applies the first ones (a checkout's thousand), here
   * for a few.
   */
  private listDestinations(moves: readonly FolderMove[]): TreeListings {
    const folders = moves.map((move) => move.to);
    const lister = folders.length < MOVES_FOR_THREAD ? null : this.lister();
    if (lister !== null) return lister.list(folders);
    return { take: (at) => listTree(this.root, folders[at] as string), close: () => {} };
  }

  private moveContext(): MoveContext {
    let check: InclusionCheck | undefined;
    return {
      db: this.db,
      catalog: this.catalog,
      // Made on first use: applying moves needs no ignore rules.
      inclusion: {
        includes: (path) => (check ??= new InclusionCheck(this.root, this.options)).includes(path),
      },
      busy: (file) => this.unsure(file),
    };
  }

  /**
   * Whether `file`'s committed rows may not be its current ones: a job for it is queued,
   * running or winding down, its last commit failed, or its last read was not verified.
   */
  private unsure(file: string): boolean {
    return this.unsettled.has(file) || this.unverified.has(file) || this.scheduler.has(file);
  }

  /**
   * Applies moves (call with the writer held), as many per commit as fit in a slice: each one
   * planned from its destination's listing just before, its rows renamed, and what the
   * refresher knows of its files renamed with them; each plan goes to `onApplied` once
   * committed (a burst's listings are not kept past their slice). Returns the files (new
   * names) to refresh: which files a move renames and whether their rows are current is
   * decided here, under the writer, as jobs may have committed since the refresh began.
   */
  private async applyMoves(
    moves: readonly FolderMove[],
    listings: TreeListings,
    onApplied: (plan: MovePlan) => void,
    options: StartOptions,
    slices: Slices,
  ): Promise<Set<string>> {
    const late = new Set<string>();
    if (moves.length === 0) return late;
    const context = this.moveContext();
    const applied = (plans: readonly MovePlan[]) => {
      for (const plan of plans) {
        for (const file of plan.refresh) late.add(file);
        this.movedFiles(plan.files);
        onApplied(plan);
      }
    };
    const writer = moves.length < MOVES_FOR_THREAD ? null : this.moveWriter();
    if (writer !== null) {
      // Each step's changes are handed on as it commits: this thread is free meanwhile.
      await this.applyMovesOnThread(writer, context, moves, listings, applied, options);
      return late;
    }
    options.onMovesApplying?.(true);
    try {
      for (let at = 0; at < moves.length;) {
        const slice = this.applyMoveSlice(context, moves, listings, at, slices);
        at = slice.next;
        applied(slice.plans);
        options.onCommit(slice.changes);
        if (at < moves.length) await slices.yield();
      }
      return late;
    } finally {
      options.onMovesApplying?.(false);
    }
  }

  /**
   * Applies moves as `applyMoves` does, their rows read and written on the move thread a step
   * at a time (see move-writer.ts): while it writes one step's moves, this thread decides the
   * next step's from their rows, then numbers and sends the events of the step written, and
   * answers statements.
   */
  private async applyMovesOnThread(
    writer: MoveWriter,
    context: MoveContext,
    moves: readonly FolderMove[],
    listings: TreeListings,
    applied: (plans: readonly MovePlan[]) => void,
    options: StartOptions,
  ): Promise<void> {
    const tables = movedTables(this.catalog);
    const burst = writer.burst(tables.map(({ moved: _moved, label: _label, ...sql }) => sql));
    try {
      await this.applyMoveSteps(burst, context, moves, listings, tables, applied, options);
    } catch (error) {
      burst.abandon();
      throw error;
    }
  }

  /** The steps of `applyMovesOnThread`, each decided while the step before is written. */
  private async applyMoveSteps(
    burst: MoveBurst,
    context: MoveContext,
    moves: readonly FolderMove[],
    listings: TreeListings,
    tables: readonly MovedTable[],
    applied: (plans: readonly MovePlan[]) => void,
    options: StartOptions,
  ): Promise<void> {
    let [at, next] = [0, stepEnd(moves, 0, [])];
    let reading = burst.step([], moves.slice(at, next), false);
    let writing: WrittenStep | null = null;
    for (;;) {
      const reads = await reading.reads;
      const plans = reads.map((read, i) => {
        const plan = planMove(moves[at + i] as FolderMove, listings.take(at + i));
        decideMove(context, plan, read);
        return plan;
      });
      let end = stepEnd(moves, next, moves.slice(at, next));
      const writes = plans.map(moveWriteOf);
      let sent: WrittenStep;
      if (end === next && next < moves.length) {
        // The next move lies in a folder of this step's: its rows are read after this write.
        sent = { step: burst.step(writes, [], false), plans, reads };
        end = stepEnd(moves, next, []);
        reading = burst.step([], moves.slice(next, end), false);
      } else {
        reading = burst.step(writes, moves.slice(next, end), next >= moves.length);
        sent = { step: reading, plans, reads };
      }
      // The thread writes this step (sent) while this one hands on the step before.
      if (writing !== null) await this.movesWritten(tables, writing, applied, options);
      writing = sent;
      if (next >= moves.length) break;
      [at, next] = [next, end];
    }
    await this.movesWritten(tables, writing, applied, options);
  }

  /** Once a step of moves is committed on the move thread: its files follow, its changes go. */
  private async movesWritten(
    tables: readonly MovedTable[],
    { step, plans, reads }: WrittenStep,
    applied: (plans: readonly MovePlan[]) => void,
    options: StartOptions,
  ): Promise<void> {
    const written = await step.written;
    afterMoves(this.catalog);
    this.rereadColumns();
    const changes: CommitChange[] = [];
    plans.forEach((plan, i) => {
      this.recheckPlan(plan);
      const [read, wrote] = [reads[i] as MoveReads, written[i] as MoveWritten];
      for (const change of moveChanges(tables, plan, read, wrote)) changes.push(change);
    });
    applied(plans);
    options.onCommit(changes);
  }

  /** Applies moves from `at` on in one commit, until the slice is due; returns where it ended. */
  private applyMoveSlice(
    context: MoveContext,
    moves: readonly FolderMove[],
    listings: TreeListings,
    at: number,
    slices: Slices,
  ): { plans: MovePlan[]; changes: CommitChange[]; next: number } {
    const plans: MovePlan[] = [];
    const changes: CommitChange[] = [];
    let next = at;
    try {
      this.db.transaction(() => {
        do {
          const plan = planMove(moves[next] as FolderMove, listings.take(next));
          next++;
          plans.push(plan);
          for (const change of applyMove(context, plan)) changes.push(change);
          this.recheckPlan(plan);
        } while (next < moves.length && !slices.due());
      })();
    } finally {
      this.rereadColumns();
    }
    return { plans, changes, next };
  }

  /**
   * Completes a move's plan under the writer, once applied: files under the source that a job
   * is for moved too (they may have no rows yet, with no path-table filled), and are refreshed
   * under their new names.
   */
  private recheckPlan(plan: MovePlan): void {
    const { from: source, to: destination } = plan.move;
    for (const file of this.scheduler.filesUnder(source)) {
      if (plan.files.has(file)) continue;
      const moved = `${destination}${file.slice(source.length)}`;
      plan.files.set(file, moved);
      plan.refresh.add(moved);
    }
  }

  /** Files renamed with their folder: their last committed state goes with them. */
  private movedFiles(files: ReadonlyMap<string, string>): void {
    for (const [from, to] of files) {
      // Rows a job would write under the old name never are (the new name is refreshed as
      // usual: see `applyMoves`).
      this.scheduler.abandon(from);
      this.unverified.delete(from);
      const key = this.fileSignatures.get(from);
      if (key === undefined) continue;
      this.fileSignatures.delete(from);
      this.fileSignatures.set(to, key);
    }
  }

  private track(job: ParseJob, withWriter: WriterLock, options: StartOptions): Promise<void> {
    return this.scheduler.run(job.scheduled, () => this.runJob(job, withWriter, options));
  }

  /**
   * Resolves once no file is being parsed or committed; with `tables` (SQL names), once no
   * file is for one of them (a statement waits only for the tables it reads).
   */
  idle(tables?: readonly string[]): Promise<void> {
    return this.scheduler.idle(tables);
  }

  /** Files whose last refresh failed to commit (a full disk): refresh them again to retry. */
  unsettledFiles(): string[] {
    return [...this.unsettled];
  }

  /**
   * Records that `file`'s rows for the state `key` are committed; `verified` false when the
   * file was not in that state after its read (the rows may not be what it holds).
   */
  private settled(file: string, key: string, verified = true): void {
    // A file that is gone is forgotten: a long-lived server sees endless new names.
    if (key === MISSING || !verified) this.fileSignatures.delete(file);
    else this.fileSignatures.set(file, key);
    if (verified) this.unverified.delete(file);
    else this.unverified.add(file);
    this.unsettled.delete(file);
  }

  /** The stat key of `file` now (see `Gathered.key`), `null` when it cannot be told. */
  private keyNow(file: string): string | null {
    try {
      return statKey(fileRowStat(this.root, file));
    } catch {
      return null;
    }
  }

  /** Stops every running hook of live refreshes: nothing more they found is written. */
  abortAll(): void {
    this.scheduler.abortAll();
  }

  /** Whether `file` in the state `key` is committed already, or its hooks run for it now. */
  private handled(file: string, key: string): boolean {
    return this.fileSignatures.get(file) === key || this.scheduler.currentKey(file) === key;
  }

  private async statAll(
    candidates: Set<string>,
    onlyIfChanged: boolean,
    errors: RowChange[],
    slices: Slices,
  ): Promise<Map<string, Gathered>> {
    const inclusion = new InclusionCheck(this.root, this.options);
    const gathered = new Map<string, Gathered>();
    for (const file of candidates) {
      await slices.yieldIfDue();
      let stat: FileStat | null;
      try {
        stat = fileRowStat(this.root, file);
        if (stat !== null && !inclusion.includes(file)) stat = null;
      } catch (error) {
        // Unexplained: the file is not a row until it can be read again.
        errors.push({ action: "error", table: null, file_path: file, error: messageOf(error) });
        stat = null;
      }
      const key = statKey(stat);
      if (onlyIfChanged && this.handled(file, key)) continue;
      // Taken before the hooks read the file: an edit while they run is seen next time.
      const recorded =
        this.catalog.store !== null && stat !== null ? fileSignature(`${this.root}/${file}`) : null;
      gathered.set(file, { stat, key, signature: recorded });
    }
    return gathered;
  }

  /**
   * Runs `write` in a savepoint; its failure becomes an `error` change for that file, unless
   * it is the index's own (a full disk), which fails the whole commit.
   */
  private isolated(
    changes: RowChange[],
    file: string,
    table: string | null,
    write: () => RowChange[],
  ): boolean {
    try {
      // A loop, not a spread: a large file's changes are more than a call's arguments may be.
      for (const change of this.db.transaction(write)()) changes.push(change);
      return true;
    } catch (error) {
      if (isCommitFailure(error)) throw error;
      changes.push({ action: "error", table, file_path: file, error: messageOf(error) });
      return false;
    }
  }

  /**
   * One slice of the first phase, its own commit (from `from` until the slice is due): path-table
   * rows of each file, and no rows in a parsed table
   * for a file it no longer selects. Returns the files left to parse. A file parsed by an
   * earlier refresh still running is superseded here (its hooks are stopped).
   */
  private applyStats(
    entries: readonly [string, Gathered][],
    from: number,
    options: StartOptions,
    slices: Slices,
  ): { changes: RowChange[]; jobs: ParseJob[]; next: number } {
    const scope = options.scope ?? null;
    const keepUnchanged = options.keepUnchanged ?? false;
    const onlyIfChanged = options.onlyIfChanged ?? false;
    const changes: RowChange[] = [];
    const jobs: ParseJob[] = [];
    const parsedTables = [...(scope ?? this.catalog.parsedTables())];
    const done: [file: string, key: string][] = [];
    // A large file that left a table loses its rows on the staging thread, as a job.
    const staging = this.stagingFor(options);
    let next = from;
    try {
      this.db.transaction(() => {
        // One slice: at least one file, then as many as fit in its time.
        for (; next < entries.length && (next === from || !slices.due()); next++) {
          const [file, { stat, key: statKey, signature }] = entries[next] as [string, Gathered];
          if (scope === null) {
            // Asked again under the writer: a job for this very state may have committed
            // since the stat (its rows swapped in on the staging thread, the writer held).
            if (onlyIfChanged && this.handled(file, statKey)) continue;
            this.isolated(changes, file, null, () => this.pathTables.refreshFile(file, stat));
            if (keepUnchanged && this.scheduler.currentKey(file) === statKey) continue;
            this.scheduler.supersede(file);
          }
          const wanted: LiveParsedTable[] = [];
          const leaving = new Set<LiveParsedTable>();
          for (const table of parsedTables) {
            if (stat !== null && table.matches(file)) {
              wanted.push(table);
              continue;
            }
            if (staging !== null && leavesOffThread(this.db, table.spec, file, staging.runsDdl)) {
              leaving.add(table);
              continue;
            }
            const label = table.spec.label ?? table.spec.name;
            this.isolated(changes, file, label, () => replaceFileRows(this.db, table, file, []));
            this.catalog.store?.forgetFile(table.spec.name, file);
          }
          wanted.push(...leaving);
          if (wanted.length === 0) {
            done.push([file, statKey]);
            continue;
          }
          // Registered now, in the commit that supersedes the file's older job: a refresh
          // that follows finds it.
          const scheduled = this.scheduler.add({
            file,
            key: statKey,
            tables: wanted.map((table) => table.spec.name),
            supersedable: scope === null,
          });
          jobs.push({ file, signature, key: statKey, tables: wanted, leaving, scope, scheduled });
        }
      })();
    } catch (error) {
      // Registered in the commit that failed: the next refresh of these files must read them.
      for (const job of jobs) this.scheduler.withdraw(job.scheduled);
      throw error;
    } finally {
      this.rereadColumns();
    }
    // Committed: a file with hooks to run is recorded when their rows are.
    for (const [file, key] of done) this.settled(file, key);
    return { changes, jobs, next };
  }

  private rereadColumns(): void {
    for (const table of this.catalog.parsedTables()) {
      table.columns = storedColumns(this.db, table.spec.name);
    }
  }

  /** One table's rows of one file, or why it has none. */
  private async extract(
    table: LiveParsedTable,
    file: string,
    signal: AbortSignal,
  ): Promise<HookRow[] | string> {
    const outcome = await table.spec.extractor
      .extract({ path: file, root: this.root }, signal)
      // A hook program that cannot start fails this file's rows, never the refresh.
      .catch((error: unknown): ExtractOutcome => ({ ok: false, reason: messageOf(error) }));
    return outcome.ok ? outcome.rows : outcome.reason;
  }

  /**
   * One table's output for a job's file, extracted in its extractor's lane; `null` when the
   * job is superseded first. A large file of a built-in format is read by the staging thread
   * (`staging`), or on this thread when committed (`STAGED`).
   */
  private async output(
    table: LiveParsedTable,
    job: ParseJob,
    staging: { worker: StagingWorker; stages: string[] } | null,
  ): Promise<ParseOutput | null> {
    if (job.leaving.has(table)) return this.leavingOutput(table, job, staging);
    const ddlToo = staging?.worker.runsDdl ?? false;
    if (refreshesStaged(table, `${this.root}/${job.file}`, ddlToo)) {
      if (staging === null) return STAGED;
      // Superseded while it waited for the thread: reading tens of megabytes is for nothing.
      if (job.scheduled.signal.aborted) return null;
      const stage = staging.worker.newStage();
      staging.stages.push(stage);
      const described = stagedTableOf(table.spec);
      const reason = await staging.worker
        .stage(stage, described, job.file, this.root)
        .catch((error: unknown) => `cannot read the file: ${messageOf(error)}`);
      return reason ?? new StagedOffThread(stage, described);
    }
    const { scheduled } = job;
    const release = await this.scheduler.turn(laneOf(table.spec.extractor.kind), scheduled);
    if (release === null) return null;
    try {
      return await this.extract(table, job.file, scheduled.signal);
    } finally {
      release();
    }
  }

  /**
   * A table the job's file left: its rows there are read by the staging thread (without the
   * writer: other files commit meanwhile) and deleted when committed; `[]` (no rows, on this
   * thread) without the thread.
   */
  private async leavingOutput(
    table: LiveParsedTable,
    job: ParseJob,
    staging: { worker: StagingWorker; stages: string[] } | null,
  ): Promise<ParseOutput | null> {
    if (staging === null) return [];
    if (job.scheduled.signal.aborted) return null;
    const stage = staging.worker.newStage();
    staging.stages.push(stage);
    const described = stagedTableOf(table.spec);
    // A failed read is made again under the writer (see `clearRows`).
    await staging.worker.leaving(stage, described, job.file).catch(() => {});
    return new LeavingOffThread(stage, described);
  }

  /**
   * Parses one file for the tables that select it and commits its rows. A large file of a
   * built-in format holds the staging thread from its read to its commit.
   */
  private async runJob(
    job: ParseJob,
    withWriter: WriterLock,
    options: StartOptions,
  ): Promise<void> {
    // A caller holding the writer (a table build) must not wait for the thread's turn.
    const worker = this.stagingFor(options);
    const offThread =
      worker !== null &&
      (job.leaving.size > 0 ||
        job.tables.some((table) =>
          refreshesStaged(table, `${this.root}/${job.file}`, worker.runsDdl),
        ));
    const late = !offThread
      ? await this.parseAndCommit(job, withWriter, options, null)
      : options.writerHeld
        ? await this.parseAndCommit(job, withWriter, options, worker)
        : await worker.exclusive(() => this.parseAndCommit(job, withWriter, options, worker));
    if (late) {
      const again = await this.start([job.file], { ...options, onlyIfChanged: false });
      await again.done;
    }
  }

  /**
   * Parses one job's file and commits its rows; whether a table that selects the file was
   * built meanwhile (it has no rows of it yet).
   */
  private async parseAndCommit(
    job: ParseJob,
    withWriter: WriterLock,
    options: StartOptions,
    worker: StagingWorker | null,
  ): Promise<boolean> {
    const { signal } = job.scheduled;
    const staging = worker && { worker, stages: [] as string[] };
    try {
      const outputs = await Promise.all(job.tables.map((t) => this.output(t, job, staging)));
      if (signal.aborted) return false;
      return await withWriter(async () => {
        // Superseded while it waited for the writer: a newer refresh owns this file now.
        if (!this.scheduler.retire(job.scheduled)) return false;
        let changes: RowChange[];
        try {
          const swapped = worker ? await this.swapAll(worker, job.file, outputs) : outputs;
          changes = this.applyParsed(job, swapped as ParseOutput[]);
        } catch (error) {
          this.unsettled.add(job.file);
          throw error;
        }
        // Stated after the read: a file moved or changed while its hook ran is not trusted.
        this.settled(job.file, job.key, this.keyNow(job.file) === job.key);
        options.onCommit(changes);
        return this.catalog
          .parsedTables()
          .some(
            (table) => job.scope === null && !job.tables.includes(table) && table.matches(job.file),
          );
      });
    } finally {
      // What a superseded or failed job staged (a swap drops its own).
      if (staging !== null) {
        await Promise.all(staging.stages.map((stage) => worker?.drop(stage).catch(() => {})));
      }
    }
  }

  /**
   * Has the staging thread write each staged table's changes (call under the writer): its own
   * transaction, so this thread holds none across the wait. A failure of one table is that
   * file's error for it; a failure of the index (a full disk) fails the commit.
   */
  private async swapAll(
    worker: StagingWorker,
    file: string,
    outputs: readonly (ParseOutput | null)[],
  ): Promise<(ParseOutput | null)[]> {
    const swapped: (ParseOutput | null)[] = [];
    for (const output of outputs) {
      if (!(output instanceof StagedOffThread || output instanceof LeavingOffThread)) {
        swapped.push(output);
        continue;
      }
      try {
        swapped.push(
          output instanceof LeavingOffThread
            ? new SwappedOffThread(await worker.clear(output.stage, output.table, file), false)
            : new SwappedOffThread(await worker.swap(output.stage, output.table, file), true),
        );
      } catch (error) {
        if (isCommitFailure(error)) throw error;
        swapped.push(messageOf(error));
      }
    }
    return swapped;
  }

  private applyParsed(job: ParseJob, outputs: readonly ParseOutput[]): RowChange[] {
    const changes: RowChange[] = [];
    try {
      this.db.transaction(() => {
        job.tables.forEach((table, i) => {
          const output = outputs[i] as ParseOutput;
          const label = table.spec.label ?? table.spec.name;
          let stands: boolean;
          if (output instanceof SwappedOffThread) {
            // Committed by the staging thread already; its changes may be many (no spread).
            for (const change of output.changes) changes.push(change);
            stands = output.stands;
          } else if (output === STAGED) {
            stands = this.applyStaged(changes, job.file, table, label);
          } else if (output instanceof StagedOffThread || output instanceof LeavingOffThread) {
            throw new Error("a staged file's rows were not swapped in");
          } else {
            stands = this.applyRows(changes, job.file, table, label, output);
          }
          // A file whose rows stand is recorded; any other is parsed again next time.
          if (stands && job.signature !== null) {
            this.catalog.store?.recordFile(table.spec.name, job.file, job.signature);
          } else {
            this.catalog.store?.forgetFile(table.spec.name, job.file);
          }
        });
      })();
    } finally {
      this.rereadColumns();
    }
    return changes;
  }

  /** Writes a file's rows (none for a failure) into one table; whether its rows stand. */
  private applyRows(
    changes: RowChange[],
    file: string,
    table: LiveParsedTable,
    label: string,
    output: HookRow[] | string,
  ): boolean {
    if (typeof output === "string") {
      changes.push({ action: "error", table: label, file_path: file, error: output });
    }
    const rows = typeof output === "string" ? [] : output;
    const written = this.isolated(changes, file, label, () =>
      replaceFileRows(this.db, table, file, rows),
    );
    if (!written) {
      // Its rows break a rule of the table: the file has no rows, like a failed hook.
      this.isolated(changes, file, label, () => replaceFileRows(this.db, table, file, []));
    }
    return written && typeof output !== "string";
  }

  /** As `applyRows`, the file read through the staging table (see staged-refresh.ts). */
  private applyStaged(
    changes: RowChange[],
    file: string,
    table: LiveParsedTable,
    label: string,
  ): boolean {
    let reason = null as string | null;
    const written = this.isolated(changes, file, label, () => {
      const staged = replaceFileRowsStaged(this.db, table, file, this.root);
      if (typeof staged !== "string") return staged;
      reason = staged;
      return [];
    });
    if (written && reason === null) return true;
    if (reason !== null) return this.applyRows(changes, file, table, label, reason);
    this.isolated(changes, file, label, () => replaceFileRows(this.db, table, file, []));
    return false;
  }

  /**
   * Brings a parsed table restored from a persisted index up to date with the tree: files
   * whose size, mtime or (for racy ones) content differ from the catalog's record are parsed
   * again, files that are gone lose their rows, new files are parsed. Returns the files the
   * walk skipped and the row changes (errors included). Call with the writer held.
   */
  async reconcile(
    table: LiveParsedTable,
    store: CatalogStore,
    staging: StagingWorker | null,
  ): Promise<{ skipped: SkippedPath[]; changes: RowChange[] }> {
    const { useGitignore, extraIgnores, onEmpty } = this.options;
    const walked = walkTableFiles(table.spec, {
      root: this.root,
      useGitignore,
      extraIgnores,
      onEmpty,
    });
    const recorded = store.files(table.spec.name);
    const stale: string[] = [];
    for (const path of walked.paths) {
      if (walked.rawPaths.has(path)) continue;
      const signature = recorded.get(path);
      if (signature === undefined || !unchangedSince(signature, `${this.root}/${path}`)) {
        stale.push(path);
      }
      recorded.delete(path);
    }
    // What is left was recorded but is not listed now: deleted, renamed or ignored.
    stale.push(...recorded.keys());
    const unnameable = [...walked.rawPaths.keys()].map((path) => ({
      path,
      reason: "its name is not valid UTF-8, so it cannot be handed to the on-file command",
    }));
    const changes =
      stale.length === 0
        ? []
        : await this.refresh(stale, {
            scope: new Set([table]),
            writerHeld: true,
            heldStaging: staging,
          });
    return { skipped: [...walked.skipped, ...unnameable], changes };
  }
}
