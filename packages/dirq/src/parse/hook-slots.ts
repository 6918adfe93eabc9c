/**
 * How long a hook counts against the limit: past it, it no longer holds others back. Above
 * the start-up of a quick hook (a compiled tool, `jq`), so those run one per slot; short enough
 * that a file queued behind a slow or hung hook waits no more than this for its turn.
 */
export const SLOW_HOOK_AFTER_MS = 50;

/** The most holders at once for `limit` young ones, slow ones included. */
export function defaultHardCap(limit: number): number {
  return Math.max(4 * limit, 16);
}

/** The callbacks waiting on each signal, behind one `abort` listener of its own. */
const abortWatchers = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `callback` once `signal` aborts; returns the function that stops watching. However
 * many hooks wait on one signal (an index's closing signal, shared by a whole fill), the
 * signal gets one listener: Node warns on stderr past ten.
 */
export function whenAborted(signal: AbortSignal, callback: () => void): () => void {
  let watchers = abortWatchers.get(signal);
  if (watchers === undefined) {
    const created = new Set<() => void>();
    watchers = created;
    abortWatchers.set(signal, created);
    signal.addEventListener(
      "abort",
      () => {
        for (const watcher of [...created]) watcher();
        created.clear();
      },
      { once: true },
    );
  }
  const mine = watchers;
  const once = () => {
    mine.delete(once);
    callback();
  };
  mine.add(once);
  return () => mine.delete(once);
}

interface Waiter {
  grant: (release: () => void) => void;
  signal: AbortSignal | undefined;
}

/**
 * Bounds the work running at once, without letting slow work starve the rest: a holder that
 * has held its slot for `slowAfterMs` stops counting against `limit`, so one file whose hook
 * takes seconds never delays another file's rows. `hardCap` bounds the holders in all, slow
 * ones included: past it, work waits in a queue (nothing is started for it). The same rule as
 * the query pool's for slow statements.
 */
export class HookSlots {
  private young = 0;
  private total = 0;
  private readonly waiting: Waiter[] = [];

  constructor(
    private readonly limit: number,
    /** `null`: a holder never stops counting (work in this process, which no wait frees). */
    private readonly slowAfterMs: number | null = SLOW_HOOK_AFTER_MS,
    private readonly hardCap = defaultHardCap(limit),
  ) {}

  /**
   * Resolves with the function that gives the slot back, once one is free; with `null` when
   * `signal` aborts first (the work was superseded while it waited).
   */
  acquire(signal?: AbortSignal): Promise<(() => void) | null> {
    if (signal?.aborted) return Promise.resolve(null);
    return new Promise((resolve) => {
      const waiter: Waiter = { grant: resolve, signal };
      const stopWatching =
        signal === undefined
          ? () => {}
          : whenAborted(signal, () => {
              const at = this.waiting.indexOf(waiter);
              if (at !== -1) this.waiting.splice(at, 1);
              resolve(null);
            });
      waiter.grant = (release) => {
        stopWatching();
        resolve(release);
      };
      this.waiting.push(waiter);
      this.pump();
    });
  }

  /** Holders of a slot now, slow ones included. */
  get running(): number {
    return this.total;
  }

  /** The most holders at once. */
  get cap(): number {
    return this.hardCap;
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
      const timer =
        this.slowAfterMs === null
          ? undefined
          : setTimeout(() => {
              uncount();
              this.pump();
            }, this.slowAfterMs);
      timer?.unref();
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
