import { answerRows } from "./answer-rows.js";
import type { DiffThread } from "./large-diff.js";
import {
  type AnswerDiff,
  diffAnswers,
  type DiffShape,
  keyOf,
  type RowDelta,
  rowDelta,
} from "./live-diff.js";
import { RowSlots } from "./row-slots.js";

/** Rows held on the diff thread: their text here (for snapshots), and which thread holds them. */
interface Held {
  text: Uint8Array;
  generation: number;
}

/**
 * The current answer of one live query, in the order clients hold it: its rows here, or, once
 * a whole answer was large (`threadBytes`), on the diff thread, which then cuts and diffs every
 * later answer of the query while this thread keeps only the rows' text. Either way the same
 * diffs come out (`diffAnswers`, or `RowSlots` for an answer without an order held here, whose
 * few rows that left and joined cost only themselves).
 */
export class LiveAnswer {
  private rows = new RowSlots();
  private held: Held | null = null;
  /** Whether a run went to the diff thread: it may hold rows of this query. */
  private sent = false;
  private readonly query: number;

  /** `thread`: the diff thread, or `null` for an answer whose rows must stay here. */
  constructor(
    private readonly shape: DiffShape,
    private readonly thread: DiffThread | null,
    private readonly threadBytes: number,
  ) {
    this.query = thread?.newQuery() ?? 0;
  }

  /** The rows, in the order clients hold them (cut again from their text when held elsewhere). */
  get current(): readonly string[] {
    return this.held === null ? this.rows.rows() : answerRows(`[${this.text}]`);
  }

  /** The rows' texts joined by commas: a snapshot's rows, less the brackets. */
  get text(): string {
    return this.held === null ? this.rows.rows().join(",") : Buffer.from(this.held.text).toString();
  }

  /**
   * Moves to a whole new answer (`body`, as a query process wrote it): the diff from the
   * current one, or `null` when it replaces it without one (`reset`, or the diff thread that
   * held the rows stopped meanwhile: clients need a new snapshot).
   */
  async whole(body: string | Uint8Array, reset: boolean): Promise<AnswerDiff | null> {
    const size = typeof body === "string" ? Buffer.byteLength(body) : body.byteLength;
    if (this.thread === null || (this.held === null && size < this.threadBytes)) {
      return this.replace(answerRows(body), reset);
    }
    const lost = this.held !== null && !this.thread.holds(this.held.generation);
    const fresh = reset || lost;
    this.sent = true;
    const result = await this.thread.run({
      query: this.query,
      body: ownBytes(body),
      shape: this.shape,
      seed: this.held === null && !fresh ? this.rows.rows() : null,
      reset: fresh,
    });
    this.held = { text: result.text, generation: result.generation };
    this.rows = new RowSlots();
    return fresh ? null : result.diff;
  }

  /** Moves to a whole new answer already cut into rows, on this thread; as `whole`. */
  replace(rows: string[], reset: boolean): AnswerDiff | null {
    if (reset) {
      this.rows = new RowSlots(rows);
      return null;
    }
    if (!this.shape.ordered) return this.apply(rowDelta(this.rows.rows(), rows));
    const made = diffAnswers(this.rows.rows(), { rows }, this.shape);
    this.rows = new RowSlots(made.rows);
    return made.diff;
  }

  /**
   * Takes in the rows that left and joined (the file-by-file way: an answer without an order,
   * held here), at the cost of those rows.
   */
  apply(delta: RowDelta): AnswerDiff {
    const key = this.shape.key;
    const pairBy = key === null || key.length === 0 ? null : (row: string) => keyOf(row, key);
    return this.rows.take(delta, pairBy);
  }

  /** Lets the diff thread drop the rows it holds. */
  close(): void {
    if (this.sent) this.thread?.forget(this.query);
  }
}

/** `body` as bytes in a buffer of their own, which can be moved to another thread. */
function ownBytes(body: string | Uint8Array): Uint8Array {
  return typeof body === "string" ? new TextEncoder().encode(body) : new Uint8Array(body);
}
