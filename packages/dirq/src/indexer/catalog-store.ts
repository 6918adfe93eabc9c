import { crypto } from "../lazy-module.js";
import { readFileSync } from "node:fs";
import type { Statement } from "@rocicorp/zero-sqlite3";
import { preciseStat } from "../scan/tree-signature.js";
import { cachedStatement, quoteIdentifier, type SqliteDatabase } from "./database.js";

/**
 * What a persisted index remembers about its tables and files, in SQLite beside the rows (so
 * both commit together): which tables exist and from what definition, which file state each
 * parsed table's rows came from, and which directory state each path-table's listing came
 * from. A restart compares these with the tree and redoes only what differs.
 */

/** A table the catalog knows. `spec` is a hash of its definition; a different one rebuilds it. */
export interface CatalogTable {
  name: string;
  kind: "path" | "parsed" | "alias";
  spec: string;
  /** Column groups a path-table holds (`{"names":true,"stat":false}`), null when empty. */
  filled: string | null;
  /** Names of the objects its `ddl` created, dropped with it. */
  objects: string[];
}

/** A file's state as the catalog records it: `size:mtimeNs`, plus a hash when racy. */
export interface FileSignature {
  stat: string;
  /** Content hash, taken only when the file changed within the second it was read. */
  hash: string | null;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS _dirq_tables (
  name TEXT PRIMARY KEY COLLATE NOCASE,
  kind TEXT NOT NULL,
  spec TEXT NOT NULL,
  filled TEXT,
  objects TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS _dirq_files (
  tbl TEXT NOT NULL COLLATE NOCASE,
  path TEXT NOT NULL,
  stat TEXT NOT NULL,
  hash TEXT,
  PRIMARY KEY (tbl, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _dirq_staged (
  tbl TEXT NOT NULL COLLATE NOCASE,
  spec TEXT NOT NULL,
  path TEXT NOT NULL,
  stat TEXT NOT NULL,
  hash TEXT,
  rows TEXT NOT NULL,
  PRIMARY KEY (tbl, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _dirq_programs (
  path TEXT PRIMARY KEY,
  stat TEXT NOT NULL,
  hash TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _dirq_dirs (
  tbl TEXT NOT NULL COLLATE NOCASE,
  dir TEXT NOT NULL,
  signature TEXT NOT NULL,
  PRIMARY KEY (tbl, dir)
) WITHOUT ROWID;
`;

/**
 * A table's definition as stable text, compared whole: its JSON. Not a hash of it: a
 * definition is short, and hashing would load `node:crypto` (and Node's streams with it) in
 * every `--persist` run.
 */
export function specText(definition: unknown): string {
  return JSON.stringify(definition);
}

function contentHash(absolute: string): string | null {
  try {
    return crypto().createHash("sha1").update(readFileSync(absolute)).digest("hex");
  } catch {
    return null;
  }
}

/**
 * Whether a change could hide inside the same timestamp: the file (or folder) was modified in
 * the same second it is being read, so a second edit in that second may leave size and mtime
 * equal (git's "racy" entries).
 */
export function isRacy(mtimeNs: bigint, readAtMs: number): boolean {
  return mtimeNs / 1_000_000_000n >= BigInt(Math.floor(readAtMs / 1000));
}

/**
 * The signature of the file at `absolute` now, `null` when it cannot be read. Its content is
 * hashed only when the modification is racy.
 */
export function fileSignature(absolute: string): FileSignature | null {
  const readAt = Date.now();
  const stats = preciseStat(absolute);
  if (stats === undefined) return null;
  const stat = `${stats.size}:${stats.mtimeNs}`;
  return { stat, hash: isRacy(stats.mtimeNs, readAt) ? contentHash(absolute) : null };
}

/** Whether the file at `absolute` still has the content the recorded signature describes. */
export function unchangedSince(recorded: FileSignature, absolute: string): boolean {
  const now = fileSignature(absolute);
  if (now === null || now.stat !== recorded.stat) return false;
  if (recorded.hash === null) return true;
  return (now.hash ?? contentHash(absolute)) === recorded.hash;
}

/**
 * Forgets a file of `table` in the store of the index `db` is a connection to: any connection
 * that writes the table's rows (the move thread's too) writes its record in the same commit.
 */
export function forgetStoredFile(db: SqliteDatabase, table: string, path: string): void {
  cachedStatement(db, "DELETE FROM _dirq_files WHERE tbl = ? AND path = ?").run(table, path);
}

/** Records in the store that the files of `table` under `from` are now under `to`. */
export function moveStoredFiles(db: SqliteDatabase, table: string, from: string, to: string): void {
  const range = "tbl = ? AND path > ? AND path < ?";
  cachedStatement(db, `DELETE FROM _dirq_files WHERE ${range}`).run(table, `${to}/`, `${to}0`);
  cachedStatement(
    db,
    `UPDATE _dirq_files SET path = ? || substr(path, length(?) + 1) WHERE ${range}`,
  ).run(to, from, table, `${from}/`, `${from}0`);
}

/** The catalog of a persisted index, as tables in its database (see `Catalog`). */
export class CatalogStore {
  private readonly statements = new Map<string, Statement>();

  constructor(private readonly db: SqliteDatabase) {
    db.exec(SCHEMA);
  }

  private statement(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (statement === undefined) this.statements.set(sql, (statement = this.db.prepare(sql)));
    return statement;
  }

  tables(): CatalogTable[] {
    const rows = this.statement("SELECT name, kind, spec, filled, objects FROM _dirq_tables").all();
    return (rows as (Omit<CatalogTable, "objects"> & { objects: string })[]).map((row) => ({
      ...row,
      objects: JSON.parse(row.objects) as string[],
    }));
  }

  table(name: string): CatalogTable | undefined {
    return this.tables().find((table) => table.name.toLowerCase() === name.toLowerCase());
  }

  saveTable(table: CatalogTable): void {
    this.statement(
      "INSERT OR REPLACE INTO _dirq_tables (name, kind, spec, filled, objects) VALUES (?, ?, ?, ?, ?)",
    ).run(table.name, table.kind, table.spec, table.filled, JSON.stringify(table.objects));
  }

  setFilled(name: string, filled: string | null): void {
    this.statement("UPDATE _dirq_tables SET filled = ? WHERE name = ?").run(filled, name);
  }

  /**
   * Files a first build of `table` (with definition `spec`) parsed before it was stopped:
   * their rows as `encodeRows` wrote them and the file state they came from. Rows staged for
   * another definition are dropped.
   */
  stagedFiles(
    table: string,
    spec: string,
  ): Map<string, { signature: FileSignature; rows: string }> {
    this.statement("DELETE FROM _dirq_staged WHERE tbl = ? AND spec <> ?").run(table, spec);
    const rows = this.statement(
      "SELECT path, stat, hash, rows FROM _dirq_staged WHERE tbl = ?",
    ).all(table) as { path: string; stat: string; hash: string | null; rows: string }[];
    return new Map(
      rows.map((row) => [
        row.path,
        { signature: { stat: row.stat, hash: row.hash }, rows: row.rows },
      ]),
    );
  }

  /** Commits one batch of a first build's parsed files (see `stagedFiles`). */
  stageFiles(
    table: string,
    spec: string,
    files: readonly { path: string; signature: FileSignature; rows: string }[],
  ): void {
    const insert = this.statement(
      "INSERT OR REPLACE INTO _dirq_staged (tbl, spec, path, stat, hash, rows) VALUES (?, ?, ?, ?, ?, ?)",
    );
    this.db.transaction(() => {
      for (const file of files) {
        insert.run(table, spec, file.path, file.signature.stat, file.signature.hash, file.rows);
      }
    })();
  }

  /** Drops a table's staged rows: its build committed. */
  forgetStaged(table: string): void {
    this.statement("DELETE FROM _dirq_staged WHERE tbl = ?").run(table);
  }

  /** Drops staged rows of tables `keep` does not accept (removed or redefined since). */
  sweepStaged(keep: (table: string, spec: string) => boolean): void {
    const staged = this.statement("SELECT DISTINCT tbl, spec FROM _dirq_staged").all() as {
      tbl: string;
      spec: string;
    }[];
    for (const { tbl, spec } of staged) {
      if (!keep(tbl, spec)) {
        this.statement("DELETE FROM _dirq_staged WHERE tbl = ? AND spec = ?").run(tbl, spec);
      }
    }
  }

  /** Forgets a table, its files and folders (its SQLite objects are the caller's). */
  forgetTable(name: string): void {
    this.statement("DELETE FROM _dirq_staged WHERE tbl = ?").run(name);
    this.statement("DELETE FROM _dirq_tables WHERE name = ?").run(name);
    this.statement("DELETE FROM _dirq_files WHERE tbl = ?").run(name);
    this.statement("DELETE FROM _dirq_dirs WHERE tbl = ?").run(name);
  }

  /** Drops a table and every object its definition created, and forgets it. */
  dropTable(table: CatalogTable): void {
    for (const object of [...table.objects, table.name]) dropObject(this.db, object);
    this.forgetTable(table.name);
  }

  files(table: string): Map<string, FileSignature> {
    const rows = this.statement("SELECT path, stat, hash FROM _dirq_files WHERE tbl = ?").all(
      table,
    ) as { path: string; stat: string; hash: string | null }[];
    return new Map(rows.map((row) => [row.path, { stat: row.stat, hash: row.hash }]));
  }

  recordFile(table: string, path: string, signature: FileSignature): void {
    this.statement(
      "INSERT OR REPLACE INTO _dirq_files (tbl, path, stat, hash) VALUES (?, ?, ?, ?)",
    ).run(table, path, signature.stat, signature.hash);
  }

  forgetFile(table: string, path: string): void {
    forgetStoredFile(this.db, table, path);
  }

  /** The files of `table` under the folder `from` are now under `to` (a folder renamed). */
  moveFiles(table: string, from: string, to: string): void {
    moveStoredFiles(this.db, table, from, to);
  }

  /**
   * The content hash of a program a table's definition names (a hook's script or
   * executable, an extension), `null` when it cannot be read. Hashed again only when its
   * size, mtime, inode or ctime moved (or it changed within the second it was hashed), so a
   * warm run reads no program; a `touch` or a reinstall with the same bytes hashes it again
   * and finds the same content.
   */
  programHash(absolute: string): string | null {
    const readAt = Date.now();
    const stats = preciseStat(absolute);
    if (stats === undefined || !stats.isFile()) return null;
    const stat = `${stats.size}:${stats.mtimeNs}:${stats.ino}:${stats.ctimeNs}`;
    const known = this.statement("SELECT stat, hash FROM _dirq_programs WHERE path = ?").get(
      absolute,
    ) as { stat: string; hash: string } | undefined;
    if (known?.stat === stat) return known.hash;
    const hash = contentHash(absolute);
    // One changed within this second may change again unseen: it is hashed again next time.
    if (hash === null || isRacy(stats.mtimeNs, readAt)) return hash;
    this.statement("INSERT OR REPLACE INTO _dirq_programs (path, stat, hash) VALUES (?, ?, ?)").run(
      absolute,
      stat,
      hash,
    );
    return hash;
  }

  dirs(table: string): Map<string, string> {
    const rows = this.statement("SELECT dir, signature FROM _dirq_dirs WHERE tbl = ?").all(
      table,
    ) as { dir: string; signature: string }[];
    return new Map(rows.map((row) => [row.dir, row.signature]));
  }

  saveDirs(table: string, dirs: ReadonlyMap<string, string>): void {
    this.statement("DELETE FROM _dirq_dirs WHERE tbl = ?").run(table);
    const insert = this.statement("INSERT INTO _dirq_dirs (tbl, dir, signature) VALUES (?, ?, ?)");
    for (const [dir, signature] of dirs) insert.run(table, dir, signature);
  }
}

/** Drops a table, view, index or trigger by name, whatever it is; nothing when it is gone. */
export function dropObject(db: SqliteDatabase, name: string): void {
  const found = db
    .prepare("SELECT type FROM main.sqlite_schema WHERE name = ? COLLATE NOCASE")
    .pluck()
    .get(name) as string | undefined;
  if (found === undefined) return;
  db.exec(`DROP ${found.toUpperCase()} IF EXISTS ${quoteIdentifier(name)}`);
}

/** Names of the user-visible objects in the database (tables, views, indexes, triggers). */
export function schemaObjects(db: SqliteDatabase): Set<string> {
  const names = db
    .prepare(
      "SELECT name FROM main.sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_dirq\\_%' ESCAPE '\\'",
    )
    .pluck()
    .all() as string[];
  return new Set(names);
}
