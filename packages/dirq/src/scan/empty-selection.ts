import { type Dirent, lstatSync, readdirSync } from "node:fs";
import { isListedFileAt } from "./file-kind.js";
import { BUILT_IN_SKIPS, type IgnoreReason, IgnoreRules } from "./ignore-rules.js";
import { compileGlob, type PathSelection } from "./path-selection.js";

/** What decides a walk's files (see `WalkOptions`). */
export interface EmptySelectionOptions {
  root: string;
  selection: PathSelection;
  useGitignore: boolean;
  extraIgnores?: readonly string[];
}

/** A path-table that lists no file, and why (`whyEmpty`): told to the user, never an error. */
export interface EmptyPathTable {
  /** The path-table as written (`'./posts/*.json'` without its quotes). */
  table: string;
  reason: string;
}

/** Told of each path-table a statement built that lists no file. */
export type EmptyTableListener = (table: EmptyPathTable) => void;

/**
 * Entries the search for a file that would match lists at most: it enters the folders the walk
 * skips (`node_modules`, ignored ones), which may be large.
 */
export const SEARCH_LIMIT = 50_000;

/** Stands for a leading dot, to ask whether a glob would match if dot names were not special. */
const DOT_STAND_IN = "\u0001";

/** A path with a name that starts with a dot. */
const DOT_NAME = /(?:^|\/)\./;

function undotted(path: string): string {
  return path
    .split("/")
    .map((name) => (name.startsWith(".") ? DOT_STAND_IN + name.slice(1) : name))
    .join("/");
}

/** A file the selection would take if no rule skipped it; `dotted`: only if dots were not special. */
interface Candidate {
  path: string;
  dotted: boolean;
}

function listQuietly(absolute: string): Dirent[] {
  try {
    return readdirSync(absolute, { withFileTypes: true }).sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
  } catch {
    return [];
  }
}

/**
 * The first file under the selection's base that it would take with no ignore rule and no
 * built-in skip, searched depth first; a file only a dot name keeps out, when there is no
 * other. `exhausted`: the search stopped past `limit` entries.
 */
function findCandidate(
  root: string,
  selection: PathSelection,
  limit: number,
): { candidate: Candidate | null; exhausted: boolean } {
  if (selection.kind === "file") {
    return { candidate: { path: selection.file, dotted: false }, exhausted: false };
  }
  const matches = selection.kind === "glob" ? compileGlob(selection.pattern) : () => true;
  const maxDepth = selection.kind === "glob" ? selection.maxDepth : null;
  let dotted: string | null = null;
  let listed = 0;
  const stack = [{ dir: selection.base, depth: 0 }];
  for (let folder = stack.pop(); folder !== undefined; folder = stack.pop()) {
    const { dir, depth } = folder;
    const entries = listQuietly(dir === "" ? root : `${root}/${dir}`);
    listed += entries.length;
    const subfolders: string[] = [];
    for (const entry of entries) {
      const path = dir === "" ? entry.name : `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (maxDepth === null || depth + 1 < maxDepth) subfolders.push(path);
      } else if (matches(path)) {
        return { candidate: { path, dotted: false }, exhausted: false };
      } else if (dotted === null && DOT_NAME.test(path) && matches(undotted(path))) {
        dotted = path;
      }
    }
    const found = dotted === null ? null : { path: dotted, dotted: true };
    if (listed > limit) return { candidate: found, exhausted: true };
    for (const path of subfolders.reverse()) stack.push({ dir: path, depth: depth + 1 });
  }
  return { candidate: dotted === null ? null : { path: dotted, dotted: true }, exhausted: false };
}

/** Why `path` is ignored, its folder `current` or itself (`isDir` false) matching `reason`. */
function ignoredText(path: string, current: string, isDir: boolean, reason: IgnoreReason): string {
  if (reason.kind === "root") {
    return "the root lies inside a folder git ignores, so nothing under it is listed. Use --no-ignore to list ignored files";
  }
  const subject = isDir ? `is ignored: its folder ${current}/ matches` : "is ignored by";
  if (reason.kind === "configured") {
    return `${path} matches it but ${subject} the ignore pattern '${reason.pattern}' of the config, which always applies`;
  }
  const rule = `${reason.file}:${reason.line}:${reason.pattern}`;
  return `${path} matches it but ${subject} ${rule}. Use --no-ignore to list ignored files`;
}

/** Why a file the selection would take is not listed; `null` when nothing keeps it out. */
function whyNotListed(options: EmptySelectionOptions, candidate: Candidate): string | null {
  const { root, useGitignore, extraIgnores } = options;
  const { path } = candidate;
  let rules = IgnoreRules.atRoot(root, { useGitignore, extraPatterns: extraIgnores });
  const names = path.split("/");
  let current = "";
  for (const [i, name] of names.entries()) {
    current = current === "" ? name : `${current}/${name}`;
    const isDir = i < names.length - 1;
    if (BUILT_IN_SKIPS.has(name)) {
      const where = isDir ? `is inside ${current}/, a folder` : `is named ${name}, a name`;
      return `${path} matches it but ${where} dirq always skips (also with --no-ignore)`;
    }
    const reason = rules.ignoredBy(current, isDir);
    if (reason !== null) return ignoredText(path, current, isDir, reason);
    if (isDir) {
      const gitignore = lstatSync(`${root}/${current}/.gitignore`, { throwIfNoEntry: false });
      rules = rules.enter(current, gitignore !== undefined);
    }
  }
  if (candidate.dotted) {
    return `${path} would match it, but '*', '?' and '**' never match a name that starts with '.' (as in bash). Spell the dot in the path-table to include such files`;
  }
  if (!isListedFileAt(root, `${root}/${path}`)) {
    return `${path} matches it but is not a regular file, nor a link to one inside the root`;
  }
  return null;
}

/**
 * Why a selection whose walk listed no file (and skipped none) is empty, for a message:
 * no file matches it at all, or the first file that would match and the rule that keeps it out
 * (a built-in skip, an ignore file's pattern as `git check-ignore -v` names it, a configured
 * pattern, the dot-name rule of globs, or not being a regular file).
 */
export function whyEmpty(options: EmptySelectionOptions, limit = SEARCH_LIMIT): string {
  const { candidate, exhausted } = findCandidate(options.root, options.selection, limit);
  let reason: string | null = null;
  try {
    reason = candidate === null ? null : whyNotListed(options, candidate);
  } catch {
    // A folder on the way that cannot be searched: the walk said nothing of it either.
    reason = null;
  }
  if (reason !== null) return reason;
  return exhausted
    ? `no file dirq lists matches it (of the folders it skips, such as node_modules, it searched only the first ${limit} entries for one)`
    : "no file matches it";
}

/** `whyEmpty`'s answer for the path-table `table` (as written). */
export function emptyTable(table: string, walk: EmptySelectionOptions): EmptyPathTable {
  return { table, reason: whyEmpty(walk) };
}
