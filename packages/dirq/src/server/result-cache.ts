/** A stamp of the rows of some tables (see `DirqIndex.tableGenerations`). */
export type TableStamp = (tables: readonly string[]) => string;

interface Entry {
  /** The tables the statement reads, and their stamp when its answer was computed. */
  tables: readonly string[];
  stamp: string;
  body: string | Uint8Array;
}

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

  constructor(private readonly maxChars: number) {}

  /** The kept answer to `sql`, if the stamp of its tables is still the one it was kept at. */
  get(sql: string, stampOf: TableStamp): string | Uint8Array | undefined {
    const entry = this.entries.get(sql);
    if (entry === undefined) return undefined;
    this.entries.delete(sql);
    if (stampOf(entry.tables) !== entry.stamp) {
      this.size -= entry.body.length;
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
    if (old) this.size -= old.body.length;
    this.entries.delete(sql);
    this.entries.set(sql, { tables, stamp, body });
    this.size += body.length;
    for (const [key, entry] of this.entries) {
      if (this.size <= this.maxChars) break;
      this.entries.delete(key);
      this.size -= entry.body.length;
    }
  }
}
