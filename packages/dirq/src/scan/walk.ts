import { type Dirent, readdirSync, statSync } from "node:fs";
import { BUILT_IN_SKIPS, IgnoreRules } from "./ignore-rules.js";
import { rulesForDir } from "./inclusion.js";
import { compileGlob, type PathSelection } from "./path-selection.js";

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
  onBatch?: (paths: readonly string[]) => void;
}

export interface WalkResult {
  /** Relative, `/`-separated paths in a stable order (by name within each directory). */
  paths: string[];
  skipped: SkippedPath[];
}

const PROGRESS_EVERY = 512;
const BATCH_SIZE = 2048;

function byName(a: Dirent, b: Dirent): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function joinRelative(dir: string, name: string): string {
  return dir === "" ? name : `${dir}/${name}`;
}

/** Symlinked files count as files; symlinked directories are never followed. */
function isListedFile(entry: Dirent, absolute: string): boolean {
  if (entry.isFile()) return true;
  if (!entry.isSymbolicLink()) return false;
  return statSync(absolute, { throwIfNoEntry: false })?.isFile() ?? false;
}

class Walker {
  readonly paths: string[] = [];
  readonly skipped: SkippedPath[] = [];
  private readonly match: ((path: string) => boolean) | null;
  private readonly maxDepth: number | null;

  constructor(private readonly options: WalkOptions) {
    const { selection } = options;
    this.match = selection.kind === "glob" ? compileGlob(selection.pattern) : null;
    this.maxDepth = selection.kind === "glob" ? selection.maxDepth : null;
  }

  /** `inherited` are the rules of the parent; depth 0 is the walk's base (rules already entered). */
  walkDir(dir: string, inherited: IgnoreRules, depth: number): void {
    const absoluteDir = dir === "" ? this.options.root : `${this.options.root}/${dir}`;
    let entries: Dirent[];
    try {
      entries = readdirSync(absoluteDir, { withFileTypes: true });
    } catch (error) {
      this.skipped.push({ path: dir === "" ? "." : dir, reason: (error as Error).message });
      return;
    }
    entries.sort(byName);
    const rules = depth === 0 ? inherited : inherited.enter(dir, entries.some(isGitignoreFile));
    const childDepth = depth + 1;
    const descend = this.maxDepth === null || childDepth < this.maxDepth;
    for (const entry of entries) {
      if (BUILT_IN_SKIPS.has(entry.name)) continue;
      const path = joinRelative(dir, entry.name);
      if (entry.isDirectory()) {
        if (!descend || (!rules.isEmpty && rules.ignores(path, true))) continue;
        this.walkDir(path, rules, childDepth);
        continue;
      }
      if (!isListedFile(entry, `${absoluteDir}/${entry.name}`)) continue;
      if (!rules.isEmpty && rules.ignores(path, false)) continue;
      if (this.match !== null && !this.match(path)) continue;
      this.found(path);
    }
  }

  private batchStart = 0;

  found(path: string): void {
    this.paths.push(path);
    const count = this.paths.length;
    if (count % PROGRESS_EVERY === 0) this.options.onProgress?.(count);
    if (count - this.batchStart === BATCH_SIZE) this.flush();
  }

  flush(): void {
    if (this.paths.length === this.batchStart) return;
    this.options.onBatch?.(this.paths.slice(this.batchStart));
    this.batchStart = this.paths.length;
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
    if (rules !== null && !BUILT_IN_SKIPS.has(name) && !rules.ignores(selection.file, false)) {
      walker.found(selection.file);
    }
  } else {
    const rules = rulesForDir(options.root, selection.base, rootRules);
    if (rules !== null) walker.walkDir(selection.base, rules, 0);
  }
  walker.flush();
  options.onProgress?.(walker.paths.length);
  return { paths: walker.paths, skipped: walker.skipped };
}
