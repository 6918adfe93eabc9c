import { type FSWatcher, lstatSync, readdirSync, type Stats, watch } from "node:fs";
import { BUILT_IN_SKIPS } from "../scan/ignore-rules.js";
import { Slices } from "../shared/slices.js";
import { FolderMap } from "./folder-map.js";
import { parentKey, reported, SymlinkTargets } from "./symlink-targets.js";
import {
  bySource,
  keyAfterMoves,
  type KeyMove,
  UNCHANGED,
  UnwatchedCheck,
  type UnwatchedCheckStats,
} from "./unwatched-check.js";

/**
 * Paths that changed since the last batch; `rescan` when ignore rules may have changed;
 * `recheck` for paths handled a moment ago, to re-read only if they changed again;
 * `moves`, watched folders renamed (`from` → `to`, innermost first, to apply before `paths`):
 * the same folder (device and inode) went from one name and appeared under the other, with
 * its watches. `paths` then names neither, and a path under `from` is named under `to`.
 */
export interface ChangeBatch {
  paths: Set<string>;
  recheck: Set<string>;
  moves: FolderMove[];
  rescan: boolean;
}

/** A watched folder's rename, reported paths (UTF-8, relative). */
export interface FolderMove {
  from: string;
  to: string;
}

/** One folder's watch; `at.key` follows the folder when it is moved, so events name it anew. */
interface Watched {
  watcher: FSWatcher;
  at: { key: string };
  /** Device and inode: a folder that reappears elsewhere with them is the same one, moved. */
  id: string;
}

function folderId(stats: Stats): string {
  return `${stats.dev}:${stats.ino}`;
}

/** `key` and the folders above it, innermost first (`""` is not one). */
function selfAndAbove(key: string): string[] {
  const keys = [key];
  for (let at = key.lastIndexOf("/"); at > 0; at = key.lastIndexOf("/", at - 1)) {
    keys.push(key.slice(0, at));
  }
  return keys;
}

/**
 * The entries of `map` at or under each of `sources`, each under the innermost source that
 * holds it (moves apply innermost first): one pass over the map, not one per move, so a
 * checkout that renames thousands of folders costs what the watches number, not their square.
 */
function entriesUnder<V>(map: ReadonlyMap<string, V>, sources: ReadonlySet<string>) {
  const found = new Map<string, [string, V][]>();
  for (const entry of map) {
    const source = selfAndAbove(entry[0]).find((key) => sources.has(key));
    if (source === undefined) continue;
    const entries = found.get(source);
    if (entries === undefined) found.set(source, [entry]);
    else entries.push(entry);
  }
  return found;
}

/**
 * Moves in an order that applies them one after another: a move out of a folder inside
 * another moved folder before that one's, and a move out of a name before a move into it (or
 * under it). Moves that need each other first (two folders swapped) are left out: their
 * folders are read as gone and new.
 */
function inApplyOrder(moves: readonly FolderMove[]): FolderMove[] {
  const bySource = new Map(moves.map((move) => [move.from, move]));
  const before = new Map<FolderMove, FolderMove[]>(moves.map((move) => [move, []]));
  for (const move of moves) {
    // Sources above this one's come after it; so do moves into where this one leaves.
    for (const above of selfAndAbove(move.from).slice(1)) {
      const outer = bySource.get(above);
      if (outer !== undefined) before.get(outer)?.push(move);
    }
    for (const at of selfAndAbove(move.to)) {
      const vacating = bySource.get(at);
      if (vacating !== undefined && vacating !== move) before.get(move)?.push(vacating);
    }
  }
  const ordered: FolderMove[] = [];
  const done = new Set<FolderMove>();
  let progressed = true;
  while (progressed) {
    progressed = false;
    for (const move of moves) {
      if (done.has(move) || !(before.get(move) ?? []).every((first) => done.has(first))) continue;
      done.add(move);
      ordered.push(move);
      progressed = true;
    }
  }
  return ordered;
}

/** The new names of `keys` that lie under a source of `moves` (not the sources themselves). */
function namesUnderMoves(keys: Iterable<string>, moves: readonly FolderMove[]): Set<string> {
  const names = new Set<string>();
  if (moves.length === 0) return names;
  const sources = bySource([moves]);
  for (const key of keys) {
    if (sources[0]?.has(key)) continue;
    const moved = keyAfterMoves(key, sources);
    if (moved !== key) names.add(moved);
  }
  return names;
}

/** `path` renamed by the innermost move it lies under (source → destination), or itself. */
function movedPath(path: string, moves: ReadonlyMap<string, string>): string {
  for (const at of selfAndAbove(path)) {
    const to = moves.get(at);
    if (to !== undefined) return `${to}${path.slice(at.length)}`;
  }
  return path;
}

/** Renames the members of `folders` (folders the watcher knows) at and under each move's source. */
function renameFolders(folders: Set<string>, moves: readonly FolderMove[]): void {
  renameMembers(folders, moves, false);
}

/**
 * Renames the members of `names` (changed paths, as events and checks name them) under each
 * move's source, but not a source itself: a name of the batch being gathered that is a source
 * came from the folder above after the move, and names what is there now (in a folder renamed
 * back and forth, the next rename's destination). Renamed with the move, that destination was
 * lost, and the folder read as removed when its old name was found empty.
 */
function renameNamesUnder(names: Set<string>, moves: readonly FolderMove[]): void {
  renameMembers(names, moves, true);
}

function renameMembers(
  paths: Set<string>,
  moves: readonly FolderMove[],
  keepSources: boolean,
): void {
  const bySource = new Map(moves.map(({ from, to }) => [from, to]));
  for (const path of [...paths]) {
    if (keepSources && bySource.has(path)) continue;
    const moved = movedPath(path, bySource);
    if (moved === path) continue;
    paths.delete(path);
    paths.add(moved);
  }
}

/**
 * A file may still be written after the refresh that its first event caused has read it.
 * Paths of every batch are looked at once more this much later (and re-read only if they
 * changed), so a quick second write is never lost.
 */
const RECHECK_AFTER_MS = 75;

/**
 * Once the system refuses more watches (inotify's `max_user_watches`, or too many open files),
 * the folders left without a watch are checked on a thread of their own, one check at a time:
 * their changes are found late, never lost. Watched folders stay immediate. The pause between
 * two checks is this at least...
 */
export const POLL_INTERVAL_MS = 2_000;

/**
 * ...and otherwise this many times the CPU time the last check took, so the checks take at
 * most a tenth of a core however many files they stat: the delay of a change there is then up
 * to that pause plus a check. (A check's CPU time, not its wall time: on a loaded machine a
 * check takes longer without costing more, and a pause of four times its wall time made the
 * delay grow with the load.)
 */
const PAUSE_PER_CHECK_CPU = 9;

/**
 * A file's times come from the kernel's coarse clock, which may lag `Date.now()`: a folder
 * checked for the first time reports the files changed since a moment before the previous
 * check began, with this margin.
 */
const CLOCK_MARGIN_MS = 1_000;

/** Errors that mean the system will not give the watcher another watch. */
const WATCH_LIMIT_CODES = new Set(["ENOSPC", "EMFILE", "ENFILE"]);

/** What the first check of the folders without a watch found, for the warning. */
export interface FirstCheck {
  files: number;
  /** Its wall time and its CPU time (ms). */
  ms: number;
  cpuMs: number;
  /** The pause before the next check (ms). */
  pauseMs: number;
  /** The least pause (ms): the pause is otherwise `PAUSE_PER_CHECK_CPU` times `cpuMs`. */
  minPauseMs: number;
}

/**
 * The one report of a watch limit reached: from then on the folders without a watch are
 * checked by listing them. Made once the first check has run, so it gives the real delay.
 */
export class WatchLimitError extends Error {
  constructor(
    cause: NodeJS.ErrnoException,
    unwatched: number,
    watched: number,
    first: FirstCheck | null,
  ) {
    const limit =
      cause.code === "ENOSPC"
        ? "the system limit on inotify watches (fs.inotify.max_user_watches)"
        : "the limit on open files";
    const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    const delay =
      first === null
        ? `, one check every ${seconds(POLL_INTERVAL_MS)} or more`
        : ` (${first.files} files), one check every ${seconds(first.pauseMs + first.ms)} (the first took ${seconds(first.ms)}, ${seconds(first.cpuMs)} of CPU; the pause between checks is ${PAUSE_PER_CHECK_CPU} times a check's CPU time, ${seconds(first.minPauseMs)} at least), so their changes arrive up to about ${seconds(first.pauseMs + 2 * first.ms)} late`;
    super(
      `${limit} is reached (${cause.code} for ${cause.path ?? "a folder"}): ${unwatched} of ${unwatched + watched} folders have no watch, and changes in them are found by checks that list those folders and stat their files${delay}; changes in the ${watched} watched folders stay immediate; raise the limit for immediate updates everywhere`,
    );
  }
}

/** The error a watch past `WatchOptions.maxWatches` fails with, as the system's own limit. */
function refusedWatch(path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOSPC: watch limit reached, watch '${path}'`), {
    code: "ENOSPC",
    path,
  });
}

function emptyBatch(): ChangeBatch {
  return { paths: new Set(), recheck: new Set(), moves: [], rescan: false };
}

function hasAny(batch: ChangeBatch): boolean {
  return batch.paths.size > 0 || batch.recheck.size > 0 || batch.moves.length > 0;
}

/** What became of a folder asked to be watched. */
type WatchOutcome = "watched" | "refused" | "failed";

export interface WatchOptions {
  /** Handles one batch at a time; the next batch waits until it resolves. */
  onBatch: (batch: ChangeBatch) => Promise<void>;
  onError?: (error: unknown) => void;
  /** A batch closes this long after the last event... */
  quietMs?: number;
  /** ...or this long after its first, whichever comes first (bursts never starve it)... */
  maxWaitMs?: number;
  /**
   * ...but a batch in which at least `STORM_FOLDERS` watched folders were renamed or removed
   * (a checkout, a branch switch) waits for its quiet up to this long after its first instead.
   */
  stormWaitMs?: number;
  /**
   * Makes the test for folders not to watch (relative path → ignored), asked again whenever a
   * `.gitignore` changed. An ignored folder gets no watch at all (a build folder can hold tens
   * of thousands of files). Default: only the built-in skips.
   */
  ignoredFolders?: () => (path: string) => boolean;
  /**
   * Watches at most this many folders, refusing more as the system refuses past its limit
   * (for tests of the fallback; default: only the system's limit).
   */
  maxWatches?: number;
  /**
   * The least pause after a check of the folders without a watch before the next (ms; default
   * `POLL_INTERVAL_MS`). Tests of the pacing set less, so that the pause a check's CPU time
   * gives shows on a small tree.
   */
  minCheckPauseMs?: number;
}

export interface TreeWatcher {
  /** Resolves once the watcher sees the whole tree. */
  ready: Promise<void>;
  close(): Promise<void>;
  /** Folders watched now (one inotify watch each). */
  readonly folders: number;
  /** What the checks of the folders without a watch (past the limit) have done so far. */
  readonly unwatchedChecks: UnwatchedCheckStats;
  /** The folders without a watch now (reported paths, `""` the root), checked by listing. */
  unwatchedFolders(): string[];
  /** How many folders have no watch now (`unwatchedFolders().length`, without the list). */
  readonly unwatchedCount: number;
  /**
   * Hands over the changes seen so far at once (no waiting for the batch to close) and
   * resolves when the handler is done with them.
   */
  settle(): Promise<void>;
  /** Hands `paths` to the handler again as a recheck (re-read only if they changed). */
  recheck(paths: Iterable<string>): void;
}

/**
 * Watched folders renamed or removed in one batch from which the batch is a storm (see
 * `WatchOptions.stormWaitMs`). Only folders count: files made or renamed one after another (a
 * build's output, an editor's save by rename, a log's rotation) keep the usual wait, so their
 * events are never held for a storm's.
 */
const STORM_FOLDERS = 64;

/** Batches `settle` hands over at most: a tree that never stops changing never settles. */
const SETTLE_ROUNDS = 4;

/** Folders handled per turn of the event loop while watches are added. */
const FOLDERS_PER_SLICE = 256;

/**
 * Main-thread time the names of one batch's `rename` events are handled for before the loop
 * turns (statements answered meanwhile): a checkout names thousands of folders at once.
 */
const RESYNC_SLICE_MS = 12;

const SLASH = Buffer.from("/");

/**
 * Folder keys are raw relative paths held as latin1 strings: one character per byte, so a name
 * that is not UTF-8 keeps its identity; `""` is the root.
 */
function childKey(folder: string, name: string): string {
  return folder === "" ? name : `${folder}/${name}`;
}

function isSkipped(key: string): boolean {
  return key.split("/").some((segment) => BUILT_IN_SKIPS.has(segment));
}

/**
 * Watches the tree with one inotify watch per folder (`fs.watch` on each, not recursive) and
 * hands over coalesced batches of changed paths, relative and `/`-separated. A burst on one
 * file is one entry; the handler re-reads the file, so the final state is never lost.
 *
 * Not chokidar: one watch and one stat cache entry per file, and an initial stat of every file,
 * make a big tree slow to start watching and heavy to keep; a folder watch costs one listing
 * of the folder's entry types at start and nothing per file. A folder that appears (created,
 * moved in) is watched before its batch is handled, and the handler reads it whole; one that
 * goes away (deleted, moved out) loses its watches, so a moved folder's old watch never
 * reports under its old name.
 *
 * A symlinked file is a row with its target's size, times and content, but an edit reaches
 * inotify under the target's path only: every batch also names each link whose target (or a
 * link on the way to it) is one of its paths or lies under one. Links are found while folders
 * are listed and read again when they or what they resolve through change; a target in a
 * folder that gets no watch of its own (an ignored one) gets a watch on its folder.
 */
export function watchTree(root: string, options: WatchOptions): TreeWatcher {
  return new FolderWatches(root, options);
}

/** `watchTree`'s watcher: the folders' watches, the batch being gathered, and the links. */
class FolderWatches implements TreeWatcher {
  readonly ready: Promise<void>;
  private readonly quietMs: number;
  private readonly maxWaitMs: number;
  private readonly stormWaitMs: number;
  private readonly rootBytes: Buffer;
  private pending = emptyBatch();
  /** Names of `rename` events since the last batch: folders may have come or gone there. */
  private renamed = new Set<string>();
  /** `rename` events since the last batch on the name of a watched folder (see `due`). */
  private foldersRenamed = 0;
  private firstEventAt = 0;
  private lastEventAt = 0;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private closed = false;
  private polling = false;
  /** The first refusal of a watch, said once the folders are counted (`warnLimit`). */
  private refusal: NodeJS.ErrnoException | null = null;
  private warned = false;
  private opened = false;
  private pollTimer: NodeJS.Timeout | null = null;
  /** Folders the system gave no watch: each one's subfolder names at its last listing. */
  private readonly unwatched = new FolderMap<Set<string>>();
  /**
   * Device and inode of each folder without a watch, as a watched folder's: one renamed is
   * paired with its new name and applied as a move, not read whole under it.
   */
  private readonly unwatchedIds = new FolderMap<string>();
  /**
   * Folders given a watch since their last check, with their subfolder names then and the
   * number of the checks requested by then: what changed between that check's listing and the
   * watch has no event, so one more check requested after the watch compares them with it.
   */
  private readonly rewatched = new FolderMap<{ names: Set<string>; after: number }>();
  /** Folders gone with a folder above them whose event is still to come (`awaitFolderAbove`). */
  private readonly awaitingAbove = new Set<string>();
  /**
   * Folders a walk watched (or listed for checks) but could not list: moved or removed just
   * then. One that turns out moved is walked again under its new name, so the folders under it
   * get their watches or checks.
   */
  private readonly unfinishedWalks = new Set<string>();
  /** Checks requested so far. */
  private checksRequested = 0;
  /** Each batch's folder moves since the last check was requested: its thread renames too. */
  private movesSinceRequest: KeyMove[][] = [];
  /** Each batch's moves since the check under way was requested: its answer names the old. */
  private movesDuringCheck: KeyMove[][] | null = null;
  /** The last check's subfolder names of each folder without a watch (`null`: gone). */
  private checkedListings = new Map<string, string[] | null>();
  private readonly check = new UnwatchedCheck();
  /** A folder checked the first time reports the files changed since then (ms). */
  private checkSince = Date.now() - CLOCK_MARGIN_MS;
  private ignoredFolder: (path: string) => boolean = () => false;
  private readonly watches = new FolderMap<Watched>();
  private readonly links: SymlinkTargets;
  /** Folders watched only because a link leads into them; their events stand for the links. */
  private readonly targetFolders = new Map<string, FSWatcher>();
  /** Paths changed in those folders since the last batch (reported form). */
  private targetChanges = new Set<string>();
  /** `links.version` when the target folders were last brought in line with the links. */
  private targetFoldersAt = -1;

  constructor(
    private readonly root: string,
    private readonly options: WatchOptions,
  ) {
    this.quietMs = options.quietMs ?? 10;
    this.maxWaitMs = options.maxWaitMs ?? 100;
    this.stormWaitMs = Math.max(this.maxWaitMs, options.stormWaitMs ?? 1000);
    this.rootBytes = Buffer.from(root, "utf8");
    this.links = new SymlinkTargets(root);
    this.ready = this.open();
  }

  /** A check of the folders without a watch is under way (it schedules the next when done). */
  private get checking(): boolean {
    return this.movesDuringCheck !== null;
  }

  private get minCheckPauseMs(): number {
    return this.options.minCheckPauseMs ?? POLL_INTERVAL_MS;
  }

  get folders(): number {
    return this.watches.size;
  }

  get unwatchedChecks(): UnwatchedCheckStats {
    return { ...this.check.stats };
  }

  unwatchedFolders(): string[] {
    return [...this.unwatched.keys()].map(reported);
  }

  get unwatchedCount(): number {
    return this.unwatched.size;
  }

  async settle(): Promise<void> {
    for (let round = 0; round < SETTLE_ROUNDS && !this.closed; round++) {
      while (this.running) await this.running;
      if (!this.hasPending()) return;
      if (this.timer !== null) clearTimeout(this.timer);
      await this.flush();
    }
  }

  recheck(paths: Iterable<string>): void {
    if (this.closed) return;
    for (const path of paths) this.pending.recheck.add(path);
    if (this.hasPending()) this.schedule();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.unwatchAll();
    await this.check.close();
    await this.running;
  }

  private absolute(key: string): Buffer {
    const { rootBytes } = this;
    return key === "" ? rootBytes : Buffer.concat([rootBytes, SLASH, Buffer.from(key, "latin1")]);
  }

  // Batches

  private hasPending(): boolean {
    return hasAny(this.pending) || this.targetChanges.size > 0 || this.checkedListings.size > 0;
  }

  /**
   * Hands the batch over once no change has come for `quietMs`, or `maxWaitMs` after its first
   * (`stormWaitMs` in a storm of renames: a checkout renaming a thousand folders for longer
   * than `maxWaitMs` is then one batch, its moves paired and applied in one burst, not two
   * bursts the second of which waits for the whole first). A change only notes its time: the
   * timer set at the first one waits longer when it comes due (`due`). Setting the timer anew
   * at each change cost a checkout's thousands of events a timer each, handled in one turn of
   * the loop.
   */
  private schedule(): void {
    const now = Date.now();
    this.lastEventAt = now;
    if (this.timer !== null) return;
    this.firstEventAt = now;
    this.timer = setTimeout(() => this.due(), Math.min(this.quietMs, this.maxWaitMs));
  }

  private due(): void {
    const limit = this.foldersRenamed >= STORM_FOLDERS ? this.stormWaitMs : this.maxWaitMs;
    const at = Math.min(this.lastEventAt + this.quietMs, this.firstEventAt + limit);
    const wait = at - Date.now();
    if (wait > 0) this.timer = setTimeout(() => this.due(), wait);
    else void this.flush();
  }

  /** Hands the batch gathered so far to the handler (after the one it is on, if any). */
  private async flush(): Promise<void> {
    this.timer = null;
    if (this.running) {
      await this.running;
      if (this.timer === null && this.hasPending()) this.schedule();
      return;
    }
    const batch = this.pending;
    const appeared = this.renamed;
    const atTargets = this.targetChanges;
    const listings = this.checkedListings;
    this.pending = emptyBatch();
    this.checkedListings = new Map();
    this.renamed = new Set();
    this.foldersRenamed = 0;
    this.targetChanges = new Set();
    if (this.closed || (!hasAny(batch) && atTargets.size === 0 && listings.size === 0)) return;
    for (const key of this.awaitingAbove) {
      appeared.add(key);
      batch.paths.add(reported(key));
    }
    this.awaitingAbove.clear();
    this.running = this.handle(batch, appeared, atTargets, listings);
    await this.running;
    this.running = null;
    // A rescan that the reopening itself asked for has no new rules to pick up.
    if (batch.rescan && !batch.paths.has("") && !this.closed) void this.reopen();
    if (batch.paths.size > 0) this.recheckLater(batch.paths);
    if (this.hasPending() && this.timer === null) this.schedule();
  }

  private async handle(
    batch: ChangeBatch,
    appeared: Set<string>,
    atTargets: Set<string>,
    listings: Map<string, string[] | null>,
  ): Promise<void> {
    try {
      this.listUnwatched(listings, batch, appeared);
      // Before the handler reads them: a new folder's later changes are then seen too.
      await this.resync(appeared, batch);
      this.followLinks(batch, atTargets);
      if (hasAny(batch)) await this.options.onBatch(batch);
    } catch (error) {
      this.options.onError?.(error);
    }
  }

  private recheckLater(paths: Set<string>): void {
    setTimeout(() => {
      this.recheck([...paths].filter((path) => path !== ""));
    }, RECHECK_AFTER_MS).unref();
  }

  /** The next check of the folders without a watch, past the system's limit. */
  private schedulePoll(pauseMs: number): void {
    if (this.closed || this.pollTimer !== null) return;
    this.pollTimer = setTimeout(() => {
      this.pollTimer = null;
      if (!this.closed && this.unwatched.size + this.rewatched.size > 0) void this.checkUnwatched();
    }, pauseMs);
    this.pollTimer.unref();
  }

  /**
   * Checks the folders without a watch on the check's thread, which hands back only the files
   * that changed (read as a watch's events are) and each folder's subfolders (`listUnwatched`).
   */
  private async checkUnwatched(): Promise<void> {
    const folders = [...this.unwatched.keys(), ...this.rewatched.keys()];
    const started = Date.now();
    const number = ++this.checksRequested;
    const moves = this.movesSinceRequest;
    this.movesSinceRequest = [];
    this.movesDuringCheck = [];
    try {
      const answer = await this.check.run(this.root, folders, this.checkSince, moves);
      if (this.closed) return;
      const during = bySource(this.movesDuringCheck ?? []);
      this.checkSince = started - CLOCK_MARGIN_MS;
      const unchanged: string[] = [];
      folders.forEach((asked, at) => {
        const folder = keyAfterMoves(asked, during);
        const listing = answer.listings[at];
        const rewatched = this.rewatched.get(folder);
        // Listed before its watch was made: the next check is the one that counts.
        if (rewatched !== undefined && rewatched.after >= number) return;
        if (listing !== UNCHANGED) this.checkedListings.set(folder, listing ?? null);
        else if (rewatched !== undefined) this.rewatched.delete(folder);
        else unchanged.push(folder);
      });
      // Folders that changed ask for their watch when their listing is handled.
      if (this.checkedListings.size === 0) this.watchUnchanged(unchanged);
      for (const key of answer.changed)
        this.pending.paths.add(reported(keyAfterMoves(key, during)));
      if (this.hasPending()) this.schedule();
    } catch (error) {
      this.options.onError?.(error);
    } finally {
      this.movesDuringCheck = null;
    }
    const { stats } = this.check;
    stats.periodMs = Math.max(this.minCheckPauseMs, PAUSE_PER_CHECK_CPU * stats.lastCheckCpuMs);
    this.warnLimit();
    this.schedulePoll(stats.periodMs);
  }

  /**
   * Asks for a watch for folders a check found unchanged, until the system refuses one (a
   * watch freed elsewhere, or a limit raised, gives them one: their files were checked a
   * moment ago).
   */
  private watchUnchanged(folders: readonly string[]): void {
    for (const folder of folders) {
      const names = this.unwatched.get(folder);
      if (names === undefined) continue;
      const outcome = this.watchFolder(folder);
      if (outcome === "watched") this.watchedNow(folder, names);
      else if (outcome === "refused") return;
    }
  }

  /** A folder without a watch got one: checked once more (`rewatched`), then no longer. */
  private watchedNow(folder: string, names: Set<string>): void {
    this.unwatched.delete(folder);
    this.unwatchedIds.delete(folder);
    this.rewatched.set(folder, { names, after: this.checksRequested });
  }

  /** A watch the system refused: its folder is polled from then on (never goes stale). */
  private onWatchError(error: unknown): void {
    const code = (error as NodeJS.ErrnoException | null)?.code ?? "";
    if (!WATCH_LIMIT_CODES.has(code)) {
      this.options.onError?.(error);
      return;
    }
    this.refusal ??= error as NodeJS.ErrnoException;
    // What changed in folders nobody watches is found by the next check; the first one waits
    // for the walk to end (`open`): begun while it lists folders, a check took the part listed
    // so far, competed with the walk and the first fill for the cores, and made the period that
    // follows four times its length.
    // Not while a check runs: a check meets a refusal whenever it asks watches back for the
    // folders it found unchanged, and its end schedules the next check after the pause its CPU
    // time gives, which one scheduled here would cut to the least pause.
    if (this.opened && !this.checking) this.schedulePoll(POLL_INTERVAL_MS);
    if (this.polling) return;
    this.polling = true;
  }

  /**
   * Says once that the limit is reached, with how many folders it leaves without a watch and
   * what their first check took (the delay of a change there).
   */
  private warnLimit(): void {
    if (this.warned || this.refusal === null) return;
    this.warned = true;
    const { stats } = this.check;
    const first =
      stats.checks === 0
        ? null
        : {
            files: stats.lastCheckFiles,
            ms: stats.lastCheckMs,
            cpuMs: stats.lastCheckCpuMs,
            pauseMs: stats.periodMs,
            minPauseMs: this.minCheckPauseMs,
          };
    const error = new WatchLimitError(this.refusal, this.unwatched.size, this.watches.size, first);
    this.options.onError?.(error);
  }

  /**
   * Compares the checked folders' subfolders with their previous listing: a subfolder that
   * appeared is watched (or listed) and read whole, one that went away is read as gone. A
   * folder that can be watched now gets its watch (its files were checked a moment ago).
   */
  private listUnwatched(
    listings: Map<string, string[] | null>,
    batch: ChangeBatch,
    appeared: Set<string>,
  ): void {
    // Once the system refuses a watch, the rest of this check's folders do not ask: each
    // refusal is an error Node makes and throws, and asking for every folder without a watch
    // at every check kept the main thread busy in proportion to their number.
    let mayWatch = true;
    for (const [folder, listing] of listings) {
      const rewatched = this.rewatched.get(folder);
      const before = this.unwatched.get(folder) ?? rewatched?.names;
      // Moved or gone since the check: the events of that say it.
      if (before === undefined) continue;
      if (listing === null) {
        // Gone from its name as the check listed it: removed, or renamed with a folder above
        // it. A watched parent's events say which, by its name (the check's thread keeps what
        // it saw of the folder's files for its next name); read here as well, a folder renamed
        // back and forth above it was forgotten when it was back by the time of `resync`.
        if (this.watches.has(parentKey(folder))) continue;
        // Otherwise `resync` tells which (and forgets it only if gone).
        appeared.add(folder);
        batch.paths.add(reported(folder));
        continue;
      }
      const now = new Set(listing);
      for (const name of now) {
        if (before.has(name)) continue;
        const child = childKey(folder, name);
        appeared.add(child);
        batch.paths.add(reported(child));
      }
      for (const name of before) {
        if (now.has(name)) continue;
        const child = childKey(folder, name);
        appeared.add(child);
        batch.paths.add(reported(child));
      }
      if (rewatched !== undefined) {
        // Its watch has seen every change since this check (the check came after the watch).
        this.rewatched.delete(folder);
        continue;
      }
      this.unwatched.set(folder, now);
      if (!mayWatch) continue;
      const outcome = this.watchFolder(folder);
      if (outcome === "watched") this.watchedNow(folder, now);
      else if (outcome === "refused") mayWatch = false;
    }
  }

  /** A folder the system gave no watch: checked from now on, its id kept for its moves. */
  private listUnwatchedFolder(key: string): void {
    this.unwatched.set(key, new Set());
    try {
      this.unwatchedIds.set(key, folderId(lstatSync(this.absolute(key))));
    } catch {
      // Gone already: its parent's event or listing says so.
    }
  }

  /** Forgets the folders without a watch at and under `key` (gone, or watched again). */
  private forgetUnwatched(key: string): void {
    this.unwatched.deleteTree(key);
    this.unwatchedIds.deleteTree(key);
    this.rewatched.deleteTree(key);
  }

  private onEvent(folder: string, event: string, name: Buffer | string | null): void {
    if (this.closed) return;
    const { pending } = this;
    if (name === null) {
      // The kernel dropped events (queue overflow): read the folder again, and list it again
      // for the folders and links it may have gained.
      pending.paths.add(reported(folder));
      this.renamed.add(folder);
      this.schedule();
      return;
    }
    const key = childKey(folder, typeof name === "string" ? name : name.toString("latin1"));
    if (isSkipped(key)) return;
    // A watched folder's own content is its own watch's business.
    if (event === "change" && this.watches.has(key)) return;
    const path = reported(key);
    pending.paths.add(path);
    if (path === ".gitignore" || path.endsWith("/.gitignore")) pending.rescan = true;
    if (event === "rename") {
      this.renamed.add(key);
      if (this.watches.has(key)) this.foldersRenamed++;
    }
    this.schedule();
  }

  // Folders

  /** Watches one folder: `refused` past the limit, `failed` when gone or unreadable. */
  private watchFolder(key: string): WatchOutcome {
    if (this.watches.has(key)) return "watched";
    try {
      const { maxWatches } = this.options;
      if (maxWatches !== undefined && this.watches.size >= maxWatches) {
        throw refusedWatch(this.absolute(key).toString());
      }
      const at = { key };
      const watcher = watch(this.absolute(key), { encoding: "buffer" }, (event, name) =>
        this.onEvent(at.key, event, name),
      );
      // Its folder was removed or became unreadable: the parent's event says what happened.
      watcher.on("error", () => this.unwatch(at.key));
      let id = "";
      try {
        id = folderId(lstatSync(this.absolute(key)));
      } catch {
        // Gone already: the parent's event says so, and no folder can be it moved.
      }
      this.watches.set(key, { watcher, at, id });
      return "watched";
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "";
      if (!WATCH_LIMIT_CODES.has(code)) return "failed";
      this.check.stats.watchesRefused++;
      this.onWatchError(error);
      return "refused";
    }
  }

  private unwatch(key: string): void {
    this.watches.get(key)?.watcher.close();
    this.watches.delete(key);
  }

  /** Stops watching a folder and every folder under it. */
  private unwatchTree(key: string): void {
    this.forgetUnwatched(key);
    if (!this.watches.has(key)) return;
    // The root read again (its events overflowed) keeps the watches under it: the walk that
    // follows finds them current.
    if (key === "") this.unwatch(key);
    else for (const [, { watcher }] of this.watches.deleteTree(key)) watcher.close();
  }

  /**
   * Watches a folder and every folder under it that is not ignored: each is watched before it
   * is listed, so an entry made meanwhile is either listed or reported. Symlinked folders are
   * not followed (a directory entry's own type decides). A folder the system gives no watch is
   * listed all the same and checked by polling. Yields between slices.
   */
  private async watchTreeFrom(start: string): Promise<void> {
    const stack = [start];
    let handled = 0;
    while (stack.length > 0 && !this.closed) {
      const key = stack.pop() as string;
      if (key !== "" && (isSkipped(key) || this.ignoredFolder(reported(key)))) continue;
      const outcome = this.watchFolder(key);
      if (outcome === "failed") continue;
      if (outcome === "refused") this.listUnwatchedFolder(key);
      let entries;
      try {
        entries = readdirSync(this.absolute(key), { withFileTypes: true, encoding: "buffer" });
      } catch {
        this.unfinishedWalks.add(key);
        continue;
      }
      this.unfinishedWalks.delete(key);
      for (const entry of entries) {
        const child = childKey(key, entry.name.toString("latin1"));
        if (entry.isDirectory()) {
          stack.push(child);
          this.unwatched.get(key)?.add(entry.name.toString("latin1"));
        } else if (entry.isSymbolicLink() && !isSkipped(child)) this.links.update(child);
      }
      if (++handled % FOLDERS_PER_SLICE === 0) await new Promise(setImmediate);
    }
  }

  /**
   * After `rename` events: a watched folder that went away and reappears under another name of
   * the batch (same device and inode) is moved, its watches and links kept under the new name
   * (`moveFolders`); other folders that went away lose their watches and links, new ones get
   * them. A link made, removed or retargeted is a `rename` of its own name.
   */
  private async resync(keys: Set<string>, batch: ChangeBatch): Promise<void> {
    const stats = await this.lstatAll(keys);
    const found = await this.findMoves(stats);
    // Each step of thousands of folders is a turn of its own. Events that come meanwhile name
    // the folders as their watches do, and are renamed with the moves as the batch is.
    if (found.length > 0) await new Promise(setImmediate);
    const moves = this.stillMoved(found, stats);
    this.moveFolders(moves, stats, batch);
    if (moves.length > 0) await new Promise(setImmediate);
    // A name under a folder moved in this batch stands for what is under its new name now.
    const under = namesUnderMoves(stats.keys(), moves);
    if (under.size > 0)
      for (const [key, found] of await this.lstatAll(under)) stats.set(key, found);
    const destinations = new Set(moves.map((move) => move.to));
    const slices = new Slices(RESYNC_SLICE_MS);
    const movedAbove = new Map<string, boolean>();
    for (const [key, found] of stats) {
      if (destinations.has(key)) {
        if (this.unfinishedWalks.has(key)) await this.watchTreeFrom(key);
        continue;
      }
      if (found === undefined && this.goneWithFolderAbove(key, stats, destinations, movedAbove)) {
        this.awaitFolderAbove(key, batch);
        continue;
      }
      if (this.isKnownAs(key, found)) {
        // Moved away and back, or read again as its events overflowed: a watch follows its
        // folder, so the watches and checks at and under it still hold, and the walk adds what
        // they lack. Forgetting them first lost the folders under it for good when it moved
        // again during the walk.
        await this.watchTreeFrom(key);
        await slices.yieldIfDue();
        continue;
      }
      this.unwatchTree(key);
      this.links.forgetUnder(key);
      if (found?.isSymbolicLink() && !isSkipped(key)) this.links.update(key);
      if (found?.isDirectory()) await this.watchTreeFrom(key);
      await slices.yieldIfDue();
    }
  }

  /** The device and inode of the folder the watcher knows at `key` (`""`: none known). */
  private knownId(key: string): string {
    return this.watches.get(key)?.id ?? this.unwatchedIds.get(key) ?? "";
  }

  /** Whether the folder at `key` is the one the watcher knows there (same device and inode). */
  private isKnownAs(key: string, found: Stats | undefined): boolean {
    const id = this.knownId(key);
    return id !== "" && found?.isDirectory() === true && folderId(found) === id;
  }

  /**
   * Whether a folder the watcher knows (`key`, gone from its name) went with a folder above it
   * whose own event is still to come: the nearest known folder above it no longer has its id
   * there, and this batch does not read it again (a move's destination is not read: it may have
   * moved on since). A check that listed the folder just after a rename above it, or a folder
   * renamed twice in a row (`p` to `r` and back) with the second rename's events in the next
   * batch, lead here; forgetting the folder then left it without a watch or a check once the
   * move above it was applied.
   */
  private goneWithFolderAbove(
    key: string,
    stats: ReadonlyMap<string, Stats | undefined>,
    destinations: ReadonlySet<string>,
    movedAbove: Map<string, boolean>,
  ): boolean {
    if (!this.watches.has(key) && !this.unwatched.has(key) && !this.rewatched.has(key)) {
      return false;
    }
    for (let above = parentKey(key); above !== ""; above = parentKey(above)) {
      if (this.knownId(above) === "") continue;
      if (stats.has(above) && !destinations.has(above)) return false;
      let moved = movedAbove.get(above);
      if (moved === undefined) {
        moved = !this.isKnownAs(above, this.lstatOrGone(above));
        movedAbove.set(above, moved);
      }
      return moved;
    }
    return false;
  }

  /**
   * Hands a folder gone with a folder above it to the next batch (`awaitingAbove`), which the
   * move above it renames (or its removal forgets): it is then read whole under its new name,
   * the changes a check missed while its name was gone included.
   */
  private awaitFolderAbove(key: string, batch: ChangeBatch): void {
    batch.paths.delete(reported(key));
    this.awaitingAbove.add(key);
  }

  /**
   * The entries at `keys` (`undefined`: gone), in the order of `keys` (as the moves found from
   * them are). Stated here, in slices with a turn of the event loop between them: a checkout
   * makes thousands at once, and statements are answered meanwhile. A promise per entry (the
   * thread pool's `lstat`) cost the main thread several times the calls themselves. A change
   * that comes in meanwhile goes to the next batch, whose names the moves found here rename.
   */
  private async lstatAll(keys: Set<string>): Promise<Map<string, Stats | undefined>> {
    const stats = new Map<string, Stats | undefined>();
    const slices = new Slices(RESYNC_SLICE_MS);
    for (const key of keys) {
      stats.set(key, this.lstatOrGone(key));
      await slices.yieldIfDue();
    }
    return stats;
  }

  /** The entry at `key`, `undefined` when gone. */
  private lstatOrGone(key: string): Stats | undefined {
    try {
      return lstatSync(this.absolute(key), { throwIfNoEntry: false });
    } catch {
      // Any other failure (a name under a file, a folder it may not enter): nothing to watch.
      return undefined;
    }
  }

  /**
   * Watched folders of `stats` that are gone from their name, paired by device and inode with
   * folders that appeared under another (keys), innermost source first. A destination the
   * watcher would not watch (ignored, skipped) or a name that is not UTF-8 is no move: the
   * folder is read as gone and new. Yields while it pairs them: a destination's ignore rules
   * are read from the disk (`stillMoved` checks the moves again after).
   */
  private async findMoves(stats: ReadonlyMap<string, Stats | undefined>): Promise<FolderMove[]> {
    const gone = new Map<string, string>();
    for (const [key, found] of stats) {
      const id = this.knownId(key);
      if (id === "" || this.isKnownAs(key, found)) continue;
      gone.set(id, key);
    }
    const moves: FolderMove[] = [];
    if (gone.size === 0) return moves;
    const slices = new Slices(RESYNC_SLICE_MS);
    for (const [key, found] of stats) {
      await slices.yieldIfDue();
      if (!found?.isDirectory()) continue;
      const from = gone.get(folderId(found));
      if (from === undefined || from === key) continue;
      const path = reported(key);
      if (path.includes("\uFFFD") || reported(from).includes("\uFFFD")) continue;
      // Last: the ignore rules of a folder new to them are read from the disk.
      if (isSkipped(key) || this.ignoredFolder(path)) continue;
      gone.delete(folderId(found));
      moves.push({ from, to: key });
    }
    return inApplyOrder(moves);
  }

  /**
   * The moves whose source still has the id its destination shows: a check's answer that came
   * while they were found may have given the source's name a watch, of another folder moved
   * there since (that one is then read as new, and the destination as well).
   */
  private stillMoved(
    moves: readonly FolderMove[],
    stats: ReadonlyMap<string, Stats | undefined>,
  ): FolderMove[] {
    return moves.filter(({ from, to }) => {
      const id = this.knownId(from);
      const found = stats.get(to);
      return id !== "" && found !== undefined && folderId(found) === id;
    });
  }

  /**
   * Moves the watches, the unwatched folders' listings and the links under each move's source
   * to its destination (whose own old watches go first), renames what the batch and the one
   * being gathered name under a source, and records the moves in the batch (reported names).
   */
  private moveFolders(
    moves: readonly FolderMove[],
    stats: Map<string, Stats | undefined>,
    batch: ChangeBatch,
  ): void {
    if (moves.length === 0) return;
    const sources = new Set(moves.map(({ from }) => from));
    const watchedUnder = entriesUnder(this.watches, sources);
    const listedUnder = entriesUnder(this.unwatched, sources);
    const rewatchedUnder = entriesUnder(this.rewatched, sources);
    const idsUnder = entriesUnder(this.unwatchedIds, sources);
    const detached = moves.map(({ from, to }) => {
      const entries = watchedUnder.get(from) ?? [];
      for (const [key] of entries) this.watches.delete(key);
      const listings = listedUnder.get(from) ?? [];
      for (const [key] of listings) this.unwatched.delete(key);
      const rewatched = rewatchedUnder.get(from) ?? [];
      for (const [key] of rewatched) this.rewatched.delete(key);
      const ids = idsUnder.get(from) ?? [];
      for (const [key] of ids) this.unwatchedIds.delete(key);
      return { from, to, entries, listings, rewatched, ids };
    });
    for (const { from, to, entries, listings, rewatched, ids } of detached) {
      // What was at the destination before (a folder replaced by the move) is gone.
      this.unwatchTree(to);
      this.links.forgetUnder(to);
      for (const [key, watched] of entries) {
        watched.at.key = `${to}${key.slice(from.length)}`;
        this.watches.set(watched.at.key, watched);
      }
      for (const [key, names] of listings)
        this.unwatched.set(`${to}${key.slice(from.length)}`, names);
      for (const [key, last] of rewatched)
        this.rewatched.set(`${to}${key.slice(from.length)}`, last);
      for (const [key, id] of ids) this.unwatchedIds.set(`${to}${key.slice(from.length)}`, id);
      // A link moved may lead elsewhere now (a relative one out of the folder): read again.
      for (const link of this.links.moveUnder(from, to)) batch.paths.add(reported(link));
    }
    const named = moves.map(({ from, to }) => ({ from: reported(from), to: reported(to) }));
    for (const { from, to } of moves) {
      batch.paths.delete(reported(to));
      // A source name that holds something again is read as usual.
      if (stats.get(from) === undefined) batch.paths.delete(reported(from));
    }
    for (const paths of [batch.paths, batch.recheck, this.pending.paths, this.pending.recheck]) {
      renameNamesUnder(paths, named);
    }
    renameNamesUnder(this.renamed, moves);
    renameFolders(this.awaitingAbove, moves);
    renameFolders(this.unfinishedWalks, moves);
    batch.moves.push(...named);
    // Only while some folder is checked: the thread forgets every folder when none is.
    if (this.unwatched.size + this.rewatched.size > 0) {
      this.movesSinceRequest.push([...moves]);
      this.movesDuringCheck?.push([...moves]);
    }
  }

  private unwatchAll(): void {
    for (const { watcher } of this.watches.values()) watcher.close();
    this.watches.clear();
    this.unwatched.clear();
    this.unwatchedIds.clear();
    this.rewatched.clear();
    this.awaitingAbove.clear();
    this.unfinishedWalks.clear();
    this.polling = false;
    for (const watcher of this.targetFolders.values()) watcher.close();
    this.targetFolders.clear();
    this.links.clear();
  }

  private async open(): Promise<void> {
    this.ignoredFolder = this.options.ignoredFolders?.() ?? (() => false);
    await this.watchTreeFrom("");
    this.opened = true;
    if (this.closed) return;
    this.syncTargetFolders();
    // The first check runs at once; the warning waits for it, to give the real delay.
    if (this.polling) this.schedulePoll(0);
  }

  /**
   * Ignore rules changed: watch again with the new ones (a folder no longer ignored needs its
   * watch, a newly ignored one loses it), then rescan once more for what changed while no
   * watcher looked.
   */
  private async reopen(): Promise<void> {
    this.unwatchAll();
    await this.open();
    if (this.closed) return;
    this.pending.rescan = true;
    this.pending.paths.add("");
    this.schedule();
  }

  // Links

  /**
   * Adds to the batch every link whose lookup goes through a path of the batch (or a path
   * changed in a target folder), after reading those links again: a target renamed away
   * breaks the link, one that comes back mends it, a link on the way may now lead elsewhere.
   */
  private followLinks(batch: ChangeBatch, atTargets: Set<string>): void {
    const { links } = this;
    const affected = new Set<string>();
    for (const path of batch.paths) links.linksAt(path, affected);
    // A link into a moved folder breaks (or one to where it went mends).
    for (const { from, to } of batch.moves) {
      links.linksAt(from, affected);
      links.linksAt(to, affected);
    }
    for (const path of atTargets) links.linksAt(path, affected);
    for (const link of affected) {
      links.update(link);
      batch.paths.add(reported(link));
    }
    if (affected.size > 0 || links.version !== this.targetFoldersAt) this.syncTargetFolders();
  }

  /**
   * Watches the folders that hold a link's target but have no watch of their own (ignored or
   * skipped ones: a link in a watched folder may still lead there and is a row). Where a
   * target's folder does not exist, its nearest existing folder is watched, so the folder's
   * creation is seen and the watch moves down.
   */
  private syncTargetFolders(): void {
    this.targetFoldersAt = this.links.version;
    const wanted = new Set<string>();
    // Past the watch limit every change is found by the rescans.
    if (!this.polling) {
      for (const path of this.links.dependencies()) {
        let folder = parentKey(path);
        while (folder !== "" && !this.watches.has(folder) && !this.isFolderAt(folder)) {
          folder = parentKey(folder);
        }
        if (!this.watches.has(folder)) wanted.add(folder);
      }
    }
    for (const folder of [...this.targetFolders.keys()]) {
      if (!wanted.has(folder)) this.unwatchTarget(folder);
    }
    for (const folder of wanted) {
      if (!this.targetFolders.has(folder)) this.watchTargetFolder(folder);
    }
  }

  private isFolderAt(key: string): boolean {
    try {
      return lstatSync(this.absolute(key)).isDirectory();
    } catch {
      return false;
    }
  }

  private onTargetEvent(folder: string, name: Buffer | null): void {
    if (this.closed) return;
    if (name === null) {
      this.targetChanges.add(reported(folder));
    } else {
      const base = name.toString("latin1");
      this.targetChanges.add(reported(childKey(folder, base)));
      // A watched folder that is moved or removed reports its own name; the watch would
      // follow it elsewhere, so it is dropped and made again where the link needs it.
      if (base === folder.slice(folder.lastIndexOf("/") + 1)) {
        this.targetChanges.add(reported(folder));
        this.unwatchTarget(folder);
      }
    }
    this.schedule();
  }

  private watchTargetFolder(key: string): void {
    try {
      const watcher = watch(this.absolute(key), { encoding: "buffer" }, (_event, name) =>
        this.onTargetEvent(key, name),
      );
      watcher.on("error", () => {
        this.unwatchTarget(key);
        this.onTargetEvent(key, null);
      });
      this.targetFolders.set(key, watcher);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "";
      if (WATCH_LIMIT_CODES.has(code)) this.onWatchError(error);
    }
  }

  private unwatchTarget(key: string): void {
    this.targetFolders.get(key)?.close();
    this.targetFolders.delete(key);
  }
}
