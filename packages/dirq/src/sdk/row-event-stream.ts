import type { EventHistory, HistoryCursor } from "../live/event-history.js";
import { parseJsonExact } from "../parse/hook-rows.js";
import type { RowEvent, WatchEvent } from "./types.js";

/** How long one wait for a change lasts before it looks again (any append ends it sooner). */
const IDLE_WAIT_MS = 60_000;

/**
 * The async iterable `watch()` returns: a reader of the index's numbered event history, not a
 * copy of it. A consumer that falls more than its buffer behind, or resumes from an id the
 * history no longer reaches, gets one `{ action: "reset" }` and then the events after it.
 * Ending it (`break`, an abort signal, the index's `close()`) detaches it from the index.
 */
export class RowEventStream implements AsyncIterableIterator<WatchEvent> {
  /** Resolves once the watcher sees the tree: changes made from then on produce events. */
  ready: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | null = null;
  /** Set at `end()`: the events up to this number are still given, none after. */
  private endAt: number | null = null;
  private startsWithReset: boolean;

  /** @internal */
  constructor(
    private readonly history: EventHistory,
    private readonly cursor: HistoryCursor,
    reset: boolean,
    private readonly onEnd: () => void,
  ) {
    this.startsWithReset = reset;
  }

  /**
   * The id of the last event given (a reset's too): pass it as `watch({ lastEventId })` to
   * continue after it, as an SSE client sends `Last-Event-ID`.
   */
  get lastEventId(): string {
    return this.history.idOf(this.cursor.after);
  }

  /** @internal Watching failed to start: the iteration throws the error. */
  setReady(ready: Promise<void>): void {
    this.ready = ready;
    ready.catch((error: unknown) => {
      this.failure = { error };
      this.end();
    });
  }

  /** @internal Ends the iteration after the events published so far. */
  end(): void {
    if (this.endAt !== null) return;
    this.endAt = this.history.head;
    this.onEnd();
    this.history.wakeAll();
  }

  async next(): Promise<IteratorResult<WatchEvent>> {
    if (this.startsWithReset) {
      this.startsWithReset = false;
      return { value: { action: "reset" }, done: false };
    }
    for (;;) {
      if (this.endAt === null || this.cursor.after < this.endAt) {
        const item = this.cursor.next();
        if (item !== undefined) {
          if ("reset" in item) return { value: { action: "reset" }, done: false };
          return { value: parseJsonExact(item.frame.data) as RowEvent, done: false };
        }
      }
      if (this.failure !== null) {
        const { error } = this.failure;
        this.failure = null;
        this.cursor.close();
        throw error;
      }
      if (this.endAt !== null) {
        this.cursor.close();
        return { value: undefined, done: true };
      }
      await this.cursor.wait(IDLE_WAIT_MS);
    }
  }

  /** `break` out of `for await` lands here. */
  return(): Promise<IteratorResult<WatchEvent>> {
    this.end();
    this.cursor.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
