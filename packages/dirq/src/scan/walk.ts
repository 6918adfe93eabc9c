import { type Dirent, readdirSync } from "node:fs";
import { type BashGlob, compileBashGlob } from "./bash-glob.js";
import { isListedFileAt, RAW_NAME_MARK } from "./file-kind.js";
import { BUILT_IN_SKIPS, IgnoreRules } from "./ignore-rules.js";
import { rulesForDir } from "./inclusion.js";
import type { PathSelection } from "./path-selection.js";

/** A file or directory the walk could not read; the walk goes on without it. */
export interface SkippedPath {
  path: string;
  reason: string;
}

export interface WalkOptions {
  /** Absolute root of the index. */
  root: string;
  selection: PathSelection;
  /** `false` is `--no-ignore`: `.gitignore` files are not read (built-in skips still apply). */
  useGitignore: boolean;
  /** Extra ignore globs relative to the root that always apply (config `ignore`). */
  extraIgnores?: readonly string[];
  /** Called now and then with the number of files found so far. */
  onProgress?: (found: number) => void;
  /** Called with each batch of newly found paths, in order, so work can start during the walk. */
  onBatch?: (paths: readonly string[], rawPaths: ReadonlyMap<string, Buffer>) => void;
  /** Called with each folder (relative, and its absolute path) just before it is read. */
  onDirectory?: (dir: string, absolute: string | Buffer) => void;
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

const PROGRESS_EVERY = 512;
const BATCH_SIZE = 2048;

function byName(a: Dirent, b: Dirent): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function joinRelative(dir: string, name: string): string {
  return dir === "" ? name : `${dir}/${name}`;
}

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

class Walker {
  readonly paths: string[] = [];
  readonly skipped: SkippedPath[] = [];
  readonly rawPaths = new Map<string, Buffer>();
  private batchRaw = new Map<string, Buffer>();
  private readonly glob: BashGlob | null;
  private readonly maxDepth: number | null;

  constructor(private readonly options: WalkOptions) {
    const { selection } = options;
    this.glob = selection.kind === "glob" ? compileBashGlob(selection.pattern) : null;
    this.maxDepth = selection.kind === "glob" ? selection.maxDepth : null;
  }

  /**
   * `inherited` are the rules of the parent; depth 0 is the walk's base (rules already
   * entered). `everything`: a trailing-`/` glob matched an ancestor, so every file below is
   * listed. `rawDir`: the directory's absolute path as bytes when a name on the way is not
   * valid UTF-8.
   */
  walkDir(
    dir: string,
    inherited: IgnoreRules,
    depth: number,
    everything: boolean,
    rawDir: Buffer | null,
  ): void {
    const absoluteDir = rawDir ?? (dir === "" ? this.options.root : `${this.options.root}/${dir}`);
    let entries: Dirent[];
    let raw: Map<string, Buffer> | null = null;
    this.options.onDirectory?.(dir, absoluteDir);
    try {
      entries = readdirSync(absoluteDir, { withFileTypes: true, encoding: "utf8" }) as Dirent[];
      if (entries.some((entry) => entry.name.includes(RAW_NAME_MARK))) raw = rawNames(absoluteDir);
    } catch (error) {
      this.skipped.push({ path: dir === "" ? "." : dir, reason: (error as Error).message });
      return;
    }
    entries.sort(byName);
    const rules = depth === 0 ? inherited : inherited.enter(dir, entries.some(isGitignoreFile));
    const glob = everything ? null : this.glob;
    const all =
      everything || (glob?.selectsDirectories === true && dir !== "" && glob.matchesDirectory(dir));
    const childDepth = depth + 1;
    const descend = all || this.maxDepth === null || childDepth < this.maxDepth;
    for (const entry of entries) {
      if (BUILT_IN_SKIPS.has(entry.name)) continue;
      const path = joinRelative(dir, entry.name);
      const rawName = raw?.get(entry.name) ?? null;
      const rawChild =
        rawName !== null || rawDir !== null ? joinRaw(absoluteDir, rawName ?? entry.name) : null;
      if (entry.isDirectory()) {
        if (!descend || (!rules.isEmpty && rules.ignores(path, true))) continue;
        this.walkDir(path, rules, childDepth, all, rawChild);
        continue;
      }
      if (!entry.isFile() && !entry.isSymbolicLink()) continue;
      if (!rules.isEmpty && rules.ignores(path, false)) continue;
      if (!all && glob !== null && !glob.matchesFile(path)) continue;
      const absolute = rawChild ?? `${absoluteDir}/${entry.name}`;
      if (entry.isSymbolicLink() && !isListedFileAt(this.options.root, absolute)) continue;
      this.found(path, rawChild);
    }
  }

  private batchStart = 0;

  found(path: string, raw: Buffer | null = null): void {
    this.paths.push(path);
    if (raw !== null) {
      this.rawPaths.set(path, raw);
      this.batchRaw.set(path, raw);
    }
    const count = this.paths.length;
    if (count % PROGRESS_EVERY === 0) this.options.onProgress?.(count);
    if (count - this.batchStart === BATCH_SIZE) this.flush();
  }

  flush(): void {
    if (this.paths.length === this.batchStart) return;
    this.options.onBatch?.(this.paths.slice(this.batchStart), this.batchRaw);
    this.batchStart = this.paths.length;
    this.batchRaw = new Map();
  }
}

function isGitignoreFile(entry: Dirent): boolean {
  return entry.name === ".gitignore" && !entry.isDirectory();
}

/**
 * Lists the files a path-table selects, applying the built-in skips, `.gitignore` rules (unless
 * turned off) and the extra ignore patterns. Synchronous on purpose: a sync walk is several
 * times faster and lighter than a promise per entry (see FACTS.md). Never throws for one bad
 * directory; those land in `skipped`.
 */
export function walkSelection(options: WalkOptions): WalkResult {
  const walker = new Walker(options);
  const rootRules = IgnoreRules.atRoot(options.root, {
    useGitignore: options.useGitignore,
    extraPatterns: options.extraIgnores,
  });
  const { selection } = options;
  if (selection.kind === "file") {
    const slash = selection.file.lastIndexOf("/");
    const rules = rulesForDir(
      options.root,
      slash === -1 ? "" : selection.file.slice(0, slash),
      rootRules,
    );
    const name = selection.file.slice(slash + 1);
    if (
      rules !== null &&
      !BUILT_IN_SKIPS.has(name) &&
      !rules.ignores(selection.file, false) &&
      isListedFileAt(options.root, `${options.root}/${selection.file}`)
    ) {
      walker.found(selection.file);
    }
  } else {
    const rules = rulesForDir(options.root, selection.base, rootRules);
    if (rules !== null) walker.walkDir(selection.base, rules, 0, false, null);
  }
  walker.flush();
  options.onProgress?.(walker.paths.length);
  return { paths: walker.paths, skipped: walker.skipped, rawPaths: walker.rawPaths };
}
