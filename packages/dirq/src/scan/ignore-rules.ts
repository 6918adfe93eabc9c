import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Ignore } from "ignore";
import type createIgnore from "ignore";
import { lazyModule } from "../lazy-module.js";

const ignoreModule = lazyModule<typeof createIgnore>("ignore");
const ignore = () => ignoreModule()();

/** Names skipped at every level, even with `--no-ignore`. */
export const BUILT_IN_SKIPS: ReadonlySet<string> = new Set(["node_modules", ".git"]);

/** One directory's ignore file(s), with the directory they are relative to. */
interface IgnoreLevel {
  dir: string;
  matcher: Ignore;
}

function readIfPresent(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/**
 * The ignore rules in force in one directory: every `.gitignore` from the root down (a deeper
 * file wins over a shallower one, negations included) plus `.git/info/exclude` at the root,
 * and the always-on extra patterns (config `ignore`), which no negation can undo.
 */
export class IgnoreRules {
  private constructor(
    private readonly root: string,
    private readonly levels: readonly IgnoreLevel[],
    private readonly forced: Ignore | null,
    private readonly useGitignore: boolean,
  ) {}

  /** Rules at the root. `useGitignore: false` is `--no-ignore`. */
  static atRoot(
    root: string,
    options: { useGitignore: boolean; extraPatterns?: readonly string[] },
  ): IgnoreRules {
    const extra = options.extraPatterns ?? [];
    const forced = extra.length > 0 ? ignore().add([...extra]) : null;
    const base = new IgnoreRules(root, [], forced, options.useGitignore);
    if (!options.useGitignore) return base;
    const exclude = readIfPresent(join(root, ".git", "info", "exclude"));
    const gitignore = readIfPresent(join(root, ".gitignore"));
    if (exclude === null && gitignore === null) return base;
    const matcher = ignore()
      .add(exclude ?? "")
      .add(gitignore ?? "");
    return new IgnoreRules(root, [{ dir: "", matcher }], forced, true);
  }

  /** Rules for a subdirectory `dir` (relative), adding its `.gitignore` when it has one. */
  enter(dir: string, hasGitignore: boolean): IgnoreRules {
    if (!this.useGitignore || !hasGitignore) return this;
    const text = readIfPresent(join(this.root, dir, ".gitignore"));
    if (text === null) return this;
    const level = { dir, matcher: ignore().add(text) };
    return new IgnoreRules(this.root, [...this.levels, level], this.forced, true);
  }

  /** Whether `path` (relative to the root) is ignored; `isDir` lets `dir/` patterns match. */
  ignores(path: string, isDir: boolean): boolean {
    if (this.forced?.ignores(isDir ? `${path}/` : path)) return true;
    let ignored = false;
    for (const level of this.levels) {
      const local = level.dir === "" ? path : path.slice(level.dir.length + 1);
      const result = level.matcher.test(isDir ? `${local}/` : local);
      if (result.ignored) ignored = true;
      else if (result.unignored) ignored = false;
    }
    return ignored;
  }

  /** True when no rule could ignore anything here (lets the walk skip the checks). */
  get isEmpty(): boolean {
    return this.levels.length === 0 && this.forced === null;
  }
}
