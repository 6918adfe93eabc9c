import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { statOrNone } from "../shared/stat-or-none.js";
import type { FoundPlugin } from "./npm-plugins.js";
import { makeFolder } from "../make-folder.js";

// Discovery reads one manifest per installed package on every start, a large part of dirq's
// start in a project with hundreds of packages. What it found in a `node_modules` folder is kept
// in the user's cache folder with the modification times that would show a change, and taken
// again while they are unchanged: a few `stat` calls instead of hundreds of reads.
//
// What changes those times: adding, removing or replacing a package (the folder's entries
// change; a scope's own folder for `@scope/name`), and any install by npm, pnpm or Yarn (each
// rewrites its state file in `node_modules`, also when it updates a package's files in place).
// A package folder that is a symlink (`npm link`, pnpm, workspaces) is read at every start:
// its manifest is edited where it lives. What is not seen: a manifest edited by hand inside a
// package folder that is not a symlink; `DIRQ_PLUGIN_CACHE=0` turns the cache off.

/** The files package managers rewrite in `node_modules` on every install. */
const INSTALLER_STATE_FILES = [
  ".package-lock.json",
  ".modules.yaml",
  ".yarn-integrity",
  ".yarn-state.yml",
];

/**
 * Times that close to the present are not trusted: a change made within the file system's
 * timestamp granularity (a few milliseconds on Linux, two seconds on FAT) leaves the time as it
 * was, so a record made then could look current after the change.
 */
const RACY_MS = 2_000;

/** Folders remembered; the least recently recorded go first. */
const PLACES_KEPT = 32;

const FORMAT = 1;

/** What discovery found in one `node_modules` folder, and the times that tell it still holds. */
export interface PlaceRecord {
  /** The `@scope` folders, sorted: their times are part of the stamp. */
  scopes: string[];
  /** Modification times: the folder, its scope folders, the installers' state files (-1: none). */
  stamp: number[];
  /** Packages whose folder is a symlink: their manifests are read at every start. */
  linked: { name: string; directory: string }[];
  /** The plugins in the folders that are not symlinks. */
  plugins: FoundPlugin[];
  /** When the record was made (ms since the epoch): the oldest go first. */
  recordedAt: number;
}

interface CacheFile {
  format: number;
  places: Record<string, PlaceRecord>;
}

/** The records of one cache file, read once; `save` writes them back when any changed. */
export class PluginCache {
  private changed = false;

  private constructor(
    private readonly path: string,
    private readonly places: Record<string, PlaceRecord>,
  ) {}

  /** The cache in `path`; a missing, unreadable or foreign file is an empty cache. */
  static open(path: string): PluginCache {
    let places: Record<string, PlaceRecord> = {};
    try {
      const parsed = JSON.parse(readFileSync(path, "utf8")) as Partial<CacheFile> | null;
      if (parsed?.format === FORMAT && parsed.places && typeof parsed.places === "object") {
        places = parsed.places;
      }
    } catch {
      // no cache yet, or one this version cannot read: discovery reads the manifests
    }
    return new PluginCache(path, places);
  }

  /** The record for `nodeModules` (the path discovery found) if nothing it depends on changed. */
  current(nodeModules: string): PlaceRecord | null {
    const record = this.places[nodeModules];
    if (!isRecord(record, nodeModules)) return null;
    const stamp = stampOf(nodeModules, record.scopes);
    return sameNumbers(stamp, record.stamp) ? record : null;
  }

  /**
   * Keeps what a full read of `nodeModules` found, unless a time in its stamp is too recent to
   * be trusted (then the next start reads the folder again and records it).
   */
  record(nodeModules: string, found: Omit<PlaceRecord, "stamp" | "recordedAt">): void {
    const now = Date.now();
    const stamp = stampOf(nodeModules, found.scopes);
    if (stamp.some((time) => time > now - RACY_MS)) {
      if (this.places[nodeModules] !== undefined) {
        delete this.places[nodeModules];
        this.changed = true;
      }
      return;
    }
    this.places[nodeModules] = { ...found, stamp, recordedAt: now };
    this.changed = true;
  }

  /** Writes the records when any changed (a temporary file renamed); a failure keeps none. */
  save(): void {
    if (!this.changed) return;
    const kept = Object.entries(this.places)
      .sort(([, a], [, b]) => b.recordedAt - a.recordedAt)
      .slice(0, PLACES_KEPT);
    const file: CacheFile = { format: FORMAT, places: Object.fromEntries(kept) };
    const temporary = `${this.path}.${process.pid}.tmp`;
    try {
      makeFolder(dirname(this.path));
      writeFileSync(temporary, JSON.stringify(file));
      renameSync(temporary, this.path);
    } catch {
      try {
        rmSync(temporary, { force: true });
      } catch {
        // no folder to remove it from: nothing was written
      }
    }
  }
}

/** The modification times that change when `nodeModules`' packages do (-1: no such file). */
function stampOf(nodeModules: string, scopes: readonly string[]): number[] {
  const times = [modifiedAt(nodeModules)];
  for (const scope of scopes) times.push(modifiedAt(`${nodeModules}/${scope}`));
  for (const file of INSTALLER_STATE_FILES) times.push(modifiedAt(`${nodeModules}/${file}`));
  return times;
}

function modifiedAt(path: string): number {
  // Unreadable counts as absent: a change to readable shows.
  return statOrNone(path)?.mtimeMs ?? -1;
}

function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((value, i) => value === b[i]);
}

/**
 * A record as this version writes it for `nodeModules`: the file is the user's and may hold
 * anything, and a package it names must be a folder of this `node_modules`, as a read finds it.
 */
function isRecord(value: unknown, nodeModules: string): value is PlaceRecord {
  if (value === null || typeof value !== "object") return false;
  const record = value as Partial<PlaceRecord>;
  const inFolder = (name: unknown, directory: unknown) =>
    typeof name === "string" && directory === `${nodeModules}/${name}`;
  return (
    Array.isArray(record.scopes) &&
    Array.isArray(record.stamp) &&
    Array.isArray(record.linked) &&
    Array.isArray(record.plugins) &&
    record.scopes.every((scope) => typeof scope === "string") &&
    record.linked.every((folder) => inFolder(folder?.name, folder?.directory)) &&
    record.plugins.every(
      (found) =>
        inFolder(found?.folder, found?.plugin?.directory) &&
        typeof found.plugin.name === "string" &&
        typeof found.plugin.config === "string",
    )
  );
}
