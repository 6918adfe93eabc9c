import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { openSqlite } from "../indexer/database.js";

/**
 * dirq's SQLite extension for the file system calls a fill makes per file (native/dirq-fs.c,
 * compiled at install by scripts/build-native.mjs): a batch of stats in one call, returning
 * plain numbers without Node's per-call path checks and `Stats` objects (about a third of a
 * stat's CPU in JavaScript), and a folder's listing as one string, without `Dirent`s made in
 * C++ and sorted again. It is loaded into a private in-memory connection of the thread that
 * walks or stats, one per thread, and never touches the index. Without it (no compiler at
 * install, Windows, or `DIRQ_NATIVE_FS=0`) dirq uses Node's `fs`, with the same results.
 */
const LIBRARY = fileURLToPath(
  process.platform === "darwin"
    ? new URL("../../../native/build/dirq_fs.dylib", import.meta.url)
    : new URL("../../../native/build/dirq_fs.so", import.meta.url),
);

export interface NativeFs {
  /** Stats NUL-separated paths, each after `prefix`: 3 doubles per path (see dirq-fs.c). */
  statBatch(prefix: string, joinedPaths: string): Buffer;
  /**
   * A folder's entries (see dirq-fs.c): a type letter per entry, then a NUL before each
   * name; `null` when the folder cannot be read.
   */
  listDir(path: string): string | null;
}

let loaded: NativeFs | null | undefined;

/** This thread's native calls, or `null` when the extension is off or cannot be loaded. */
export function nativeFs(): NativeFs | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  if (process.env.DIRQ_NATIVE_FS === "0" || !existsSync(LIBRARY)) return null;
  try {
    const db = openSqlite(":memory:");
    // SQLite finds the entry point from the file name: sqlite3_dirqfs_init.
    db.loadExtension(LIBRARY);
    const statBatch = db.prepare("SELECT dirq_stat_batch(?, ?)").pluck();
    const listDir = db.prepare("SELECT dirq_list_dir(?)").pluck();
    loaded = {
      statBatch: (prefix, joinedPaths) => statBatch.get(prefix, joinedPaths) as Buffer,
      listDir: (path) => listDir.get(path) as string | null,
    };
  } catch {
    // A library built for another platform or SQLite: Node's fs still works.
    loaded = null;
  }
  return loaded;
}
