import type { PathSelection } from "../scan/path-selection.js";
import type { CatalogStore, CatalogTable } from "./catalog-store.js";
import type { LiveParsedTable } from "./parsed-tables.js";
import type { PathTable } from "./path-tables.js";

/** A table the catalog knows, by kind. */
type CatalogEntry =
  | { kind: "path"; table: PathTable }
  /** Another name of a path-table's selection: a view over it. */
  | { kind: "alias"; name: string; of: PathTable }
  /**
   * A parsed table; `live` is `null` while it is one kept from a persisted index whose files
   * are not compared with the tree yet.
   */
  | { kind: "parsed"; name: string; live: LiveParsedTable | null };

/** One key per selection: names that select the same files share one table. */
function selectionKey(selection: PathSelection): string {
  return JSON.stringify(selection);
}

/**
 * The one registry of an index's tables, in memory or persisted: every path-table, alias and
 * parsed table by name (case-insensitive, as SQLite's names are), with what the index keeps
 * live about it. A persisted index's catalog writes through to its `store`, the record in
 * the database that lets a restart reuse what has not changed; an in-memory index has none.
 * Which SQLite objects exist is SQLite's own business: the catalog says which of them are
 * dirq's tables and what they stand for.
 */
export class Catalog {
  private readonly entries = new Map<string, CatalogEntry>();
  /** Path-tables by the files they select: one table per selection. */
  private readonly bySelection = new Map<string, PathTable>();

  /** `store`: the persisted record of a `--persist` index, `null` for one in memory. */
  constructor(readonly store: CatalogStore | null) {}

  /** Adds a path-table; `record` is saved in the store (`null`: it is there already). */
  addPathTable(table: PathTable, record: CatalogTable | null): void {
    this.entries.set(table.name.toLowerCase(), { kind: "path", table });
    this.bySelection.set(selectionKey(table.selection), table);
    if (record !== null) this.store?.saveTable(record);
  }

  /** Adds `name` as another name of `table`'s selection. Aliases are not kept across runs. */
  addAlias(name: string, table: PathTable): void {
    this.entries.set(name.toLowerCase(), { kind: "alias", name, of: table });
    this.store?.saveTable({ name, kind: "alias", spec: "", filled: null, objects: [] });
  }

  /** The other names of `table`'s selection (`'./x/../'` for `'./'`): views over it. */
  aliasesOf(table: PathTable): string[] {
    const aliases: string[] = [];
    for (const entry of this.entries.values()) {
      if (entry.kind === "alias" && entry.of === table) aliases.push(entry.name);
    }
    return aliases;
  }

  /** Forgets a path-table and its aliases (their SQLite objects are the caller's). */
  removePathTable(table: PathTable): void {
    for (const alias of this.aliasesOf(table)) {
      this.entries.delete(alias.toLowerCase());
      this.store?.forgetTable(alias);
    }
    this.entries.delete(table.name.toLowerCase());
    this.bySelection.delete(selectionKey(table.selection));
    this.store?.forgetTable(table.name);
  }

  /** The path-table named `name`, or the one it is an alias of. */
  pathTable(name: string): PathTable | undefined {
    const entry = this.entries.get(name.toLowerCase());
    if (entry?.kind === "path") return entry.table;
    return entry?.kind === "alias" ? entry.of : undefined;
  }

  /** The path-table (not an alias) named exactly so, case aside. */
  ownPathTable(name: string): PathTable | undefined {
    const entry = this.entries.get(name.toLowerCase());
    return entry?.kind === "path" ? entry.table : undefined;
  }

  /** The path-table that selects these files, if one does. */
  pathTableSelecting(selection: PathSelection): PathTable | undefined {
    return this.bySelection.get(selectionKey(selection));
  }

  pathTables(): PathTable[] {
    const tables: PathTable[] = [];
    for (const entry of this.entries.values()) if (entry.kind === "path") tables.push(entry.table);
    return tables;
  }

  /** Adds (or replaces) a built parsed table. */
  addParsedTable(live: LiveParsedTable): void {
    const name = live.spec.name;
    this.entries.set(name.toLowerCase(), { kind: "parsed", name, live });
  }

  /** Forgets a built parsed table (it is about to be dropped and built again). */
  removeParsedTable(name: string): void {
    if (this.hasParsedTable(name)) this.entries.delete(name.toLowerCase());
  }

  /** Keeps a persisted parsed table whose files the first statement that reads it compares. */
  keepUnreconciled(name: string): void {
    this.entries.set(name.toLowerCase(), { kind: "parsed", name, live: null });
  }

  /** Whether `name` is a parsed table kept from a persisted index and not compared yet. */
  isUnreconciled(name: string): boolean {
    const entry = this.entries.get(name.toLowerCase());
    return entry?.kind === "parsed" && entry.live === null;
  }

  /** Stops keeping a parsed table as not compared yet: it is about to be built. */
  forgetUnreconciled(name: string): void {
    if (this.isUnreconciled(name)) this.entries.delete(name.toLowerCase());
  }

  /** Whether a parsed table of this name is built. */
  hasParsedTable(name: string): boolean {
    const entry = this.entries.get(name.toLowerCase());
    return entry?.kind === "parsed" && entry.live !== null;
  }

  /** The built parsed table of this name (ASCII case ignored, as SQLite matches names). */
  parsedTable(name: string): LiveParsedTable | undefined {
    const entry = this.entries.get(name.toLowerCase());
    return entry?.kind === "parsed" && entry.live !== null ? entry.live : undefined;
  }

  /** The parsed tables built so far: the ones the refresher keeps current. */
  parsedTables(): LiveParsedTable[] {
    const tables: LiveParsedTable[] = [];
    for (const entry of this.entries.values()) {
      if (entry.kind === "parsed" && entry.live !== null) tables.push(entry.live);
    }
    return tables;
  }

  /**
   * SQLite names of every table a statement may name as a path or config table: path-tables
   * and their aliases, filled or not, and (unless only `"path"` ones are asked for) the
   * parsed tables built so far.
   */
  names(only?: "path"): string[] {
    const names: string[] = [];
    for (const entry of this.entries.values()) {
      if (entry.kind === "path") names.push(entry.table.name);
      else if (entry.kind === "alias") names.push(entry.name);
      else if (entry.live !== null && only === undefined) names.push(entry.name);
    }
    return names;
  }
}
