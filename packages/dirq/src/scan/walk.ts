import { readdirSync } from "node:fs";
import { type BashGlob, compileBashGlob } from "./bash-glob.js";
import { isListedFileAt, RAW_NAME_MARK } from "./file-kind.js";
import { BUILT_IN_SKIPS, IgnoreRules } from "./ignore-rules.js";
import { rulesForDir } from "./inclusion.js";
import { DIRECTORY, FILE, FolderLister, hasName, type Listing, SYMLINK } from "./list-directory.js";
import { type FolderRun, PathBatch } from "./path-batch.js";
import type { PathSelection } from "./path-selection.js";

/** A file or directory the walk could not read; the walk goes on without it. */
export interface SkippedPath {
  path: string;
  reason: string;
  /**
   * Set when format `auto` skipped the file because no built-in format reads its extension
   * (`null`: it has none), with the table it was read for (the path-table as written, or the
   * config table's name): such files are told together, one line per table and extension.
   */
  noFormat?: { table: string; extension: string | null };
}

export interface WalkOptions {
  /** Absolute root of the index. */
  root: string;
  selection: PathSelection;
  /** `false` is `--no-ignore`: `.gitignore` files are not read (built-in skips still apply). */
  useGitignore: boolean;
  /** Extra ignore globs relative to the root that always apply (config `ignore`). */
  extraIgnores?: readonly string[];
  /** Called after each batch with the number of files found so far. */
  onProgress?: (found: number) => void;
  /** Called with each batch of newly found paths, in order, so work can start during the walk. */
  onBatch?: (paths: readonly string[], rawPaths: ReadonlyMap<string, Buffer>) => void;
  /** Called with each folder (relative, and its absolute path) just before it is read. */
  onDirectory?: (dir: string, absolute: string | Buffer) => void;
  /** Walk only the part another walker gave away with `split()`. */
  resume?: ResumePoint;
  /**
   * List folders ahead of the walk on the native extension's thread (see `FolderLister`).
   * Only for one walk at a time on a thread, which calls `close()` when it stops.
   */
  readAhead?: boolean;
}

/**
 * Where a walk split in two goes on: the entries of folder `dir` from `fromName` on (in walk
 * order) and everything below them, which is the rest of the walk in walk order.
 */
export interface ResumePoint {
  dir: string;
  /** The folder's absolute path as bytes, when a name on the way is not valid UTF-8. */
  rawDir: Uint8Array | null;
  fromName: string;
  /** The folder's depth below the walk's base, and whether a glob took everything below. */
  depth: number;
  everything: boolean;
}

export interface WalkResult {
  /** Relative, `/`-separated paths in a stable order (by name within each directory). */
  paths: string[];
  skipped: SkippedPath[];
  /**
   * Absolute paths, as raw bytes, of the listed files whose names are not valid UTF-8 (their
   * `paths` entry has U+FFFD in place of the bad bytes): stat them through these.
   */
  rawPaths: Map<string, Buffer>;
}

const BATCH_SIZE = 512;

/** Subfolders queued for reading ahead at a time (see `queueSubfolders`). */
const QUEUED_FOLDERS = 128;

/** A name in a joined listing that the walk skips, or a `.gitignore`. */
const SPECIAL_NAMES = new RegExp(
  `(?:^|\\0)(?:${[...BUILT_IN_SKIPS, ".gitignore"].map((name) => name.replaceAll(".", "\\.")).join("|")})(?:\\0|$)`,
);

/** Parts of the special names (`.gitignore` holds `.git`): a listing with none has none. */
const SPECIAL_PARTS = [...BUILT_IN_SKIPS];

/** Whether a NUL-joined listing names a file the walk skips, or a `.gitignore`. */
function hasSpecialName(joinedNames: string): boolean {
  // Plain substring searches first: far cheaper than the regular expression on most folders.
  for (const part of SPECIAL_PARTS) {
    if (joinedNames.includes(part)) return SPECIAL_NAMES.test(joinedNames);
  }
  return false;
}

/** Type letters of a listing of regular files only. */
const ONLY_FILES = /^f+$/;

/** Whether some name of a listing has bytes that are not valid UTF-8 (see `rawNames`). */
function mentionsRawName(listing: Listing): boolean {
  if (listing.joinedNames !== null) return listing.joinedNames.includes(RAW_NAME_MARK);
  return listing.names.some((name) => name.includes(RAW_NAME_MARK));
}

/**
 * Whether the walk enters subfolder `path` of the frame's folder: it goes deep enough, and
 * the glob can still match there or below (a folder it cannot is never listed).
 */
function entersFolder(frame: DirFrame, path: string): boolean {
  return frame.descend && (frame.glob === null || frame.glob.entersFolder(path));
}

/** The name matcher of a folder where the glob selects no file. */
const NO_FILE = () => false;

/** Entries of a directory with names as raw bytes, for names that are not valid UTF-8. */
function rawNames(absoluteDir: string | Buffer): Map<string, Buffer> {
  const byDecoded = new Map<string, Buffer>();
  for (const raw of readdirSync(absoluteDir, { encoding: "buffer" })) {
    const decoded = raw.toString("utf8");
    if (!decoded.includes(RAW_NAME_MARK) || byDecoded.has(decoded)) continue;
    if (!Buffer.from(decoded, "utf8").equals(raw)) byDecoded.set(decoded, raw);
  }
  return byDecoded;
}

function joinRaw(dir: string | Buffer, name: Buffer | string): Buffer {
  return Buffer.concat([Buffer.from(dir), Buffer.from("/"), Buffer.from(name)]);
}

/** A directory being listed: its sorted entries and how far the walk has got through them. */
interface DirFrame {
  dir: string;
  absoluteDir: string | Buffer;
  rawDir: Buffer | null;
  /** The folder's entries, sorted by name, and their types. */
  listing: Listing;
  next: number;
  /** Where this walker's share of the entries ends (`split()` gives the rest away). */
  end: number;
  raw: Map<string, Buffer> | null;
  /**
   * Read-ahead tickets of the subfolders the walk will enter, by entry index (`null`: no
   * read-ahead), queued for the entries before `queuedTo`.
   */
  tickets: Map<number, number> | null;
  queuedTo: number;
  /** The entry at which the walk queues the next subfolders: the last one queued. */
  refillAt: number;
  rules: IgnoreRules;
  /** Whether a file of this folder is selected, by name; `null`: every file is. */
  matchName: ((name: string) => boolean) | null;
  /** The glob that decides which subfolders are entered; `null`: every one is. */
  glob: BashGlob | null;
  all: boolean;
  childDepth: number;
  descend: boolean;
  everything: boolean;
}

/** One batch of found files, in walk order. */
export type WalkBatch = PathBatch;

/**
 * Why a folder could not be listed, for the skip line that already names it: Node's message
 * (`EACCES: permission denied, scandir '/abs/path'`) without its trailing syscall and absolute
 * path, which would name the folder a second time (and, for ENAMETOOLONG, print thousands of
 * characters twice).
 */
function folderReadReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const match = /^(E[A-Z]+: [^,]*), \w+ '.*'$/s.exec(message);
  return match?.[1] ?? message;
}

/**
 * Walks a selection a batch at a time (`next()`), depth first, by name within a directory.
 * Nothing is kept between batches but the open directories' entries, so a million files
 * never sit in memory at once, and the caller can insert, stat or yield between batches.
 */
export class SelectionWalker {
  readonly skipped: SkippedPath[] = [];
  /** A `.gitignore` there but unreadable is skipped as a file is: warned of, exit 23. */
  private readonly onUnreadableIgnoreFile = (path: string, reason: string): void => {
    this.skipped.push({ path, reason });
  };
  /** Files found so far. */
  found = 0;
  private readonly stack: DirFrame[] = [];
  private readonly glob: BashGlob | null;
  private readonly maxDepth: number | null;
  /** The batch being made: joined runs of paths, how many in all, and raw paths. */
  private parts: (string | FolderRun)[] = [];
  private batchCount = 0;
  private batchRaw = new Map<string, Buffer>();
  /** Names of a run of plain files of one folder (see `step`), joined once the run ends. */
  private readonly runNames: string[] = [];
  private runPrefix = "";
  private started = false;
  private readonly lister: FolderLister;

  constructor(
    readonly options: WalkOptions,
    private readonly batchSize = BATCH_SIZE,
  ) {
    const { selection } = options;
    this.lister = new FolderLister(options.readAhead === true);
    this.glob = selection.kind === "glob" ? compileBashGlob(selection.pattern) : null;
    this.maxDepth = selection.kind === "glob" ? selection.maxDepth : null;
  }

  /** The next batch of files, or `null` when the walk is over. */
  next(): WalkBatch | null {
    if (!this.started) {
      this.started = true;
      this.begin();
    }
    while (this.batchCount < this.batchSize && this.stack.length > 0) this.step();
    if (this.batchCount === 0) return null;
    const batch = new PathBatch(this.parts, this.batchCount, this.batchRaw);
    this.parts = [];
    this.batchCount = 0;
    this.batchRaw = new Map();
    this.options.onProgress?.(this.found);
    return batch;
  }

  /**
   * Drops what the walk (and anything else on this thread: see `FolderLister`) queued on the
   * native extension's thread and did not take. A walk with `readAhead` calls it when it stops.
   */
  close(): void {
    this.lister.close();
  }

  private begin(): void {
    const { options } = this;
    const rootRules = IgnoreRules.atRoot(options.root, {
      useGitignore: options.useGitignore,
      extraPatterns: options.extraIgnores,
      onUnreadable: this.onUnreadableIgnoreFile,
    });
    const { selection, resume } = options;
    if (resume !== undefined) {
      const rules = rulesForDir(options.root, resume.dir, rootRules);
      const rawDir = resume.rawDir === null ? null : Buffer.from(resume.rawDir);
      if (rules !== null) {
        this.open(resume.dir, rules, resume.depth, resume.everything, rawDir, resume.fromName);
      }
    } else if (selection.kind === "file") {
      this.openFile(selection.file, rootRules);
    } else if (
      selection.kind === "tree" &&
      selection.base !== "" &&
      isListedFileAt(options.root, `${options.root}/${selection.base}`)
    ) {
      // A table's folder named before it existed that turned up as a file: that file.
      this.openFile(selection.base, rootRules);
    } else {
      const rules = rulesForDir(options.root, selection.base, rootRules);
      if (rules !== null) this.open(selection.base, rules, 0, false, null, null);
    }
  }

  /** Lists the one file `file` names, unless an ignore rule or a built-in skip leaves it out. */
  private openFile(file: string, rootRules: IgnoreRules): void {
    const slash = file.lastIndexOf("/");
    const rules = rulesForDir(
      this.options.root,
      slash === -1 ? "" : file.slice(0, slash),
      rootRules,
    );
    const name = file.slice(slash + 1);
    if (
      rules !== null &&
      !BUILT_IN_SKIPS.has(name) &&
      !rules.ignores(file, false) &&
      isListedFileAt(this.options.root, `${this.options.root}/${file}`)
    ) {
      this.add(file, null);
    }
  }

  /**
   * Lists a directory and pushes it on the stack. `inherited` are the rules of the parent;
   * depth 0 is the walk's base (rules already entered). `everything`: a trailing-`/` glob
   * matched an ancestor, so every file below is listed. `rawDir`: the directory's absolute
   * path as bytes when a name on the way is not valid UTF-8. `resumeFrom`: the walk resumes
   * here at this name (`inherited` are then the folder's own rules, already entered).
   */
  private open(
    dir: string,
    inherited: IgnoreRules,
    depth: number,
    everything: boolean,
    rawDir: Buffer | null,
    resumeFrom: string | null,
    ticket = 0,
  ): void {
    const absoluteDir = rawDir ?? (dir === "" ? this.options.root : `${this.options.root}/${dir}`);
    let listing: Listing;
    let raw: Map<string, Buffer> | null = null;
    this.options.onDirectory?.(dir, absoluteDir);
    try {
      listing = this.lister.list(absoluteDir, ticket);
      if (mentionsRawName(listing)) raw = rawNames(absoluteDir);
    } catch (error) {
      this.skipped.push({ path: dir === "" ? "." : dir, reason: folderReadReason(error) });
      return;
    }
    // One scan of a native listing for every name the walk must look at on its own.
    const special = listing.joinedNames === null || hasSpecialName(listing.joinedNames);
    const hasGitignore =
      special &&
      hasName(listing, ".gitignore") &&
      listing.types.charCodeAt(listing.names.indexOf(".gitignore")) !== DIRECTORY;
    const rules =
      depth === 0 || resumeFrom !== null
        ? inherited
        : inherited.enter(dir, hasGitignore, this.onUnreadableIgnoreFile);
    let next = 0;
    if (resumeFrom !== null) {
      const names = listing.names;
      while (next < names.length && (names[next] as string) < resumeFrom) next++;
    }
    const glob = everything ? null : this.glob;
    const all =
      everything || (glob?.selectsDirectories === true && dir !== "" && glob.matchesDirectory(dir));
    const childDepth = depth + 1;
    const descend = all || this.maxDepth === null || childDepth < this.maxDepth;
    const globHere = all ? null : glob;
    const plain = rules.isEmpty && raw === null && rawDir === null && !special && next === 0;
    if (plain && this.takeWholeFolder(dir, listing, globHere)) return;
    // Made after: a folder taken whole needs no name matcher (each is one glob walk per folder).
    const matchName = globHere === null ? null : (globHere.fileMatcherIn(dir) ?? NO_FILE);
    const frame: DirFrame = {
      dir,
      absoluteDir,
      rawDir,
      listing,
      next,
      end: listing.types.length,
      raw,
      tickets:
        descend && this.lister.readsAhead && typeof absoluteDir === "string" ? new Map() : null,
      queuedTo: next,
      refillAt: next,
      rules,
      matchName,
      glob: globHere,
      all,
      childDepth,
      descend,
      everything,
    };
    if (frame.tickets !== null) this.queueSubfolders(frame);
    this.stack.push(frame);
  }

  /**
   * Queues the listings of the next QUEUED_FOLDERS subfolders the walk will enter, from entry
   * `queuedTo` on, in walk order: the same tests as `step` makes before it enters one. A few
   * at a time: the extension holds a few thousand jobs, and a folder of ten thousand
   * subfolders queued at once left most of them to be listed on the calling thread.
   */
  private queueSubfolders(frame: DirFrame): void {
    const { dir, listing, rules, raw, tickets } = frame;
    if (tickets === null) return;
    const indexes: number[] = [];
    const paths: string[] = [];
    const { types } = listing;
    let i = frame.queuedTo;
    for (; i < types.length && paths.length < QUEUED_FOLDERS; i++) {
      if (types.charCodeAt(i) !== DIRECTORY) continue;
      const name = listing.names[i] as string;
      if (BUILT_IN_SKIPS.has(name) || raw?.has(name) === true) continue;
      const path = dir === "" ? name : `${dir}/${name}`;
      if (!entersFolder(frame, path)) continue;
      if (!rules.isEmpty && rules.ignores(path, true)) continue;
      indexes.push(i);
      paths.push(`${frame.absoluteDir as string}/${name}`);
    }
    frame.queuedTo = i;
    // Queued when the walk reaches the last of these, the next ones go after them: the
    // extension's threads take the newest queued first (the folders of a folder just entered).
    frame.refillAt = indexes.at(-1) ?? i;
    if (paths.length === 0) return;
    const queued = this.lister.queue(paths);
    for (let k = 0; k < indexes.length; k++) {
      if ((queued[k] as number) > 0) tickets.set(indexes[k] as number, queued[k] as number);
    }
  }

  /**
   * Gives away the end of the walk: the last part of the outermost folder that has entries
   * left, about `share` of them, and everything below them. Walking it (a walker with
   * `resume`) lists what this walker would have listed after what it still lists itself, in
   * the same order. `null` when nothing is left to give.
   */
  split(share: number): ResumePoint | null {
    for (let depth = 0; depth < this.stack.length; depth++) {
      const frame = this.stack[depth] as DirFrame;
      const left = frame.end - frame.next;
      if (left <= 0) continue;
      const at = frame.end - Math.max(1, Math.round(left * share));
      const fromName = frame.listing.names[at] as string;
      frame.end = at;
      return {
        dir: frame.dir,
        rawDir: frame.rawDir,
        fromName,
        depth: frame.childDepth - 1,
        everything: frame.everything,
      };
    }
    return null;
  }

  /** Goes on with the innermost open directory until it opens another one or ends. */
  private step(): void {
    this.stepFolder();
    this.endRun();
  }

  /**
   * Ends the run of plain files `step` found: their names, joined once (a string per path made
   * and joined again cost more than the rest of the walk of a large folder).
   */
  private endRun(): void {
    const names = this.runNames;
    if (names.length === 0) return;
    this.parts.push({ prefix: this.runPrefix, names: names.join("\0") });
    names.length = 0;
  }

  private stepFolder(): void {
    const frame = this.stack[this.stack.length - 1] as DirFrame;
    const { dir, listing, rules, all, matchName, raw, rawDir, absoluteDir } = frame;
    const { names, types } = listing;
    const checkRules = !rules.isEmpty;
    const prefix = dir === "" ? "" : `${dir}/`;
    // A regular file of a folder with no ignore rules and no name that needs its raw bytes is
    // a row when the glob takes its name: the common case, kept short.
    const plainFiles = !checkRules && raw === null && rawDir === null;
    while (frame.next < frame.end) {
      const index = frame.next++;
      const name = names[index] as string;
      const type = types.charCodeAt(index);
      if (type === FILE && plainFiles) {
        if (BUILT_IN_SKIPS.has(name) || (matchName !== null && !matchName(name))) continue;
        if (this.runNames.length === 0) this.runPrefix = prefix;
        this.runNames.push(name);
        this.found++;
        if (++this.batchCount >= this.batchSize) return;
        continue;
      }
      if (BUILT_IN_SKIPS.has(name)) continue;
      const path = prefix + name;
      const rawName = raw === null ? null : (raw.get(name) ?? null);
      const rawChild =
        rawName !== null || rawDir !== null ? joinRaw(absoluteDir, rawName ?? name) : null;
      if (type === DIRECTORY) {
        if (!entersFolder(frame, path) || (checkRules && rules.ignores(path, true))) continue;
        if (frame.tickets !== null && index >= frame.refillAt) this.queueSubfolders(frame);
        const ticket = frame.tickets?.get(index) ?? 0;
        this.endRun(); // this folder's files so far come before the subfolder's
        this.open(path, rules, frame.childDepth, all, rawChild, null, ticket);
        return;
      }
      const link = type === SYMLINK;
      if (!link && type !== FILE) continue;
      if (checkRules && rules.ignores(path, false)) continue;
      if (matchName !== null && !matchName(name)) continue;
      if (link && !isListedFileAt(this.options.root, rawChild ?? `${absoluteDir}/${name}`)) {
        continue;
      }
      this.endRun();
      this.add(path, rawChild);
      if (this.batchCount >= this.batchSize) return;
    }
    this.stack.pop();
  }

  /**
   * Takes a folder's entries at once when all are regular files: no ignore rule to test, no
   * name that needs its raw bytes or that the walk skips (checked by the caller), and no glob
   * or one whose names a single scan finds. The native listing's names are the run (see
   * `PathBatch`), where a walk entry by entry makes a string per file and joins them again.
   * At most a batch's worth, so stat batches stay small enough to share between threads.
   */
  private takeWholeFolder(dir: string, listing: Listing, glob: BashGlob | null): boolean {
    const joined = listing.joinedNames;
    const entries = listing.types.length;
    if (joined === null || entries === 0 || entries > this.batchSize) return false;
    if (!ONLY_FILES.test(listing.types)) return false;
    let names = joined;
    let count = entries;
    if (glob !== null) {
      // The names the glob takes, found in one scan of the listing (when one name pattern
      // decides; else the walk matches name by name).
      const bulk = glob.bulkFileMatcherIn(dir);
      if (bulk === null) return false;
      // Each match is a name with the NUL before it, but a first name at the start.
      const matched = joined.match(bulk) ?? [];
      names = matched.join("");
      if (names.charCodeAt(0) === 0) names = names.slice(1);
      count = matched.length;
    }
    if (count > 0) this.parts.push({ prefix: dir === "" ? "" : `${dir}/`, names });
    this.batchCount += count;
    this.found += count;
    return true;
  }

  private add(path: string, raw: Buffer | null): void {
    this.parts.push(path);
    this.batchCount++;
    if (raw !== null) this.batchRaw.set(path, raw);
    this.found++;
  }
}

/**
 * Lists the files a path-table selects, applying the built-in skips, `.gitignore` rules (unless
 * turned off) and the extra ignore patterns, all at once (`SelectionWalker` gives them a batch
 * at a time). Synchronous on purpose: a sync walk is several times faster and lighter than a
 * promise per entry (see FACTS.md). Never throws for one bad directory; those land in `skipped`.
 */
export function walkSelection(options: WalkOptions): WalkResult {
  const walker = new SelectionWalker(options);
  const paths: string[] = [];
  const rawPaths = new Map<string, Buffer>();
  for (let batch = walker.next(); batch !== null; batch = walker.next()) {
    for (const path of batch.paths) paths.push(path);
    for (const [path, raw] of batch.rawPaths) rawPaths.set(path, raw);
    options.onBatch?.(batch.paths, batch.rawPaths);
  }
  options.onProgress?.(walker.found);
  return { paths, skipped: walker.skipped, rawPaths };
}
