import { cachedStatement, type SqliteDatabase } from "./database.js";
import type { CommitChange } from "./row-changes.js";
import { SCHEMA_TABLE } from "../query/statement-plan.js";

/** Tables whose changes are counted one by one; past this many, the counts start over. */
const TABLE_COUNTS_KEPT = 10_000;

/**
 * Counts changes per table so that a cached answer is dropped only when a table it read
 * changed (the server's result cache). Table names match ignoring case, as in SQLite.
 */
export class TableGenerations {
  private readonly counts = new Map<string, number>();
  /** Changes that may have touched any table's rows (a build, an unattributed refresh error). */
  private any = 0;

  constructor(
    /** The name changes are counted under (a case variant's SQLite name → the name written). */
    private readonly nameOf: (table: string) => string,
    private readonly schemaVersion: () => number,
  ) {}

  private key(table: string): string {
    return this.nameOf(table).toLowerCase();
  }

  /**
   * A stamp of the rows of `tables` (SQLite names): it differs from an earlier one once any of
   * them may have changed. The schema counts only for a statement that reads it or no table at
   * all (a pragma): a table created, an index made or a column added changes no row of another
   * table, and a table whose columns change has its rows changed too.
   */
  stamp(tables: readonly string[]): string {
    let stamp = String(this.any);
    if (tables.length === 0 || tables.includes(SCHEMA_TABLE)) stamp += `s${this.schemaVersion()}`;
    for (const table of tables) stamp += `:${this.counts.get(this.key(table)) ?? 0}`;
    return stamp;
  }

  /** Moves the stamp of the tables named (row changes' labels or SQLite names); `null`: all. */
  changed(tables: Iterable<string | null> | null): void {
    if (tables === null) {
      this.any++;
      return;
    }
    for (const table of tables) {
      if (table === null) {
        this.any++;
        continue;
      }
      if (this.counts.size >= TABLE_COUNTS_KEPT) {
        this.counts.clear();
        this.any++;
      }
      const key = this.key(table);
      this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    }
  }
}

/** The tables a refresh's row changes touched; `null` (all) when a trigger may write others. */
export function tablesTouchedBy(
  db: SqliteDatabase,
  changes: readonly CommitChange[],
): (string | null)[] | null {
  if (changes.length === 0) return [];
  // A `ddl` trigger writes tables of its own choosing; no row change names them.
  // Prepared once per connection: this runs on every commit.
  const trigger = cachedStatement(
    db,
    "SELECT 1 FROM main.sqlite_schema WHERE type = 'trigger' LIMIT 1",
  ).get();
  if (trigger !== undefined) return null;
  // One pass, no copy: a large file's change set is hundreds of thousands of changes, in runs
  // of one table.
  const tables = new Set<string | null>();
  let last: string | null | undefined;
  for (const { table } of changes) {
    if (table === last) continue;
    last = table;
    tables.add(table);
  }
  return [...tables];
}
