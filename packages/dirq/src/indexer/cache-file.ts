import { closeSync, openSync, readSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { DirqError } from "../errors.js";
import { isStorageError } from "../shared/sql-errors.js";
import { readVersion } from "../version.js";
import { INDEX_PAGE_BYTES, openSqlite, type SqliteDatabase } from "./database.js";
import { makeFolder } from "../make-folder.js";

/**
 * The `--persist` cache: the index in a SQLite file that outlives the process. Opening it
 * takes the cache's lock (one process at a time), checks that the file is a cache of this
 * version of dirq for this root, and starts over with a one-line notice when it is not (or is
 * damaged). It never deletes a database that is not a dirq cache.
 */

/** Bumped whenever the layout of the cache changes: an older cache is rebuilt. */
export const CACHE_FORMAT = "2";

/** How long a second process waits for the cache's lock before it gives up. */
export const CACHE_LOCK_WAIT_MS = 5000;

/** The cache folder under the root that a bare `--persist` uses (never indexed). */
export const CACHE_DIRECTORY = ".dirq";

export function defaultCachePath(root: string): string {
  return join(root, CACHE_DIRECTORY, "cache.db");
}

/** The files SQLite keeps beside a database in WAL mode, and the lock. */
export function cacheSidecars(path: string): string[] {
  return [`${path}-wal`, `${path}-shm`, `${path}-journal`, `${path}.lock`, `${path}.lock-journal`];
}

/** A literal path as a root-anchored `.gitignore` pattern. */
function literalPattern(path: string): string {
  return `/${path.replace(/[\\*?[\]]/g, (c) => `\\${c}`).replace(/ $/, "\\ ")}`;
}

/**
 * Ignore patterns that keep a cache file given with `--persist=<path>` inside the root (and
 * SQLite's files beside it) out of the index. The default cache folder is a built-in skip.
 */
export function cacheIgnorePatterns(root: string, path: string): string[] {
  const inside = relative(root, path);
  if (inside === "" || inside.startsWith("..") || inside.startsWith(sep)) return [];
  const relativePath = inside.split(sep).join("/");
  return [relativePath, ...cacheSidecars(relativePath)].map(literalPattern);
}

// Told apart in shared/ (the query layer asks too); the indexer takes it from here.
export { isStorageError };

/** A storage failure while writing the index file, as an error naming the file. */
export function storageError(path: string, error: unknown): DirqError {
  const reason = error instanceof Error ? error.message : String(error);
  return new DirqError(
    "CACHE_UNUSABLE",
    `cannot write the index to ${path}: ${reason}. Free some space or give --persist a writable path; the indexed files were not touched`,
    { cause: error },
  );
}

export interface OpenedCache {
  db: SqliteDatabase;
  /** Why the cache was started over (one line), or null when it was reused or new. */
  notice: string | null;
  /** Whether the cache held an index of this root to reuse. */
  reused: boolean;
  /** Releases the lock (after the database is closed). */
  release: () => void;
}

const SQLITE_HEADER = "SQLite format 3\0";

function unwritable(path: string, error: unknown): DirqError {
  const reason = error instanceof Error ? error.message : String(error);
  return new DirqError(
    "CACHE_UNUSABLE",
    `cannot use the cache ${path}: ${reason}. Give --persist a writable path (--persist=<path>), or run without --persist`,
    { cause: error },
  );
}

/** The first 100 bytes of a file (SQLite's database header), fewer when it is shorter. */
function readHeader(path: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return null;
  }
  try {
    const buffer = Buffer.alloc(100);
    const read = readSync(fd, buffer, 0, buffer.length, 0);
    return buffer.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether a SQLite file's size fits its header: a database is a whole number of pages, and
 * at least as many as its header counts (when that count is valid: the change counter at
 * offset 24 equals the version-valid-for number at 92). A file cut short by a few bytes
 * passes `PRAGMA quick_check` (the lost bytes read as zeros) but answers wrong rows. The
 * page count is not checked while a WAL is left beside it (a run killed during a checkpoint
 * may have written the header first; opening replays the WAL).
 */
export function sizeFitsHeader(header: Buffer, size: number, walLeft: boolean): boolean {
  if (header.length < 100) return false;
  const rawPageSize = header.readUInt16BE(16);
  const pageSize = rawPageSize === 1 ? 65536 : rawPageSize;
  if (pageSize < 512 || (pageSize & (pageSize - 1)) !== 0) return false;
  if (size % pageSize !== 0) return false;
  const countValid = header.readUInt32BE(24) === header.readUInt32BE(92);
  const pages = header.readUInt32BE(28);
  return walLeft || !countValid || pages === 0 || size >= pages * pageSize;
}

/**
 * Takes the cache's lock: an exclusive transaction on a small SQLite file beside it, held
 * until release. The operating system drops it when the process dies (even by SIGKILL), so a
 * crashed run never leaves a stale lock. A refused path gets its lock file removed again when
 * this call made it, so nothing is left beside a file dirq will not use.
 */
function takeLock(path: string): (removeLock?: boolean) => void {
  let lock: SqliteDatabase;
  const created = statSync(`${path}.lock`, { throwIfNoEntry: false }) === undefined;
  try {
    lock = openSqlite(`${path}.lock`, { timeout: CACHE_LOCK_WAIT_MS });
  } catch (error) {
    throw unwritable(path, error);
  }
  try {
    lock.pragma("journal_mode = MEMORY");
    lock.exec("BEGIN EXCLUSIVE");
  } catch (error) {
    lock.close();
    if ((error as { code?: string }).code === "SQLITE_BUSY") {
      const seconds = CACHE_LOCK_WAIT_MS / 1000;
      throw new DirqError(
        "CACHE_BUSY",
        `the cache ${path} is in use by another dirq process (waited ${seconds} s). Stop that process, or give this one another cache with --persist=<path>`,
      );
    }
    throw unwritable(path, error);
  }
  return (removeLock = false) => {
    try {
      lock.close();
    } catch {
      // Closing rolls the lock's transaction back; nothing to keep.
    }
    if (removeLock && created) rmSync(`${path}.lock`, { force: true });
  };
}

/** Why an existing cache cannot be reused, or null when it can. Throws for a foreign database. */
function staleReason(db: SqliteDatabase, path: string, root: string): string | null {
  let meta: Map<string, string>;
  try {
    const hasMeta = db
      .prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = '_dirq_meta'")
      .get();
    if (hasMeta === undefined) {
      const tables = db.prepare("SELECT count(*) FROM sqlite_schema").pluck().get() as number;
      if (tables === 0) return null;
      throw new DirqError(
        "CACHE_UNUSABLE",
        `${path} is a SQLite database that dirq did not write; dirq will not overwrite it. Give --persist another path`,
      );
    }
    const rows = db.prepare("SELECT key, value FROM _dirq_meta").all() as {
      key: string;
      value: string;
    }[];
    meta = new Map(rows.map((row) => [row.key, row.value]));
    const check = db.pragma("quick_check", { simple: true });
    if (check !== "ok") return "it is damaged";
  } catch (error) {
    if (error instanceof DirqError) throw error;
    return "it is damaged";
  }
  if (meta.get("version") !== readVersion()) {
    return `it was written by dirq ${meta.get("version") ?? "(unknown)"}`;
  }
  // The same version with another layout: a development build of this version wrote it.
  if (meta.get("format") !== CACHE_FORMAT) {
    return `it is in an older layout (format ${meta.get("format") ?? "unknown"}, now ${CACHE_FORMAT})`;
  }
  if (meta.get("root") !== root) return `it indexes another root (${meta.get("root")})`;
  return null;
}

function removeCache(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) {
    rmSync(file, { force: true });
  }
}

function configure(db: SqliteDatabase): void {
  // Only a cache made anew takes it (before WAL mode is set); an existing one keeps its own.
  db.pragma(`page_size = ${INDEX_PAGE_BYTES}`);
  db.pragma("journal_mode = WAL");
  // Commits survive a crash of dirq; a power loss may lose the last ones, never consistency.
  db.pragma("synchronous = NORMAL");
}

function writeMeta(db: SqliteDatabase, root: string): void {
  db.exec("CREATE TABLE IF NOT EXISTS _dirq_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  db.prepare("INSERT OR REPLACE INTO _dirq_meta (key, value) VALUES (?, ?), (?, ?), (?, ?)").run(
    "format",
    CACHE_FORMAT,
    "version",
    readVersion(),
    "root",
    root,
  );
}

/** Makes the cache folder; a bare `--persist` folder also gets a `.gitignore` that hides it. */
function prepareFolder(path: string, root: string): void {
  const folder = dirname(path);
  makeFolder(folder);
  if (folder === join(root, CACHE_DIRECTORY)) {
    const gitignore = join(folder, ".gitignore");
    if (statSync(gitignore, { throwIfNoEntry: false }) === undefined) {
      writeFileSync(gitignore, "# dirq's --persist cache\n*\n");
    }
  }
}

/**
 * Whether a file that is not a SQLite database may still be a cache to start over: one dirq
 * cut short before its header (a prefix of it), or anything in the cache folder dirq owns. A
 * file at a path the user named is theirs: `--persist=notes.txt` must never overwrite it.
 */
function mayBeTruncatedCache(path: string, header: string | null, root: string): boolean {
  if (header !== null && SQLITE_HEADER.startsWith(header)) return true;
  return dirname(path) === join(root, CACHE_DIRECTORY);
}

/**
 * The cache already at `path`: open and readied when it can be used as it is; `null` with a
 * notice saying why when it is removed to be rebuilt. A file that is no dirq cache at all is
 * never overwritten (`CACHE_UNUSABLE`).
 */
function existingCache(
  path: string,
  root: string,
  size: number,
  prepare: (db: SqliteDatabase) => void,
): { db: SqliteDatabase | null; notice: string | null } {
  const headerBytes = readHeader(path);
  const header = headerBytes?.subarray(0, SQLITE_HEADER.length).toString("latin1") ?? null;
  if (header !== SQLITE_HEADER) {
    if (mayBeTruncatedCache(path, header, root)) {
      removeCache(path);
      return {
        db: null,
        notice: `rebuilding the cache ${path}: it is not a SQLite database (damaged or truncated)`,
      };
    }
    throw new DirqError(
      "CACHE_UNUSABLE",
      `${path} is not a SQLite database; dirq will not overwrite it. Give --persist another path (or delete the file if it was a damaged dirq cache)`,
    );
  }
  const wal = statSync(`${path}-wal`, { throwIfNoEntry: false });
  const truncated =
    headerBytes !== null && !sizeFitsHeader(headerBytes, size, (wal?.size ?? 0) > 0);
  let db: SqliteDatabase | null;
  try {
    db = truncated ? null : openSqlite(path);
  } catch {
    db = null;
  }
  let reason: string | null;
  try {
    if (db !== null) prepare(db);
    reason = truncated
      ? "it is truncated"
      : db === null
        ? "it is damaged"
        : staleReason(db, path, root);
  } catch (error) {
    db?.close();
    throw error;
  }
  if (reason === null) return { db, notice: null };
  db?.close();
  removeCache(path);
  return { db: null, notice: `rebuilding the cache ${path}: ${reason}` };
}

/**
 * Opens (or creates, or starts over) the cache at `path` for the index of `root`. `prepare`
 * readies each connection before anything reads it (loads the extensions): the integrity
 * check of a cache whose `ddl` made an extension's object (an FTS5 table with an extension
 * tokenizer) needs them, or it calls a damaged cache what is a missing tokenizer.
 */
export function openCache(
  path: string,
  root: string,
  prepare: (db: SqliteDatabase) => void = () => {},
): OpenedCache {
  try {
    prepareFolder(path, root);
  } catch (error) {
    throw unwritable(path, error);
  }
  const release = takeLock(path);
  try {
    let notice: string | null = null;
    const existing = statSync(path, { throwIfNoEntry: false });
    if (existing !== undefined && !existing.isFile()) {
      throw unwritable(path, new Error("it is not a regular file"));
    }
    let db: SqliteDatabase | null = null;
    // Left-over WAL files of a cache that is gone must not be replayed into a new one.
    if (existing === undefined) removeCache(path);
    if (existing !== undefined && existing.size > 0) {
      ({ db, notice } = existingCache(path, root, existing.size, prepare));
    }
    const reused = db !== null;
    if (db === null) {
      try {
        db = openSqlite(path);
      } catch (error) {
        throw unwritable(path, error);
      }
      try {
        prepare(db);
      } catch (error) {
        db.close();
        throw error;
      }
    }
    try {
      configure(db);
      writeMeta(db, root);
    } catch (error) {
      db.close();
      throw unwritable(path, error);
    }
    return { db, notice, reused, release };
  } catch (error) {
    release(error instanceof DirqError && error.code === "CACHE_UNUSABLE");
    throw error;
  }
}
