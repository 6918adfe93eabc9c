/** A stamp of the rows of some tables (see `DirqIndex.tableGenerations`). */
export type TableStamp = (tables: readonly string[]) => string;

interface Entry {
  /** The tables the statement reads, and their stamp when its answer was computed. */
  tables: readonly string[];
  stamp: string;
  body: string | Uint8Array;
  /** What it counts against the cache's size. */
  cost: number;
}

/** What an entry counts against the cache's size; by default the answer's length. */
export type EntryCost = (sql: string, answer: string | Uint8Array) => number;

/**
 * Answers of recent statements, each valid while the tables it reads (and the schema) are as
 * they were when it was computed: a change to one table leaves the answers over others in
 * place. Dashboards poll the same statements; they are answered without running them again.
 * Whether a statement may be kept at all (no volatile function, nothing read but tables) is
 * the caller's to decide. Bounded by total size, least recently used first out.
 */
export class ResultCache {
  private readonly entries = new Map<string, Entry>();
  private size = 0;

  constructor(
    private readonly maxChars: number,
    private readonly costOf: EntryCost = (_, answer) => answer.length,
  ) {}

  /** The kept answer to `sql`, if the stamp of its tables is still the one it was kept at. */
  get(sql: string, stampOf: TableStamp): string | Uint8Array | undefined {
    const entry = this.entries.get(sql);
    if (entry === undefined) return undefined;
    this.entries.delete(sql);
    if (stampOf(entry.tables) !== entry.stamp) {
      this.size -= entry.cost;
      return undefined;
    }
    this.entries.set(sql, entry);
    return entry.body;
  }

  /**
   * Keeps an answer computed while `tables` had `stamp`. Bytes that share their buffer with
   * more (a view into a read chunk holding other answers too) are copied: a kept answer must
   * not hold a whole chunk alive.
   */
  set(sql: string, tables: readonly string[], stamp: string, answer: string | Uint8Array): void {
    if (answer.length > this.maxChars / 4) return;
    const shared = typeof answer !== "string" && answer.buffer.byteLength > answer.length + 64;
    const body = shared ? Buffer.from(answer) : answer;
    const old = this.entries.get(sql);
    if (old) this.size -= old.cost;
    this.entries.delete(sql);
    const cost = this.costOf(sql, body);
    this.entries.set(sql, { tables, stamp, body, cost });
    this.size += cost;
    for (const [key, entry] of this.entries) {
      if (this.size <= this.maxChars) break;
      this.entries.delete(key);
      this.size -= entry.cost;
    }
  }
}
