import type { DirqConfig } from "../config/types.js";
import type { ConnectionProfile } from "../connection/profile.js";
import type { Extractor } from "../parse/extractor.js";
import { isReaderExtractor } from "../parse/format-extractor.js";
import { selectionMatcher } from "../scan/inclusion.js";
import { parsePathTableName } from "../scan/path-selection.js";
import type { SkippedPath } from "../scan/walk.js";
import type { Catalog } from "./catalog.js";
import type { CatalogTable } from "./catalog-store.js";
import { quoteIdentifier, type SqliteDatabase } from "./database.js";
import {
  buildParsedTable,
  type LiveParsedTable,
  type ParsedTableOptions,
  type ParsedTableSpec,
  storedColumns,
  walkTableFiles,
} from "./parsed-tables.js";
import { fileFormat } from "../parse/formats/read-file-rows.js";
import { INTERNAL_PREFIX } from "../shared/reserved-names.js";
import { foldName } from "../shared/sql-names.js";
import type { OffThreadFiller } from "./reader-fill.js";
import type { Refresher } from "./refresh.js";
import type { RowChange } from "./row-changes.js";
import { readsOffThread, stagedTableOf } from "./staged-refresh.js";
import type { StagingWorker } from "./staging-worker.js";
import {
  configTableSpec,
  definitionChange,
  onFileSpec,
  parsedSpecText,
  sweepCatalog,
} from "./table-specs.js";

/** What the registry needs of its index. */
export interface ParsedTableContext {
  db: SqliteDatabase;
  root: string;
  config: DirqConfig;
  /** The extractor of every path-table (`--on-file`, `--parse`), or `null`: plain path-tables. */
  onFile: Extractor | null;
  options: ParsedTableOptions & { useGitignore: boolean };
  /** Ignore patterns the user gave (`--ignore`, `[dirq] ignore`): part of a definition. */
  userIgnores: readonly string[];
  profile: ConnectionProfile;
  /** The index's registry of tables, where parsed tables are kept. */
  catalog: Catalog;
  /** The index's refresher, which brings a persisted table up to date. */
  refresher: () => Refresher;
  tableExists: (name: string) => boolean;
  /** The thread a build's large files of built-in formats are read on, or `null`: this one. */
  staging?: () => StagingWorker | null;
}

/** Files a refresh could not bring in (a hook failed, a rule broke), as skipped paths. */
function skippedFromChanges(changes: readonly RowChange[]): SkippedPath[] {
  return changes
    .filter((change) => change.action === "error")
    .map((change) => ({ path: change.file_path, reason: (change as { error: string }).error }));
}

/**
 * The parsed tables of one index (config tables, and path-tables read by `--on-file` or
 * `--parse`): which exist, what each is defined as, and building each once, or bringing a
 * persisted one up to date instead of building it again.
 */
export class ParsedTableRegistry {
  private configBuilt = false;

  constructor(private readonly context: ParsedTableContext) {}

  /** Config tables are built before the first statement runs (views in a `ddl` need them). */
  get configTablesBuilt(): boolean {
    return this.configBuilt;
  }

  /**
   * Keeps, of a persisted index's tables, those this index would build the same way (path
   * tables as `restorePath` decides); says on `notices` why a table is built again.
   */
  restorePersisted(restorePath: (table: CatalogTable) => boolean, notices: string[]): void {
    const { db, catalog, config } = this.context;
    const store = catalog.store;
    if (store === null) return;
    sweepCatalog(db, store, (table) => {
      if (table.kind !== "parsed") return table.kind === "path" && restorePath(table);
      const expected = this.expectedSpec(table.name);
      if (table.spec === expected) return true;
      // Built again in this run (a config table, or an --on-file one of this command):
      // say why its files are all parsed again.
      if (expected !== null) {
        notices.push(`rebuilding table ${table.name}: ${definitionChange(table.spec, expected)}`);
      }
      return false;
    });
    // A first build stopped part way left its parsed files staged: kept for the same table.
    store.sweepStaged((name, spec) => this.expectedSpec(name) === spec);
    // `--on-file` tables: the first statement that reads one brings it up to date, as a
    // config table is before the first statement.
    for (const table of store.tables()) {
      const name = table.name.toLowerCase();
      const configured = config.tables.some((t) => t.name.toLowerCase() === name);
      if (table.kind === "parsed" && !configured) catalog.keepUnreconciled(table.name);
    }
  }

  /**
   * Builds every config table, in config order, once per index: a `ddl` view or trigger may
   * read another table, and `sqlite_master` should list them all from the first statement.
   */
  async buildConfigTables(): Promise<SkippedPath[]> {
    const skipped: SkippedPath[] = [];
    if (this.configBuilt) return skipped;
    this.configBuilt = true;
    const { config, root } = this.context;
    for (const table of config.tables) {
      if (!this.context.catalog.hasParsedTable(table.name)) {
        skipped.push(...(await this.build(configTableSpec(table, root))));
      }
    }
    return skipped;
  }

  /**
   * Builds the path-table `name` (the path `path`) with the index's extractor. Returns the
   * files skipped; `null` when the name is not a path-table.
   */
  async buildPathTable(
    name: string,
    path: string,
    columns: ReadonlySet<string> | null = null,
  ): Promise<SkippedPath[] | null> {
    const { onFile, root } = this.context;
    const selection = onFile === null ? null : parsePathTableName(path, root);
    if (onFile === null || selection === null) return null;
    return this.build({ ...onFileSpec(path, selection, onFile), name }, columns);
  }

  /**
   * The files of the path-table `path` (relative to the root) when no config table exists and
   * dirq reads every one of them itself as JSON Lines (`--parse`, no `each`, no schema, no glob
   * captures), all listed and named in UTF-8; `null` otherwise (also for no file at all).
   */
  jsonlFiles(path: string): string[] | null {
    const { onFile, root, options, config } = this.context;
    if (config.tables.length > 0 || onFile === null || !isReaderExtractor(onFile)) return null;
    if (onFile.each !== null) return null;
    try {
      const selection = parsePathTableName(path, root);
      if (selection === null) return null;
      const spec = onFileSpec(path, selection, onFile);
      if (!isReaderExtractor(spec.extractor) || spec.schema !== null) return null;
      // An empty table is told about by the build that follows, once.
      const walked = walkTableFiles(spec, { ...options, onEmpty: undefined });
      if (walked.skipped.length > 0 || walked.rawPaths.size > 0) return null;
      const jsonl = walked.paths.every((file) => fileFormat(onFile.format, null, file) === "jsonl");
      return jsonl && walked.paths.length > 0 ? walked.paths : null;
    } catch {
      return null;
    }
  }

  /**
   * Gives `column` to the parsed table `name` when no file has shaped it yet: its columns are
   * inferred (no `schema`) and it holds no row (no file matched, or none gave a row). A
   * statement that names a column of such a table then answers no rows instead of failing with
   * "no such column"; a file that comes later adds its own columns as usual. Whether it added
   * the column (`false`: no such table, not empty, or the column is there already).
   */
  acceptColumn(name: string, column: string): boolean {
    const { db, catalog } = this.context;
    const live = catalog.parsedTable(name);
    if (live === undefined || live.spec.schema !== null || INTERNAL_PREFIX.test(column)) {
      return false;
    }
    const table = quoteIdentifier(live.spec.name);
    if (db.prepare(`SELECT 1 FROM ${table} LIMIT 1`).get() !== undefined) return false;
    const columns = storedColumns(db, live.spec.name);
    if (columns.some((known) => foldName(known) === foldName(column))) return false;
    db.exec(`ALTER TABLE ${table} ADD COLUMN ${quoteIdentifier(column)}`);
    live.columns = [...columns, column];
    return true;
  }

  /**
   * Whether the parsed table `name` was built with only the keys statements named, and a
   * statement naming `names` (`null`: every column, see `StatementAnalysis.namedColumns`) may
   * read a key it left out: one its files hold, or may hold when that is not known.
   */
  needsWidening(name: string, names: ReadonlySet<string> | null): boolean {
    const partial = this.context.catalog.parsedTable(name)?.partial;
    if (partial === undefined) return false;
    if (names === null) return true;
    const columns = new Set(this.context.catalog.parsedTable(name)?.columns.map(foldName));
    for (const named of names) {
      if (partial.named.has(named)) continue;
      // A refresh wrote some rows' keys as columns: the other rows lack them.
      if (partial.keys === null || partial.keys.has(named) || columns.has(named)) return true;
    }
    return false;
  }

  /**
   * Builds the path-table `name` (the path `path`) again when a statement naming `names` needs
   * keys it left out (`needsWidening`), with those names added (every key for `null`). Returns
   * the files skipped, or `null` when it needed nothing.
   */
  async widen(
    name: string,
    path: string,
    names: ReadonlySet<string> | null,
  ): Promise<SkippedPath[] | null> {
    const live = this.context.catalog.parsedTable(name);
    if (live?.partial === undefined || !this.needsWidening(name, names)) return null;
    const union = names === null ? null : new Set([...live.partial.named, ...names]);
    // Forgotten first: a build that fails part way leaves no table for the refresher to keep.
    this.context.catalog.removeParsedTable(name);
    this.context.db.exec(`DROP TABLE ${quoteIdentifier(live.spec.name)}`);
    return this.buildPathTable(live.spec.name, path, union);
  }

  /** Whether `table` is kept from a persisted index and not yet compared with the tree. */
  needsReconcile(table: string): boolean {
    return this.context.catalog.isUnreconciled(table);
  }

  /**
   * Brings a path-table kept from a persisted index up to date with the tree (only the files
   * that changed are parsed again). Returns the files skipped.
   */
  async reconcile(name: string, path: string): Promise<SkippedPath[]> {
    // Compared once: from here on it is built like any other (a failed build is not kept).
    this.context.catalog.forgetUnreconciled(name);
    return (await this.buildPathTable(name, path)) ?? [];
  }

  /** A parsed table's definition in this index (see `parsedSpecText`). */
  private specText(spec: ParsedTableSpec): string {
    const { root, options, userIgnores, profile, catalog } = this.context;
    return parsedSpecText(spec, {
      root,
      useGitignore: options.useGitignore,
      ignore: userIgnores,
      extensions: profile.extensions,
      functions: profile.functions,
      contentHash: (absolute) => catalog.store?.programHash(absolute) ?? null,
    });
  }

  /** The spec a persisted parsed table must have to be reused in this index, if any. */
  private expectedSpec(name: string): string | null {
    const { config, root, onFile } = this.context;
    const table = config.tables.find((t) => t.name.toLowerCase() === name.toLowerCase());
    try {
      if (table !== undefined) return this.specText(configTableSpec(table, root));
      if (onFile === null) return null;
      const selection = parsePathTableName(name, root);
      return selection === null ? null : this.specText(onFileSpec(name, selection, onFile));
    } catch {
      return null;
    }
  }

  /** Where a build of `spec` reads its large files, when not on this thread. */
  private offThread(spec: ParsedTableSpec): OffThreadFiller | null {
    const worker = this.context.staging?.() ?? null;
    if (worker === null || !isReaderExtractor(spec.extractor) || spec.ddl !== null) return null;
    const { root } = this.context;
    const table = stagedTableOf(spec);
    return {
      takes: (path) => readsOffThread(spec, `${root}/${path}`),
      fill: (path) => worker.fill(table, path, root),
    };
  }

  /**
   * Builds a parsed table; returns the files skipped. `columns`: load only the keys of these
   * names (folded), `null` all (see `buildParsedTable`).
   */
  private async build(
    spec: ParsedTableSpec,
    columns: ReadonlySet<string> | null = null,
  ): Promise<SkippedPath[]> {
    const { db, catalog, options } = this.context;
    const store = catalog.store;
    const matches = spec.selection ? selectionMatcher(spec.selection) : () => false;
    const definition = store === null ? null : this.specText(spec);
    const stored = store?.table(spec.name);
    if (store !== null && stored?.spec === definition && this.context.tableExists(spec.name)) {
      // Persisted with the same definition: parse only what changed since.
      const live: LiveParsedTable = { spec, columns: storedColumns(db, spec.name), matches };
      catalog.addParsedTable(live);
      // Its changed large files are read where a build reads them (off this thread, if so).
      const staging = this.context.staging?.() ?? null;
      const { skipped, changes } = await this.context.refresher().reconcile(live, store, staging);
      return [...skipped, ...skippedFromChanges(changes)];
    }
    if (store !== null && stored !== undefined) store.dropTable(stored);
    const persisted = store !== null && definition !== null ? { store, spec: definition } : null;
    const built = await buildParsedTable(
      db,
      spec,
      options,
      persisted,
      columns,
      this.offThread(spec),
    );
    catalog.addParsedTable({ spec, columns: built.columns, matches, partial: built.partial });
    return built.skipped;
  }
}
