/**
 * One reader's idle timer, made once for many waits: a reader waits for every frame, and a
 * timer made and cleared per wait (a new list of the timers' queue each time, as its list
 * empties at every clear) cost more of the main thread than the frame's own write; setting
 * the timer again per wait (`refresh`: the timers' list walked, the loop's clock read) still
 * cost a few percent of a live query's frame. A wait only notes its time; when the timer runs
 * out it rings if `ms` passed since the last wait began, else it runs again for what is left.
 * A wake leaves it running (ringing into nothing), so it only rings after `ms` without a wait.
 */
export class IdleAlarm {
  private timer: NodeJS.Timeout | null = null;
  private onRing: (() => void) | null = null;
  /** When the last wait began (`performance.now()`: a clock set back does not delay it). */
  private setAt = 0;

  constructor(private readonly ms: number) {}

  /** Calls `ring` once `ms` pass without another `set` or a `disarm`. */
  set(ring: () => void): void {
    this.onRing = ring;
    this.setAt = performance.now();
    this.timer ??= setTimeout(() => this.ranOut(), this.ms);
  }

  /** The wait ended otherwise: the timer may still run out, and then does nothing. */
  disarm(): void {
    this.onRing = null;
  }

  /** Ends the timer (the reader is done). */
  stop(): void {
    this.onRing = null;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private ranOut(): void {
    const left = this.setAt + this.ms - performance.now();
    if (left > 0) {
      this.timer = setTimeout(() => this.ranOut(), left);
      return;
    }
    this.timer = null;
    const ring = this.onRing;
    this.onRing = null;
    ring?.();
  }
}

/** Readers waiting for something new: each wakes at the next `wakeAll()`, or at its alarm. */
export class Waiters {
  private readonly waiting = new Set<() => void>();

  /**
   * Resolves at the next `wakeAll()`, or when `limit` passes: milliseconds (a timer of its
   * own), or an alarm, set now.
   */
  wait(limit: number | IdleAlarm): Promise<void> {
    return new Promise((resolve) => {
      const alarm = typeof limit === "number" ? null : limit;
      const done = (): void => {
        if (alarm === null) clearTimeout(timer);
        else alarm.disarm();
        this.waiting.delete(done);
        resolve();
      };
      const timer = alarm === null ? setTimeout(done, limit as number) : undefined;
      alarm?.set(done);
      this.waiting.add(done);
    });
  }

  wakeAll(): void {
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const wake of waiting) wake();
  }
}
