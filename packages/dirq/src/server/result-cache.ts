/** A stamp of the rows of some tables (see `DirqIndex.tableGenerations`). */
export type TableStamp = (tables: readonly string[]) => string;

interface Entry {
  sql: string;
  /** The tables the statement reads, and their stamp when its answer was computed. */
  tables: readonly string[];
  /** `null` once a table it read changed: the answer is never given again. */
  stamp: string | null;
  body: string | Uint8Array;
  /** What it counts against the cache's size. */
  cost: number;
  /** Neighbours in the order of use: the least recently used entry is the oldest. */
  older: Entry | null;
  newer: Entry | null;
}

/** What an entry counts against the cache's size; by default the answer's length. */
export type EntryCost = (sql: string, answer: string | Uint8Array) => number;

/**
 * Answers of recent statements, each valid while the tables it reads (and the schema) are as
 * they were when it was computed: a change to one table leaves the answers over others in
 * place. Dashboards poll the same statements; they are answered without running them again.
 * Whether a statement may be kept at all (no volatile function, nothing read but tables) is
 * the caller's to decide. Bounded by total size, least recently used first out.
 *
 * The order of use is a list of its own: the map is never asked to keep it. With the many
 * entries a stream of distinct statements leaves, deleting and setting a key again on every
 * hit, to move it to the end of the map's order, makes each hit slower the longer it goes on
 * (every deleted copy stays in the key's chain until the map rehashes); and finding the oldest
 * entry by iterating the map walks over every entry deleted before it.
 */
export class ResultCache {
  private readonly entries = new Map<string, Entry>();
  private oldest: Entry | null = null;
  private newest: Entry | null = null;
  private size = 0;

  constructor(
    private readonly maxChars: number,
    private readonly costOf: EntryCost = (_, answer) => answer.length,
  ) {}

  /** The kept answer to `sql`, if the stamp of its tables is still the one it was kept at. */
  get(sql: string, stampOf: TableStamp): string | Uint8Array | undefined {
    const entry = this.entries.get(sql);
    if (entry === undefined || entry.stamp === null) return undefined;
    if (stampOf(entry.tables) !== entry.stamp) {
      // The key stays, to be given the next answer or to age out (deleting a key and setting
      // it again is what makes the map slow, see above); the bytes go now.
      entry.stamp = null;
      entry.body = "";
      this.size -= entry.cost;
      entry.cost = this.costOf(sql, entry.body);
      this.size += entry.cost;
      return undefined;
    }
    this.unlink(entry);
    this.linkNewest(entry);
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
    const cost = this.costOf(sql, body);
    let entry = this.entries.get(sql);
    if (entry === undefined) {
      entry = { sql, tables, stamp, body, cost, older: null, newer: null };
      this.entries.set(sql, entry);
    } else {
      this.size -= entry.cost;
      this.unlink(entry);
      Object.assign(entry, { tables, stamp, body, cost });
    }
    this.linkNewest(entry);
    this.size += cost;
    while (this.size > this.maxChars && this.oldest !== null) {
      const oldest = this.oldest;
      this.unlink(oldest);
      this.entries.delete(oldest.sql);
      this.size -= oldest.cost;
    }
  }

  private unlink(entry: Entry): void {
    if (entry.older === null) this.oldest = entry.newer;
    else entry.older.newer = entry.newer;
    if (entry.newer === null) this.newest = entry.older;
    else entry.newer.older = entry.older;
    entry.older = null;
    entry.newer = null;
  }

  private linkNewest(entry: Entry): void {
    entry.older = this.newest;
    if (this.newest === null) this.oldest = entry;
    else this.newest.newer = entry;
    this.newest = entry;
  }
}
