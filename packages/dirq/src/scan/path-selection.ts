import { lstatSync, statSync } from "node:fs";
import { join, posix } from "node:path";
import { DirqError } from "../errors.js";
import {
  globProblem,
  compileBashGlob,
  hasEscape,
  hasGlobSyntax,
  unescapeGlob,
} from "./bash-glob.js";

/** What a path-table name selects, relative to the root (`/`-separated, no leading `./`). */
export type PathSelection =
  | { kind: "tree"; base: string }
  | { kind: "file"; file: string }
  | { kind: "glob"; base: string; pattern: string; maxDepth: number | null };

const PATH_LIKE = /^(?:\.{1,2}(?:\/|$)|\/|~)/;

function hasGlobCharacters(text: string): boolean {
  return hasGlobSyntax(text);
}

function outsideRoot(name: string): DirqError {
  return new DirqError(
    "PATH_OUTSIDE_ROOT",
    `path-table '${name}' is outside the root: path-tables name files under the working directory and start with './'`,
  );
}

/** Normalizes `relative` (the part after `./`), rejecting anything that climbs out of the root. */
function normalizeRelative(name: string, relative: string): string {
  if (relative.startsWith("/") || relative.startsWith("~")) throw outsideRoot(name);
  const normalized = posix.normalize(relative);
  if (normalized === ".." || normalized.startsWith("../")) throw outsideRoot(name);
  const trimmed = normalized.replace(/\/+$/, "");
  return trimmed === "." ? "" : trimmed;
}

/** `maxDepth` counts segments below `base`. A pattern ending in `/` keeps its slash. */
function globSelection(name: string, relative: string, trailingSlash: boolean): PathSelection {
  const pattern = trailingSlash ? `${relative}/` : relative;
  const problem = globProblem(pattern);
  if (problem !== null) throw new DirqError("PATH_INVALID", `path-table '${name}': ${problem}`);
  const glob = compileBashGlob(pattern);
  const baseDepth = glob.base === "" ? 0 : glob.base.split("/").length;
  const maxDepth = glob.maxDepth === null ? null : glob.maxDepth - baseDepth;
  return { kind: "glob", base: glob.base, pattern, maxDepth };
}

/** Whether a link's target is a directory; a link that cannot be resolved is not. */
function resolvesToDirectory(path: string): boolean {
  try {
    return statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false;
  } catch {
    return false;
  }
}

function literalSelection(name: string, relative: string, root: string): PathSelection {
  if (relative === "") return { kind: "tree", base: "" };
  let stats: ReturnType<typeof lstatSync> | undefined;
  try {
    stats = lstatSync(posix.join(root, relative), { throwIfNoEntry: false });
  } catch (error) {
    throw new DirqError("PATH_NOT_FOUND", `path-table '${name}': ${(error as Error).message}`);
  }
  if (!stats) {
    throw new DirqError(
      "PATH_NOT_FOUND",
      `path-table '${name}': no such file or directory under the root`,
    );
  }
  if (stats.isDirectory()) return { kind: "tree", base: relative };
  // A symlink to a directory is never followed: the walk finds the link and lists nothing.
  if (stats.isSymbolicLink() && resolvesToDirectory(join(root, relative))) {
    return { kind: "tree", base: relative };
  }
  return { kind: "file", file: relative };
}

/**
 * Reads a table name as a path-table. Returns `null` when the name is not path-like (then it
 * is an ordinary missing table), throws a `DirqError` for a path outside the root or a bare
 * glob. `root` is the absolute index root.
 */
export function parsePathTableName(name: string, root: string): PathSelection | null {
  if (!PATH_LIKE.test(name)) {
    if (hasGlobCharacters(name) && !/\s/.test(name)) {
      throw new DirqError(
        "PATH_INVALID",
        `'${name}' is not a path-table: path-tables start with './', as in FROM './${name}'`,
      );
    }
    return null;
  }
  const withoutDot = name === "." ? "" : name.startsWith("./") ? name.slice(2) : name;
  const relative = normalizeRelative(name, withoutDot);
  if (hasGlobCharacters(relative)) return globSelection(name, relative, /\/$/.test(withoutDot));
  // `'./\[x\].md'` names the file `[x].md`: escapes are removed from a literal path.
  const literal = hasEscape(relative) ? unescapeGlob(relative) : relative;
  return literalSelection(name, literal, root);
}

/**
 * Whether a path (relative, a file's) belongs to a glob selection: bash globstar rules,
 * dot-files only when spelled; under a trailing `/`, every file below a matched directory.
 */
export function compileGlob(pattern: string): (relativePath: string) => boolean {
  const glob = compileBashGlob(pattern);
  if (!glob.selectsDirectories) return (path) => glob.matchesFile(path);
  return (path) => {
    if (glob.matchesFile(path)) return true;
    for (let slash = path.indexOf("/"); slash !== -1; slash = path.indexOf("/", slash + 1)) {
      if (glob.matchesDirectory(path.slice(0, slash))) return true;
    }
    return false;
  };
}

/**
 * What a glob's `{name}` captures matched in a file's path (relative): the first alternative
 * that matches the file decides; under a trailing `/`, the matched folder above it. A capture
 * the deciding alternative lacks is absent; no match: `{}`.
 */
export function compileCaptures(pattern: string): (relativePath: string) => Record<string, string> {
  const glob = compileBashGlob(pattern);
  return (path) => {
    const found = glob.fileCaptures(path);
    if (found !== null || !glob.selectsDirectories) return found ?? {};
    for (let slash = path.lastIndexOf("/"); slash > 0; slash = path.lastIndexOf("/", slash - 1)) {
      const inFolder = glob.directoryCaptures(path.slice(0, slash));
      if (inFolder !== null) return inFolder;
    }
    return {};
  };
}

/** Compiled capture readers by pattern: a path-table's generated columns call one per row. */
const captureReaders = new Map<string, (relativePath: string) => Record<string, string>>();

/**
 * The SQL function a path-table's capture columns are generated with (`dirq_capture(pattern,
 * name, path)`): what capture `name` of `pattern` matched in `path`, or NULL.
 */
export function captureValue(pattern: unknown, name: unknown, path: unknown): string | null {
  if (typeof pattern !== "string" || typeof name !== "string" || typeof path !== "string") {
    return null;
  }
  let read = captureReaders.get(pattern);
  if (read === undefined) {
    if (captureReaders.size >= 256) captureReaders.clear();
    captureReaders.set(pattern, (read = compileCaptures(pattern)));
  }
  return read(path)[name] ?? null;
}
