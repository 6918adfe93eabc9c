import Database from "better-sqlite3";
import { readVersion } from "../version.js";

export type SqliteDatabase = Database.Database;

/** Opens the in-memory index with its internal metadata table. */
export function openIndexDatabase(root: string): SqliteDatabase {
  const db = new Database(":memory:");
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
