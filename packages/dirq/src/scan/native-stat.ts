import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { openSqlite } from "../indexer/database.js";

/**
 * dirq's SQLite extension for batch stats (native/dirq-stat.c, compiled at install by
 * scripts/build-native.mjs): one call stats a whole batch of paths and returns plain numbers,
 * without Node's per-call path checks and `Stats` objects (about a third of a stat's CPU in
 * JavaScript). It is loaded into a private in-memory connection of the thread that stats, one
 * per thread, and never touches the index. Without it (no compiler at install, Windows, or
 * `DIRQ_NATIVE_STAT=0`) dirq stats from JavaScript, with the same results.
 */
const LIBRARY = fileURLToPath(
  process.platform === "darwin"
    ? new URL("../../../native/build/dirq_stat.dylib", import.meta.url)
    : new URL("../../../native/build/dirq_stat.so", import.meta.url),
);

/** Stats NUL-separated paths, each after `prefix`: 3 doubles per path (see dirq-stat.c). */
export type BatchStat = (prefix: string, joinedPaths: string) => Buffer;

let loaded: BatchStat | null | undefined;

/** This thread's batch stat, or `null` when the extension is off or cannot be loaded. */
export function nativeBatchStat(): BatchStat | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  if (process.env.DIRQ_NATIVE_STAT === "0" || !existsSync(LIBRARY)) return null;
  try {
    const db = openSqlite(":memory:");
    // SQLite finds the entry point from the file name: sqlite3_dirqstat_init.
    db.loadExtension(LIBRARY);
    const statement = db.prepare("SELECT dirq_stat_batch(?, ?)").pluck();
    loaded = (prefix, joinedPaths) => statement.get(prefix, joinedPaths) as Buffer;
  } catch {
    // A library built for another platform or SQLite: the JavaScript stats still work.
    loaded = null;
  }
  return loaded;
}
