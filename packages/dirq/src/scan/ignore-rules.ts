import { closeSync, constants, fstatSync, openSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { compileGitignore, type GitignorePatterns } from "./gitignore-patterns.js";

/** The rule that ignores a path, for messages (`IgnoreRules.ignoredBy`). */
export type IgnoreReason =
  /** The root itself lies in a folder git ignores. */
  | { kind: "root" }
  /** An always-on pattern (config `ignore`, the `--persist` cache). */
  | { kind: "configured"; pattern: string }
  /** A pattern of an ignore file, as `git check-ignore -v` names it (`.gitignore:3:build/`). */
  | { kind: "file"; file: string; line: number; pattern: string };

/**
 * Names skipped at every level, even with `--no-ignore`: dependencies, git's own folder, and
 * dirq's cache folder (`--persist`).
 */
export const BUILT_IN_SKIPS: ReadonlySet<string> = new Set(["node_modules", ".git", ".dirq"]);

/** One directory's ignore file(s), with the directory they are relative to. */
interface IgnoreLevel {
  dir: string;
  matcher: GitignorePatterns;
  /** The ignore file, relative to the root (`sub/.gitignore`, `../.gitignore`), for messages. */
  file: string;
}

/** An ignore file that is a FIFO, a socket or a device: never read (see readRegularFile). */
class NotRegularFile extends Error {
  constructor(readonly kind: string) {
    super(`${kind}, not a regular file`);
  }
}

/** What a file that is neither a regular file nor a folder is, for the warning. */
function kindOf(stats: ReturnType<typeof fstatSync>): string {
  if (stats.isFIFO()) return "a FIFO";
  if (stats.isSocket()) return "a socket";
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return "a device";
  return "an unknown kind of file";
}

/**
 * A file's text, read only when it is a regular file. Opening without blocking and checking
 * the open file matters: a FIFO named `.gitignore` would hold a read (git's too) until some
 * writer came, and dirq would hang, or in the server stop answering. A folder fails as
 * `readFileSync` fails on one (EISDIR).
 */
function readRegularFile(path: string): string {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stats = fstatSync(fd);
    if (stats.isDirectory()) {
      throw Object.assign(new Error(`EISDIR: a folder, read '${path}'`), { code: "EISDIR" });
    }
    if (!stats.isFile()) throw new NotRegularFile(kindOf(stats));
    return readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
}

function readIfPresent(path: string): string | null {
  try {
    return readRegularFile(path);
  } catch {
    return null;
  }
}

/** Told of an ignore file that is there but cannot be read (its patterns do not apply). */
export type UnreadableIgnoreFile = (path: string, reason: string) => void;

/** Errors that mean "no such file" to git too: it says nothing about them. */
const ABSENT = new Set(["ENOENT", "ENOTDIR", "EISDIR"]);

/**
 * An ignore file's text, `null` when there is none. One that is there but cannot be read
 * (a symlink loop, an I/O error, no permission, a FIFO) is reported, as git warns
 * (`warning: unable to access 'sub/.gitignore': ...`), and then treated as empty.
 */
function readIgnoreFile(
  path: string,
  shownAs: string,
  onUnreadable: UnreadableIgnoreFile | undefined,
): string | null {
  try {
    return readRegularFile(path);
  } catch (error) {
    if (error instanceof NotRegularFile) {
      onUnreadable?.(
        shownAs,
        `it is ${error.message}, so it is not read and its patterns do not apply`,
      );
      return null;
    }
    const code = (error as NodeJS.ErrnoException).code ?? "";
    if (!ABSENT.has(code)) {
      const message = error instanceof Error ? error.message : String(error);
      const reason = /^(E[A-Z]+: [^,]*)/.exec(message)?.[1] ?? message;
      onUnreadable?.(shownAs, `cannot read it (${reason}), so its patterns do not apply`);
    }
    return null;
  }
}

/** The git repository that holds a directory: its top (work tree) and its `info/exclude`. */
interface EnclosingRepository {
  top: string;
  excludeFile: string;
}

/** Where `.git` at `top` points: itself when a directory; the `gitdir:` of a `.git` file. */
function gitDirOf(top: string): string | null {
  const dotGit = join(top, ".git");
  const stats = statSync(dotGit, { throwIfNoEntry: false });
  if (stats === undefined) return null;
  if (stats.isDirectory()) return dotGit;
  const text = readIfPresent(dotGit);
  const target = text === null ? null : /^gitdir:\s*(.+?)\s*$/m.exec(text)?.[1];
  return target ? resolve(top, target) : null;
}

/**
 * Finds the repository enclosing `dir` (the nearest folder upwards with a `.git`). In a
 * worktree or submodule `.git` is a file naming the real git directory, and a worktree's
 * `info/exclude` lives in the common directory its `commondir` file names.
 */
export function findEnclosingRepository(dir: string): EnclosingRepository | null {
  for (let current = dir; ; current = dirname(current)) {
    let gitDir: string | null = null;
    try {
      gitDir = gitDirOf(current);
    } catch {
      gitDir = null;
    }
    if (gitDir !== null) {
      const common = readIfPresent(join(gitDir, "commondir"))?.trim();
      const commonDir = common ? resolve(gitDir, common) : gitDir;
      return { top: current, excludeFile: join(commonDir, "info", "exclude") };
    }
    if (dirname(current) === current) return null;
  }
}

/** Config `ignore` patterns are relative to the root; a leading `./` says the same. */
function rootRelativePattern(pattern: string): string {
  const negated = pattern.startsWith("!");
  const body = negated ? pattern.slice(1) : pattern;
  const stripped = body.replace(/^(?:\.\/)+/, "/");
  return negated ? `!${stripped}` : stripped;
}

/**
 * The ignore rules in force in one directory: every `.gitignore` from the root down (a deeper
 * file wins over a shallower one, negations included) plus `.git/info/exclude` at the root,
 * and the always-on extra patterns (config `ignore`), which no negation can undo.
 */
export class IgnoreRules {
  private constructor(
    private readonly root: string,
    /** The root's path below the repository top (`''` at the top or outside a repository). */
    private readonly prefix: string,
    private readonly levels: readonly IgnoreLevel[],
    private readonly forced: GitignorePatterns | null,
    private readonly useGitignore: boolean,
    /** The root itself lies in a folder git ignores: git lists nothing here. */
    private readonly rootIgnored = false,
  ) {}

  /**
   * Rules at the root. `useGitignore: false` is `--no-ignore`. Inside a git repository, the
   * `.gitignore` files of the folders from the repository's top down to the root and the
   * repository's `info/exclude` apply, as they do for git.
   */
  static atRoot(
    root: string,
    options: {
      useGitignore: boolean;
      extraPatterns?: readonly string[];
      onUnreadable?: UnreadableIgnoreFile;
    },
  ): IgnoreRules {
    const extra = (options.extraPatterns ?? []).map(rootRelativePattern);
    const forced = extra.length > 0 ? compileGitignore(extra.join("\n")) : null;
    if (!options.useGitignore) return new IgnoreRules(root, "", [], forced, false);
    const repository = findEnclosingRepository(root);
    const top = repository?.top ?? root;
    const prefix = relative(top, root).split(sep).join("/");
    const levels: IgnoreLevel[] = [];
    const exclude = repository ? readIfPresent(repository.excludeFile) : null;
    if (exclude !== null && repository) {
      const file = relative(root, repository.excludeFile).split(sep).join("/");
      levels.push({ dir: "", matcher: compileGitignore(exclude), file });
    }
    let rules = new IgnoreRules(root, prefix, levels, forced, true);
    // Folders from the top down to the root: their .gitignore files, and whether git would
    // ignore the root itself (then it lists nothing under it).
    const segments = prefix === "" ? [] : prefix.split("/");
    for (let depth = 0; depth <= segments.length; depth++) {
      const dir = segments.slice(0, depth).join("/");
      if (depth > 0 && rules.matchLevels(dir, true)) {
        return new IgnoreRules(root, prefix, levels, forced, true, true);
      }
      const file = join(top, dir, ".gitignore");
      const shown = relative(root, file).split(sep).join("/");
      const text = readIgnoreFile(file, shown, options.onUnreadable);
      if (text !== null) levels.push({ dir, matcher: compileGitignore(text), file: shown });
      rules = new IgnoreRules(root, prefix, [...levels], forced, true);
    }
    return rules;
  }

  /** Rules for a subdirectory `dir` (relative), adding its `.gitignore` when it has one. */
  enter(dir: string, hasGitignore: boolean, onUnreadable?: UnreadableIgnoreFile): IgnoreRules {
    if (!this.useGitignore || !hasGitignore) return this;
    const file = `${dir}/.gitignore`;
    const text = readIgnoreFile(join(this.root, dir, ".gitignore"), file, onUnreadable);
    if (text === null) return this;
    const level = { dir: this.fromTop(dir), matcher: compileGitignore(text), file };
    return new IgnoreRules(
      this.root,
      this.prefix,
      [...this.levels, level],
      this.forced,
      true,
      this.rootIgnored,
    );
  }

  private fromTop(path: string): string {
    return this.prefix === "" ? path : `${this.prefix}/${path}`;
  }

  /** The `.gitignore` levels' verdict for a path relative to the repository top. */
  private matchLevels(fromTop: string, isDir: boolean): boolean {
    let ignored = false;
    for (const level of this.levels) {
      if (level.dir !== "" && !fromTop.startsWith(`${level.dir}/`)) continue;
      const local = level.dir === "" ? fromTop : fromTop.slice(level.dir.length + 1);
      const verdict = level.matcher.verdict(local, isDir);
      if (verdict !== null) ignored = verdict;
    }
    return ignored;
  }

  /** Whether `path` (relative to the root) is ignored; `isDir` lets `dir/` patterns match. */
  ignores(path: string, isDir: boolean): boolean {
    if (this.rootIgnored) return true;
    if (this.forced?.verdict(path, isDir) === true) return true;
    return this.matchLevels(this.fromTop(path), isDir);
  }

  /**
   * The rule that makes `ignores(path, isDir)` true, or `null` when it is false: what
   * `git check-ignore -v` names. Slower than `ignores`: for messages.
   */
  ignoredBy(path: string, isDir: boolean): IgnoreReason | null {
    if (this.rootIgnored) return { kind: "root" };
    const forced = this.forced?.decidingPattern(path, isDir);
    if (forced && !forced.negative) return { kind: "configured", pattern: forced.pattern };
    const fromTop = this.fromTop(path);
    let found: IgnoreReason | null = null;
    for (const level of this.levels) {
      if (level.dir !== "" && !fromTop.startsWith(`${level.dir}/`)) continue;
      const local = level.dir === "" ? fromTop : fromTop.slice(level.dir.length + 1);
      const match = level.matcher.decidingPattern(local, isDir);
      if (match === null) continue;
      found = match.negative
        ? null
        : { kind: "file", file: level.file, line: match.line, pattern: match.pattern };
    }
    return found;
  }

  /** True when no rule could ignore anything here (lets the walk skip the checks). */
  get isEmpty(): boolean {
    return this.levels.length === 0 && this.forced === null && !this.rootIgnored;
  }
}
