/** Readers waiting for something new: each wakes at the next `wakeAll()`, or after its time. */
export class Waiters {
  private readonly waiting = new Set<() => void>();

  /** Resolves at the next `wakeAll()`, or after `ms`. */
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiting.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiting.add(done);
    });
  }

  wakeAll(): void {
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const wake of waiting) wake();
  }
}
