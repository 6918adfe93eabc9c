import type { Statement } from "@rocicorp/zero-sqlite3";
import { inferColumns, type HookRow, type StoredValue } from "../parse/hook-rows.js";
import type { ReaderExtractor } from "../parse/format-extractor.js";
import { isOwnName, type RecordBatch } from "../parse/formats/csv-rows.js";
import { RowsError } from "../parse/formats/document-rows.js";
import { extensionOf, formatOfPath } from "../parse/formats/format-names.js";
import type { CsvPiece, CsvPieceSink, JsonlPieceSink } from "../parse/formats/read-file-rows.js";
import { loadNativeRows } from "../scan/native-fs.js";
import type { SkippedPath } from "../scan/walk.js";
import {
  type CatalogStore,
  type FileSignature,
  fileSignature,
  schemaObjects,
} from "./catalog-store.js";
import { quoteIdentifier, type SqliteDatabase } from "./database.js";
import type { ParsedTableOptions, ParsedTableSpec } from "./parsed-tables.js";
import { FILE_PATH_COLUMN, ROW_INDEX_COLUMN } from "../shared/reserved-names.js";
import { foldName } from "../shared/sql-names.js";
import type { FilledOffThread } from "./staging-worker.js";
import { createTable, recordBuiltTable, rowInserter, ruleBroken } from "./table-rows.js";

/** A file whose keys cannot be columns (SQLite refused the name, or too many): skipped. */
class ColumnsRefused {
  constructor(readonly reason: string) {}
}

/** Runs `work` (creating or widening the table); SQLite's refusal becomes `ColumnsRefused`. */
function asColumns(work: () => void): void {
  try {
    work();
  } catch (error) {
    if (!(error instanceof Error) || error.name !== "SqliteError") throw error;
    const tooMany = /too many columns/i.test(error.message);
    throw new ColumnsRefused(
      tooMany
        ? "its keys would take the table past SQLite's 2000 columns: give the table a schema to keep only the columns you need"
        : `its keys cannot be columns (${error.message})`,
    );
  }
}

/**
 * A key no column can be named after (one holding NUL: SQLite's names end at it) refuses the
 * file, naming the key, before SQLite would refuse it with a tokenizer's message.
 */
function refuseUnnameableKeys(keys: readonly string[]): void {
  const key = keys.find((name) => name.includes("\u0000"));
  if (key === undefined) return;
  throw new ColumnsRefused(
    `its key ${JSON.stringify(key)} holds a NUL character, which no column name can hold: give the table a schema that leaves it out`,
  );
}

/**
 * Builds a table whose files dirq reads itself (a built-in format): each file is read and its
 * rows inserted at once, under a savepoint of its own, so a file that fails part way (a bad
 * line deep in a large file) leaves no row behind and the others stand. Rows are never all held
 * at once: a large file's arrive a piece at a time, and a table without a schema gains a column
 * when a file brings a new key, as a live refresh adds one. Work is committed in slices, the
 * event loop free between them (the server answers while a large table builds).
 */

/** Rows inserted in one transaction before the build lets the event loop run. */
const SLICE_ROWS = 50_000;
/** ... or this much time (ms). */
const SLICE_MS = 100;

const SAVEPOINT = "dirq_file";

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Records one multi-row insert writes at most. */
const RECORDS_PER_INSERT = 64;
/** Bound parameters one statement may have (SQLite's limit is 32766). */
const MAX_PARAMETERS = 32_000;

/** Inserts a CSV or TSV file's records: the statement, with the records' place in the table. */
type RecordInserter = (path: string, batch: RecordBatch, firstIndex: number) => void;

/**
 * Inserts batches of records whose names are `names` into a table of `columns` (plus the hidden
 * ones): `names[i]` goes to the column of the same name (as SQLite compares names), a name with
 * no column (dirq's own, or one outside a schema) nowhere. Values are copied from the batch
 * straight into the statement's parameters: no row is ever a `Map`.
 */
function recordInserter(
  prepare: (sql: string) => Statement,
  table: string,
  columns: readonly string[],
  names: readonly string[],
): RecordInserter {
  const position = new Map(columns.map((column, i) => [foldName(column), i]));
  const target = names.map((name) => (isOwnName(name) ? -1 : (position.get(foldName(name)) ?? -1)));
  const width = columns.length + 2;
  const covered = new Set(target);
  const uncovered = columns.map((_, i) => i).filter((i) => !covered.has(i));
  const head = `INSERT INTO ${quoteIdentifier(table)} (${[...columns, FILE_PATH_COLUMN, ROW_INDEX_COLUMN].map(quoteIdentifier).join(", ")}) VALUES `;
  const tuple = `(${Array(width).fill("?").join(", ")})`;
  const many = Math.max(1, Math.min(RECORDS_PER_INSERT, Math.floor(MAX_PARAMETERS / width)));
  const insertMany = prepare(head + Array(many).fill(tuple).join(", "));
  const insertOne = prepare(head + tuple);
  const manyValues = new Array<StoredValue>(width * many).fill(null);
  const oneValues = new Array<StoredValue>(width).fill(null);
  const fields = names.length;

  /** Puts record `r` of `values` at `offset` of `into`. */
  const place = (
    into: StoredValue[],
    offset: number,
    values: readonly StoredValue[],
    r: number,
    path: string,
    index: number,
  ) => {
    const from = r * fields;
    for (let i = 0; i < fields; i++) {
      const at = target[i] as number;
      if (at >= 0) into[offset + at] = values[from + i] as StoredValue;
    }
    for (const at of uncovered) into[offset + at] = null;
    into[offset + width - 2] = path;
    into[offset + width - 1] = BigInt(index);
  };

  return (path, batch, firstIndex) => {
    const { values, count } = batch;
    let r = 0;
    for (; r + many <= count; r += many) {
      for (let k = 0; k < many; k++) {
        place(manyValues, k * width, values, r + k, path, firstIndex + r + k);
      }
      insertMany.run(manyValues);
    }
    for (; r < count; r++) {
      place(oneValues, 0, values, r, path, firstIndex + r);
      insertOne.run(oneValues);
    }
  };
}

/** Fields a record may have for the native CSV table (native/dirq-csv.c, DECLARED_COLUMNS). */
const NATIVE_CSV_MAX_WIDTH = 1995;
const NATIVE_CSV_ERROR = "dirq_csv: ";

/**
 * The statement that inserts a CSV piece's records with the native `dirq_csv` table: field `i`
 * of a record goes to the column named `names[i]` (as SQLite compares names), a column no field
 * names gets NULL. Parameters: the path, the index of the piece's first record in the file,
 * the piece, its delimiter, its width and its first line.
 */
function nativeCsvInsertSql(
  table: string,
  columns: readonly string[],
  names: readonly string[],
  withTextFields: boolean,
): string {
  const field = new Map<string, number>();
  names.forEach((name, i) => {
    if (!isOwnName(name)) field.set(foldName(name), i);
  });
  const values = columns.map((column) => {
    const i = field.get(foldName(column));
    return i === undefined ? "NULL" : `c${i}`;
  });
  const targets = [...columns, FILE_PATH_COLUMN, ROW_INDEX_COLUMN].map(quoteIdentifier).join(", ");
  return (
    `INSERT INTO ${quoteIdentifier(table)} (${targets}) ` +
    `SELECT ${[...values, "?", "? + rowid - 1"].join(", ")} ` +
    `FROM dirq_csv(?, ?, ?, ?${withTextFields ? ", ?" : ""})`
  );
}

/**
 * The columns of a schema whose declared type gives them TEXT affinity (SQLite's rules: the
 * type holds CHAR, CLOB or TEXT, and not INT), names folded: a CSV field that reads as a number
 * is stored in one as it is written (`1.50`, `1e3`), as sqlite3's `.import` stores it, not as
 * the number's text (`1.5`, `1000.0`).
 */
function textColumns(schema: readonly [string, string][] | null): string[] {
  return (schema ?? [])
    .filter(([, type]) => !/INT/i.test(type) && /CHAR|CLOB|TEXT/i.test(type))
    .map(([column]) => foldName(column));
}

/** A record the native CSV table refused, as the file's error; any other error as it is. */
function nativeCsvError(error: unknown): unknown {
  if (error instanceof Error && error.name === "SqliteError") {
    if (error.message.startsWith(NATIVE_CSV_ERROR)) {
      return new RowsError(error.message.slice(NATIVE_CSV_ERROR.length));
    }
  }
  return error;
}

/** Columns the native JSON Lines table returns at most (native/dirq-jsonl.c). */
const NATIVE_JSONL_MAX_WIDTH = 1995;
/** Separates names in the native JSON Lines functions' arguments and answers. */
const NAME_SEPARATOR = "\u001f";

/** `dirq_jsonl`'s flags: the piece is a JSON array's elements; check it as it is read. */
const JSONL_ELEMENTS = 1;
const JSONL_CHECKED = 2;
const NATIVE_JSONL_ERROR = "dirq_jsonl: ";
/** The savepoint a checked piece is inserted under, undone when the check fails. */
const PIECE_SAVEPOINT = "dirq_piece";

/**
 * The statement that inserts a JSON Lines piece's rows (or a JSON array's elements) with the
 * native `dirq_jsonl` table, value `i` into column `i`. Parameters: the path, the index of the
 * piece's first row in the file, the piece, the columns' folded names, the flags, the names of
 * the keys read when checked (null: all), where a JSON array's elements may be cut (null:
 * `dirq_jsonl` finds it).
 */
function nativeJsonlInsertSql(table: string, columns: readonly string[]): string {
  const targets = [...columns, FILE_PATH_COLUMN, ROW_INDEX_COLUMN].map(quoteIdentifier).join(", ");
  const values = [...columns.map((_, i) => `c${i}`), "?", "? + rowid - 1"];
  return (
    `INSERT INTO ${quoteIdentifier(table)} (${targets}) ` +
    `SELECT ${values.join(", ")} FROM dirq_jsonl(?, ?, ?, ?, ?)`
  );
}

/** A piece for `dirq_jsonl`: its bytes, its flags, where a JSON array's elements may be cut. */
interface NativeJsonPiece {
  bytes: Buffer;
  flag: number;
  cuts: readonly number[] | null;
}

/** `dirq_jsonl`'s `cuts`: offsets separated by spaces, or null (it finds them itself). */
function cutsText(cuts: readonly number[] | null): string | null {
  return cuts === null ? null : cuts.join(" ");
}

/** A table that already exists, which a build fills instead of creating `spec`'s. */
export interface ExistingTable {
  name: string;
  /** Its visible columns, in order. */
  columns: readonly string[];
}

/**
 * One build of a table whose files dirq reads itself: the table's columns as files add keys.
 * With `into`, it fills that existing table (a live refresh's staging table) instead.
 */
export class ReaderTableBuild {
  columns: string[];
  /** The files filled, with their signatures (for a persisted cache's catalog). */
  readonly recorded: [string, FileSignature][] = [];
  private created = false;
  /** Statements by text, prepared once per build (preparing one per file costs). */
  private readonly statements = new Map<string, Statement>();
  /** Whether CSV and TSV records are parsed and inserted by the native `dirq_csv` table. */
  private readonly nativeCsv: boolean;

  /** The table the rows go to. */
  private readonly table: string;
  /** Its schema's TEXT columns, names folded (see `textColumns`). */
  private readonly textNames: readonly string[];
  /**
   * Every key the files brought, folded, the ones left out by `namedColumns` too: a later
   * statement that names one of those needs the table built again with it. `null` once a file
   * was read by code that gives only the named keys (the native JSON Lines reader).
   */
  keys: Set<string> | null = new Set();

  /**
   * `namedColumns` (folded names): only keys of these names become columns, the rest of each
   * row is left out; `null` keeps every key.
   */
  constructor(
    private readonly db: SqliteDatabase,
    private readonly spec: ParsedTableSpec,
    private readonly extractor: ReaderExtractor,
    private readonly root: string,
    private readonly persisted: boolean,
    into: ExistingTable | null = null,
    private readonly namedColumns: ReadonlySet<string> | null = null,
  ) {
    this.table = into?.name ?? spec.name;
    this.columns = into ? [...into.columns] : (spec.schema?.map(([column]) => column) ?? []);
    this.nativeCsv = loadNativeRows(db);
    this.textNames = textColumns(spec.schema);
    // A table with a schema is created before any file is read; one without, at its first rows
    // (its columns are theirs), or at the end when no file has any (finish).
    if (into !== null) this.created = true;
    else if (spec.schema !== null) this.create([]);
  }

  /** Creates the table if no file has (a table with no rows still has its name). */
  finish(): void {
    if (!this.created) this.create([]);
  }

  /**
   * Reads one file into the table under a savepoint of its own: a file that fails part way
   * leaves no row behind. Its reason when it is skipped, else `null`.
   */
  fillFile(path: string): { reason: string | null; rows: number } {
    const signature = this.persisted ? fileSignature(`${this.root}/${path}`) : null;
    const columnsBefore = this.columns;
    const createdBefore = this.created;
    const rollBack = () => {
      this.db.exec(`ROLLBACK TO ${SAVEPOINT}`);
      this.db.exec(`RELEASE ${SAVEPOINT}`);
      this.columns = columnsBefore;
      this.created = createdBefore;
    };
    this.db.exec(`SAVEPOINT ${SAVEPOINT}`);
    let read: { reason: string | null; rows: number };
    try {
      read = this.readFile(path);
    } catch (error) {
      rollBack();
      if (error instanceof ColumnsRefused) return { reason: error.reason, rows: 0 };
      throw ruleBroken(this.spec, path, error);
    }
    if (read.reason !== null) {
      rollBack();
      return { reason: read.reason, rows: 0 };
    }
    // A file whose header gave the table columns but that has no record: as if never read.
    if (read.rows === 0 && (this.columns !== columnsBefore || this.created !== createdBefore)) {
      rollBack();
      if (signature) this.recorded.push([path, signature]);
      return read;
    }
    this.db.exec(`RELEASE ${SAVEPOINT}`);
    if (signature) this.recorded.push([path, signature]);
    return read;
  }

  /**
   * Takes in a file another connection filled into the table (see `OffThreadFiller`):
   * `signature` is its state from before it was read.
   */
  tookFile(path: string, filled: FilledOffThread, signature: FileSignature | null): void {
    if (filled.columns !== null) {
      this.columns = filled.columns;
      this.created = true;
    }
    if (filled.reason === null && signature !== null) this.recorded.push([path, signature]);
  }

  /** Inserts a file's rows as the extractor reads them, a piece at a time. */
  private readFile(path: string): { reason: string | null; rows: number } {
    let count = 0;
    let insertRecords: RecordInserter | null = null;
    let recordNames: readonly string[] | null = null;
    const onRows = (rows: HookRow[]) => {
      if (rows.length === 0) return;
      this.takeKeys(inferColumns([rows]));
      // Numbered on from every row before, those of native pieces between two calls too.
      rowInserter(this.db, this.table, this.columns, count)(path, rows);
      count += rows.length;
    };
    const onRecords = (batch: RecordBatch) => {
      if (batch.count === 0) return;
      if (batch.names !== recordNames || insertRecords === null) {
        this.takeKeys(batch.names.filter((name) => !isOwnName(name)));
        recordNames = batch.names;
        insertRecords = recordInserter(this.prepare, this.table, this.columns, batch.names);
      }
      insertRecords(path, batch, count);
      count += batch.count;
    };
    let pieceNames: readonly string[] | null = null;
    const csvPieces: CsvPieceSink | undefined = this.nativeCsv
      ? {
          maxWidth: NATIVE_CSV_MAX_WIDTH,
          take: (piece) => {
            if (piece.names !== pieceNames) {
              this.takeKeys(piece.names.filter((name) => !isOwnName(name)));
              pieceNames = piece.names;
            }
            count += this.insertCsvPiece(path, piece, count);
          },
        }
      : undefined;
    const jsonlPieces: JsonlPieceSink | undefined =
      this.nativeCsv && this.spec.schema === null
        ? {
            take: (bytes, _firstLine, elements, cuts) => {
              const piece = { bytes, flag: elements ? JSONL_ELEMENTS : 0, cuts: cuts ?? null };
              const inserted = this.insertJsonlPiece(path, piece, count);
              if (inserted !== null) count += inserted;
              return inserted !== null;
            },
            scanArray: (bytes, state) =>
              this.prepare("SELECT dirq_json_array_scan(?, ?)").pluck().get(bytes, state) as
                string | null,
          }
        : undefined;
    const reason = this.extractor.readRows({ path, root: this.root }, onRows, {
      onRecords,
      csvPieces,
      textNames: this.textNames,
      jsonlPieces,
    });
    return { reason, rows: count };
  }

  /** Inserts a piece's records natively; how many. A record that breaks a rule: `RowsError`. */
  private insertCsvPiece(path: string, piece: CsvPiece, firstIndex: number): number {
    const withText = this.textNames.length > 0;
    const sql = nativeCsvInsertSql(this.table, this.columns, piece.names, withText);
    const insert = this.prepare(sql);
    try {
      const { records, delimiter, names, firstLine } = piece;
      const args = [path, BigInt(firstIndex), records, delimiter, names.length, firstLine];
      if (withText) {
        const text = new Set(this.textNames);
        args.push(names.map((name) => (text.has(foldName(name)) ? "1" : "0")).join(""));
      }
      return insert.run(...args).changes;
    } catch (error) {
      throw nativeCsvError(error);
    }
  }

  /**
   * Inserts a JSON Lines piece's rows (or a JSON array's elements) natively; how many, or
   * `null` when the native reader leaves the piece to the JavaScript one (nothing inserted).
   */
  private insertJsonlPiece(
    path: string,
    piece: NativeJsonPiece,
    firstIndex: number,
  ): number | null {
    // The columns go to the native table joined by the separator: none may hold it.
    if (this.columns.some((column) => column.includes(NAME_SEPARATOR))) return null;
    const named =
      this.namedColumns === null
        ? null
        : [...this.namedColumns]
            .filter((name) => !name.includes(NAME_SEPARATOR))
            .join(NAME_SEPARATOR);
    const checked = this.insertCheckedPiece(path, piece, firstIndex, named);
    if (checked !== null) return checked;
    const { bytes, flag, cuts } = piece;
    const keys = this.prepare("SELECT dirq_jsonl_keys(?, ?, ?)").pluck().get(bytes, named, flag);
    if (typeof keys !== "string") return null;
    if (named !== null) this.keys = null;
    this.takeKeys(keys === "" ? [] : keys.split(NAME_SEPARATOR));
    if (this.columns.length > NATIVE_JSONL_MAX_WIDTH) return null;
    const insert = this.prepare(nativeJsonlInsertSql(this.table, this.columns));
    const columns = this.columns.map(foldName).join(NAME_SEPARATOR);
    return insert.run(path, BigInt(firstIndex), bytes, columns, flag, null, cutsText(cuts)).changes;
  }

  /**
   * Inserts a piece into the table's columns as they are, checked as it is read (one parse,
   * not two): how many rows, or `null` (nothing inserted) when it brings a key with no column
   * or anything `dirq_jsonl_keys` refuses, and it must take the long way.
   */
  private insertCheckedPiece(
    path: string,
    piece: NativeJsonPiece,
    firstIndex: number,
    named: string | null,
  ): number | null {
    if (!this.created || this.columns.length > NATIVE_JSONL_MAX_WIDTH) return null;
    const insert = this.prepare(nativeJsonlInsertSql(this.table, this.columns));
    const columns = this.columns.map(foldName).join(NAME_SEPARATOR);
    this.db.exec(`SAVEPOINT ${PIECE_SAVEPOINT}`);
    try {
      const flag = piece.flag | JSONL_CHECKED;
      const args = [
        path,
        BigInt(firstIndex),
        piece.bytes,
        columns,
        flag,
        named,
        cutsText(piece.cuts),
      ];
      const inserted = insert.run(...args).changes;
      this.db.exec(`RELEASE ${PIECE_SAVEPOINT}`);
      return inserted;
    } catch (error) {
      this.db.exec(`ROLLBACK TO ${PIECE_SAVEPOINT}`);
      this.db.exec(`RELEASE ${PIECE_SAVEPOINT}`);
      const refused = error instanceof Error && error.name === "SqliteError";
      if (refused && error.message.startsWith(NATIVE_JSONL_ERROR)) return null;
      throw error;
    }
  }

  /** `keys`: the first rows' keys, in order, one spelling per name as SQLite compares them. */
  private create(keys: readonly string[]): void {
    if (this.spec.schema === null) this.columns = [...keys];
    createTable(this.db, this.spec, this.columns);
    this.created = true;
  }

  /** Creates or widens the table for `keys`; whether its columns changed. */
  private takeKeys(allKeys: readonly string[]): boolean {
    if (this.spec.schema === null) refuseUnnameableKeys(allKeys);
    for (const key of allKeys) this.keys?.add(foldName(key));
    const named = this.namedColumns;
    const keys = named === null ? allKeys : allKeys.filter((key) => named.has(foldName(key)));
    let changed = false;
    asColumns(() => {
      if (this.created) {
        changed = this.widen(keys);
      } else {
        this.create(keys);
        changed = true;
      }
    });
    return changed;
  }

  /** Adds the columns of keys not seen before (no schema); returns whether any was added. */
  private widen(keys: readonly string[]): boolean {
    if (this.spec.schema !== null) return false;
    const known = new Set(this.columns.map(foldName));
    let added = false;
    for (const column of keys) {
      if (known.has(foldName(column))) continue;
      this.db.exec(
        `ALTER TABLE ${quoteIdentifier(this.table)} ADD COLUMN ${quoteIdentifier(column)}`,
      );
      this.columns = [...this.columns, column];
      known.add(foldName(column));
      added = true;
    }
    return added;
  }

  private readonly prepare = (sql: string): Statement => {
    let statement = this.statements.get(sql);
    if (statement === undefined) this.statements.set(sql, (statement = this.db.prepare(sql)));
    return statement;
  };
}

/** A file the build skipped, marked when `auto` has no format for it (`SkippedPath.noFormat`). */
function skippedFile(
  spec: ParsedTableSpec,
  extractor: ReaderExtractor,
  path: string,
  reason: string,
): SkippedPath {
  if (extractor.format !== "auto" || formatOfPath(path) !== null) return { path, reason };
  const noFormat = { table: spec.label ?? spec.name, extension: extensionOf(path) };
  return { path, reason, noFormat };
}

/**
 * Reads a table build's large files on another thread (the server's staging thread), each
 * into the table in a transaction of that thread's own: the thread that serves requests stays
 * free while tens of megabytes are parsed and inserted.
 */
export interface OffThreadFiller {
  /** Whether the file `path` (relative to the root) is read there. */
  takes(path: string): boolean;
  fill(path: string): Promise<FilledOffThread>;
}

/**
 * Fills a table dirq reads itself from `paths`. `persisted`: the catalog the build is recorded
 * in; `namedColumns`: load only the keys of these names (see `ReaderTableBuild`); `offThread`:
 * where its large files are read, if not on this thread.
 */
export async function fillFromReader(
  db: SqliteDatabase,
  spec: ParsedTableSpec,
  extractor: ReaderExtractor,
  paths: readonly string[],
  options: ParsedTableOptions,
  {
    persisted,
    namedColumns,
    offThread = null,
  }: {
    persisted: { store: CatalogStore; spec: string } | null;
    namedColumns: ReadonlySet<string> | null;
    offThread?: OffThreadFiller | null;
  },
): Promise<{ skipped: SkippedPath[]; columns: string[]; keys: ReadonlySet<string> | null }> {
  const phase = options.progress.start();
  const skipped: SkippedPath[] = [];
  const before = persisted ? schemaObjects(db) : null;
  const named = spec.schema === null ? namedColumns : null;
  const build = new ReaderTableBuild(
    db,
    spec,
    extractor,
    options.root,
    persisted !== null,
    null,
    named,
  );
  // Only the keys of some names are kept on this thread's reads alone.
  const thread = named === null ? offThread : null;
  const skip = (path: string, reason: string | null) => {
    if (reason !== null) skipped.push(skippedFile(spec, extractor, path, reason));
  };
  let next = 0;
  const report = () => {
    const percent = paths.length === 0 ? 100 : Math.floor((next * 100) / paths.length);
    phase.update(`indexing ${next}/${paths.length} files (${percent}%)`);
  };
  report();
  while (next < paths.length) {
    if (options.signal?.aborted) break;
    const path = paths[next] as string;
    if (thread?.takes(path)) {
      next++;
      const signature = persisted ? fileSignature(`${options.root}/${path}`) : null;
      const filled = await thread.fill(path);
      build.tookFile(path, filled, signature);
      skip(path, filled.reason);
    } else {
      next = fillSlice(db, build, paths, next, thread, skip);
    }
    report();
    if (next < paths.length) await yieldToEventLoop();
  }
  db.transaction(() => {
    build.finish();
    if (persisted && before) recordBuiltTable(db, spec, persisted, before, build.recorded);
  })();
  phase.finish((duration) => `indexed ${paths.length} files in ${duration}`);
  return { skipped, columns: build.columns, keys: build.keys };
}

/**
 * Fills files from `paths[next]` on in one transaction, up to a slice's rows or time, or to a
 * file `thread` takes; the index of the first file left.
 */
function fillSlice(
  db: SqliteDatabase,
  build: ReaderTableBuild,
  paths: readonly string[],
  next: number,
  thread: OffThreadFiller | null,
  skip: (path: string, reason: string | null) => void,
): number {
  const started = Date.now();
  let rows = 0;
  let at = next;
  db.transaction(() => {
    while (at < paths.length && rows < SLICE_ROWS && Date.now() - started < SLICE_MS) {
      const path = paths[at] as string;
      if (at > next && thread?.takes(path)) break;
      at++;
      const filled = build.fillFile(path);
      skip(path, filled.reason);
      rows += filled.rows;
    }
  })();
  return at;
}
