import { lstatSync, statSync } from "node:fs";
import { isDirqError } from "../errors.js";
import type { HookRow } from "../parse/hook-rows.js";
import { parseFiles } from "../parse/parse-files.js";
import { InclusionCheck } from "../scan/inclusion.js";
import { walkSelection } from "../scan/walk.js";
import { quoteIdentifier, type SqliteDatabase } from "./database.js";
import { FILE_PATH_COLUMN, type LiveParsedTable, replaceFileRows } from "./parsed-tables.js";
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

/**
 * Brings built tables up to date with changed files: the watcher's half of the index. For
 * each changed path it re-reads the files that path stands for, diffs their rows and writes
 * the difference in one transaction.
 */
export class Refresher {
  /** Size and times of each file as `refresh` last read it, to skip re-reading it unchanged. */
  private readonly fileSignatures = new Map<string, string>();

  constructor(
    private readonly db: SqliteDatabase,
    private readonly root: string,
    private readonly tables: LiveTables,
    private readonly options: RefreshOptions,
  ) {}

  /** Every file some table holds rows for, under `dir` (relative; `""` for all). */
  private indexedFilesUnder(dir: string): Set<string> {
    const prefix = dir === "" ? "" : `${dir}/`;
    const tables: [string, string][] = [
      ...this.tables.pathTables.filledTables().map((name): [string, string] => [name, "path"]),
      ...[...this.tables.parsedTables.values()].map((t): [string, string] => [
        t.spec.name,
        FILE_PATH_COLUMN,
      ]),
    ];
    const files = new Set<string>();
    for (const [table, column] of tables) {
      const rows = this.db
        .prepare(
          `SELECT DISTINCT ${column} FROM ${quoteIdentifier(table)} WHERE substr(${column}, 1, ?) = ?`,
        )
        .pluck()
        .all(prefix.length, prefix) as string[];
      for (const file of rows) files.add(file);
    }
    return files;
  }

  /** The files a changed path stands for: itself, what is under it now, what was under it. */
  private filesFor(path: string): Set<string> {
    const files = new Set(this.indexedFilesUnder(path));
    if (path !== "") files.add(path);
    const stats = lstatSync(`${this.root}/${path}`, { throwIfNoEntry: false });
    if (stats?.isDirectory()) {
      const walked = walkSelection({
        root: this.root,
        selection: { kind: "tree", base: path },
        useGitignore: false,
      });
      for (const file of walked.paths) files.add(file);
    }
    return files;
  }

  /** Runs the table's hook over `files`; failures become error changes. */
  private async parseForRefresh(
    table: LiveParsedTable,
    files: string[],
  ): Promise<{ parsed: Map<string, HookRow[]>; errors: RowChange[] }> {
    const parsed = new Map<string, HookRow[]>();
    const errors: RowChange[] = [];
    const errorFor = (file_path: string, error: string): RowChange => ({
      action: "error",
      table: table.spec.name,
      file_path,
      error,
    });
    try {
      const result = await parseFiles(table.spec.extractor, files, {
        root: this.root,
        concurrency: this.options.concurrency,
      });
      for (const file of result.files) parsed.set(file.path, file.rows);
      for (const skipped of result.skipped) errors.push(errorFor(skipped.path, skipped.reason));
    } catch (error) {
      if (!isDirqError(error)) throw error;
      for (const file of files) errors.push(errorFor(file, error.message));
    }
    return { parsed, errors };
  }

  /**
   * Brings every built table up to date with the files at `paths` (relative; files or
   * directories, existing or not) and returns the row changes, committed before it returns.
   * A file whose hook fails keeps its old rows and yields an `error` change. With
   * `onlyIfChanged`, files whose size and times match the last refresh are left alone.
   */
  async refresh(
    paths: Iterable<string>,
    options: { onlyIfChanged?: boolean } = {},
  ): Promise<RowChange[]> {
    const candidates = new Set<string>();
    for (const path of paths) for (const file of this.filesFor(path)) candidates.add(file);
    const inclusion = new InclusionCheck(this.root, this.options);
    const present = new Map<string, boolean>();
    for (const file of candidates) {
      const stats = statSync(`${this.root}/${file}`, { throwIfNoEntry: false });
      const signature = stats ? `${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}` : "missing";
      if (options.onlyIfChanged && this.fileSignatures.get(file) === signature) {
        candidates.delete(file);
        continue;
      }
      this.fileSignatures.set(file, signature);
      present.set(file, (stats?.isFile() ?? false) && inclusion.includes(file));
    }
    const changes: RowChange[] = [];
    const parsedByTable = new Map<LiveParsedTable, Map<string, HookRow[]>>();
    for (const table of this.tables.parsedTables.values()) {
      const files = [...candidates].filter((file) => present.get(file) && table.matches(file));
      const { parsed, errors } = await this.parseForRefresh(table, files);
      parsedByTable.set(table, parsed);
      changes.push(...errors);
    }
    this.db.transaction(() => {
      for (const file of candidates) {
        changes.push(...this.tables.pathTables.refreshFile(file, present.get(file) ?? false));
        for (const [table, parsed] of parsedByTable) {
          const wanted = present.get(file) && table.matches(file);
          const rows = wanted ? parsed.get(file) : [];
          if (rows !== undefined) changes.push(...replaceFileRows(this.db, table, file, rows));
        }
      }
    })();
    return changes;
  }
}
