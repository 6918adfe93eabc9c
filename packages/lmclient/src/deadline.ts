/** The longest delay `setTimeout` honours; a longer one fires at once (Node warns). */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** A timer this late means the thread was blocked (a synchronous call, a busy loop). */
const BLOCKED_LATENESS_MS = 30;
/** After a blocked stretch, how long the event loop gets to read what arrived meanwhile. */
const GRACE_MS = 250;

/**
 * A per-attempt deadline that aborts its `signal` when `ms` milliseconds have passed, for any
 * `ms` (chained timers beyond 2^31 - 1).
 *
 * It is immune to a blocked event loop: when this thread is blocked (for example by a
 * synchronous `forward`), the timer fires late, in the timers phase, before the poll phase that
 * would read a response that arrived meanwhile. A late firing therefore grants the loop a short
 * unblocked grace period before it declares a timeout, so a blocked thread never turns a
 * response that arrived in time into a false timeout (and a duplicate retried request).
 */
export class Deadline {
  // Made on first use of `signal` only: an AbortController per call is a measurable share of a
  // call's cost, and callers that pass `onExpire` need none.
  #controller: AbortController | undefined;
  readonly #onExpire: (() => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #expired = false;

  /** `onExpire` runs when the deadline passes (before `signal` aborts). */
  constructor(ms: number, onExpire?: () => void) {
    this.#onExpire = onExpire;
    this.#arm(ms);
  }

  /** Aborted when the deadline passes. */
  get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    if (this.#expired && !this.#controller.signal.aborted) {
      this.#controller.abort(new DeadlineError());
    }
    return this.#controller.signal;
  }

  /** Whether the deadline passed (as opposed to another cause of an abort). */
  get expired(): boolean {
    return this.#expired;
  }

  /** Stops the timer; call it when the attempt ends either way. */
  clear(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(ms: number): void {
    const delay = Math.min(ms, MAX_TIMER_MS);
    const due = performance.now() + delay;
    this.#timer = setTimeout(() => {
      const late = performance.now() - due;
      if (ms > delay) this.#arm(ms - delay);
      else if (late > BLOCKED_LATENESS_MS) this.#arm(GRACE_MS);
      else {
        this.#expired = true;
        this.#onExpire?.();
        this.#controller?.abort(new DeadlineError());
      }
    }, delay);
  }
}

/** The abort reason of an expired `Deadline`. Its name makes fetch clients call it a timeout. */
export class DeadlineError extends Error {
  constructor() {
    super("the request timed out");
    this.name = "TimeoutError";
  }
}
