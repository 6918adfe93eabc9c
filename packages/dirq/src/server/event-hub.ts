import {
  type EventHistory,
  HISTORY_BYTES,
  HISTORY_FRAMES,
  type HistoryBounds,
  type HistoryCursor,
} from "../live/event-history.js";

/** One thing to send on a stream: a `row` frame or a `reset`, with its SSE id. */
/** A frame for an SSE stream: a row frame's data is its UTF-8, shared by every subscriber. */
export type StreamFrame = { event: "row" | "reset"; id: string; data: string | readonly Buffer[] };

/**
 * How a new subscription starts: the `ready` frame's id (the frame it continues after), or
 * none and then a `reset` frame with `resetId` when the client's id cannot be continued.
 */
export type SubscriptionStart = { readyId: string } | { resetId: string };

/** A positive integer from the environment, else `fallback`. */
function positiveFromEnv(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isSafeInteger(value) && value > 0 ? value : fallback;
}

/**
 * The server's event history bounds: `DIRQ_EVENT_HISTORY_FRAMES` and `DIRQ_EVENT_HISTORY_BYTES`
 * override the defaults (docs/http.md, Limits).
 */
export function historyBoundsFromEnv(): HistoryBounds {
  return {
    frames: positiveFromEnv("DIRQ_EVENT_HISTORY_FRAMES", HISTORY_FRAMES),
    bytes: positiveFromEnv("DIRQ_EVENT_HISTORY_BYTES", HISTORY_BYTES),
  };
}

/**
 * One `/events` client: a cursor in the session's event history, not a queue of its own. A
 * client that reads slowly holds no memory; once the history has dropped frames it had not
 * read, it gets one `reset` and continues with the frames after it.
 */
export class Subscription {
  constructor(
    private readonly history: EventHistory,
    private readonly cursor: HistoryCursor,
    private readonly onClose: (subscription: Subscription) => void,
  ) {}

  get closed(): boolean {
    return this.cursor.isClosed;
  }

  /**
   * The next frame; `null` when `idleMs` passed without one (time for a keep-alive);
   * `undefined` once the subscription is closed.
   */
  async next(idleMs: number): Promise<StreamFrame | null | undefined> {
    let item = this.cursor.next();
    if (item === undefined && !this.closed) {
      await this.cursor.wait(idleMs);
      item = this.cursor.next();
    }
    if (this.closed) return undefined;
    if (item === undefined) return null;
    if ("reset" in item) return { event: "reset", id: this.history.idOf(item.reset), data: "{}" };
    return { event: "row", id: this.history.idOf(item.frame.n), data: item.frame.utf8 };
  }

  close(): void {
    if (this.closed) return;
    this.cursor.close();
    this.onClose(this);
  }
}

/** The `/events` subscriptions of the server, over the live session's event history. */
export class EventHub {
  private readonly subscriptions = new Set<Subscription>();
  private history: EventHistory | null = null;

  /** The live session's history, once it is serving. */
  attach(history: EventHistory): void {
    this.history = history;
  }

  /**
   * A subscription continuing after `lastEventId` (the `Last-Event-ID` a reconnecting client
   * sends), or from now on without one; a reset when that id can no longer be continued.
   */
  subscribe(lastEventId: string | undefined): {
    subscription: Subscription;
    start: SubscriptionStart;
  } {
    const history = this.history;
    if (history === null) throw new Error("/events subscribed before the session serves");
    const point = history.startPoint(lastEventId);
    const reset = "reset" in point;
    // After a reset what follows is live: the client queries again for what came before.
    const after = reset ? history.head : point.after;
    const subscription = new Subscription(history, history.cursor(after), (closed) =>
      this.subscriptions.delete(closed),
    );
    this.subscriptions.add(subscription);
    const id = history.idOf(after);
    return { subscription, start: reset ? { resetId: id } : { readyId: id } };
  }

  get size(): number {
    return this.subscriptions.size;
  }

  closeAll(): void {
    for (const subscription of [...this.subscriptions]) subscription.close();
  }
}
