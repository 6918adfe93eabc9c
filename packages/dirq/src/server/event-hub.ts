import {
  type EventHistory,
  HISTORY_BYTES,
  HISTORY_FRAMES,
  HISTORY_MS,
  type HistoryBounds,
  type HistoryFrame,
} from "../live/event-history.js";

/**
 * A frame for an SSE stream: a row frame's data is its UTF-8, shared by every subscriber; or
 * row frames that adjoin in the history's block, as the bytes they are sent as.
 */
export type StreamFrame =
  | { event: "row" | "reset"; id: string; data: string | readonly Buffer[]; encoded?: undefined }
  | {
      event: "row";
      /** The id of the last of them. */
      id: string;
      /** The whole frames as they are sent (see `HistoryFrame.sseThrough`). */
      encoded: Buffer;
    };

/**
 * Data bytes of adjoining frames handed out as one: a burst's hundreds of thousands of frames
 * go out as a view and a write per run, not per frame.
 */
const RUN_BYTES = 64 * 1024;

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
 * The server's event history bounds: `DIRQ_EVENT_HISTORY_FRAMES`, `DIRQ_EVENT_HISTORY_BYTES` and
 * `DIRQ_EVENT_HISTORY_MS` override the defaults (docs/http.md, Limits).
 */
export function historyBoundsFromEnv(): HistoryBounds {
  return {
    frames: positiveFromEnv("DIRQ_EVENT_HISTORY_FRAMES", HISTORY_FRAMES),
    bytes: positiveFromEnv("DIRQ_EVENT_HISTORY_BYTES", HISTORY_BYTES),
    ms: positiveFromEnv("DIRQ_EVENT_HISTORY_MS", HISTORY_MS),
  };
}

/** How long a subscriber far behind may take no bytes before it is cut off (docs/http.md). */
export const STALL_MS = 5000;

/** The stall time: `DIRQ_EVENT_STALL_MS` overrides the default (tests shorten it). */
export function stallMsFromEnv(): number {
  return positiveFromEnv("DIRQ_EVENT_STALL_MS", STALL_MS);
}

/**
 * How far past the history's bounds a queue may grow while its client reads: one that reads
 * slower than the server publishes (a trickle) is cut off there, so memory stays bounded.
 */
const READING_BYTES_FACTOR = 32;
const READING_FRAMES_FACTOR = 4;

/**
 * One `/events` client, with a queue of its own: the frames published since it connected (or
 * since the id it resumed from) that it has not been handed yet, as references to the
 * history's frames (the same bytes for every subscriber, never copied). The history's bounds
 * limit what a client that comes back can replay, not what a connected one receives: a burst
 * larger than the history reaches a subscriber that reads whole. One that does not read is cut off (its queue
 * dropped, one `reset`, then live) when it is behind by more than the history's bounds and its
 * socket took no bytes for the stall time (`watchSocket`); one that reads slower than the
 * server publishes, when its queue passes 32 times the history's bytes or 4 times its frames.
 */
export class Subscription {
  private queue: HistoryFrame[];
  /** Index in `queue` of the next frame to hand out (the array is compacted now and then). */
  private head = 0;
  private queuedBytes: number;
  /** The newest frame when it was cut off: a `reset` to hand out before anything else. */
  private resetAt: number | null = null;
  private isClosed = false;
  private wake: (() => void) | null = null;
  /** Frames handed out, and what the last stall check saw: progress between two checks. */
  private handedOut = 0;
  private lastCheck = { handedOut: 0, unsent: Infinity };
  private stallTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly history: EventHistory,
    backlog: HistoryFrame[],
    private readonly stallMs: number,
    private readonly onClose: (subscription: Subscription) => void,
  ) {
    this.queue = backlog;
    this.queuedBytes = backlog.reduce((sum, frame) => sum + frame.bytes, 0);
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Frames queued and not handed out yet, and their bytes. */
  get backlog(): { frames: number; bytes: number } {
    return { frames: this.queue.length - this.head, bytes: this.queuedBytes };
  }

  /** @internal The hub hands it each frame appended to the history. */
  push(frame: HistoryFrame): void {
    if (this.isClosed) return;
    this.queue.push(frame);
    this.queuedBytes += frame.bytes;
    if (this.beyondBounds(READING_FRAMES_FACTOR, READING_BYTES_FACTOR)) this.cutOff();
    this.wake?.();
  }

  /**
   * Checks every stall time whether the client reads: `unsent` is what its socket holds and
   * has not sent. When it held bytes and sent none of them since the last check, no frame was
   * handed out meanwhile, and the queue is beyond the history's bounds, it is cut off.
   */
  watchSocket(unsent: () => number): void {
    if (this.isClosed || this.stallTimer !== null) return;
    this.stallTimer = setInterval(() => this.checkStall(unsent()), this.stallMs);
    this.stallTimer.unref();
  }

  /** @internal One stall check, given the socket's unsent bytes now. */
  checkStall(unsent: number): void {
    const last = this.lastCheck;
    const stuck = unsent > 0 && unsent >= last.unsent && this.handedOut === last.handedOut;
    this.lastCheck = { handedOut: this.handedOut, unsent };
    if (stuck && this.beyondBounds(1, 1)) this.cutOff();
  }

  /** Whether the queue holds more than `framesFactor` or `bytesFactor` times the history's bounds. */
  private beyondBounds(framesFactor: number, bytesFactor: number): boolean {
    const { frames, bytes } = this.history.bounds;
    const backlog = this.backlog;
    return backlog.frames > frames * framesFactor || backlog.bytes > bytes * bytesFactor;
  }

  /**
   * The next frame; `null` when `idleMs` passed without one (time for a keep-alive);
   * `undefined` once the subscription is closed.
   */
  async next(idleMs: number): Promise<StreamFrame | null | undefined> {
    if (!this.hasNext() && !this.isClosed) await this.waitForFrame(idleMs);
    if (this.isClosed) return undefined;
    return this.poll();
  }

  /**
   * The next frame if one is there now, else `null`, without waiting: frames that adjoin in
   * the history's block (a burst's) as one, up to `RUN_BYTES` of data.
   */
  poll(): StreamFrame | null {
    if (this.isClosed) return null;
    if (this.resetAt !== null) {
      const id = this.history.idOf(this.resetAt);
      this.resetAt = null;
      return { event: "reset", id, data: "{}" };
    }
    const first = this.shift();
    if (first === undefined) return null;
    if (first.home === null)
      return { event: "row", id: this.history.idOf(first.n), data: first.utf8 };
    let last = first;
    for (let bytes = first.bytes; bytes < RUN_BYTES;) {
      const next = this.queue[this.head];
      if (next === undefined || !last.adjoins(next)) break;
      last = this.shift() as HistoryFrame;
      bytes += last.bytes;
    }
    return { event: "row", id: this.history.idOf(last.n), encoded: first.sseThrough(last) };
  }

  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.dropQueue();
    if (this.stallTimer !== null) clearInterval(this.stallTimer);
    this.wake?.();
    this.onClose(this);
  }

  private hasNext(): boolean {
    return this.resetAt !== null || this.head < this.queue.length;
  }

  private waitForFrame(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  private shift(): HistoryFrame | undefined {
    if (this.head >= this.queue.length) return undefined;
    const frame = this.queue[this.head++] as HistoryFrame;
    this.queuedBytes -= frame.bytes;
    this.handedOut++;
    if (this.head === this.queue.length) this.dropQueue();
    else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    return frame;
  }

  private dropQueue(): void {
    this.queue = [];
    this.head = 0;
    this.queuedBytes = 0;
  }

  /** Drops what it has not been handed: a `reset` at the newest frame, then what follows. */
  private cutOff(): void {
    this.dropQueue();
    this.resetAt = this.history.head;
    this.wake?.();
  }
}

/**
 * The `/events` subscriptions of the server, over the live session's event history: each
 * frame appended to it is handed to every subscription's queue.
 */
export class EventHub {
  private readonly subscriptions = new Set<Subscription>();
  private history: EventHistory | null = null;

  constructor(private readonly stallMs = STALL_MS) {}

  /** The live session's history, once it is serving. */
  attach(history: EventHistory): void {
    this.history = history;
    history.onAppend((frame) => {
      for (const subscription of this.subscriptions) subscription.push(frame);
    });
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
    const backlog = reset ? [] : history.framesAfter(after);
    const subscription = new Subscription(history, backlog, this.stallMs, (closed) =>
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
