import { keywordOf, significantTokens } from "../query/sql-tokens.js";

/** SQL functions whose answer changes without the data changing: never cached. */
const VOLATILE_FUNCTIONS = new Set([
  "random",
  "randomblob",
  "changes",
  "total_changes",
  "last_insert_rowid",
  "current_timestamp",
  "current_date",
  "current_time",
  "date",
  "time",
  "datetime",
  "julianday",
  "unixepoch",
  "strftime",
  "timediff",
]);

/** Whether the same statement over the same data always answers the same bytes. */
export function isCacheable(sql: string): boolean {
  return !significantTokens(sql).some((token) => {
    const word = keywordOf(token);
    return word !== null && VOLATILE_FUNCTIONS.has(word.toLowerCase());
  });
}

/** Statement texts whose cacheability is remembered before the memo starts over. */
const VERDICTS_KEPT = 1000;

interface Entry {
  generation: string;
  body: string | Uint8Array;
}

/**
 * Answers of recent statements, valid while the index is at the generation they were computed
 * at (any change to the index moves it on). Dashboards poll the same statements; they are
 * answered without running them again. Bounded by total size, least recently used first out.
 */
export class ResultCache {
  private readonly entries = new Map<string, Entry>();
  private size = 0;

  /** `isCacheable` per statement text: an uncached statement is asked about on every run. */
  private readonly verdicts = new Map<string, boolean>();

  constructor(private readonly maxChars: number) {}

  private cacheable(sql: string): boolean {
    let verdict = this.verdicts.get(sql);
    if (verdict === undefined) {
      if (this.verdicts.size >= VERDICTS_KEPT) this.verdicts.clear();
      verdict = isCacheable(sql);
      this.verdicts.set(sql, verdict);
    }
    return verdict;
  }

  get(sql: string, generation: string): string | Uint8Array | undefined {
    const entry = this.entries.get(sql);
    if (entry === undefined) return undefined;
    this.entries.delete(sql);
    if (entry.generation !== generation) {
      this.size -= entry.body.length;
      return undefined;
    }
    this.entries.set(sql, entry);
    return entry.body;
  }

  /**
   * Keeps an answer. Bytes that share their buffer with more (a view into a read chunk holding
   * other answers too) are copied: a kept answer must not hold a whole chunk alive.
   */
  set(sql: string, generation: string, answer: string | Uint8Array): void {
    if (answer.length > this.maxChars / 4 || !this.cacheable(sql)) return;
    const shared = typeof answer !== "string" && answer.buffer.byteLength > answer.length + 64;
    const body = shared ? Buffer.from(answer) : answer;
    const old = this.entries.get(sql);
    if (old) this.size -= old.body.length;
    this.entries.delete(sql);
    this.entries.set(sql, { generation, body });
    this.size += body.length;
    for (const [key, entry] of this.entries) {
      if (this.size <= this.maxChars) break;
      this.entries.delete(key);
      this.size -= entry.body.length;
    }
  }
}
