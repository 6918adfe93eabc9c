import type { LiveFrame, LiveSubscription } from "../live/live-queries.js";
import { parseJsonExact } from "../parse/hook-rows.js";
import type { Row } from "./types.js";

/** What `db.live()` takes besides the statement and its parameters. */
export interface LiveOptions {
  /** Columns whose values identify a row: a row changed in place is one `updated` entry. */
  key?: readonly string[];
  /** Ends the iteration (as `close()`). */
  signal?: AbortSignal;
}

/** What changed in a live query's answer (`rows` is already the new answer). */
export interface LiveChange {
  /** The index's commit the answer is (at least) as of. */
  commit: number;
  /** Rows that left, each with its place in the answer before. */
  removed: { at: number; row: Row }[];
  /** Rows that joined, each with its place in the answer after. */
  added: { at: number; row: Row }[];
  /** With a key: rows whose key stayed, where they were and where they are now. */
  updated: { from: number; at: number; oldRow: Row; row: Row }[];
  /** `true`: the whole answer was replaced (its columns changed); the lists are empty. */
  snapshot: boolean;
  /** A run of the statement failed: the rows stay the last good answer. */
  error?: string;
}

/** How long one wait for a frame lasts before it looks again (ending is checked between). */
const IDLE_WAIT_MS = 60_000;

interface DiffData {
  commit: number;
  removed: { at: number; row: Row }[];
  added: { at: number; row: Row }[];
  updated: { from: number; at: number; old_row: Row; row: Row }[];
}

interface SnapshotData {
  commit: number;
  columns: string[];
  rows: Row[];
}

/**
 * A live query in the SDK's process: `rows` is the current answer (in the statement's order),
 * and iterating gives each change as it happens. It resumes by itself: when it falls behind
 * the evaluator's history, a new snapshot replaces the rows (a change with `snapshot: true`).
 * Made by `Dirq.live`; end it with `break`, `signal` or `close()`.
 */
export class LiveRows implements AsyncIterableIterator<LiveChange> {
  /** Resolves once the first answer is in `rows`; rejects when the statement cannot run. */
  readonly ready: Promise<void>;
  private current: Row[] = [];
  private names: string[] = [];
  private at = 0;
  private subscription: LiveSubscription | null = null;
  private ended = false;

  /** @internal */
  constructor(
    opened: Promise<LiveSubscription>,
    private readonly onEnd: (rows: LiveRows) => void,
  ) {
    this.ready = (async () => {
      const subscription = await opened;
      this.subscription = subscription;
      if (this.ended) subscription.close();
      const first = await subscription.next(IDLE_WAIT_MS);
      if (first) this.take(first);
    })();
    this.ready.catch(() => this.close());
  }

  /** The current answer, in the statement's order (or the order rows joined, without one). */
  get rows(): readonly Row[] {
    return this.current;
  }

  get columns(): readonly string[] {
    return this.names;
  }

  /** The commit the current answer is (at least) as of. */
  get commit(): number {
    return this.at;
  }

  /** Applies a frame to `rows`; the change to hand out, if it is one. */
  private take(frame: LiveFrame): LiveChange | null {
    if (frame.event === "ready") return null;
    const data = parseJsonExact(frame.data) as Record<string, unknown>;
    this.at = data.commit as number;
    if (frame.event === "snapshot") {
      const snapshot = data as unknown as SnapshotData;
      this.current = snapshot.rows;
      this.names = snapshot.columns;
      return { commit: this.at, removed: [], added: [], updated: [], snapshot: true };
    }
    if (frame.event === "error") {
      const error = data.error as string;
      return { commit: this.at, removed: [], added: [], updated: [], snapshot: false, error };
    }
    const diff = data as unknown as DiffData;
    const out = [...diff.removed.map((r) => r.at), ...diff.updated.map((u) => u.from)];
    for (const at of out.sort((a, b) => b - a)) this.current.splice(at, 1);
    const put = [...diff.added, ...diff.updated].sort((a, b) => a.at - b.at);
    for (const { at, row } of put) this.current.splice(at, 0, row);
    const updated = diff.updated.map((u) => ({
      from: u.from,
      at: u.at,
      oldRow: u.old_row,
      row: u.row,
    }));
    return { commit: this.at, removed: diff.removed, added: diff.added, updated, snapshot: false };
  }

  async next(): Promise<IteratorResult<LiveChange>> {
    await this.ready;
    for (;;) {
      const subscription = this.subscription;
      if (this.ended || subscription === null) return { value: undefined, done: true };
      const frame = await subscription.next(IDLE_WAIT_MS);
      if (frame === undefined) {
        this.close();
        return { value: undefined, done: true };
      }
      const change = frame === null ? null : this.take(frame);
      if (change !== null) return { value: change, done: false };
    }
  }

  /** Stops following the query (its evaluator stops when nobody else follows it). */
  close(): void {
    if (this.ended) return;
    this.ended = true;
    this.subscription?.close();
    this.onEnd(this);
  }

  /** `break` out of `for await` lands here. */
  return(): Promise<IteratorResult<LiveChange>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
