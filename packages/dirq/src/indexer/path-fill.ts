import type { Statement } from "@rocicorp/zero-sqlite3";
import {
  AheadStatter,
  BatchStatter,
  STAT_FIELDS,
  type Statter,
  statReadAhead,
} from "../scan/file-stats.js";
import { loadNativeRows } from "../scan/native-fs.js";
import type { PathBatch } from "../scan/path-batch.js";
import { StatHelper } from "../scan/stat-helper.js";
import { directorySignature, folderKey } from "../scan/tree-signature.js";
import { type ResumePoint, SelectionWalker, type SkippedPath } from "../scan/walk.js";
import { WalkHelper, type WalkHelperBatch, type WalkHelperOptions } from "../scan/walk-helper.js";
import { lookupIndexSql, quoteIdentifier, type SqliteDatabase } from "./database.js";
import { monotonicMs } from "../shared/clock.js";

/**
 * How a path-table's rows are produced and written: the walk, stats and inserts of a fill,
 * batch by batch, on one thread or two (see docs/path-tables.md, "Large trees").
 */

export const NAME_COLUMNS = ["basename", "dir", "ext"] as const;
export const STAT_COLUMNS = ["size", "mtime", "ctime"] as const;

/** A first fill commits after about this many rows (see RowWriter.replaceAll). */
const COMMIT_EVERY_ROWS = 32_768;

/**
 * Rows per INSERT: one call per batch costs far less than one call per row, and 64 rows a
 * call less than 16.
 */
const INSERT_BATCH = 64;

/** `ext`: the last extension without its dot, NULL when there is none (`.env`, `Makefile`). */
export function extensionOf(basename: string): string | null {
  const dot = basename.lastIndexOf(".");
  if (dot <= 0 || dot === basename.length - 1) return null;
  return basename.slice(dot + 1);
}

export function pushNameColumns(values: unknown[], path: string): void {
  const slash = path.lastIndexOf("/");
  const basename = path.slice(slash + 1);
  values.push(basename, slash === -1 ? "" : path.slice(0, slash), extensionOf(basename));
}

/**
 * Files found on the calling thread alone before a helper thread is worth its start-up (CPU
 * that a small tree never earns back, more of it on a loaded machine). A stat costs several
 * times what listing a file does, so the stat helper pays off early; the walk helper only on
 * big trees (on a hundred thousand files it costs more CPU than it saves, on a million it
 * shortens the fill).
 */
export const STAT_HELPER_AFTER_FILES = 2_048;
export const WALK_HELPER_AFTER_FILES = 65_536;

/**
 * Batches walked but not yet written, at most: past this the walk stops and the calling thread
 * stats batches the helper has not begun (or waits for the oldest), so only a few batches of
 * paths are ever in memory and both threads stat until the walk's end. Few: batches held
 * longer outlive V8's young generation and raise the peak RSS, and more ahead saves no time.
 */
const BATCHES_AHEAD = 8;
/** The longest the fill holds the event loop before it lets other work run (ms). */
const YIELD_EVERY_MS = 10;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A fill's pause point: lets the event loop run once the fill has held it YIELD_EVERY_MS. */
function breather(): () => Promise<void> {
  let since = monotonicMs();
  return async () => {
    if (monotonicMs() - since < YIELD_EVERY_MS) return;
    await nextTurn();
    since = monotonicMs();
  };
}

/**
 * Walks, stats and writes batch by batch, in walk order, and lets the event loop run every few
 * milliseconds: in the server, other requests and event streams go on while a big table fills
 * (each step is one readdir, one batch's stats or one batch insert).
 */
async function streamBatches(
  walker: SelectionWalker,
  statter: Statter | null,
  rows: RowWriter,
): Promise<void> {
  const breathe = breather();
  const writeReady = () => {
    for (const done of statter?.takeReady() ?? []) rows.write(done.batch, done.stats);
  };
  /** Writes what is in, waiting for stats while more than `ahead` batches are outstanding. */
  const drain = async (ahead: number) => {
    writeReady();
    while (statter !== null && statter.pending > ahead) {
      statter.helpOrWait(YIELD_EVERY_MS);
      writeReady();
      await breathe();
    }
  };
  for (let batch = walker.next(); batch !== null; batch = walker.next()) {
    if (statter === null) rows.write(batch, null);
    else {
      statter.submit(batch);
      await drain(BATCHES_AHEAD);
    }
    await breathe();
  }
  await drain(0);
}

/**
 * The share of what is left that the calling thread keeps when it splits a paths-only walk
 * with the helper: it also inserts every row, so it keeps less than half. Chosen so that
 * neither side waits long for the other at the end of a big walk with native listings
 * (native-fs.ts): a smaller share leaves the caller waiting, a larger one the helper idle.
 */
const CALLER_SHARE = 0.42;
/**
 * The helper's batches kept at most, in characters of JSON (about as many bytes): past this
 * the caller stops taking them and the helper waits until the caller's own part is in, so
 * memory stays bounded on any tree (a million files stay well below the bound).
 */
const KEEP_MAX_CHARS = 32 * 1024 * 1024;

/**
 * A paths-only fill on two threads: the calling thread walks until the helper is up, then gives
 * it the end of the walk (`split`) and walks the rest, keeping the helper's batches (compact
 * JSON) until its own rows are in, so every insert appends and the table reads in walk order.
 * When the helper fails, its part is walked here. Returns the end of the helper's part (its
 * skipped files and folder signatures), `null` when it had none.
 */
export async function streamSplit(
  walker: SelectionWalker,
  helper: WalkHelper,
  rows: RowWriter,
  progress: (helperFound: number) => void,
): Promise<{ skipped: SkippedPath[]; folders: [string, string][] } | null> {
  const breathe = breather();
  let resume: ResumePoint | null = null;
  const kept: WalkHelperBatch[] = [];
  let keptChars = 0;
  let helperFound = 0;
  const keep = () => {
    for (const batch of helper.take()) {
      kept.push(batch);
      keptChars += batch.json.length;
      helperFound += batch.count;
    }
    progress(helperFound);
  };
  for (let batch = walker.next(); batch !== null; batch = walker.next()) {
    rows.write(batch, null);
    if (resume === null && helper.ready) {
      resume = walker.split(1 - CALLER_SHARE);
      helper.give(resume);
      if (resume === null) return null;
    }
    if (resume !== null && keptChars < KEEP_MAX_CHARS) keep();
    await breathe();
  }
  if (resume === null) return null;
  const ownRows = rows.count;
  for (;;) {
    keep();
    for (const batch of kept) rows.writePathsJson(batch.json, batch.count);
    kept.length = 0;
    keptChars = 0;
    if (helper.end !== null || helper.failed) break;
    helper.wait(YIELD_EVERY_MS);
    await breathe();
  }
  keep();
  for (const batch of kept) rows.writePathsJson(batch.json, batch.count);
  if (helper.end !== null) return helper.end;
  // The helper failed: its part is walked here.
  rows.deleteAfter(ownRows);
  const rest = new SelectionWalker({ ...walker.options, resume });
  for (let batch = rest.next(); batch !== null; batch = rest.next()) {
    rows.write(batch, null);
    await breathe();
  }
  return { skipped: rest.skipped, folders: [] };
}

/**
 * Writes a path-table's rows in batched INSERTs inside one transaction. With dirq's native
 * extension a batch goes in as one `INSERT ... SELECT` from its `dirq_rows` table, which
 * makes the rows from the batch's NUL-joined paths and stat blob (faster than binding 64 rows
 * of four values at a time, and no JavaScript value per row). Without it, paths alone (a fill
 * for `count(*)` or `SELECT path`) go in as one JSON array per batch, which SQLite's
 * `json_each` unpacks (faster than binding them 16 rows at a time), and other rows are bound
 * 64 at a time.
 */
export class RowWriter {
  private readonly insertNative: Statement | null;
  private readonly insertPaths: Statement | null;
  private readonly insertOne: Statement;
  private readonly insertBatch: Statement;
  private readonly batch: unknown[] = [];
  private rowsInBatch = 0;
  private written = 0;
  private committed = 0;
  private commitAsYouGo = false;

  private readonly deleteAll: Statement;
  private readonly deleteAfterRowid: Statement;
  private readonly width: number;

  private readonly withNames: boolean;
  private readonly withStat: boolean;
  /** Rows with an empty path, for a fill that writes no column (see ColumnGroups.paths). */
  private readonly insertEmpty: Statement | null;

  /**
   * Writes the `groups` of rows of table `name` (stat columns come with the stats), or counts
   * them and writes nothing (`countOnly`).
   */
  constructor(
    private readonly db: SqliteDatabase,
    private readonly name: string,
    groups: ColumnGroups,
    private readonly countOnly = false,
  ) {
    const { names: withNames, stat: withStat } = groups;
    this.withNames = withNames;
    this.withStat = withStat;
    const table = quoteIdentifier(name);
    const columns = ["path", ...(withNames ? NAME_COLUMNS : []), ...(withStat ? STAT_COLUMNS : [])];
    this.width = columns.length;
    const into = `INSERT INTO ${table} (${columns.join(", ")}) VALUES`;
    const placeholders = `(${columns.map(() => "?").join(", ")})`;
    this.insertOne = db.prepare(`${into} ${placeholders}`);
    this.insertBatch = db.prepare(`${into} ${Array(INSERT_BATCH).fill(placeholders).join(", ")}`);
    this.deleteAll = db.prepare(`DELETE FROM ${table}`);
    this.deleteAfterRowid = db.prepare(`DELETE FROM ${table} WHERE rowid > ?`);
    this.insertNative = loadNativeRows(db)
      ? db.prepare(
          `INSERT INTO ${table} (${columns.join(", ")}) ` +
            `SELECT ${columns.join(", ")} FROM dirq_rows(?${withStat ? ", ?" : ""})`,
        )
      : null;
    this.insertPaths =
      withNames || withStat
        ? null
        : db.prepare(`INSERT INTO ${table} (path) SELECT value FROM json_each(?)`);
    this.insertEmpty =
      groups.paths || withNames || withStat
        ? null
        : db.prepare(`INSERT INTO ${table} (path) SELECT '' FROM json_each(?)`);
  }

  /**
   * Replaces every row with what `produce` writes, atomically unless `commitAsYouGo`. The
   * transaction spans awaits (stats arrive from a helper thread); nothing else writes to the
   * index meanwhile.
   */
  async replaceAll(
    produce: () => Promise<void>,
    options: { commitAsYouGo?: boolean; lookupIndex?: boolean } = {},
  ): Promise<number> {
    this.db.exec("BEGIN");
    this.commitAsYouGo = options.commitAsYouGo === true;
    try {
      this.deleteAll.run();
      // Made before the rows, not after: they go in walk order, nearly the index's own, so
      // each insert extends it at its end for a fraction of what building it after costs, and
      // the table is never filled without it (a change right after a fill waits for nothing).
      if (options.lookupIndex === true) this.db.exec(lookupIndexSql(this.name, "path"));
      await produce();
      this.flushPartialBatch();
      this.db.exec("COMMIT");
    } catch (error) {
      this.db.exec("ROLLBACK");
      throw error;
    }
    return this.written;
  }

  /** One commit of a million rows holds the thread long; a commit every so many rows, briefly. */
  private commitNow(): void {
    if (!this.commitAsYouGo || this.written - this.committed < COMMIT_EVERY_ROWS) return;
    this.flushPartialBatch();
    this.db.exec("COMMIT");
    this.db.exec("BEGIN");
    this.committed = this.written;
  }

  /** Rows written so far: the rows of a fill have row ids 1 to `count`, in walk order. */
  get count(): number {
    return this.written;
  }

  /** Paths-only fills: `count` paths as a JSON array. */
  writePathsJson(json: string, count: number): void {
    if (!this.countOnly) (this.insertPaths as Statement).run(json);
    this.written += count;
    this.commitNow();
  }

  /** Deletes the rows after the first `count` (a split walk's second part, to walk it again). */
  deleteAfter(count: number): void {
    this.written -= this.deleteAfterRowid.run(count).changes;
  }

  /** Writes a batch of rows in walk order (stats NaN: that file is dropped). */
  write(batch: PathBatch, stats: Float64Array | null): void {
    if (this.countOnly) {
      this.written += batch.count;
      return;
    }
    if (this.insertEmpty !== null) {
      // As many rows as paths: one JSON array of zeros, which json_each unpacks.
      if (batch.count > 0) this.insertEmpty.run(`[${"0,".repeat(batch.count - 1)}0]`);
      this.written += batch.count;
      this.commitNow();
      return;
    }
    if (this.insertNative !== null && (stats !== null || !this.withStat)) {
      if (batch.count > 0) this.writeNative(batch.joined, stats);
      return;
    }
    const paths = batch.paths;
    if (this.insertPaths !== null) {
      this.writePathsJson(JSON.stringify(paths), paths.length);
      return;
    }
    for (let i = 0; i < paths.length; i++) {
      const at = i * STAT_FIELDS;
      if (stats !== null && Number.isNaN(stats[at])) continue;
      const path = paths[i] as string;
      this.batch.push(path);
      if (this.withNames) pushNameColumns(this.batch, path);
      if (this.withStat && stats !== null) this.batch.push(stats[at], stats[at + 1], stats[at + 2]);
      this.written++;
      if (++this.rowsInBatch === INSERT_BATCH) {
        this.insertBatch.run(this.batch);
        this.batch.length = 0;
        this.rowsInBatch = 0;
      }
    }
    this.commitNow();
  }

  /** A batch through the extension's `dirq_rows` (see the class comment). */
  private writeNative(joined: string, stats: Float64Array | null): void {
    const statement = this.insertNative as Statement;
    const result =
      stats === null
        ? statement.run(joined)
        : statement.run(joined, Buffer.from(stats.buffer, stats.byteOffset, stats.byteLength));
    this.written += result.changes;
    this.commitNow();
  }

  private flushPartialBatch(): void {
    const width = this.width;
    for (let row = 0; row < this.rowsInBatch; row++) {
      this.insertOne.run(this.batch.slice(row * width, (row + 1) * width));
    }
    this.batch.length = 0;
    this.rowsInBatch = 0;
  }
}

/** Which column groups a fill writes. */
export interface ColumnGroups {
  /**
   * `path`. A statement that reads no column of the table (`count(*)`, `EXISTS`) needs its
   * rows only: without it the rows are written with an empty path (the walk then never makes
   * the paths), and a later statement that reads any column fills the table again. The names
   * and the stats imply it.
   */
  paths: boolean;
  /** `basename`, `dir`, `ext`: derived from the path, cheap but not free to insert. */
  names: boolean;
  /** `size`, `mtime`, `ctime`: one stat call per file. */
  stat: boolean;
}

/** One fill of a path-table, as plain data: it runs on this thread or on a fill thread. */
export interface FillJob {
  /** The table's SQLite name (it exists, created by the index's connection). */
  table: string;
  /**
   * Count the files and write no row (the caller puts a view of that many blank rows in the
   * table's place: see `PathTables`). Needs `groups` empty.
   */
  countOnly?: boolean;
  walk: WalkHelperOptions;
  groups: ColumnGroups;
  /** Commit every few thousand rows (a first fill: nothing reads the table until it ends). */
  commitAsYouGo: boolean;
  /** Sign each folder listed (a persisted index), with the walk's start time (ms); or `null`. */
  signFoldersSince: number | null;
  /**
   * Index `path` as the rows go in (a live index: see `lookupIndexName`). Needs `groups.paths`
   * and not `countOnly`.
   */
  lookupIndex?: boolean;
}

export interface FillOutcome {
  /** Rows written. */
  count: number;
  /** Files the walk could not read. */
  skipped: SkippedPath[];
  /** Signatures of the folders listed (key, signature), when the job asked for them. */
  folders: [string, string][];
}

/**
 * Runs a fill: walks the selection, stats what the groups need and replaces the table's rows,
 * on `db`. `progress` gets the count of files found so far. `helpers: false` does it all on
 * this thread (the server's fill thread: see fill-worker.ts).
 */
export async function fillRows(
  db: SqliteDatabase,
  job: FillJob,
  progress: (found: number) => void,
  { helpers = true }: { helpers?: boolean } = {},
): Promise<FillOutcome> {
  const { groups, walk: options, signFoldersSince } = job;
  const folders: [string, string][] = [];
  // Listing folders and stating files, the system calls, are most of a fill. With the native
  // extension, its own thread reads both ahead of the walk (cheap to start, no JavaScript
  // heap). Without it, helper threads do: of a fill that reads stats, one takes a share of the
  // stats; of a fill that writes paths only, one walks a part of the tree.
  const ahead = statReadAhead();
  const pathsOnly = !groups.names && !groups.stat;
  const statHelper = groups.stat && helpers && ahead === null ? new StatHelper(options.root) : null;
  const walkHelper =
    pathsOnly && helpers && ahead === null ? new WalkHelper(options, signFoldersSince) : null;
  const statter: Statter | null = !groups.stat
    ? null
    : ahead !== null
      ? new AheadStatter(options.root, ahead)
      : new BatchStatter(options.root, statHelper);
  let found = 0;
  const walker = new SelectionWalker({
    ...options,
    readAhead: ahead !== null,
    onProgress: (count) => {
      if (count > STAT_HELPER_AFTER_FILES) statHelper?.start();
      if (count > WALK_HELPER_AFTER_FILES) walkHelper?.start();
      found = count;
      progress(found);
    },
    onDirectory:
      signFoldersSince === null
        ? undefined
        : (dir, absolute) =>
            folders.push([folderKey(dir), directorySignature(absolute, signFoldersSince)]),
  });
  const skipped = walker.skipped;
  try {
    const rows = new RowWriter(db, job.table, groups, job.countOnly === true);
    const count = await rows.replaceAll(
      async () => {
        if (walkHelper === null) return streamBatches(walker, statter, rows);
        const end = await streamSplit(walker, walkHelper, rows, (more) => progress(found + more));
        if (end === null) return;
        skipped.push(...end.skipped);
        folders.push(...end.folders);
      },
      { commitAsYouGo: job.commitAsYouGo, lookupIndex: job.lookupIndex },
    );
    return { count, skipped, folders };
  } finally {
    walker.close();
    await statHelper?.close();
    await walkHelper?.close();
  }
}
