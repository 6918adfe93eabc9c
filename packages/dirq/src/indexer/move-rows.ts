import { cachedStatement, quoteIdentifier, type SqliteDatabase } from "./database.js";
import { currentRows, type RowChange, rowJson } from "./row-changes.js";

/*
 * The SQL of a folder move: its rows renamed by prefix in every live table, and the row
 * changes that say so. Plain data in, plain data out, so the index's own thread and the staging
 * thread (on its own connection: see `StagingWorker.moveRows`) run the very same code.
 */

/**
 * How a moved row's JSON is made from its JSON before: `path` replaces the prefix of a
 * path-table row's `path` and `dir` values, `same` keeps it (a parsed table's row holds no
 * path), `null` reads the row back (a `ddl` or a glob's captures may compute columns from the
 * path).
 */
export type MovedJson = "path" | "same" | null;

/** One live table as a move rewrites it: where its rows name their file, what events show. */
export interface MovedTable {
  name: string;
  label: string;
  column: string;
  columns: readonly string[];
  order: string;
  moved: MovedJson;
  /** A path-table's `dir` column, rewritten by prefix too. */
  dir: boolean;
  /** The SQL that gives a row's JSON as `rowJson` would, where SQLite can make it exactly. */
  json: string | null;
}

/** A move as its rows are rewritten: the folder's names, and the files tables drop. */
export interface RowsMove {
  from: string;
  to: string;
  /** Old name → the tables (SQL names) that select a file there but not under its new name. */
  dropped: ReadonlyMap<string, readonly string[]>;
}

/** A string's JSON text without its quotes: how a path's start shows in a row's JSON. */
function jsonInner(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

/**
 * A path-table row's JSON under the new name: the values of `path` and `dir` start with the
 * moved folder's name (`from` and `to` as `jsonInner` gives them), the rest is as it was. Its
 * columns are the seven (no captures), so the keys come in that order, and a key's text never
 * occurs inside a value (JSON escapes quotes).
 */
function movedPathRow(row: string, from: string, to: string): string {
  let moved = row;
  for (const key of ['{"path":"', ',"dir":"']) {
    const at = moved.indexOf(key);
    if (at === -1 || !moved.startsWith(from, at + key.length)) continue;
    moved = `${moved.slice(0, at + key.length)}${to}${moved.slice(at + key.length + from.length)}`;
  }
  return moved;
}

/** The range of a column's values under `folder/` (`/` sorts just before `0`). */
export function under(folder: string): [string, string] {
  return [`${folder}/`, `${folder}0`];
}

/** A row as events show it, with its file. */
interface MovedRow {
  file: string;
  row: string;
}

/** The rows under `folder` of one table, with their files, as events show them. */
function rowsUnder(db: SqliteDatabase, table: MovedTable, folder: string): MovedRow[] {
  if (table.json !== null) {
    const sql = `SELECT ${table.column}, ${table.json} FROM ${quoteIdentifier(table.name)} WHERE ${table.column} > ? AND ${table.column} < ? ORDER BY ${table.order}`;
    const rows = cachedStatement(db, sql)
      .raw(true)
      .all(...under(folder)) as [string, string][];
    return rows.map(([file, row]) => ({ file, row }));
  }
  const list = table.columns.length === 0 ? "NULL" : table.columns.map(quoteIdentifier).join(", ");
  const sql = `SELECT ${table.column}, ${list} FROM ${quoteIdentifier(table.name)} WHERE ${table.column} > ? AND ${table.column} < ? ORDER BY ${table.order}`;
  const rows = cachedStatement(db, sql)
    .raw(true)
    .safeIntegers(true)
    .all(...under(folder)) as unknown[][];
  return rows.map((values) => ({
    file: values[0] as string,
    row: rowJson(table.columns, values.slice(1)),
  }));
}

function rowEvents(
  changes: RowChange[],
  action: "insert" | "delete",
  table: MovedTable,
  rows: readonly MovedRow[],
): void {
  for (const { file, row } of rows) {
    changes.push({ action, table: table.label, file_path: file, row, old_row: null });
  }
}

/** Deletes the rows of files that `table` no longer selects under their new names. */
function dropRows(
  db: SqliteDatabase,
  table: MovedTable,
  move: RowsMove,
  changes: RowChange[],
  forget: (table: string, file: string) => void,
): void {
  const quoted = quoteIdentifier(table.name);
  for (const [file, tables] of move.dropped) {
    if (!tables.includes(table.name)) continue;
    const rows = currentRows(db, table.name, table.columns, { column: table.column, value: file });
    for (const row of rows) {
      changes.push({ action: "delete", table: table.label, file_path: file, row, old_row: null });
    }
    cachedStatement(db, `DELETE FROM ${quoted} WHERE ${table.column} = ?`).run(file);
    forget(table.name, file);
  }
}

/**
 * Renames the rows of a move in every table of `tables` (call inside a transaction): rows
 * already under the destination (a folder the move replaced) are deleted first, then those of
 * files a table drops. Appends the row changes: each moved row's `delete` under its old name
 * and `insert` under its new one; `forget` is told each file a table dropped.
 */
export function moveRows(
  db: SqliteDatabase,
  tables: readonly MovedTable[],
  move: RowsMove,
  changes: RowChange[],
  forget: (table: string, file: string) => void = () => {},
): void {
  const { from, to } = move;
  for (const table of tables) {
    const quoted = quoteIdentifier(table.name);
    const { column } = table;
    const stale = rowsUnder(db, table, to);
    if (stale.length > 0) {
      rowEvents(changes, "delete", table, stale);
      cachedStatement(db, `DELETE FROM ${quoted} WHERE ${column} > ? AND ${column} < ?`).run(
        ...under(to),
      );
    }
    dropRows(db, table, move, changes, forget);
    const before = rowsUnder(db, table, from);
    if (before.length === 0) continue;
    const renamed = (name: string) => `${name} = ? || substr(${name}, length(?) + 1)`;
    const set = table.dir ? `${renamed(column)}, ${renamed("dir")}` : renamed(column);
    const moveRowsSql = `UPDATE ${quoted} SET ${set} WHERE ${column} > ? AND ${column} < ?`;
    const prefixes = table.dir ? [to, from, to, from] : [to, from];
    cachedStatement(db, moveRowsSql).run(...prefixes, ...under(from));
    rowEvents(changes, "delete", table, before);
    const { moved } = table;
    const [fromJson, toJson] = [jsonInner(from), jsonInner(to)];
    const after =
      moved === null
        ? rowsUnder(db, table, to)
        : before.map(({ file, row }) => ({
            file: `${to}${file.slice(from.length)}`,
            row: moved === "path" ? movedPathRow(row, fromJson, toJson) : row,
          }));
    rowEvents(changes, "insert", table, after);
  }
}

/**
 * Row changes of moves as a thread sends them: per change its action's first letter
 * (`actions`), its table as an index into `labels` (`tables`, one character each), its file and
 * its row. Strings in arrays, not an object per change: a checkout moves hundreds of thousands
 * of rows, and the receiving thread then deserializes two strings per change, not an object.
 */
export interface PackedMoveChanges {
  labels: string[];
  actions: string;
  tables: string;
  files: string[];
  rows: string[];
}

/** `changes` (inserts and deletes of rows as text, as `moveRows` makes them) packed. */
export function packMoveChanges(changes: readonly RowChange[]): PackedMoveChanges {
  const packed: PackedMoveChanges = { labels: [], actions: "", tables: "", files: [], rows: [] };
  const labels = new Map<string, number>();
  for (const change of changes) {
    if (change.action !== "insert" && change.action !== "delete") {
      throw new Error(`a move made a change of another kind: ${change.action}`);
    }
    if (typeof change.row !== "string") throw new Error("a moved row is not text");
    let at = labels.get(change.table);
    if (at === undefined) {
      at = packed.labels.length;
      labels.set(change.table, at);
      packed.labels.push(change.table);
    }
    packed.actions += change.action[0];
    packed.tables += String.fromCharCode(at);
    packed.files.push(change.file_path);
    packed.rows.push(change.row);
  }
  return packed;
}

/** Appends the changes `packed` holds to `changes`, in order. */
export function unpackMoveChanges(packed: PackedMoveChanges, changes: RowChange[]): void {
  const { labels, actions, tables, files, rows } = packed;
  for (let i = 0; i < files.length; i++) {
    changes.push({
      action: actions[i] === "i" ? "insert" : "delete",
      table: labels[tables.charCodeAt(i)] as string,
      file_path: files[i] as string,
      row: rows[i] as string,
      old_row: null,
    });
  }
}
