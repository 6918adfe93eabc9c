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
 * Time from a burst's second collection to its third. V8 shrinks its young generation (grown to
 * its largest by a burst: tens of MB, kept empty after) only in a collection that comes when
 * little has been allocated over its last few seconds, so the third collection waits past them.
 */
export const SHRINK_AFTER_MS = 6_000;

/**
 * Collects the garbage of a large burst of changes once it settles. A checkout of 100,000 moved
 * files makes hundreds of MB of short-lived rows, events and frames, much of it promoted to the
 * old generation while the burst runs; V8 collects that only when the heap grows again or,
 * idle, many seconds later, and until then the server holds twice or thrice its memory. So when
 * no change has come for `settleMs`, four rounds, each a full collection: the first frees the
 * burst's garbage, the second (`settleMs` later) gives back the pages the first freed, the third
 * (`shrinkAfterMs` later) lets V8 shrink its young generation, the fourth gives those pages back.
 * The buffers the collections free go to the C allocator, which keeps much of them: after the
 * second and the fourth it is asked to give them back (`release`). Small changes never cost a
 * collection.
 */
export class BurstCollector {
  private changes = 0;
  private timer: NodeJS.Timeout | null = null;
  /** The next round of the settled burst's collections. */
  private round = 0;

  constructor(
    // Asked for at the first burst only: a session that never has one leaves V8's flags alone.
    private readonly collect: () => void = () => collectGarbage()?.(),
    private readonly threshold = BURST_CHANGES,
    private readonly settleMs = SETTLE_MS,
    private readonly release: () => void = releaseFreedMemory,
    private readonly shrinkAfterMs = SHRINK_AFTER_MS,
  ) {}

  /** Counts changes just recorded; a burst past the threshold is collected once it settles. */
  recorded(changes: number): void {
    this.changes += changes;
    if (this.changes < this.threshold) return;
    // A new burst: the rounds left of the one before give way to its own.
    this.round = 0;
    this.later(this.settleMs);
  }

  close(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private next(): void {
    this.timer = null;
    const round = this.round++;
    if (round === 0) this.changes = 0;
    this.collect();
    if (round % 2 === 1) this.release();
    if (round < 3) this.later(round === 1 ? this.shrinkAfterMs : this.settleMs);
  }

  private later(ms: number): void {
    this.close();
    this.timer = setTimeout(() => this.next(), ms);
    this.timer.unref();
  }
}
