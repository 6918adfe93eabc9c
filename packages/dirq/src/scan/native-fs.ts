import { existsSync } from "node:fs";
import { nativeLibraryFile } from "../native-library.js";

/**
 * dirq's SQLite extension for the file system calls a fill makes per file (native/dirq-fs.c,
 * compiled by scripts/build-native.mjs at build, and by dirq's first run after an install): a
 * batch of stats in one call, returning plain numbers without Node's per-call path checks and
 * `Stats` objects (a large part of a stat's CPU in JavaScript), and a folder's listing as one
 * string, without `Dirent`s made in C++ and sorted again. Those calls are loaded into a private in-memory connection of the
 * thread that walks or stats, one per thread, never into the index; the index gets only the
 * `dirq_rows` table (`loadNativeRows`). Without it (no C compiler, Windows, or
 * `DIRQ_NATIVE_FS=0`) dirq uses Node's `fs` and binds rows itself, with the same results.
 *
 * scan/ walks without SQLite: the module that opens SQLite (indexer/database.ts) provides the
 * connection (`provideNativeHost`), and a program that never loads it walks with Node's `fs`.
 */

/** What the extension needs of a SQLite connection (better-sqlite3's API). */
export interface NativeHostConnection {
  loadExtension(file: string, entryPoint?: string): unknown;
  prepare(sql: string): { pluck(): { get(...args: unknown[]): unknown } };
}

/** Where the extension's calls live: a private in-memory connection, opened on first use. */
export interface NativeHost {
  open(): NativeHostConnection;
  /** The module whose loading provides this host, for a helper thread (`inheritNativeHost`). */
  module: string;
}

let host: NativeHost | null = null;

/** Lets this thread's walks use the extension, from the module that opens SQLite. */
export function provideNativeHost(provided: NativeHost): void {
  host ??= provided;
}

/** The module that provides this thread's host, or null: a helper thread loads it too. */
export function nativeHostModule(): string | null {
  return host?.module ?? null;
}

/** In a helper thread, before its first walk: the host of the thread that started it. */
export async function inheritNativeHost(module: string | null | undefined): Promise<void> {
  if (typeof module === "string") await import(module);
}

export interface NativeFs {
  /** Stats NUL-separated paths, each after `prefix`: 3 doubles per path (see dirq-fs.c). */
  statBatch(prefix: string, joinedPaths: string): Buffer;
  /**
   * A folder's entries (see dirq-fs.c): a type letter per entry, then a NUL before each
   * name; `null` when the folder cannot be read.
   */
  listDir(path: string): string | null;
  /**
   * A folder's entries with a signature of each one's lstat (dirq_check_folder in dirq-fs.c):
   * equal blobs, nothing changed. `since` (ms) marks the entries changed at or after it;
   * `null` when the folder cannot be read.
   */
  checkFolder(path: Buffer, since: number | null): Buffer | null;
  /** Read-ahead on the extension's own thread: see "Reading ahead" in dirq-fs.c. */
  readAhead: ReadAhead;
  /**
   * Gives the C allocator's free memory back to the system (glibc's `malloc_trim`): whether
   * some was given back, `null` where the allocator cannot (see dirq-fs.c).
   */
  trimMemory(): boolean | null;
}

/** Jobs the extension's thread runs ahead of the walk that will need their answers. */
export interface ReadAhead {
  /**
   * Queues the listing of folders (absolute paths), to be taken in this order: the first
   * `accepted` of them have tickets `first`, `first + 1`, ... (the rest were not queued).
   */
  list(paths: readonly string[]): { first: number; accepted: number };
  /** Queues a batch of stats (as `statBatch` takes it): its ticket, or 0 when not queued. */
  stat(prefix: string, joinedPaths: string): number;
  /**
   * A queued listing or stat batch. `wait`: waits for it, or runs it on this thread when the
   * extension's threads have not begun it; `"claim"`: runs it here when they have not begun
   * it, else as `false`; `false`: `null` unless it is done. `null` too for a ticket that was
   * dropped, and for a listing of a folder that cannot be read.
   */
  take(ticket: number, wait: boolean | "claim"): string | Buffer | null;
  /** Drops every job not yet taken. */
  dropAll(): void;
}

let loaded: NativeFs | null | undefined;

/** Connections that have (true) or could not load (false) the extension's `dirq_rows`. */
const rowsLoaded = new WeakMap<object, boolean>();

/**
 * Registers the extension's `dirq_rows` table in `db` (see dirq-fs.c): a path-table's rows made
 * from a batch's NUL-joined paths and stat blob, so a fill inserts a batch with one statement.
 * It reads only its arguments, so unlike the file system calls it may live in the index's
 * connection. `false` when the extension is off or cannot be loaded: rows are then bound from
 * JavaScript, with the same values.
 */
export function loadNativeRows(db: NativeHostConnection): boolean {
  const known = rowsLoaded.get(db);
  if (known !== undefined) return known;
  let ok = false;
  const library = nativeLibraryFile();
  if (process.env.DIRQ_NATIVE_FS !== "0" && existsSync(library)) {
    try {
      db.loadExtension(library, "sqlite3_dirqrows_init");
      ok = true;
    } catch {
      ok = false; // a library built for another platform or SQLite
    }
  }
  rowsLoaded.set(db, ok);
  return ok;
}

/** Tickets come back as `first * TICKET_SPAN + accepted` (see dirq_ahead_list). */
const TICKET_SPAN = 65_536;

function readAheadOf(db: NativeHostConnection): ReadAhead {
  const list = db.prepare("SELECT dirq_ahead_list(?)").pluck();
  const stat = db.prepare("SELECT dirq_ahead_stat(?, ?)").pluck();
  const take = db.prepare("SELECT dirq_take(?, ?)").pluck();
  const drop = db.prepare("SELECT dirq_ahead_drop()").pluck();
  return {
    list: (paths) => {
      const code = list.get(paths.join("\0")) as number;
      return { first: Math.floor(code / TICKET_SPAN), accepted: code % TICKET_SPAN };
    },
    stat: (prefix, joinedPaths) => stat.get(prefix, joinedPaths) as number,
    take: (ticket, wait) =>
      take.get(ticket, wait === "claim" ? 2 : wait ? 1 : 0) as string | Buffer | null,
    dropAll: () => void drop.get(),
  };
}

/**
 * This thread's native calls, or `null` when the extension is off or cannot be loaded, or no
 * host was provided yet (asked again later: one may be).
 */
export function nativeFs(): NativeFs | null {
  if (loaded !== undefined) return loaded;
  if (host === null) return null;
  loaded = null;
  const library = nativeLibraryFile();
  if (process.env.DIRQ_NATIVE_FS === "0" || !existsSync(library)) return null;
  try {
    const db = host.open();
    // SQLite finds the entry point from the file name: sqlite3_dirqfs_init.
    db.loadExtension(library);
    const statBatch = db.prepare("SELECT dirq_stat_batch(?, ?)").pluck();
    const listDir = db.prepare("SELECT dirq_list_dir(?)").pluck();
    const trim = db.prepare("SELECT dirq_trim_memory()").pluck();
    const check = db.prepare("SELECT dirq_check_folder(?, ?)").pluck();
    loaded = {
      statBatch: (prefix, joinedPaths) => statBatch.get(prefix, joinedPaths) as Buffer,
      listDir: (path) => listDir.get(path) as string | null,
      checkFolder: (path, since) => check.get(path, since) as Buffer | null,
      readAhead: readAheadOf(db),
      trimMemory: () => {
        const trimmed = trim.get() as number | null;
        return trimmed === null ? null : trimmed === 1;
      },
    };
  } catch {
    // A library built for another platform or SQLite: Node's fs still works.
    loaded = null;
  }
  return loaded;
}
