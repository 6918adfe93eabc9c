import { lstatSync, readdirSync, type Stats } from "node:fs";
import { parentPort } from "node:worker_threads";
import type { UnwatchedCheckAnswer, UnwatchedCheckRequest } from "./unwatched-check.js";

/**
 * The thread of `UnwatchedCheck`: lists each folder it is sent and stats its files, compares
 * them with what the folder showed at its previous check (one string per folder: each file's
 * name, size, times and inode), and posts back only the files that changed, appeared or went
 * away, with each folder's subfolder names. A folder it has not seen before is taken as it is
 * (the index was filled from the same files), but for files changed since `since`.
 */
const held = new Map<string, string>();
/** Files stat'ed by the current check. */
let statted = 0;

function signature(stats: Stats): string {
  return `${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}:${stats.ino}`;
}

/** `name\0signature` lines of a folder's files, as held. */
function parse(text: string): Map<string, string> {
  const entries = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const cut = line.indexOf("\0");
    entries.set(line.slice(0, cut), line.slice(cut + 1));
  }
  return entries;
}

function childKey(folder: string, name: string): string {
  return folder === "" ? name : `${folder}/${name}`;
}

/** Lists one folder: its subfolders, or `null` when it is gone; its changed files to `changed`. */
function check(root: Buffer, folder: string, since: number, changed: string[]): string[] | null {
  const base: Buffer =
    folder === "" ? root : Buffer.concat([root, Buffer.from(`/${folder}`, "latin1")]);
  let entries;
  try {
    entries = readdirSync(base, { withFileTypes: true, encoding: "buffer" });
  } catch {
    held.delete(folder);
    return null;
  }
  const subfolders: string[] = [];
  const lines: string[] = [];
  const fresh = new Map<string, number>();
  for (const entry of entries) {
    const name = entry.name.toString("latin1");
    if (entry.isDirectory()) {
      subfolders.push(name);
      continue;
    }
    try {
      const stats = lstatSync(Buffer.concat([base, Buffer.from(`/${name}`, "latin1")]));
      lines.push(`${name}\0${signature(stats)}`);
      fresh.set(name, Math.max(stats.mtimeMs, stats.ctimeMs));
    } catch {
      // Gone between the listing and its stat: the next check reads it as gone.
    }
  }
  statted += lines.length;
  const now = lines.join("\n");
  const before = held.get(folder);
  held.set(folder, now);
  if (before === now) return subfolders;
  if (before === undefined) {
    for (const [name, time] of fresh) if (time >= since) changed.push(childKey(folder, name));
    return subfolders;
  }
  const old = parse(before);
  for (const [name, value] of parse(now)) {
    if (old.get(name) !== value) changed.push(childKey(folder, name));
    old.delete(name);
  }
  for (const name of old.keys()) changed.push(childKey(folder, name));
  return subfolders;
}

function run(request: UnwatchedCheckRequest): UnwatchedCheckAnswer {
  const root = Buffer.from(request.root, "utf8");
  const wanted = new Set(request.folders);
  // Folders no longer unwatched (watched now, moved, gone) are forgotten.
  for (const folder of held.keys()) if (!wanted.has(folder)) held.delete(folder);
  const changed: string[] = [];
  statted = 0;
  const listings = request.folders.map((folder) => check(root, folder, request.since, changed));
  return { id: request.id, changed, listings, files: statted };
}

parentPort?.on("message", (request: UnwatchedCheckRequest) => {
  let answer: UnwatchedCheckAnswer;
  try {
    answer = run(request);
  } catch (error) {
    answer = { id: request.id, changed: [], listings: [], files: 0, error: String(error) };
  }
  parentPort?.postMessage(answer);
});
