/**
 * Times slices of synchronous work on the main thread, so that a burst (a checkout's thousands
 * of folders, its hundred thousand moved rows) lets requests and event streams run between
 * slices: `due()` says when a slice has run its length, `yield()` lets the event loop turn.
 */
export class Slices {
  private started = performance.now();

  constructor(private readonly sliceMs: number) {}

  due(): boolean {
    return performance.now() - this.started >= this.sliceMs;
  }

  async yield(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.started = performance.now();
  }

  async yieldIfDue(): Promise<void> {
    if (this.due()) await this.yield();
  }
}
