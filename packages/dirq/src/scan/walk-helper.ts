import { HelperThread, type HelperThreadData } from "./helper-thread.js";
import type { PathSelection } from "./path-selection.js";
import type { ResumePoint, SkippedPath } from "./walk.js";

/**
 * A thread that walks the second part of a split walk (see `SelectionWalker.split`) for a fill
 * that writes paths only (`count(*)`, `SELECT path`): there directory reading is nearly all
 * the work, and one thread reads while the other also inserts. It posts its files as one JSON
 * array per batch, which SQLite's `json_each` reads as it is: the calling thread only inserts
 * them. One message per batch of hundreds of files (a round trip between threads costs as much
 * as listing many files, FACTS.md). It waits when the caller falls behind, so only a few
 * batches are ever in flight.
 */

/**
 * Slots of the counters shared with the thread: 1 once it listens; the batches it posted, and
 * the ones the caller took.
 */
export const Slot = { ready: 0, posted: 1, taken: 2 } as const;
/** Batches in flight at most before the thread waits for the caller. */
export const MAX_IN_FLIGHT = 16;

/** The walk options that cross to the thread (all but the callbacks). */
export interface WalkHelperOptions {
  root: string;
  selection: PathSelection;
  useGitignore: boolean;
  extraIgnores?: readonly string[];
}

export interface WalkHelperData extends HelperThreadData {
  options: WalkHelperOptions;
  /** Sign each folder listed (for a persisted index), with the walk's start time (ms). */
  signFoldersSince: number | null;
}

/** A batch of files: their paths as a JSON array. */
export interface WalkHelperBatch {
  kind: "batch";
  json: string;
  count: number;
}

/** The thread's part is over. */
export interface WalkHelperEnd {
  kind: "end";
  skipped: SkippedPath[];
  /** Folder signatures, when asked (key, signature). */
  folders: [string, string][];
}

export type WalkHelperAnswer = WalkHelperBatch | WalkHelperEnd;

export class WalkHelper {
  private readonly thread = new HelperThread(
    new URL("./walk-helper-thread.js", import.meta.url),
    3,
    Slot.ready,
  );
  private readonly counters = this.thread.counters;
  private taken = 0;
  /** Set when the thread's part is over. */
  end: WalkHelperEnd | null = null;

  constructor(
    private readonly options: WalkHelperOptions,
    private readonly signFoldersSince: number | null,
  ) {}

  /** Starts the thread (once). It can be given work when `ready`. */
  start(): void {
    this.thread.start({ options: this.options, signFoldersSince: this.signFoldersSince });
  }

  /** Whether the thread is up and waiting for its part. */
  get ready(): boolean {
    return this.thread.ready;
  }

  /** Whether the thread failed or was closed: its part is the caller's to walk. */
  get failed(): boolean {
    return this.thread.failed;
  }

  /** Gives the thread its part of the walk (`null`: nothing, it ends at once). */
  give(resume: ResumePoint | null): void {
    this.thread.post(resume);
  }

  /** The batches that have arrived, in order (the end, when it arrives, sets `end`). */
  take(): WalkHelperBatch[] {
    const batches: WalkHelperBatch[] = [];
    for (;;) {
      const answer = this.thread.nextAnswer() as WalkHelperAnswer | undefined;
      if (answer === undefined) break;
      if (answer.kind === "end") this.end = answer;
      else batches.push(answer);
      this.taken++;
    }
    if (batches.length > 0) {
      Atomics.store(this.counters, Slot.taken, this.taken);
      Atomics.notify(this.counters, Slot.taken);
    }
    return batches;
  }

  /** Blocks until the thread posts again (unless it has), at most `maxMs`. */
  wait(maxMs: number): void {
    if (this.thread.failed || this.end !== null) return;
    Atomics.wait(this.counters, Slot.posted, this.taken, maxMs);
  }

  /** Stops the thread, if one was started. */
  async close(): Promise<void> {
    await this.thread.close();
  }
}
