import type BetterSqlite3 from "@rocicorp/zero-sqlite3";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { provideNativeHost } from "../scan/native-fs.js";
import { captureValue } from "../scan/path-selection.js";
import { quoteIdentifier, quoteLiteral } from "../shared/sql-quote.js";
import { readVersion } from "../version.js";

export type SqliteDatabase = BetterSqlite3.Database;
export type SqliteStatement = BetterSqlite3.Statement;

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
  const db = new Database(path, options);
  // A path-table's `{name}` capture is a column generated from `path` with it, so every
  // connection that may write such a table has it (reading the stored value needs none).
  db.function("dirq_capture", { deterministic: true }, captureValue);
  return db;
}

// The native file system calls are a SQLite extension, in a connection of their own; scan/
// walks without SQLite, so this module provides it (and a helper thread loads this module).
provideNativeHost({
  open: () => openSqlite(":memory:"),
  get module() {
    return new URL("./database.js", import.meta.url).href;
  },
});

/**
 * Pages of an index without a file kept in memory before they spill to a temporary file (KiB).
 * It is also the size of each sorted run of SQLite's sorter (a GROUP BY, ORDER BY or DISTINCT
 * over a big table): runs of this size are sorted by helper threads (`sorterThreads`) while
 * the statement reads on, where one larger run is sorted by the statement's thread alone
 * (bench/notes/bigfiles.md).
 */
const MEMORY_INDEX_CACHE_KIB = 32 * 1024;

/** Helper threads SQLite's sorter may use: one per core, at most 4 (the machine is shared). */
function sorterThreads(): number {
  return Math.min(4, Math.max(1, availableParallelism()));
}

/**
 * The page size of an index kept in a file (the server's, the REPL's): SQLite's largest. A
 * row of tens of megabytes is written and committed as a sixteenth of the pages 4 KiB would
 * take, and every other file's commit waits for that one; small rows and queries cost the same
 * (bench/notes/hostile-hooks.md). A `--persist` cache made anew gets it too.
 */
export const INDEX_PAGE_BYTES = 65_536;

/**
 * Opens the index: in memory, or in `path` in WAL mode so other processes can read while this
 * one writes. It is a cache, so it is not synced to disk. A file gets the internal metadata
 * table (dirq's version and the root) for whoever opens it later; an index in memory dies with
 * this connection, which may not read that table (docs/read-only.md), so it gets none, and a
 * one-shot start does not pay for creating it.
 */
export function openIndexDatabase(root: string, path?: string): SqliteDatabase {
  if (path === undefined) {
    // SQLite's private temporary database (an empty name): its pages stay in memory up to the
    // cache size, as `:memory:` keeps them, and only beyond that spill to a file SQLite deletes
    // on close, so a table read from a 1 GB file does not hold a 1 GB index in memory.
    const db = openSqlite("");
    db.pragma(`cache_size = -${MEMORY_INDEX_CACHE_KIB}`);
    db.pragma(`threads = ${sorterThreads()}`);
    // As `:memory:` has it: the rollback journal in memory, nothing ever synced.
    db.pragma("journal_mode = MEMORY");
    db.pragma("synchronous = OFF");
    return db;
  }
  const db = openSqlite(path);
  // Before WAL mode is set: the page size of a WAL database is fixed.
  db.pragma(`page_size = ${INDEX_PAGE_BYTES}`);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = OFF");
  // One exec, not a prepared statement: it runs once.
  db.exec(
    "CREATE TABLE _dirq_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);" +
      `INSERT INTO _dirq_meta (key, value) VALUES ('version', ${quoteLiteral(readVersion())}), ('root', ${quoteLiteral(root)})`,
  );
  return db;
}

// Quoting lives in shared/ (output/ quotes without SQLite); the indexer takes it from here.
export { quoteIdentifier, quoteLiteral };

/**
 * The index a live table's rows are looked up by when a file changes (`column`: the one that
 * holds each row's file). Without it, each change reads the whole table.
 */
export function lookupIndexName(table: string): string {
  return `_dirq_lookup_${table}`;
}

/** Creates the lookup index of `table` (see `lookupIndexName`) unless it exists. */
export function lookupIndexSql(table: string, column: string): string {
  const index = quoteIdentifier(lookupIndexName(table));
  return `CREATE INDEX IF NOT EXISTS ${index} ON ${quoteIdentifier(table)} (${column})`;
}

/** Statements by connection and text, for those a refresh runs once per file or batch. */
const cachedStatements = new WeakMap<SqliteDatabase, Map<string, BetterSqlite3.Statement>>();
/** A connection's cache is emptied past this many texts (schema-less tables widen theirs). */
const MAX_CACHED_STATEMENTS = 512;

/**
 * `db.prepare(sql)`, prepared once per connection: preparing took a large share of the main
 * thread's time in a live refresh. Use only for statements whose modes (`raw`, `pluck`,
 * `safeIntegers`) every caller sets the same way. SQLite prepares a statement again by itself
 * when the schema changed under it.
 */
export function cachedStatement(db: SqliteDatabase, sql: string): BetterSqlite3.Statement {
  let statements = cachedStatements.get(db);
  if (statements === undefined) cachedStatements.set(db, (statements = new Map()));
  let statement = statements.get(sql);
  if (statement === undefined) {
    if (statements.size >= MAX_CACHED_STATEMENTS) statements.clear();
    statements.set(sql, (statement = db.prepare(sql)));
  }
  return statement;
}
