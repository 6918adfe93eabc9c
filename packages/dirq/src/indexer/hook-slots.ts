/** How long a hook counts against the limit: past it, it no longer holds others back. */
export const SLOW_HOOK_AFTER_MS = 1_000;

interface Waiter {
  grant: (release: () => void) => void;
  signal: AbortSignal | undefined;
}

/**
 * Bounds the hooks a live index runs at once, without letting slow ones starve the rest: a
 * hook that has run for `slowAfterMs` stops counting against `limit` (up to `hardCap` in all),
 * so one file whose hook takes seconds never delays another file's rows. The same rule as the
 * query pool's for slow statements.
 */
export class HookSlots {
  private young = 0;
  private total = 0;
  private readonly waiting: Waiter[] = [];

  constructor(
    private readonly limit: number,
    private readonly slowAfterMs = SLOW_HOOK_AFTER_MS,
    private readonly hardCap = Math.max(4 * limit, 16),
  ) {}

  /**
   * Resolves with the function that gives the slot back, once one is free; with `null` when
   * `signal` aborts first (the work was superseded while it waited).
   */
  acquire(signal?: AbortSignal): Promise<(() => void) | null> {
    if (signal?.aborted) return Promise.resolve(null);
    return new Promise((resolve) => {
      const waiter: Waiter = { grant: resolve, signal };
      const onAbort = () => {
        const at = this.waiting.indexOf(waiter);
        if (at !== -1) this.waiting.splice(at, 1);
        resolve(null);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      waiter.grant = (release) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(release);
      };
      this.waiting.push(waiter);
      this.pump();
    });
  }

  /** Hooks holding a slot now, slow ones included. */
  get running(): number {
    return this.total;
  }

  private pump(): void {
    while (this.waiting.length > 0 && this.young < this.limit && this.total < this.hardCap) {
      const waiter = this.waiting.shift() as Waiter;
      this.young++;
      this.total++;
      let counted = true;
      const uncount = () => {
        if (!counted) return;
        counted = false;
        this.young--;
      };
      const timer = setTimeout(() => {
        uncount();
        this.pump();
      }, this.slowAfterMs);
      timer.unref();
      let released = false;
      waiter.grant(() => {
        if (released) return;
        released = true;
        clearTimeout(timer);
        uncount();
        this.total--;
        this.pump();
      });
    }
  }
}
