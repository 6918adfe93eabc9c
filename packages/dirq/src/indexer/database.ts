import type BetterSqlite3 from "@rocicorp/zero-sqlite3";
import { createRequire } from "node:module";
import { readVersion } from "../version.js";

export type SqliteDatabase = BetterSqlite3.Database;

const require = createRequire(import.meta.url);

/**
 * Loads SQLite through `require` (the ESM-to-CJS bridge costs start-up time). The binding is
 * @rocicorp/zero-sqlite3: better-sqlite3's API (and its own types) with the addon prebuilt inside
 * the npm package for Linux (glibc and musl), macOS and Windows, x64 and arm64, Node 20 (ABI
 * 115) and later. An install needs no compiler and downloads nothing; better-sqlite3 itself
 * downloads its addon from GitHub at install time or compiles SQLite (minutes, a toolchain).
 */
function loadSqlite(): typeof BetterSqlite3 {
  return require("@rocicorp/zero-sqlite3") as typeof BetterSqlite3;
}

/** Opens a connection (better-sqlite3's API and options). */
export function openSqlite(path: string, options: BetterSqlite3.Options = {}): SqliteDatabase {
  const Database = loadSqlite();
  return new Database(path, options);
}

/**
 * Opens the index: in memory, or in `path` in WAL mode so other processes can read while this
 * one writes. It is a cache, so it is not synced to disk. A file gets the internal metadata
 * table (dirq's version and the root) for whoever opens it later; an index in memory dies with
 * this connection, which may not read that table (docs/read-only.md), so it gets none: creating
 * it was a fifth of a millisecond of every one-shot start.
 */
export function openIndexDatabase(root: string, path?: string): SqliteDatabase {
  if (path === undefined) return openSqlite(":memory:");
  const db = openSqlite(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = OFF");
  // One exec, not a prepared statement: it runs once.
  db.exec(
    "CREATE TABLE _dirq_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);" +
      `INSERT INTO _dirq_meta (key, value) VALUES ('version', ${quoteLiteral(readVersion())}), ('root', ${quoteLiteral(root)})`,
  );
  return db;
}

/** Quotes text as an SQL string literal. */
export function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** Quotes a name as an SQL identifier: any text, including `./docs/*.md`, is safe. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
