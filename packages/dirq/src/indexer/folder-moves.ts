import { captureNames } from "../scan/bash-glob.js";
import type { InclusionCheck } from "../scan/inclusion.js";
import type { TreeListing } from "../scan/tree-listing-helper.js";
import type { FolderMove } from "../watch/file-watcher.js";
import type { Catalog } from "./catalog.js";
import { forgetStoredFile, moveStoredFiles } from "./catalog-store.js";
import { cachedStatement, quoteIdentifier, quoteLiteral, type SqliteDatabase } from "./database.js";
import { FILE_PATH_COLUMN, type LiveParsedTable, ROW_INDEX_COLUMN } from "./parsed-tables.js";
import { PATH_TABLE_COLUMNS, type PathTable } from "./path-tables.js";
import {
  type CommitChange,
  currentRows,
  eventJsonHead,
  eventJsonTail,
  type HeldChanges,
  type RowChange,
  rowJson,
} from "./row-changes.js";

/*
 * A watched folder renamed is applied as the move it is: the rows of its files change their
 * path by prefix in SQL, each row a `delete` under its old name and an `insert` under its new
 * one, computed from the index; no file under it is read or parsed again. What a move may
 * change besides the names is left to an ordinary refresh of those files: a table that
 * selects a file under one name and not the other, an ignore rule of the new place, a glob's
 * captures (columns taken from the path), a file that is not where its rows say.
 */

export type { FolderMove };

/** What a move is applied with: the index's live tables and what the refresher knows. */
export interface MoveContext {
  db: SqliteDatabase;
  catalog: Catalog;
  /** The ignore rules, one check for every move of a refresh (it reads each rule file once). */
  inclusion: Pick<InclusionCheck, "includes">;
  /**
   * Whether a file's rows may not be its current ones: a job for it queued or running, a
   * failed commit to retry, a read the file did not last through. Asked again when the move
   * is applied (under the writer), as jobs commit between the plan and then.
   */
  busy: (file: string) => boolean;
}

/**
 * A move looked at before anything is written (the refresh's gather phase): the destination
 * listed. What the move does with each file is decided when it is applied (`applyMove`), from
 * the rows the move reads there anyway.
 */
export interface MovePlan {
  move: FolderMove;
  /** The files the destination's listing found (new names). */
  walked: readonly string[];
  /** Files under their new names to refresh as usual once the rows have moved. */
  refresh: Set<string>;
  /** Old name → new name of every file some table holds rows for under the source. */
  files: Map<string, string>;
  /** Old name → the tables (SQL names) that select a file there but not under its new name. */
  dropped: Map<string, string[]>;
  /** Folders under the destination the walk could not read. */
  errors: RowChange[];
}

/**
 * Whether a name the watcher reported under a move's destination (`destinations`) stands for
 * nothing the move does not cover: nothing is there (`exists`, asked only then). The moved
 * folder's own watch reports the rename as a child of the folder's old name (`d0/d0`,
 * renamed with it to `m0/d0`); files that are there are the move's to apply, but also read
 * as usual, as a file or folder made there after the rename may be.
 */
export function coveredByMove(
  destinations: ReadonlySet<string>,
  path: string,
  exists: (path: string) => boolean,
): boolean {
  for (let at = path.lastIndexOf("/"); at > 0; at = path.lastIndexOf("/", at - 1)) {
    if (destinations.has(path.slice(0, at))) return !exists(path);
  }
  return false;
}

/**
 * What a move's SQL needs of one live table: where its rows name their file, how they are
 * read as events show them. Plain data: the move thread is given it (see move-writer.ts).
 */
export interface MovedTableSql {
  name: string;
  column: string;
  columns: readonly string[];
  order: string;
  /** A path-table's `dir` column, rewritten by prefix too. */
  dir: boolean;
  /** The SQL that gives a row's JSON as `rowJson` would, where SQLite can make it exactly. */
  json: string | null;
  /** Whether its moved rows are read back after the move (see `MovedTable.moved`). */
  readBack: boolean;
  /** Whether the catalog's store records its files (a parsed table of a persisted index). */
  stored: boolean;
}

/** One live table as a move rewrites it: its SQL, and what its events show. */
export interface MovedTable extends MovedTableSql {
  label: string;
  /**
   * A moved row's JSON from its JSON before, given the folder's old and new names as they
   * show in JSON (`null`: read back, as a `ddl` or a glob's captures may compute columns from
   * the path).
   */
  moved: ((row: string, from: string, to: string) => string) | null;
}

/**
 * A SQL expression giving a path-table row's JSON text exactly as `rowJson` makes it from the
 * values: a STRICT table's columns there hold only TEXT and INTEGER (or NULL), which
 * `json_object` writes as `JSON.stringify` and `jsonValue` do (a test holds it to that for
 * every character). Made in SQLite, a moved row is one string to JavaScript, not an array of
 * values (big integers among them) joined into one: the burst of a checkout reads hundreds of
 * thousands. `null` past SQLite's limit on a function's arguments.
 */
export function pathRowJsonSql(columns: readonly string[]): string | null {
  if (columns.length * 2 > JSON_OBJECT_ARGUMENTS) return null;
  const pairs = columns.map((column) => `${quoteLiteral(column)}, ${quoteIdentifier(column)}`);
  return `json_object(${pairs.join(", ")})`;
}

/** The arguments a SQL function takes at most (SQLite's default `SQLITE_MAX_FUNCTION_ARG`). */
const JSON_OBJECT_ARGUMENTS = 127;

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

/** Whether a parsed table's rows hold parts of their file's path (a glob's captures). */
export function dependsOnPath(table: LiveParsedTable): boolean {
  const selection = table.spec.selection;
  return selection?.kind === "glob" && captureNames(selection.pattern).length > 0;
}

function filledPathTables(catalog: Catalog): PathTable[] {
  return catalog.pathTables().filter((table) => table.filled?.paths === true);
}

export function movedTables(catalog: Catalog): MovedTable[] {
  const paths = filledPathTables(catalog).map((table): MovedTable => {
    const columns = [...PATH_TABLE_COLUMNS, ...table.captures];
    return {
      name: table.name,
      label: table.label,
      column: "path",
      columns,
      order: "path",
      moved: table.captures.length === 0 ? movedPathRow : null,
      readBack: table.captures.length > 0,
      dir: true,
      json: pathRowJsonSql(columns),
      stored: false,
    };
  });
  const parsed = catalog.parsedTables().map((table): MovedTable => ({
    name: table.spec.name,
    label: table.spec.label ?? table.spec.name,
    column: FILE_PATH_COLUMN,
    columns: table.columns,
    order: `${FILE_PATH_COLUMN}, ${ROW_INDEX_COLUMN}`,
    // A `ddl` may compute a column from the hidden file column: read the rows back.
    moved: table.spec.ddl === null ? (row) => row : null,
    readBack: table.spec.ddl !== null,
    dir: false,
    // A parsed table's REAL values: SQLite writes some (`1e300`) unlike `jsonValue`.
    json: null,
    stored: catalog.store !== null,
  }));
  return [...paths, ...parsed];
}

/** The range of a column's values under `folder/` (`/` sorts just before `0`). */
function under(folder: string): [string, string] {
  return [`${folder}/`, `${folder}0`];
}

/** A live table by its SQL name, and which files it selects. */
interface TableSelection {
  name: string;
  matches: (file: string) => boolean;
}

/** The live tables that hold rows of files: listed once per move, not once per moved file. */
function tableSelections(catalog: Catalog): TableSelection[] {
  return [
    ...filledPathTables(catalog).map((table) => ({ name: table.name, matches: table.matches })),
    ...catalog.parsedTables().map((table) => ({ name: table.spec.name, matches: table.matches })),
  ];
}

/**
 * The tables that select `file` but not its new name `moved`, or `null` when some table
 * selects `moved` but not `file` (its rows there are to be read).
 */
function leftTables(
  tables: readonly TableSelection[],
  file: string,
  moved: string,
): string[] | null {
  const left: string[] = [];
  for (const { name, matches } of tables) {
    const was = matches(file);
    const is = matches(moved);
    if (is && !was) return null;
    if (was && !is) left.push(name);
  }
  return left;
}

/**
 * A move's plan from its destination's listing (`listTree`), made just before it is applied:
 * which files the move renames is known only under the writer, from the rows it moves (see
 * `applyMove`).
 */
export function planMove(move: FolderMove, listing: TreeListing): MovePlan {
  return {
    move,
    walked: listing.paths,
    refresh: new Set(),
    files: new Map(),
    dropped: new Map(),
    errors: listing.skipped.map(({ path, reason }) => ({
      action: "error",
      table: null,
      file_path: path,
      error: reason,
    })),
  };
}

/**
 * Decides, under the writer, what the move does with each file: `indexed` are the files
 * some table holds rows for under the source (old names). Their rows are renamed, unless
 * the file needs an ordinary refresh under its new name: gone from the destination,
 * selected by other tables there, ignored there, or with rows of its own under way. A file
 * the listing found with no rows is refreshed as a new one. Takes the files out of `indexed`.
 */
function decide(context: MoveContext, plan: MovePlan, indexed: Set<string>): void {
  const { from, to } = plan.move;
  const { inclusion } = context;
  const tables = tableSelections(context.catalog);
  for (const moved of plan.walked) {
    const file = `${from}${moved.slice(to.length)}`;
    if (!indexed.has(file)) {
      if (tables.some((table) => table.matches(moved)) && inclusion.includes(moved)) {
        plan.refresh.add(moved);
      }
      continue;
    }
    indexed.delete(file);
    plan.files.set(file, moved);
    const left = leftTables(tables, file, moved);
    if (left === null || !inclusion.includes(moved) || context.busy(file)) plan.refresh.add(moved);
    else if (left.length > 0) plan.dropped.set(file, left);
  }
  // Rows of files that are not under the destination now: refreshed there, they go.
  for (const file of indexed) {
    const moved = `${to}${file.slice(from.length)}`;
    plan.files.set(file, moved);
    plan.refresh.add(moved);
  }
}

/**
 * Rows as events show them, with their files: texts of `file \0 row \0 file \0 row ...`, each
 * of at most `ROWS_PER_TEXT` rows (neither a path nor JSON text holds a NUL). A burst reads
 * hundreds of thousands of rows and keeps them until its events are sent: a string or two
 * per row, and an array, were work for the collector on every collection meanwhile.
 */
export interface RowTexts {
  texts: string[];
  rows: number;
}

/** Rows per text: a folder of a million files is read in parts of a size V8's strings take. */
const ROWS_PER_TEXT = 1024;

/** Each row of `texts` as its file and its JSON. */
function eachRow(texts: RowTexts, visit: (file: string, row: string) => void): void {
  for (const text of texts.texts) {
    const parts = text.split("\0");
    for (let at = 0; at + 1 < parts.length; at += 2)
      visit(parts[at] as string, parts[at + 1] as string);
  }
}

/** Rows (file and JSON) as `RowTexts`. */
function textsOf(rows: readonly [file: string, row: string][]): RowTexts {
  const texts: string[] = [];
  for (let at = 0; at < rows.length; at += ROWS_PER_TEXT) {
    texts.push(
      rows
        .slice(at, at + ROWS_PER_TEXT)
        .map(([file, row]) => `${file}\0${row}`)
        .join("\0"),
    );
  }
  return { texts, rows: rows.length };
}

/** The rows under `folder` of one table, with their files, as events show them. */
function rowsUnder(db: SqliteDatabase, table: MovedTableSql, folder: string): RowTexts {
  const [low, high] = under(folder);
  if (table.json !== null) {
    const { column } = table;
    // SQLite joins a part's rows into one text; the next part starts past its last file.
    const part = cachedStatement(
      db,
      `SELECT count(*), max(${column}), group_concat(${column} || char(0) || ${table.json}, char(0) ORDER BY ${table.order}) FROM (SELECT * FROM ${quoteIdentifier(table.name)} WHERE ${column} > ? AND ${column} < ? ORDER BY ${table.order} LIMIT ${ROWS_PER_TEXT})`,
    ).raw(true);
    const read: RowTexts = { texts: [], rows: 0 };
    for (let from = low; ;) {
      const [count, last, text] = part.get(from, high) as [number, string | null, string | null];
      if (count === 0 || text === null || last === null) return read;
      read.texts.push(text);
      read.rows += count;
      if (count < ROWS_PER_TEXT) return read;
      from = last;
    }
  }
  const list = table.columns.length === 0 ? "NULL" : table.columns.map(quoteIdentifier).join(", ");
  const sql = `SELECT ${table.column}, ${list} FROM ${quoteIdentifier(table.name)} WHERE ${table.column} > ? AND ${table.column} < ? ORDER BY ${table.order}`;
  const rows = cachedStatement(db, sql).raw(true).safeIntegers(true).all(low, high) as unknown[][];
  return textsOf(
    rows.map((values) => [values[0] as string, rowJson(table.columns, values.slice(1))]),
  );
}

/**
 * A table's `delete` or `insert` events of rows read as `RowTexts`, made when read. An
 * `insert` of moved rows may be made from their rows before the move (`renamed`).
 */
class HeldRowEvents implements HeldChanges {
  readonly action = "held";
  readonly size: number;

  constructor(
    private readonly event: "insert" | "delete",
    readonly table: string,
    private readonly rows: RowTexts,
    private readonly renamed: {
      file: (file: string) => string;
      row: (row: string) => string;
    } | null = null,
  ) {
    this.size = rows.rows;
  }

  expand(into: RowChange[]): void {
    const { event: action, table } = this;
    this.each((path, row) => into.push({ action, table, file_path: path, row, old_row: null }));
  }

  eachJson(commit: number, visit: (json: string) => void): void {
    // The parts every change shares, made once.
    const head = eventJsonHead(this.event, this.table);
    const tail = `,"old_row":null${eventJsonTail(commit)}`;
    this.each((path, row) => visit(`${head}${JSON.stringify(path)},"row":${row}${tail}`));
  }

  /** Each change's file and row, as its event names them. */
  private each(visit: (path: string, row: string) => void): void {
    const { renamed } = this;
    if (renamed === null) eachRow(this.rows, visit);
    else eachRow(this.rows, (file, row) => visit(renamed.file(file), renamed.row(row)));
  }
}

/** The rows a move reads before it writes, by table (in `movedTables` order). */
export interface MoveReads {
  /** Under the source: the rows to move. */
  sources: RowTexts[];
  /** Under the destination: rows of a folder the move replaces, deleted first. */
  stale: RowTexts[];
}

/** Reads the rows of `move` in every table (under the writer, before it writes). */
export function readMove(
  db: SqliteDatabase,
  tables: readonly MovedTableSql[],
  move: FolderMove,
): MoveReads {
  return {
    sources: tables.map((table) => rowsUnder(db, table, move.from)),
    stale: tables.map((table) => rowsUnder(db, table, move.to)),
  };
}

/** Decides the plan's files from the rows the move read (see `decide`). */
export function decideMove(context: MoveContext, plan: MovePlan, reads: MoveReads): void {
  const indexed = new Set<string>();
  for (const rows of reads.sources) eachRow(rows, (file) => indexed.add(file));
  decide(context, plan, indexed);
}

/** What a decided move writes: which files' rows leave which tables instead of moving. */
export interface MoveWrite {
  move: FolderMove;
  dropped: [file: string, tables: string[]][];
}

/** What a move wrote, by table: the rows of the files it dropped, the moved rows read back. */
export interface MoveWritten {
  /** Each dropped file's rows as they were (JSON), file after file. */
  dropped: [file: string, rows: string[]][][];
  /** The rows under the destination after the move, for a table that reads them back. */
  after: (RowTexts | null)[];
}

/** What a decided plan's move writes (plain data, for the move thread too). */
export function moveWriteOf(plan: MovePlan): MoveWrite {
  return { move: plan.move, dropped: [...plan.dropped] };
}

/**
 * Writes a decided move in every table (call inside a transaction, on any connection to the
 * index): rows already under the destination are deleted, the rows of files a table no longer
 * selects there are deleted, and the rest change their path by prefix.
 */
export function writeMove(
  db: SqliteDatabase,
  tables: readonly MovedTableSql[],
  write: MoveWrite,
): MoveWritten {
  const { from, to } = write.move;
  const written: MoveWritten = { dropped: [], after: [] };
  for (const table of tables) {
    const quoted = quoteIdentifier(table.name);
    const { column } = table;
    cachedStatement(db, `DELETE FROM ${quoted} WHERE ${column} > ? AND ${column} < ?`).run(
      ...under(to),
    );
    written.dropped.push(dropRows(db, table, write));
    const renamed = (name: string) => `${name} = ? || substr(${name}, length(?) + 1)`;
    const set = table.dir ? `${renamed(column)}, ${renamed("dir")}` : renamed(column);
    const moveRows = `UPDATE ${quoted} SET ${set} WHERE ${column} > ? AND ${column} < ?`;
    const prefixes = table.dir ? [to, from, to, from] : [to, from];
    cachedStatement(db, moveRows).run(...prefixes, ...under(from));
    written.after.push(table.readBack ? rowsUnder(db, table, to) : null);
    if (table.stored) moveStoredFiles(db, table.name, from, to);
  }
  return written;
}

/** Deletes the rows of files that `table` no longer selects under their new names. */
function dropRows(
  db: SqliteDatabase,
  table: MovedTableSql,
  write: MoveWrite,
): [file: string, rows: string[]][] {
  const dropped: [string, string[]][] = [];
  for (const [file, tables] of write.dropped) {
    if (!tables.includes(table.name)) continue;
    const where = { column: table.column, value: file };
    dropped.push([file, currentRows(db, table.name, table.columns, where)]);
    const quoted = quoteIdentifier(table.name);
    cachedStatement(db, `DELETE FROM ${quoted} WHERE ${table.column} = ?`).run(file);
    if (table.stored) forgetStoredFile(db, table.name, file);
  }
  return dropped;
}

/** What the index keeps of its tables after moves are written (on the writing thread). */
export function afterMoves(catalog: Catalog): void {
  // Rows without paths cannot be found by path: the next statement fills such a table again.
  for (const table of catalog.pathTables()) {
    if (table.filled !== null && !table.filled.paths) table.filled = null;
  }
}

/**
 * A written move's row changes, table by table: each moved row's `delete` under its old name
 * and `insert` under its new one, held as the rows' texts until they are read (`HeldChanges`);
 * before them, the `delete`s of rows the move replaced or dropped.
 */
export function moveChanges(
  tables: readonly MovedTable[],
  plan: MovePlan,
  reads: MoveReads,
  written: MoveWritten,
): CommitChange[] {
  const { from, to } = plan.move;
  const changes: CommitChange[] = [];
  tables.forEach((table, at) => {
    const stale = reads.stale[at] as RowTexts;
    if (stale.rows > 0) changes.push(new HeldRowEvents("delete", table.label, stale));
    const gone = new Set<string>();
    for (const [file, rows] of written.dropped[at] ?? []) {
      gone.add(file);
      for (const row of rows) {
        changes.push({ action: "delete", table: table.label, file_path: file, row, old_row: null });
      }
    }
    const before = withoutFiles(reads.sources[at] as RowTexts, gone);
    if (before.rows === 0) return;
    changes.push(new HeldRowEvents("delete", table.label, before));
    const { moved } = table;
    if (moved === null) {
      const after = written.after[at] ?? { texts: [], rows: 0 };
      changes.push(new HeldRowEvents("insert", table.label, after));
      return;
    }
    const [fromJson, toJson] = [jsonInner(from), jsonInner(to)];
    changes.push(
      new HeldRowEvents("insert", table.label, before, {
        file: (file) => `${to}${file.slice(from.length)}`,
        row: (row) => moved(row, fromJson, toJson),
      }),
    );
  });
  return changes;
}

/** The rows of `rows` but those of the files `gone`. */
function withoutFiles(rows: RowTexts, gone: ReadonlySet<string>): RowTexts {
  if (gone.size === 0) return rows;
  const left: [string, string][] = [];
  eachRow(rows, (file, row) => {
    if (!gone.has(file)) left.push([file, row]);
  });
  return textsOf(left);
}

/**
 * Renames the rows of a planned move in every live table (call inside a transaction): reads
 * the rows under the source, decides the plan's files from them (see `decide`), writes the
 * move and returns its row changes (see `moveChanges`).
 */
export function applyMove(context: MoveContext, plan: MovePlan): CommitChange[] {
  const tables = movedTables(context.catalog);
  const reads = readMove(context.db, tables, plan.move);
  decideMove(context, plan, reads);
  const written = writeMove(context.db, tables, moveWriteOf(plan));
  afterMoves(context.catalog);
  return moveChanges(tables, plan, reads, written);
}
