import type { SqlValue } from "../shared/sql-value.js";
import { parseJsonExact } from "../parse/hook-rows.js";
import type { LiveFrame } from "../live/live-queries.js";
import { escapeControlCharacters } from "../output/escape.js";

type Row = Record<string, unknown>;

interface DiffData {
  commit: number;
  removed: { at: number; row: Row }[];
  added: { at: number; row: Row }[];
  updated: { from: number; at: number; row: Row }[];
}

/**
 * What `dirq watch` shows on a terminal: the answer a live query's frames make, applied as
 * docs/live-queries.md says (the core made the diff; nothing here compares rows), and a line
 * of what the last frame changed.
 */
export class WatchScreen {
  private rows: Row[] = [];
  private columns: string[] = [];
  private commit = 0;
  private change = "";
  /** Places (after the change) of the rows it put in: shown marked, as `watch -d` does. */
  private marked = new Set<number>();

  constructor(private readonly sql: string) {}

  /** Takes one frame; `false` when it changes nothing shown (a `ready`). */
  take(frame: LiveFrame): boolean {
    if (frame.event === "ready") return false;
    const data = parseJsonExact(frame.data) as Row & { commit: number };
    this.commit = data.commit;
    this.marked = new Set();
    if (frame.event === "snapshot") {
      this.rows = data.rows as Row[];
      this.columns = data.columns as string[];
      this.change = this.change === "" ? "the answer" : "a new answer (it replaces the rows)";
    } else if (frame.event === "error") {
      this.change = `error: ${String(data.error)} (the rows are the last good answer)`;
    } else {
      this.apply(data as unknown as DiffData);
    }
    return true;
  }

  private apply(diff: DiffData): void {
    const out = [...diff.removed.map((r) => r.at), ...diff.updated.map((u) => u.from)];
    for (const at of out.sort((a, b) => b - a)) this.rows.splice(at, 1);
    const put = [...diff.added, ...diff.updated].sort((a, b) => a.at - b.at);
    for (const { at, row } of put) this.rows.splice(at, 0, row);
    this.marked = new Set(put.map((entry) => entry.at));
    const counts = [
      `+${diff.added.length}`,
      `-${diff.removed.length}`,
      ...(diff.updated.length > 0 ? [`~${diff.updated.length}`] : []),
    ];
    this.change = `${counts.join(" ")} rows`;
  }

  /** The whole screen: a head line, the change line, then the table (changed rows bold). */
  async render(now: Date): Promise<string> {
    const { renderTable } = await import("../output/table.js");
    const values = this.rows.map((row) => this.columns.map((name) => row[name] as SqlValue));
    const table = (await renderTable(this.columns, values)).split("\n");
    // The table's lines: a header, a rule, one line per row (cells are cut to one line).
    const shown = table.map((line, i) => (this.marked.has(i - 2) ? `\x1b[1m${line}\x1b[0m` : line));
    const time = now.toISOString().slice(11, 19);
    const head = `dirq watch: ${escapeControlCharacters(this.sql)}`;
    return [
      `${head}    commit ${this.commit}, ${time}`,
      `changed: ${escapeControlCharacters(this.change)}`,
      "",
      ...shown,
    ].join("\n");
  }
}
