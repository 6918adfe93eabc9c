import { lstatSync } from "node:fs";
import { BUILT_IN_SKIPS, IgnoreRules } from "./ignore-rules.js";
import { compileGlob, type PathSelection } from "./path-selection.js";

function joinRelative(dir: string, name: string): string {
  return dir === "" ? name : `${dir}/${name}`;
}

/** lstat that answers `undefined` for anything it cannot see (missing, no permission, ...). */
function lstatQuietly(path: string): ReturnType<typeof lstatSync> | undefined {
  try {
    return lstatSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/**
 * Follows the ignore rules from the root down to `dir`; `null` when `dir` is skipped, missing,
 * or reached through a symlinked directory (never followed: it could lead outside the root).
 */
export function rulesForDir(root: string, dir: string, rootRules: IgnoreRules): IgnoreRules | null {
  let rules = rootRules;
  let current = "";
  for (const segment of dir === "" ? [] : dir.split("/")) {
    current = joinRelative(current, segment);
    const entered = enterFolder(root, rules, current, segment);
    if (entered === null || entered === MISSING) return null;
    rules = entered;
  }
  return rules;
}

/** What `enterFolder` answers for a folder with nothing at its path. */
const MISSING = Symbol("missing");

/**
 * The rules inside `folder` (named `segment` in its parent, whose rules are `rules`); `null`
 * when the rules skip it or it is not a folder (a symlink is never followed), `MISSING` when
 * nothing is there.
 */
function enterFolder(
  root: string,
  rules: IgnoreRules,
  folder: string,
  segment: string,
): IgnoreRules | null | typeof MISSING {
  if (BUILT_IN_SKIPS.has(segment) || rules.ignores(folder, true)) return null;
  const found = lstatQuietly(`${root}/${folder}`);
  if (found === undefined) return MISSING;
  if (!found.isDirectory()) return null;
  // An unsearchable folder has no readable .gitignore; the walk reports the folder itself.
  const gitignore = lstatQuietly(`${root}/${folder}/.gitignore`);
  return rules.enter(folder, gitignore !== undefined);
}

/**
 * Answers "would a walk list this file?" for single paths (the watcher's question), caching
 * the rules per directory. Make a new one when `.gitignore` files may have changed.
 */
export class InclusionCheck {
  private readonly rootRules: IgnoreRules;
  private readonly byDir = new Map<string, IgnoreRules | null>();

  constructor(
    private readonly root: string,
    options: { useGitignore: boolean; extraIgnores?: readonly string[] },
  ) {
    this.rootRules = IgnoreRules.atRoot(root, {
      useGitignore: options.useGitignore,
      extraPatterns: options.extraIgnores,
    });
  }

  /** Whether the file at `path` (relative) is not skipped by any ignore rule. */
  includes(path: string): boolean {
    const slash = path.lastIndexOf("/");
    const dir = slash === -1 ? "" : path.slice(0, slash);
    const name = path.slice(slash + 1);
    if (BUILT_IN_SKIPS.has(name)) return false;
    const rules = this.rulesFor(dir);
    return rules !== null && !rules.ignores(path, false);
  }

  /**
   * `rulesForDir`, from the rules of the folder's parent as cached: a checkout's thousand new
   * folders under a few parents state each parent once, not once per folder under it. A folder
   * missing when asked is judged by the rules above it, as a folder without a `.gitignore`:
   * cached as skipped, one renamed away a moment before (a folder renamed back and forth) was
   * never walked or followed again by the watcher, which keeps its check for its whole life.
   */
  private rulesFor(dir: string): IgnoreRules | null {
    if (dir === "") return this.rootRules;
    const cached = this.byDir.get(dir);
    if (cached !== undefined) return cached;
    const slash = dir.lastIndexOf("/");
    const parent = this.rulesFor(slash === -1 ? "" : dir.slice(0, slash));
    if (parent === null) return null;
    const entered = enterFolder(this.root, parent, dir, dir.slice(slash + 1));
    const rules = entered === MISSING ? parent : entered;
    this.byDir.set(dir, rules);
    return rules;
  }
}

/** A test for "does this selection name this path?", ignore rules aside. */
export function selectionMatcher(selection: PathSelection): (path: string) => boolean {
  switch (selection.kind) {
    case "file":
      return (path) => path === selection.file;
    case "tree":
      // The base itself too: a table's folder named before it existed may turn up as a file.
      return (path) =>
        selection.base === "" || path === selection.base || path.startsWith(`${selection.base}/`);
    case "glob":
      return compileGlob(selection.pattern);
  }
}
