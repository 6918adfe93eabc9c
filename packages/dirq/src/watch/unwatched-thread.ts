import { readFileSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { inheritNativeHost, nativeFs } from "../scan/native-fs.js";
import { checkFolderInJs } from "./folder-check.js";
import {
  bySource,
  keyAfterMoves,
  UNCHANGED,
  type UnwatchedCheckAnswer,
  type UnwatchedCheckData,
  type UnwatchedCheckRequest,
} from "./unwatched-check.js";

/**
 * The thread of `UnwatchedCheck`: checks each folder it is sent in one call (dirq's native
 * extension lists it and lstats its files relative to it; Node's fs without the extension),
 * which gives a compact blob per folder: each entry's type and name and, for files, a signature
 * of their size, times and inode. Kept per folder as that one blob (no object per file), a
 * folder whose blob is byte for byte the previous check's changed in nothing and costs no
 * further work; only a folder that changed is read entry by entry, and the files that changed,
 * appeared or went away are posted back, with its subfolder names. A folder it has not seen
 * before is taken as it is (the index was filled from the same files), but for files changed
 * since `since`.
 */
const { nativeHost } = workerData as UnwatchedCheckData;
await inheritNativeHost(nativeHost);
const native = nativeFs();

/** Each folder's blob at its last check, and the files in it. */
const held = new Map<string, { blob: Buffer; files: number }>();
/** Files stat'ed by the current check. */
let statted = 0;

const DIRECTORY = 0x64; // d
/** Bytes of a file's signature after its name's NUL. */
const SIGNATURE_BYTES = 8;
/** An upper-case type letter: the entry changed since `since` (see dirq_check_folder). */
const CHANGED_SINCE = 0x20;

/** One entry of a check's blob, read in place. */
interface Entry {
  name: string;
  folder: boolean;
  /** Marked as changed since the check's `since` (a folder's first check only). */
  recent: boolean;
  /** The entry's signature bytes as a latin1 string ("" for a folder). */
  signature: string;
}

/**
 * The entries of a check's blob, each passed to `each`. The type letters are made lower case
 * in place, so that a folder's first check, kept, equals its next one when nothing changed.
 */
function readEntries(blob: Buffer, each: (entry: Entry) => void): void {
  let at = 0;
  while (at < blob.length) {
    const letter = blob[at] as number;
    const recent = (letter & CHANGED_SINCE) === 0;
    blob[at] = letter | CHANGED_SINCE;
    const end = blob.indexOf(0, at + 1);
    const name = blob.toString("latin1", at + 1, end);
    const folder = (letter | CHANGED_SINCE) === DIRECTORY;
    const next = folder ? end + 1 : end + 1 + SIGNATURE_BYTES;
    const signature = folder ? "" : blob.toString("latin1", end + 1, next);
    each({ name, folder, recent, signature });
    at = next;
  }
}

function childKey(folder: string, name: string): string {
  return folder === "" ? name : `${folder}/${name}`;
}

function folderBytes(root: Buffer, folder: string): Buffer {
  return folder === "" ? root : Buffer.concat([root, Buffer.from(`/${folder}`, "latin1")]);
}

/** Each folder's blob from the extension, or from Node's fs without it. */
function checkOne(path: Buffer, since: number | null): Buffer | null {
  return native === null ? checkFolderInJs(path, since) : native.checkFolder(path, since);
}

/**
 * Checks one folder: `UNCHANGED` when nothing in it changed since its previous check, its
 * subfolder names when it is checked the first time or something changed (the changed files
 * go to `changed`), `null` when it is gone.
 */
function check(
  root: Buffer,
  folder: string,
  since: number,
  changed: string[],
): string[] | null | typeof UNCHANGED {
  const kept = held.get(folder);
  const before = kept?.blob;
  const blob = checkOne(folderBytes(root, folder), before === undefined ? since : null);
  // Kept: gone from its name as a check listed it, a folder may be renamed with a watched one
  // above it; the next request renames it (`moves`), or forgets it.
  if (blob === null) return null;
  if (kept !== undefined && kept.blob.equals(blob)) {
    statted += kept.files;
    return UNCHANGED;
  }
  const subfolders: string[] = [];
  const files = statted;
  const old = new Map<string, string>();
  if (before !== undefined) readEntries(before, (entry) => old.set(entry.name, entry.signature));
  readEntries(blob, ({ name, folder: isFolder, recent, signature }) => {
    if (isFolder) {
      subfolders.push(name);
      old.delete(name);
      return;
    }
    statted++;
    const was = old.get(name);
    old.delete(name);
    if (before === undefined ? recent : was !== signature) changed.push(childKey(folder, name));
  });
  for (const name of old.keys()) changed.push(childKey(folder, name));
  held.set(folder, { blob, files: statted - files });
  return subfolders;
}

/**
 * CPU time this thread has used (ms; Linux's per-thread scheduler figure), `null` where it
 * cannot be read: the checks are paced by their CPU, which a loaded machine does not stretch.
 */
function threadCpuMs(): number | null {
  try {
    const used = Number(readFileSync("/proc/thread-self/schedstat", "latin1").split(" ")[0]);
    return Number.isFinite(used) ? used / 1e6 : null;
  } catch {
    return null;
  }
}

function run(request: UnwatchedCheckRequest): UnwatchedCheckAnswer {
  const cpuBefore = threadCpuMs();
  const root = Buffer.from(request.root, "utf8");
  if (request.moves.length > 0) {
    const moves = bySource(request.moves);
    const renamed = [...held].map(([folder, kept]) => [keyAfterMoves(folder, moves), kept]);
    held.clear();
    for (const [folder, kept] of renamed as [string, { blob: Buffer; files: number }][]) {
      held.set(folder, kept);
    }
  }
  const wanted = new Set(request.folders);
  // Folders no longer unwatched (watched now, moved, gone) are forgotten.
  for (const folder of held.keys()) if (!wanted.has(folder)) held.delete(folder);
  const changed: string[] = [];
  statted = 0;
  const listings = request.folders.map((folder) => check(root, folder, request.since, changed));
  const cpuAfter = threadCpuMs();
  const cpuMs = cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore;
  return { id: request.id, changed, listings, files: statted, native: native !== null, cpuMs };
}

parentPort?.on("message", (request: UnwatchedCheckRequest) => {
  let answer: UnwatchedCheckAnswer;
  try {
    answer = run(request);
  } catch (error) {
    const failed = { changed: [], listings: [], files: 0, native: native !== null, cpuMs: null };
    answer = { id: request.id, ...failed, error: String(error) };
  }
  parentPort?.postMessage(answer);
});
