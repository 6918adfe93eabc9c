/** Events a subscriber may have waiting before new ones are dropped for it. */
export const SUBSCRIBER_BUFFER = 1024;

/**
 * One `/events` client: a bounded queue in front of its connection. While the client reads
 * slowly, events beyond the buffer are dropped for it alone; it keeps receiving new ones.
 */
export class Subscription {
  private readonly queue: string[] = [];
  private wake: (() => void) | null = null;
  closed = false;
  dropped = 0;

  constructor(private readonly onClose: (subscription: Subscription) => void) {}

  push(frame: string): void {
    if (this.closed) return;
    if (this.queue.length >= SUBSCRIBER_BUFFER) {
      this.dropped++;
      return;
    }
    this.queue.push(frame);
    this.wake?.();
  }

  /**
   * The next event; `null` when `idleMs` passed without one (time for a keep-alive);
   * `undefined` once the subscription is closed.
   */
  async next(idleMs: number): Promise<string | null | undefined> {
    if (this.queue.length === 0 && !this.closed) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, idleMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
    if (this.closed) return undefined;
    return this.queue.shift() ?? null;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue.length = 0;
    this.wake?.();
    this.onClose(this);
  }
}

/** Fans row events out to every subscriber. */
export class EventHub {
  private readonly subscriptions = new Set<Subscription>();

  subscribe(): Subscription {
    const subscription = new Subscription((closed) => this.subscriptions.delete(closed));
    this.subscriptions.add(subscription);
    return subscription;
  }

  publish(frame: string): void {
    for (const subscription of this.subscriptions) subscription.push(frame);
  }

  get size(): number {
    return this.subscriptions.size;
  }

  closeAll(): void {
    for (const subscription of [...this.subscriptions]) subscription.close();
  }
}
