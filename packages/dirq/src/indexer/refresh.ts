import { lstatSync, readdirSync, realpathSync, statSync } from "node:fs";
import { isDirqError } from "../errors.js";
import type { HookRow } from "../parse/hook-rows.js";
import { parseFiles } from "../parse/parse-files.js";
import { statPaths } from "../scan/file-stats.js";
import { InclusionCheck } from "../scan/inclusion.js";
import { type SkippedPath, walkSelection } from "../scan/walk.js";
import { type Catalog, type FileSignature, fileSignature, unchangedSince } from "./catalog.js";
import { quoteIdentifier, type SqliteDatabase } from "./database.js";
import {
  FILE_PATH_COLUMN,
  type LiveParsedTable,
  replaceFileRows,
  storedColumns,
} from "./parsed-tables.js";
import type { PathTables } from "./path-tables.js";
import type { RowChange } from "./row-changes.js";

/** The tables a refresh keeps current. */
export interface LiveTables {
  pathTables: PathTables;
  parsedTables: ReadonlyMap<string, LiveParsedTable>;
}

export interface RefreshOptions {
  useGitignore: boolean;
  extraIgnores?: readonly string[];
  concurrency?: number;
}

/** Runs a task while no other write to the index runs (the index's one writer). */
export type WriterLock = <T>(task: () => T | Promise<T>) => Promise<T>;

type FileStat = [size: number, mtime: number, ctime: number];

/** What a refresh learned about one file before it writes anything. */
interface Gathered {
  /** Size and times when the file is a row, `null` when it is not (or no longer) one. */
  stat: FileStat | null;
  /** Hook output per parsed table that selects the file; a string is why the hook failed. */
  parsed: Map<LiveParsedTable, HookRow[] | string>;
  /** The file's state before its hooks ran, for the catalog of a persisted index. */
  signature: FileSignature | null;
}

/** Which tables one refresh keeps current: all of them, or only these parsed tables. */
type RefreshScope = ReadonlySet<LiveParsedTable> | null;

/** Errors that mean "this path is not a file row now", as a fresh walk would see it. */
const NOT_A_ROW = new Set(["ENOENT", "ENOTDIR", "ELOOP", "EACCES", "EPERM", "ENAMETOOLONG"]);

function isNotARow(error: unknown): boolean {
  return NOT_A_ROW.has((error as NodeJS.ErrnoException | null)?.code ?? "");
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The absolute path as raw bytes of a row whose `path` shows U+FFFD for bytes that are not
 * valid UTF-8 (as the walk lists such a name); `null` when the name is plain or no entry of
 * its folder decodes to it.
 */
function rawPathOf(root: string, path: string): Buffer | null {
  if (!path.includes("\uFFFD")) return null;
  let current = Buffer.from(root);
  for (const segment of path.split("/")) {
    let name: Buffer | undefined = Buffer.from(segment);
    if (segment.includes("\uFFFD")) {
      try {
        const entries = readdirSync(current, { encoding: "buffer" });
        name = entries.find((entry) => entry.toString("utf8") === segment);
      } catch {
        return null;
      }
      if (name === undefined) return null;
    }
    current = Buffer.concat([current, Buffer.from("/"), name]);
  }
  return current;
}

/**
 * Whether the file at `path` is a row, and its size and times (whole seconds, as the walk's
 * stat records them). Symlinks count when they resolve to a regular file inside the root; a
 * link leading outside is never read. Throws only for errors a walk would not explain.
 */
function fileRowStat(root: string, path: string): FileStat | null {
  const raw = rawPathOf(root, path);
  const absolute = raw ?? `${root}/${path}`;
  try {
    const link = lstatSync(absolute, { throwIfNoEntry: false });
    if (link === undefined) return null;
    if (link.isSymbolicLink()) {
      const target = realpathSync(absolute, { encoding: "buffer" });
      if (!target.toString("utf8").startsWith(`${root}/`)) return null;
      if (!statSync(target, { throwIfNoEntry: false })?.isFile()) return null;
    } else if (!link.isFile()) {
      return null;
    }
    // The walk's own stat, so a refreshed row and a freshly built one agree to the second.
    const stats = statPaths(root, [path], raw ? new Map([[path, raw]]) : undefined);
    if (Number.isNaN(stats[0])) return null;
    return [stats[0] as number, stats[1] as number, stats[2] as number];
  } catch (error) {
    if (isNotARow(error)) return null;
    throw error;
  }
}

/**
 * Brings built tables up to date with changed files: the watcher's half of the index. A
 * refresh has two phases. *Gather* (async, nothing locked, nothing written): find the files
 * each changed path stands for, stat them, run the hooks. *Apply* (synchronous, one
 * transaction, under the writer lock): each file and table gets its own savepoint, so one
 * file's failure (a constraint of the `ddl`, a bad value) is an `error` change for that file
 * while every other file commits. In-memory state (column lists) is re-read from SQLite after
 * the transaction, so it can never drift from what committed.
 */
export class Refresher {
  /** Size and times of each file as `refresh` last read it, to skip re-reading it unchanged. */
  private readonly fileSignatures = new Map<string, string>();

  constructor(
    private readonly db: SqliteDatabase,
    private readonly root: string,
    private readonly tables: LiveTables,
    private readonly options: RefreshOptions,
    private readonly withWriter: WriterLock,
    private readonly catalog: Catalog | null = null,
  ) {}

  /** Live tables with the column that holds each row's file. */
  private liveTables(): [string, string][] {
    return [
      ...this.tables.pathTables.filledTables().map((name): [string, string] => [name, "path"]),
      ...[...this.tables.parsedTables.values()].map((t): [string, string] => [
        t.spec.name,
        FILE_PATH_COLUMN,
      ]),
    ];
  }

  /**
   * Indexes the lookup column of every live table, once: a refresh then costs what changed,
   * not the size of the table. Made on first refresh, so one-shot queries never pay for it
   * (and a table dropped and built again gets its index again).
   */
  private ensureLookupIndexes(): void {
    for (const [table, column] of this.liveTables()) {
      const index = quoteIdentifier(`_dirq_lookup_${table}`);
      this.db.exec(`CREATE INDEX IF NOT EXISTS ${index} ON ${quoteIdentifier(table)} (${column})`);
    }
  }

  /** Every file some table holds rows for, under `dir` (relative; `""` for all). */
  private indexedFilesUnder(dir: string): Set<string> {
    const files = new Set<string>();
    for (const [table, column] of this.liveTables()) {
      // A range on the indexed column: every path that starts with `dir/` sorts between
      // `dir/` and `dir0` ('0' follows '/').
      const sql =
        dir === ""
          ? `SELECT DISTINCT ${column} FROM ${quoteIdentifier(table)}`
          : `SELECT DISTINCT ${column} FROM ${quoteIdentifier(table)} WHERE ${column} > ? AND ${column} < ?`;
      const statement = this.db.prepare(sql).pluck();
      const rows = (dir === "" ? statement.all() : statement.all(`${dir}/`, `${dir}0`)) as string[];
      for (const file of rows) files.add(file);
    }
    return files;
  }

  /**
   * The files a changed path stands for: itself, what is under it now, what was under it.
   * Folders the walk could not read become error changes; their files are not rows.
   */
  private filesFor(path: string, errors: RowChange[]): Set<string> {
    const files = new Set(this.indexedFilesUnder(path));
    if (path !== "") files.add(path);
    try {
      const stats = lstatSync(`${this.root}/${path}`, { throwIfNoEntry: false });
      if (stats?.isDirectory()) {
        const walked = walkSelection({
          root: this.root,
          selection: { kind: "tree", base: path },
          useGitignore: false,
        });
        for (const file of walked.paths) files.add(file);
        for (const skipped of walked.skipped) {
          errors.push({
            action: "error",
            table: null,
            file_path: skipped.path,
            error: skipped.reason,
          });
        }
      }
    } catch (error) {
      if (!isNotARow(error)) {
        errors.push({ action: "error", table: null, file_path: path, error: messageOf(error) });
      }
    }
    return files;
  }

  /** Runs the table's hook over `files`; a file's failure is its reason string. */
  private async parseForRefresh(
    table: LiveParsedTable,
    files: string[],
    gathered: Map<string, Gathered>,
  ): Promise<void> {
    let result: Awaited<ReturnType<typeof parseFiles>>;
    try {
      result = await parseFiles(table.spec.extractor, files, {
        root: this.root,
        concurrency: this.options.concurrency,
      });
    } catch (error) {
      if (!isDirqError(error)) throw error;
      for (const file of files) gathered.get(file)?.parsed.set(table, error.message);
      return;
    }
    for (const file of result.files) gathered.get(file.path)?.parsed.set(table, file.rows);
    for (const file of result.skipped) gathered.get(file.path)?.parsed.set(table, file.reason);
  }

  /**
   * Brings every built table up to date with the files at `paths` (relative; files or
   * directories, existing or not) and returns the row changes, committed before it returns.
   * A file whose hook fails has no rows (as a fresh scan would show) and yields an `error`
   * change. With `onlyIfChanged`, files whose size and times match the last refresh are left
   * alone. Hooks run before the writer lock is taken; only the commit holds it.
   */
  async refresh(
    paths: Iterable<string>,
    options: { onlyIfChanged?: boolean; scope?: RefreshScope; writerHeld?: boolean } = {},
  ): Promise<RowChange[]> {
    const changes: RowChange[] = [];
    const scope = options.scope ?? null;
    // A caller that already holds the writer (building a table) must not wait for itself.
    const withWriter: WriterLock = options.writerHeld ? async (task) => task() : this.withWriter;
    // Before the first look-up: without its index, finding a folder's rows scans the table.
    await withWriter(() => this.ensureLookupIndexes());
    const candidates = new Set<string>();
    for (const path of paths) for (const file of this.filesFor(path, changes)) candidates.add(file);
    const gathered = await this.gather(candidates, options.onlyIfChanged ?? false, scope, changes);
    const parsedTables = new Set(scope ?? this.tables.parsedTables.values());
    const late = await withWriter(() => this.apply(gathered, parsedTables, scope, changes));
    // A table built while the hooks ran has no output for these files yet: read them again.
    if (late.size > 0) changes.push(...(await this.refresh(late, options)));
    return changes;
  }

  /**
   * Brings a parsed table restored from a persisted index up to date with the tree: files
   * whose size, mtime or (for racy ones) content differ from the catalog's record are parsed
   * again, files that are gone lose their rows, new files are parsed. Returns the files the
   * walk skipped and the row changes (errors included). Call with the writer held.
   */
  async reconcile(
    table: LiveParsedTable,
    catalog: Catalog,
  ): Promise<{ skipped: SkippedPath[]; changes: RowChange[] }> {
    const walked = table.spec.selection
      ? walkSelection({
          root: this.root,
          selection: table.spec.selection,
          useGitignore: this.options.useGitignore,
          extraIgnores: this.options.extraIgnores,
        })
      : { paths: [], skipped: [], rawPaths: new Map<string, Buffer>() };
    const recorded = catalog.files(table.spec.name);
    const stale: string[] = [];
    for (const path of walked.paths) {
      if (walked.rawPaths.has(path)) continue;
      const signature = recorded.get(path);
      if (signature === undefined || !unchangedSince(signature, `${this.root}/${path}`)) {
        stale.push(path);
      }
      recorded.delete(path);
    }
    // What is left was recorded but is not listed now: deleted, renamed or ignored.
    stale.push(...recorded.keys());
    const unnameable = [...walked.rawPaths.keys()].map((path) => ({
      path,
      reason: "its name is not valid UTF-8, so it cannot be handed to the on-file command",
    }));
    const changes =
      stale.length === 0
        ? []
        : await this.refresh(stale, { scope: new Set([table]), writerHeld: true });
    return { skipped: [...walked.skipped, ...unnameable], changes };
  }

  private async gather(
    candidates: Set<string>,
    onlyIfChanged: boolean,
    scope: RefreshScope,
    changes: RowChange[],
  ): Promise<Map<string, Gathered>> {
    const inclusion = new InclusionCheck(this.root, this.options);
    const gathered = new Map<string, Gathered>();
    for (const file of candidates) {
      let stat: FileStat | null;
      try {
        stat = fileRowStat(this.root, file);
        if (stat !== null && !inclusion.includes(file)) stat = null;
      } catch (error) {
        // Unexplained: the file is not a row until it can be read again.
        changes.push({ action: "error", table: null, file_path: file, error: messageOf(error) });
        stat = null;
      }
      const signature = stat ? stat.join(":") : "missing";
      if (onlyIfChanged && this.fileSignatures.get(file) === signature) continue;
      // A file that is gone is forgotten: a long-lived server sees endless new names.
      if (stat === null) this.fileSignatures.delete(file);
      else this.fileSignatures.set(file, signature);
      // Taken before the hooks read the file: an edit while they run is seen next time.
      const recorded =
        this.catalog !== null && stat !== null ? fileSignature(`${this.root}/${file}`) : null;
      gathered.set(file, { stat, parsed: new Map(), signature: recorded });
    }
    for (const table of scope ?? this.tables.parsedTables.values()) {
      const files = [...gathered].filter(([file, g]) => g.stat && table.matches(file));
      if (files.length === 0) continue;
      await this.parseForRefresh(
        table,
        files.map(([file]) => file),
        gathered,
      );
    }
    return gathered;
  }

  /**
   * Writes what `gather` found, in one transaction with a savepoint per file and table.
   * Returns the files that a table built meanwhile still needs parsed.
   */
  private apply(
    gathered: Map<string, Gathered>,
    parsedBefore: ReadonlySet<LiveParsedTable>,
    scope: RefreshScope,
    changes: RowChange[],
  ): Set<string> {
    const late = new Set<string>();
    const isolated = (file: string, table: string | null, write: () => RowChange[]): boolean => {
      try {
        changes.push(...this.db.transaction(write)());
        return true;
      } catch (error) {
        changes.push({ action: "error", table, file_path: file, error: messageOf(error) });
        return false;
      }
    };
    try {
      this.db.transaction(() => {
        for (const [file, { stat, parsed, signature }] of gathered) {
          if (scope === null) {
            isolated(file, null, () => this.tables.pathTables.refreshFile(file, stat));
          }
          for (const table of scope ?? this.tables.parsedTables.values()) {
            const label = table.spec.label ?? table.spec.name;
            const wanted = stat !== null && table.matches(file);
            if (wanted && !parsedBefore.has(table)) {
              late.add(file);
              continue;
            }
            const output = wanted ? (parsed.get(table) ?? []) : [];
            if (typeof output === "string") {
              changes.push({ action: "error", table: label, file_path: file, error: output });
            }
            const rows = typeof output === "string" ? [] : output;
            const written = isolated(file, label, () =>
              replaceFileRows(this.db, table, file, rows),
            );
            if (!written) {
              // Its rows break a rule of the table: the file has no rows, like a failed hook.
              isolated(file, label, () => replaceFileRows(this.db, table, file, []));
            }
            // A file whose rows stand is recorded; any other is parsed again next time.
            if (wanted && written && typeof output !== "string" && signature !== null) {
              this.catalog?.recordFile(table.spec.name, file, signature);
            } else {
              this.catalog?.forgetFile(table.spec.name, file);
            }
          }
        }
      })();
    } finally {
      for (const table of this.tables.parsedTables.values()) {
        table.columns = storedColumns(this.db, table.spec.name);
      }
    }
    return late;
  }
}
