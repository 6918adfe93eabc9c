import type { RowEvent } from "./types.js";

/**
 * The async iterable `watch()` returns: a bounded buffer of row events for one consumer.
 * Ending it (`break`, an abort signal, the index's `close()`) detaches it from the index.
 */
export class RowEventStream implements AsyncIterableIterator<RowEvent> {
  /** Resolves once the watcher sees the tree: changes made from then on produce events. */
  ready: Promise<void> = Promise.resolve();
  private readonly buffer: RowEvent[] = [];
  private waiting: ((result: IteratorResult<RowEvent>) => void) | null = null;
  private failWaiting: ((error: unknown) => void) | null = null;
  private ended = false;
  private failure: { error: unknown } | null = null;

  /** @internal */
  constructor(
    private readonly capacity: number,
    private readonly onEnd: () => void,
  ) {}

  /** @internal Watching failed to start: the iteration throws the error. */
  setReady(ready: Promise<void>): void {
    this.ready = ready;
    ready.catch((error: unknown) => {
      this.failure = { error };
      this.end();
    });
  }

  /** @internal Adds events; past the capacity the newest are dropped. */
  push(events: readonly RowEvent[]): void {
    if (this.ended) return;
    for (const event of events) {
      if (this.waiting !== null) {
        const resolve = this.waiting;
        this.waiting = null;
        this.failWaiting = null;
        resolve({ value: event, done: false });
      } else if (this.buffer.length < this.capacity) {
        this.buffer.push(event);
      }
    }
  }

  /** @internal Ends the iteration after the buffered events. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd();
    if (this.waiting === null) return;
    const resolve = this.waiting;
    const reject = this.failWaiting;
    this.waiting = null;
    this.failWaiting = null;
    if (this.failure !== null && reject !== null) {
      const { error } = this.failure;
      this.failure = null;
      reject(error);
    } else {
      resolve({ value: undefined, done: true });
    }
  }

  next(): Promise<IteratorResult<RowEvent>> {
    const event = this.buffer.shift();
    if (event !== undefined) return Promise.resolve({ value: event, done: false });
    if (this.failure !== null) {
      const { error } = this.failure;
      this.failure = null;
      return Promise.reject(error);
    }
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.failWaiting = reject;
    });
  }

  /** `break` out of `for await` lands here. */
  return(): Promise<IteratorResult<RowEvent>> {
    this.buffer.length = 0;
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
