import type BetterSqlite3 from "better-sqlite3";
import { createRequire } from "node:module";
import { readVersion } from "../version.js";

export type SqliteDatabase = BetterSqlite3.Database;

const require = createRequire(import.meta.url);

/**
 * Loads better-sqlite3 through `require` with the addon's path given up front: the ESM-to-CJS
 * bridge and the `bindings` path search cost about 20 ms of every start-up.
 */
function loadSqlite(): { Database: typeof BetterSqlite3; nativeBinding?: string } {
  const Database = require("better-sqlite3") as typeof BetterSqlite3;
  try {
    return {
      Database,
      nativeBinding: require.resolve("better-sqlite3/build/Release/better_sqlite3.node"),
    };
  } catch {
    return { Database };
  }
}

/** Opens a connection with better-sqlite3, the addon located up front. */
export function openSqlite(path: string, options: BetterSqlite3.Options = {}): SqliteDatabase {
  const { Database, nativeBinding } = loadSqlite();
  return new Database(path, { ...options, ...(nativeBinding ? { nativeBinding } : {}) });
}

/**
 * Opens the index with its internal metadata table: in memory, or in `path` in WAL mode so
 * other processes can read while this one writes. It is a cache, so it is not synced to disk.
 */
export function openIndexDatabase(root: string, path?: string): SqliteDatabase {
  const db = openSqlite(path ?? ":memory:");
  if (path !== undefined) {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = OFF");
  }
  db.exec("CREATE TABLE _dirq_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  db.prepare("INSERT INTO _dirq_meta (key, value) VALUES (?, ?), (?, ?)").run(
    "version",
    readVersion(),
    "root",
    root,
  );
  return db;
}

/** Quotes a name as an SQL identifier: any text, including `./docs/*.md`, is safe. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
