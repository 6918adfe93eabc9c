import { HelperThread, type HelperThreadData } from "./helper-thread.js";

/**
 * A thread that stats batches of files for a walk (see stat-helper-thread.ts): a stat is a
 * system call per file, most of the cost of a fill that reads stat columns, and this machine
 * has two cores. Requests are answered in order. Answers are read synchronously
 * (`receiveMessageOnPort`), so a synchronous loop sees them without turning the event loop,
 * and the caller can block on a shared counter for the next one. One message per batch of
 * hundreds of files: a round trip between threads costs as much as many stats (FACTS.md), too
 * much per file or per folder.
 */

/**
 * Slots of the counters shared with the helper: requests answered, 1 once the helper listens,
 * then from `claims` on one claim slot per request, in a ring of `CLAIM_SLOTS`: whichever
 * thread claims a request first (0 → 1) stats it; the helper answers a request the caller
 * took back with `stats: null`. Requests posted and not yet answered stay fewer than the
 * ring's size (see BatchStatter).
 */
export const Slot = { answered: 0, ready: 1, claims: 2 } as const;
export const CLAIM_SLOTS = 64;

/** What the helper thread is given. */
export interface HelperData extends HelperThreadData {
  root: string;
}

/** Stat a batch: paths joined by NUL (no file name holds one), one string to copy. */
export interface StatRequest {
  id: number;
  paths: string;
  rawPaths?: ReadonlyMap<string, Uint8Array>;
}

export interface StatAnswer {
  id: number;
  /** `null`: the caller took the request back (`claim`) before the helper began it. */
  stats: Float64Array | null;
}

/** Claims request `id` for the thread that calls it: `false` when the other one has. */
export function claimRequest(counters: Int32Array, id: number): boolean {
  return Atomics.compareExchange(counters, Slot.claims + (id % CLAIM_SLOTS), 0, 1) === 0;
}

export class StatHelper {
  private readonly thread = new HelperThread(
    new URL("./stat-helper-thread.js", import.meta.url),
    Slot.claims + CLAIM_SLOTS,
    Slot.ready,
  );
  private readonly counters = this.thread.counters;
  private nextId = 0;
  private readonly waiting = new Map<number, (answer: StatAnswer) => void>();

  constructor(private readonly root: string) {}

  /** Starts the thread (once). It takes requests when `ready`. */
  start(): void {
    this.thread.start({ root: this.root });
  }

  /** Whether the thread is up and taking requests. */
  get ready(): boolean {
    return this.thread.ready;
  }

  /** Whether the thread failed or was closed: what it was asked and has not answered never will be. */
  get failed(): boolean {
    return this.thread.failed;
  }

  /** Requests the thread has answered so far. */
  get answered(): number {
    return Atomics.load(this.counters, Slot.answered);
  }

  /** Requests sent and not yet answered. */
  get unanswered(): number {
    return this.waiting.size;
  }

  /**
   * Sends a request; `onAnswer` runs inside a later `receive()` or `wait()`. Returns its id,
   * for `claim`. At most CLAIM_SLOTS - 1 requests may be unanswered at once.
   */
  ask(request: Omit<StatRequest, "id">, onAnswer: (answer: StatAnswer) => void): number {
    const id = this.nextId++;
    this.waiting.set(id, onAnswer);
    Atomics.store(this.counters, Slot.claims + (id % CLAIM_SLOTS), 0);
    this.thread.post({ ...request, id });
    return id;
  }

  /**
   * Takes request `id` back, to do it on the calling thread: `true` unless the helper has
   * begun it. Its answer still comes, with `stats: null`.
   */
  claim(id: number): boolean {
    return claimRequest(this.counters, id);
  }

  /** Takes in every answer that has arrived; returns how many. */
  receive(): number {
    for (let count = 0; ; count++) {
      const answer = this.thread.nextAnswer() as StatAnswer | undefined;
      if (answer === undefined) return count;
      const onAnswer = this.waiting.get(answer.id);
      this.waiting.delete(answer.id);
      onAnswer?.(answer);
    }
  }

  /**
   * Blocks the thread until another answer arrives (unless one already has), at most `maxMs`
   * (an answer is one batch's stats: it comes soon), then takes in what arrived. A caller on
   * the main thread turns the event loop between waits, which is also where a failed helper is
   * noticed.
   */
  wait(maxMs: number): void {
    const seen = Atomics.load(this.counters, Slot.answered);
    if (this.receive() > 0 || this.waiting.size === 0 || this.thread.failed) return;
    Atomics.wait(this.counters, Slot.answered, seen, maxMs);
    this.receive();
  }

  /** Stops the thread, if one was started; what it had not answered is the caller's to do. */
  async close(): Promise<void> {
    this.waiting.clear();
    await this.thread.close();
  }
}
