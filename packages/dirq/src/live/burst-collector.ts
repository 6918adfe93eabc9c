import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { nativeFs } from "../scan/native-fs.js";

/** Row changes after which a burst's garbage is collected once the burst settles. */
export const BURST_CHANGES = 10_000;
/** Time without a recorded change that ends a burst. */
export const SETTLE_MS = 1_000;

let fullCollection: (() => void) | null | undefined;

/**
 * V8's full collection, made callable at run time (as `--expose-gc` would, for a new context
 * only, not this one's globals); `null` where V8 refuses the flag now.
 */
export function collectGarbage(): (() => void) | null {
  if (fullCollection !== undefined) return fullCollection;
  try {
    setFlagsFromString("--expose-gc");
    fullCollection = runInNewContext("gc") as () => void;
  } catch {
    fullCollection = null;
  }
  return fullCollection;
}

/**
 * Gives the memory the C allocator holds free back to the system, where dirq's native extension
 * is loaded and the allocator is glibc's (see dirq_trim_memory in native/dirq-fs.c); else
 * nothing.
 */
export function releaseFreedMemory(): void {
  nativeFs()?.trimMemory();
}

/**
 * Collects the garbage of a large burst of changes once it settles. A checkout of 100,000 moved
 * files makes hundreds of MB of short-lived rows, events and frames, much of it promoted to the
 * old generation while the burst runs; V8 collects that only when the heap grows again or,
 * idle, many seconds later, and until then the server holds twice or thrice its memory. One
 * full collection when no change has come for `settleMs` gives it back; small changes never
 * cost one. The buffers those collections free go back to the C allocator, which keeps much of
 * them: after the second collection it is asked to give them back (`release`).
 */
export class BurstCollector {
  private changes = 0;
  /** Runs `settleMs` after the last change of a burst past the threshold. */
  private settling: NodeJS.Timeout | null = null;
  /** The second collection, `settleMs` after the first. */
  private again: NodeJS.Timeout | null = null;

  constructor(
    // Asked for at the first burst only: a session that never has one leaves V8's flags alone.
    private readonly collect: () => void = () => collectGarbage()?.(),
    private readonly threshold = BURST_CHANGES,
    private readonly settleMs = SETTLE_MS,
    private readonly release: () => void = releaseFreedMemory,
  ) {}

  /** Counts changes just recorded; a burst past the threshold is collected once it settles. */
  recorded(changes: number): void {
    this.changes += changes;
    if (this.changes < this.threshold) return;
    this.cancel("again");
    if (this.settling !== null) this.settling.refresh();
    else this.settling = this.later(() => this.settle());
  }

  close(): void {
    this.cancel("settling");
    this.cancel("again");
  }

  private settle(): void {
    this.settling = null;
    this.changes = 0;
    this.collect();
    // The pages a collection frees are given back by the next one: a second, unless a new
    // burst has begun meanwhile (its own collections follow it).
    this.again = this.later(() => {
      this.again = null;
      this.collect();
      this.release();
    });
  }

  private later(task: () => void): NodeJS.Timeout {
    const timer = setTimeout(task, this.settleMs);
    timer.unref();
    return timer;
  }

  private cancel(which: "settling" | "again"): void {
    const timer = this[which];
    if (timer !== null) clearTimeout(timer);
    this[which] = null;
  }
}
