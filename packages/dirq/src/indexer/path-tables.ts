import { DirqError } from "../errors.js";
import type { ProgressReporter } from "../progress/reporter.js";
import { loadNativeRows } from "../scan/native-fs.js";
import { type EmptyTableListener, emptyTable } from "../scan/empty-selection.js";
import { selectionMatcher } from "../scan/inclusion.js";
import { captureNames } from "../scan/bash-glob.js";
import { compileCaptures, type PathSelection, parsePathTableName } from "../scan/path-selection.js";
import type { SkippedPath } from "../scan/walk.js";
import {
  directorySignature,
  folderKey,
  ignoreSourceSignatures,
  treeUnchanged,
} from "../scan/tree-signature.js";
import type { Catalog } from "./catalog.js";
import { type CatalogStore, type CatalogTable, specText } from "./catalog-store.js";
import { cachedStatement, quoteIdentifier, quoteLiteral, type SqliteDatabase } from "./database.js";
import {
  type ColumnGroups,
  type FillJob,
  type FillOutcome,
  fillRows,
  NAME_COLUMNS,
  pushNameColumns,
  STAT_COLUMNS,
} from "./path-fill.js";
import { currentRows, diffRows, type RowChange, rowJson } from "./row-changes.js";

/** The seven stat columns of a path-table, in table order. */
export const PATH_TABLE_COLUMNS = [
  "path",
  "basename",
  "dir",
  "ext",
  "size",
  "mtime",
  "ctime",
] as const;

const CREATE_COLUMNS =
  "path TEXT NOT NULL, basename TEXT, dir TEXT, ext TEXT, " +
  "size INTEGER, mtime INTEGER, ctime INTEGER";

/** The `{name}` captures of a path-table's glob: its columns after the seven. */
function capturesOf(selection: PathSelection): string[] {
  return selection.kind === "glob" ? captureNames(selection.pattern) : [];
}

/** A capture may not take the name of one of the seven columns (ASCII case ignored). */
function checkCaptureNames(path: string, selection: PathSelection): void {
  const clash = capturesOf(selection).find((capture) =>
    (PATH_TABLE_COLUMNS as readonly string[]).includes(capture.toLowerCase()),
  );
  if (clash === undefined) return;
  throw new DirqError(
    "PATH_INVALID",
    `path-table '${path}': the capture {${clash}} is named as a column every path-table has: give it another name`,
  );
}

/**
 * A path-table's empty table. STRICT: SQLite enforces the column types, so the server's JSON
 * writer can trust them. Each capture is a TEXT column generated from `path` when a row is
 * written (stored: a statement reads it without calling anything).
 */
function createTableSql(name: string, selection: PathSelection): string {
  const pattern = selection.kind === "glob" ? quoteLiteral(selection.pattern) : "";
  const generated = capturesOf(selection).map(
    (capture) =>
      `, ${quoteIdentifier(capture)} TEXT GENERATED ALWAYS AS ` +
      `(dirq_capture(${pattern}, ${quoteLiteral(capture)}, path)) STORED`,
  );
  return `CREATE TABLE ${quoteIdentifier(name)} (${CREATE_COLUMNS}${generated.join("")}) STRICT`;
}

export type { ColumnGroups };

/**
 * Runs a fill's walk, stats and inserts: on the index's own connection (`fillRows`), or on a
 * fill thread with a connection of its own to the same file (see FillWorker), which leaves
 * this thread free meanwhile. Either way it runs under the index's one writer.
 */
export type FillRunner = (job: FillJob, progress: (found: number) => void) => Promise<FillOutcome>;

export const ALL_COLUMN_GROUPS: ColumnGroups = { paths: true, names: true, stat: true };

export interface PathTable {
  /** The SQLite name. */
  name: string;
  /** The name as the user wrote it, which events carry (differs for case variants). */
  label: string;
  selection: PathSelection;
  /** Whether a path (relative) belongs to this table, ignore rules aside. */
  matches: (path: string) => boolean;
  /** `null` until the first fill. */
  filled: ColumnGroups | null;
  /** When a statement last named it (ms), for dropping the least recently used. */
  lastUsed: number;
  /**
   * Column groups a persisted index held for it, not yet checked against the tree (the
   * first fill checks them); `null` otherwise.
   */
  restored: ColumnGroups | null;
  /** The name is a view over counted blank rows for now, not the table (see `countedFills`). */
  counted: boolean;
  /** The glob's capture names, columns after the seven (generated from `path`). */
  captures: readonly string[];
}

/**
 * Live path-tables kept at most: each is refreshed on every change under it. Past this, the
 * least recently used one is dropped (and built again if a statement names it later).
 */
export const MAX_LIVE_PATH_TABLES = 100;
/** A path-table no statement has named for this long is dropped the next time one is made. */
export const PATH_TABLE_IDLE_MS = 60 * 60 * 1000;

export interface PathTableOptions {
  root: string;
  useGitignore: boolean;
  extraIgnores?: readonly string[];
  progress: ProgressReporter;
  /** See `OpenIndexOptions.pathlessFills`. */
  pathlessFills?: boolean;
  /** See `OpenIndexOptions.countedFills`. */
  countedFills?: boolean;
  /** Told when a fill lists no file and skips none, with why (see `whyEmpty`). */
  onEmpty?: EmptyTableListener;
}

/** What a statement reads of a path-table besides its columns. */
export interface StatementReads {
  /** Row ids, which a view does not have. */
  readsRowid: boolean;
  /** The schema, or something other than table rows (`pragma_table_info`): it would see a view. */
  readsSchema: boolean;
}

/**
 * The view that stands for a path-table whose statement reads no column of it: `count` rows
 * with the table's columns, made by dirq's native `dirq_blank_rows` without writing any.
 */
function countedView(name: string, count: number): string {
  const columns =
    "'' AS path, NULL AS basename, NULL AS dir, NULL AS ext, NULL AS size, NULL AS mtime, NULL AS ctime";
  return `CREATE VIEW ${quoteIdentifier(name)} AS SELECT ${columns} FROM dirq_blank_rows(${count})`;
}

/** What a path-table's captures hold for a file's path (as its generated columns do). */
const captureReaders = new WeakMap<PathTable, (path: string) => Record<string, string>>();
function captured(table: PathTable, path: string): (string | null)[] {
  if (table.captures.length === 0 || table.selection.kind !== "glob") return [];
  let read = captureReaders.get(table);
  if (read === undefined)
    captureReaders.set(table, (read = compileCaptures(table.selection.pattern)));
  const values = read(path);
  return table.captures.map((name) => values[name] ?? null);
}

/** A file's row (unfilled column groups NULL). */
function rowFor(
  path: string,
  stat: readonly [number, number, number],
  groups: ColumnGroups,
): unknown[] {
  const values: unknown[] = [path];
  if (groups.names) pushNameColumns(values, path);
  else values.push(null, null, null);
  if (groups.stat) values.push(stat[0], stat[1], stat[2]);
  else values.push(null, null, null);
  return values;
}

/**
 * Path-tables of one index: created empty when a statement names them, filled when a statement
 * reads them. Only the column groups a statement reads are written (`count(*)` and
 * `SELECT path` never stat a file); a later statement that reads more refills the table.
 */
export class PathTables {
  /** Tables that are counted views now (see `revertCounted`). */
  private countedTables = 0;
  /** Pins per table (SQLite name, lower case): a pinned table is never dropped as stale. */
  private readonly pins = new Map<string, number>();

  private readonly runFill: FillRunner;
  /** Fills make each table's lookup index with its rows (a live index: see `keepLookups`). */
  private lookups = false;

  /**
   * `catalog`: the index's registry of tables, where path-tables are kept; `runFill`: where
   * fills run, by default on this thread, on `db`.
   */
  constructor(
    private readonly db: SqliteDatabase,
    private readonly options: PathTableOptions,
    private readonly catalog: Catalog,
    runFill?: FillRunner,
  ) {
    this.runFill = runFill ?? ((job, progress) => fillRows(db, job, progress));
  }

  /**
   * From now on each fill makes the table's lookup index as it writes the rows: a watcher
   * keeps this index current, and the first change after a fill must not wait for an index
   * made after it (on a million rows that takes longer than a fill's own inserts of it).
   */
  keepLookups(): void {
    this.lookups = true;
  }

  /** The catalog's definition of a path-table: a change of any part rebuilds it. */
  private specOf(name: string, label: string, selection: PathSelection): string {
    return specText({
      kind: "path",
      name,
      label,
      selection,
      useGitignore: this.options.useGitignore,
      ignore: this.options.extraIgnores ?? [],
    });
  }

  /**
   * Takes back a path-table a persisted index holds, when this index would define it the same
   * way. Its rows are checked against the tree at its first fill. `false`: drop it.
   */
  restore(entry: CatalogTable): boolean {
    let selection: PathSelection | null;
    try {
      selection = parsePathTableName(entry.name, this.options.root);
    } catch {
      return false;
    }
    if (selection === null || entry.spec !== this.specOf(entry.name, entry.name, selection)) {
      return false;
    }
    if (this.catalog.pathTableSelecting(selection) !== undefined) return false;
    const table: PathTable = {
      name: entry.name,
      label: entry.name,
      selection,
      matches: selectionMatcher(selection),
      filled: null,
      lastUsed: Date.now(),
      restored: entry.filled === null ? null : (JSON.parse(entry.filled) as ColumnGroups),
      counted: false,
      captures: capturesOf(selection),
    };
    // Already in the store: kept as it is.
    this.catalog.addPathTable(table, null);
    return true;
  }

  /**
   * Creates the empty table `name` for the path-table `path` (the same but for case variants,
   * see CaseVariants); `false` when the path is not path-like.
   */
  create(name: string, path: string = name): boolean {
    const selection = parsePathTableName(path, this.options.root);
    if (selection === null) return false;
    checkCaptureNames(path, selection);
    this.dropStale(Date.now());
    const same = this.catalog.pathTableSelecting(selection);
    if (same !== undefined) {
      // `'./x/../'` and `'./'` are one selection: one table, refreshed once; the new name is
      // a view over it.
      this.db.exec(
        `CREATE VIEW ${quoteIdentifier(name)} AS SELECT * FROM ${quoteIdentifier(same.name)}`,
      );
      this.catalog.addAlias(name, same);
      same.lastUsed = Date.now();
      return true;
    }
    this.db.exec(createTableSql(name, selection));
    const table: PathTable = {
      name,
      label: path,
      selection,
      matches: selectionMatcher(selection),
      filled: null,
      lastUsed: Date.now(),
      restored: null,
      counted: false,
      captures: capturesOf(selection),
    };
    const spec = this.specOf(name, path, selection);
    this.catalog.addPathTable(table, { name, kind: "path", spec, filled: null, objects: [] });
    return true;
  }

  /** Drops path-tables idle too long, and the least recently used beyond the limit. */
  private dropStale(now: number): void {
    const byAge = this.catalog.pathTables().sort((a, b) => a.lastUsed - b.lastUsed);
    let count = byAge.length;
    for (const table of byAge) {
      if (count < MAX_LIVE_PATH_TABLES && now - table.lastUsed < PATH_TABLE_IDLE_MS) break;
      // A live query reads it: dropping it would stop the watcher keeping its rows current.
      if (this.pins.has(table.name.toLowerCase())) continue;
      this.drop(table);
      count--;
    }
  }

  private drop(table: PathTable): void {
    for (const alias of this.catalog.aliasesOf(table))
      this.db.exec(`DROP VIEW IF EXISTS ${quoteIdentifier(alias)}`);
    this.db.exec(
      `DROP ${table.counted ? "VIEW" : "TABLE"} IF EXISTS ${quoteIdentifier(table.name)}`,
    );
    if (table.counted) this.countedTables--;
    this.catalog.removePathTable(table);
  }

  /**
   * Keeps the path-tables among `names` (SQLite names) from being dropped as stale until the
   * returned call: a live query pins what it reads, for as long as it is subscribed to.
   */
  pin(names: Iterable<string>): () => void {
    const keys = [...names].map((name) => name.toLowerCase());
    for (const key of keys) this.pins.set(key, (this.pins.get(key) ?? 0) + 1);
    let pinned = true;
    return () => {
      if (!pinned) return;
      pinned = false;
      for (const key of keys) {
        const left = (this.pins.get(key) ?? 1) - 1;
        if (left === 0) this.pins.delete(key);
        else this.pins.set(key, left);
      }
    };
  }

  /** Marks the path-tables (or their aliases) among `names` as just used. */
  touch(names: Iterable<string>): void {
    const now = Date.now();
    for (const name of names) {
      const table = this.catalog.pathTable(name);
      if (table) table.lastUsed = now;
    }
  }

  /** Names of every path-table and alias, filled or not. */
  names(): string[] {
    return this.catalog.names("path");
  }

  /** Names of the tables that hold rows: the ones the watcher keeps current. */
  filledTables(): string[] {
    return this.catalog
      .pathTables()
      .filter((table) => table.filled)
      .map((table) => table.name);
  }

  /**
   * Brings one file's row up to date in every filled path-table that selects it. `stat` is
   * the file's size, mtime and ctime, or `null` when it is no longer a row (gone, ignored, a
   * broken link or one leading outside the root). Returns the row changes. Call inside a
   * savepoint: a throw rolls back this file alone.
   */
  refreshFile(path: string, stat: readonly [number, number, number] | null): RowChange[] {
    const changes: RowChange[] = [];
    for (const table of this.catalog.pathTables()) {
      if (table.filled === null) continue;
      if (!table.filled.paths) {
        // Rows without paths cannot be found by path: the next statement fills it again.
        table.filled = null;
        continue;
      }
      const columns = [...PATH_TABLE_COLUMNS, ...table.captures];
      const before = currentRows(this.db, table.name, columns, { column: "path", value: path });
      const values = stat && table.matches(path) ? rowFor(path, stat, table.filled) : null;
      const after = values ? [rowJson(columns, [...values, ...captured(table, path)])] : [];
      if (before[0] === after[0]) continue;
      const quoted = quoteIdentifier(table.name);
      cachedStatement(this.db, `DELETE FROM ${quoted} WHERE path = ?`).run(path);
      if (values) {
        const placeholders = PATH_TABLE_COLUMNS.map(() => "?").join(", ");
        cachedStatement(
          this.db,
          `INSERT INTO ${quoted} (${PATH_TABLE_COLUMNS.join(", ")}) VALUES (${placeholders})`,
        ).run(values);
      }
      changes.push(...diffRows(table.label, path, before, after));
    }
    return changes;
  }

  /**
   * A restored table's rows stand when no folder it listed changed: the listing (and the
   * name columns) are reused without a walk. Stat columns are never trusted across runs (an
   * in-place edit leaves its folder alone), so a statement that reads them fills them again.
   */
  private checkRestored(table: PathTable): void {
    const restored = table.restored;
    table.restored = null;
    const dirs = this.catalog.store?.dirs(table.name);
    // Catalogs from before the `paths` group always wrote paths. Rows without paths stand
    // only in an index that may have them (see `pathlessFills`).
    const paths = restored?.paths !== false;
    if (!paths && this.options.pathlessFills !== true) return;
    if (restored && dirs && treeUnchanged(this.options.root, dirs)) {
      table.filled = { paths, names: restored.names, stat: false };
    }
  }

  /** Signatures of what shapes a walk of `selection` besides the folders it lists. */
  private startSignatures(selection: PathSelection): Map<string, string> {
    const base =
      selection.kind === "file"
        ? selection.file.slice(0, Math.max(0, selection.file.lastIndexOf("/")))
        : selection.base;
    const signatures = ignoreSourceSignatures(this.options.root, base);
    if (selection.kind === "file") {
      // A single file's presence shows in its folder's mtime.
      const folder = base === "" ? this.options.root : `${this.options.root}/${base}`;
      signatures.set(folderKey(base), directorySignature(folder, Date.now()));
    }
    return signatures;
  }

  /** Records, after the rows committed, what they were listed from. */
  private recordFill(store: CatalogStore, table: PathTable, folders: Map<string, string>): void {
    this.db.transaction(() => {
      store.saveDirs(table.name, folders);
      store.setFilled(table.name, JSON.stringify(table.filled));
    })();
  }

  /** The column groups that reading these column positions needs. */
  static groupsFor(columns: ReadonlySet<number>): ColumnGroups {
    const read = (names: readonly string[]) =>
      names.some((column) => columns.has(PATH_TABLE_COLUMNS.indexOf(column as never)));
    const names = read(NAME_COLUMNS);
    const stat = read(STAT_COLUMNS);
    // A capture (a column after the seven) is made from the path.
    const captures = [...columns].some((column) => column >= PATH_TABLE_COLUMNS.length);
    return { paths: names || stat || captures || read(["path"]), names, stat };
  }

  /**
   * The groups a fill writes for a statement that reads `wanted`: paths are left out only
   * where the index allows it (`pathlessFills`) and no index on the table could read them
   * without a column read SQLite's program shows (a seek on an index of `path`).
   */
  private groupsToWrite(name: string, wanted: ColumnGroups): ColumnGroups {
    if (wanted.paths) return wanted;
    const indexed = this.db
      .prepare("SELECT 1 FROM main.sqlite_schema WHERE type = 'index' AND tbl_name = ? LIMIT 1")
      .get(name);
    if (this.options.pathlessFills === true && indexed === undefined) return wanted;
    return { ...wanted, paths: true };
  }

  /** Whether `fill(name, wanted)` has work to do (`false` for a name that is no path-table). */
  needsFill(name: string, reads: ColumnGroups): boolean {
    const had = this.catalog.ownPathTable(name)?.filled;
    if (had === undefined) return false;
    const wanted = this.groupsToWrite(name, reads);
    return (
      had === null ||
      (wanted.paths && !had.paths) ||
      (wanted.names && !had.names) ||
      (wanted.stat && !had.stat)
    );
  }

  /**
   * Turns every counted view back into its table, empty and unfilled: a counted view answers
   * only the statement it was made for (a statement's plan does not see a path-table through
   * it, so the next statement would not fill it). Call before each statement is checked.
   */
  revertCounted(): void {
    if (this.countedTables === 0) return;
    for (const table of this.catalog.pathTables()) if (table.counted) this.revert(table);
  }

  private revert(table: PathTable): void {
    this.db.transaction(() => {
      this.db.exec(`DROP VIEW ${quoteIdentifier(table.name)}`);
      this.db.exec(createTableSql(table.name, table.selection));
    })();
    table.counted = false;
    table.filled = null;
    this.countedTables--;
  }

  /**
   * Whether a fill of `groups` may count the files instead of writing rows: `countedFills` is
   * on, the index lives in memory (a persisted one keeps its rows), the statement reads no
   * column, no row id and not the schema (which would show a view), and the native extension
   * makes the blank rows.
   */
  private mayCount(groups: ColumnGroups, statement: StatementReads): boolean {
    return (
      this.options.countedFills === true &&
      this.catalog.store === null &&
      !statement.readsRowid &&
      !statement.readsSchema &&
      !groups.paths &&
      !groups.names &&
      !groups.stat &&
      loadNativeRows(this.db)
    );
  }

  /** What a walk of the table's files is given. */
  private walkOf(table: PathTable): FillJob["walk"] {
    const { root, useGitignore, extraIgnores } = this.options;
    return { root, selection: table.selection, useGitignore, extraIgnores };
  }

  private isEmpty(table: PathTable): boolean {
    const first = this.db.prepare(`SELECT 1 FROM ${quoteIdentifier(table.name)} LIMIT 1`).get();
    return first === undefined;
  }

  /** Tells `onEmpty` that the table lists no file, and why. */
  private tellEmpty(table: PathTable): void {
    this.options.onEmpty?.(emptyTable(table.label, this.walkOf(table)));
  }

  /**
   * Makes sure the table holds its rows with at least the `wanted` column groups. `statement`:
   * what else the statement reads (see `countedFills`).
   */
  async fill(
    name: string,
    reads: ColumnGroups,
    statement: StatementReads = { readsRowid: true, readsSchema: true },
  ): Promise<SkippedPath[]> {
    const table = this.catalog.ownPathTable(name);
    if (!table) return [];
    if (table.counted) this.revert(table);
    const wanted = this.groupsToWrite(table.name, reads);
    table.lastUsed = Date.now();
    const restored = table.restored !== null;
    if (restored) this.checkRestored(table);
    const had = table.filled;
    if (!this.needsFill(name, wanted)) {
      // Rows a persisted index kept stand: said empty as a fill that lists nothing is.
      if (restored && had !== null && this.isEmpty(table)) this.tellEmpty(table);
      return [];
    }
    const groups = {
      paths: wanted.paths || (had?.paths ?? false),
      names: wanted.names || (had?.names ?? false),
      stat: wanted.stat || (had?.stat ?? false),
    };
    const phase = this.options.progress.start();
    const walkStart = Date.now();
    const store = this.catalog.store;
    const folders = store ? this.startSignatures(table.selection) : null;
    const countOnly = this.mayCount(groups, statement);
    const job: FillJob = {
      table: table.name,
      countOnly,
      walk: this.walkOf(table),
      groups,
      // A first fill may commit as it goes: no statement reads the table before it is marked
      // filled, and a failed fill leaves it unfilled (the next one starts with a DELETE).
      commitAsYouGo: had === null,
      signFoldersSince: folders ? walkStart : null,
      lookupIndex: this.lookups && groups.paths && !countOnly,
    };
    const outcome = await this.runFill(job, (found) => phase.update(`scanning ${found} files`));
    phase.finish((duration) => `scanned ${outcome.count} files in ${duration}`);
    if (outcome.count === 0 && outcome.skipped.length === 0) this.tellEmpty(table);
    table.filled = groups;
    if (countOnly) {
      this.db.transaction(() => {
        this.db.exec(`DROP TABLE ${quoteIdentifier(table.name)}`);
        this.db.exec(countedView(table.name, outcome.count));
      })();
      table.counted = true;
      this.countedTables++;
    }
    if (store && folders) {
      for (const [key, signature] of outcome.folders) folders.set(key, signature);
      this.recordFill(store, table, folders);
    }
    return outcome.skipped;
  }
}
