import { type BigIntStats, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { findEnclosingRepository } from "./ignore-rules.js";

/**
 * Signatures of the directories a walk listed, so that a later run can tell without walking
 * again whether the listing would be the same: a folder's mtime moves whenever an entry is
 * added, removed or renamed in it, and the ignore files that shaped the listing are signed
 * too. File contents are not covered (an in-place edit leaves the folder's mtime alone).
 */

/** Marks a signature taken while the folder was changing: it never matches again. */
const RACY = "racy";

/** `stat` with nanosecond times; `undefined` for anything that cannot be stat'ed. */
export function preciseStat(path: string | Buffer): BigIntStats | undefined {
  try {
    return statSync(path, { bigint: true, throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** Size and mtime in nanoseconds (`size:mtimeNs`), `-` when there is nothing there. */
function statSignature(path: string | Buffer): string {
  const stats = preciseStat(path);
  return stats === undefined ? "-" : `${stats.size}:${stats.mtimeNs}`;
}

/** A folder's mtime and its `.gitignore`'s size and mtime; `null` when it cannot be read. */
function folderState(absolute: string | Buffer): { mtimeNs: bigint; text: string } | null {
  const stats = preciseStat(absolute);
  if (stats === undefined) return null;
  const gitignore =
    typeof absolute === "string"
      ? `${absolute}/.gitignore`
      : Buffer.concat([absolute, Buffer.from("/.gitignore")]);
  return { mtimeNs: stats.mtimeNs, text: `${stats.mtimeNs}|${statSignature(gitignore)}` };
}

/**
 * A folder's signature, taken before the folder is read. A folder modified in the same second
 * the walk started is racy: a later change within that second could keep the same mtime.
 */
export function directorySignature(absolute: string | Buffer, walkStartMs: number): string {
  const state = folderState(absolute);
  if (state === null) return RACY;
  if (state.mtimeNs / 1_000_000_000n >= BigInt(Math.floor(walkStartMs / 1000))) return RACY;
  return state.text;
}

/** Key of a listed folder (relative; `""` for the root) in a tree signature. */
export function folderKey(dir: string): string {
  return `d:${dir}`;
}

/**
 * The ignore files above a walk's base that shape its listing: every `.gitignore` from the
 * repository's top down to the base's parent (those above the root too), and the repository's
 * `info/exclude`.
 */
export function ignoreSourceSignatures(root: string, base: string): Map<string, string> {
  const signatures = new Map<string, string>();
  const repository = findEnclosingRepository(root);
  if (repository !== null) {
    for (const dir of foldersAbove(repository.top, root)) {
      signatures.set(`a:${dir}`, statSignature(join(dir, ".gitignore")));
    }
  }
  const segments = base === "" ? [] : base.split("/");
  let current = "";
  for (const segment of segments) {
    signatures.set(
      `g:${current}`,
      statSignature(`${root}${current ? `/${current}` : ""}/.gitignore`),
    );
    current = current === "" ? segment : `${current}/${segment}`;
  }
  if (repository !== null) signatures.set("x", statSignature(repository.excludeFile));
  return signatures;
}

/** The folders from `top` down to the parent of `root` (none when `root` is the top). */
function foldersAbove(top: string, root: string): string[] {
  const below = relative(top, root);
  if (below === "" || below.startsWith("..")) return [];
  const segments = below.split(sep);
  return segments.map((_, depth) => join(top, ...segments.slice(0, depth)));
}

function currentSignature(root: string, key: string): string | null {
  if (key.startsWith("d:")) {
    const dir = key.slice(2);
    return folderState(dir === "" ? root : `${root}/${dir}`)?.text ?? null;
  }
  if (key.startsWith("g:")) {
    const dir = key.slice(2);
    return statSignature(`${root}${dir ? `/${dir}` : ""}/.gitignore`);
  }
  if (key.startsWith("a:")) return statSignature(join(key.slice(2), ".gitignore"));
  if (key === "x") {
    const repository = findEnclosingRepository(root);
    return repository === null ? "-" : statSignature(repository.excludeFile);
  }
  return null;
}

/** Whether every recorded signature still holds: the walk would list the same files. */
export function treeUnchanged(root: string, recorded: ReadonlyMap<string, string>): boolean {
  if (recorded.size === 0) return false;
  for (const [key, signature] of recorded) {
    if (signature === RACY || currentSignature(root, key) !== signature) return false;
  }
  return true;
}
