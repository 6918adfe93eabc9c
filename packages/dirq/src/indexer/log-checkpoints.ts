/**
 * Time from one checkpoint of the write-ahead log to the next while commits come. Each copies
 * what the commits since the last wrote; a page that many commits of a burst write (the end of
 * an index that moved rows append to) is copied once per checkpoint, so not after every one.
 */
export const CHECKPOINT_EVERY_MS = 250;

/**
 * Paces checkpoints made off the writer's thread (see `StagingWorker.checkpoint`): one after
 * commits, at most one running and one per `everyMs`. SQLite's own checkpoint stays on as the
 * fallback: it copies only what these left.
 */
export class LogCheckpoints {
  private running = false;
  private timer: NodeJS.Timeout | null = null;
  private lastAt = -Infinity;

  constructor(
    private readonly checkpoint: () => Promise<void>,
    private readonly everyMs = CHECKPOINT_EVERY_MS,
  ) {}

  /** A commit was made: a checkpoint follows, now or once the last is `everyMs` old. */
  committed(): void {
    if (this.running || this.timer !== null) return;
    const wait = this.lastAt + this.everyMs - performance.now();
    if (wait <= 0) {
      this.run();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.run();
    }, wait);
    this.timer.unref();
  }

  close(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private run(): void {
    this.running = true;
    this.lastAt = performance.now();
    // A failed checkpoint leaves the log to SQLite's own; the index itself is unharmed.
    void this.checkpoint()
      .catch(() => {})
      .finally(() => {
        this.running = false;
      });
  }
}
