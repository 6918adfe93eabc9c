import type { ExtractorKind } from "../parse/extractor.js";
import { HookSlots } from "../parse/hook-slots.js";

/**
 * Where a live refresh's extraction waits its turn: hook processes in one lane, extract
 * functions and built-in formats in the other. Each lane has its own bound, so a file of a
 * format table never waits behind hook processes, however many hang.
 */
export type Lane = "hooks" | "in-process";

export function laneOf(kind: ExtractorKind): Lane {
  return kind === "hook" ? "hooks" : "in-process";
}

/**
 * Extractions in flight at once in the in-process lane. Formats read synchronously on this
 * thread (more at once only interleaves them); async extract functions (an SDK's, answered by
 * its own process) overlap up to this many.
 */
export const IN_PROCESS_LANE_BOUND = 16;

/** What the scheduler knows of one file's job. */
export interface JobSpec {
  file: string;
  /** The state of the file (size and times) the job reads it for. */
  key: string;
  /** The tables (SQL names) the job parses the file for: `idle` waits by them. */
  tables: readonly string[];
  /**
   * Whether a later job for the same file supersedes this one (a live refresh's); a job of a
   * table build reconciling a persisted table is never superseded by a live refresh.
   */
  supersedable: boolean;
}

/** A scheduled job, as its work sees it. */
export interface Job extends JobSpec {
  /** Aborted when a later job for the file supersedes this one, or everything is aborted. */
  readonly signal: AbortSignal;
}

interface Entry extends Job {
  readonly controller: AbortController;
  /** Until its rows commit: the job a newer one for the file supersedes. */
  current: boolean;
  /** Set once its work runs: `idle` waits for it. */
  finished?: Promise<void>;
}

/**
 * The one record of a live refresh's jobs, one per file being parsed: what supersedes a file's
 * older job, what `idle` waits for, what `abortAll` stops, and the lanes jobs take their turn
 * in. The `Refresher` finds changes and commits rows; this decides when each file's extraction
 * runs.
 */
export class ExtractScheduler {
  /** Jobs not finished, by file (a file has more than one while a superseded one winds down). */
  private readonly jobs = new Map<string, Set<Entry>>();
  private readonly lanes = new Map<Lane, HookSlots>();

  constructor(
    /** Hook processes in flight that count against the hook lane (see `HookSlots`). */
    private readonly hookLimit: () => number,
    private readonly inProcessBound = IN_PROCESS_LANE_BOUND,
  ) {}

  /** Made on first use: a statement that parses nothing never asks how many CPUs. */
  private lane(lane: Lane): HookSlots {
    let slots = this.lanes.get(lane);
    if (slots === undefined) {
      slots =
        lane === "hooks"
          ? new HookSlots(Math.max(1, this.hookLimit()))
          : // Work in this process: it never stops counting, as a hung hook does.
            new HookSlots(this.inProcessBound, null, this.inProcessBound);
      this.lanes.set(lane, slots);
    }
    return slots;
  }

  /** The key of the job that parses `file` now and may still be superseded, if any. */
  currentKey(file: string): string | undefined {
    return this.currentOf(file)?.key;
  }

  private currentOf(file: string): Entry | undefined {
    for (const entry of this.jobs.get(file) ?? []) {
      if (entry.current && entry.supersedable) return entry;
    }
    return undefined;
  }

  /** Whether some job for `file` has not finished (current, superseded or retired). */
  has(file: string): boolean {
    return this.jobs.has(file);
  }

  /** The files under the folder `folder` that some job is for (see `has`). */
  filesUnder(folder: string): string[] {
    const prefix = `${folder}/`;
    return [...this.jobs.keys()].filter((file) => file.startsWith(prefix));
  }

  /**
   * Stops every job for `file`, a table's own included: the file is gone from that name, so
   * nothing read there may be written (a refresh under its new name reads it for every table).
   */
  abandon(file: string): void {
    for (const entry of this.jobs.get(file) ?? []) {
      entry.current = false;
      entry.controller.abort();
    }
  }

  /** Stops the job parsing `file` for a live refresh, if any: a newer state is to be read. */
  supersede(file: string): void {
    const entry = this.currentOf(file);
    if (entry === undefined) return;
    entry.current = false;
    entry.controller.abort();
  }

  /**
   * Registers a job for `spec.file`, superseding the file's current one when both are a live
   * refresh's: from now on `currentKey` answers with it. Its work starts with `run`.
   */
  add(spec: JobSpec): Job {
    if (spec.supersedable) this.supersede(spec.file);
    const controller = new AbortController();
    const entry: Entry = { ...spec, controller, signal: controller.signal, current: true };
    let forFile = this.jobs.get(spec.file);
    if (forFile === undefined) {
      forFile = new Set();
      this.jobs.set(spec.file, forFile);
    }
    forFile.add(entry);
    return entry;
  }

  /** Runs `work` for a job `add` made; resolves when it has. `idle` waits for it until then. */
  run(job: Job, work: () => Promise<void>): Promise<void> {
    const entry = job as Entry;
    entry.finished = (async () => {
      try {
        await work();
      } finally {
        this.remove(entry);
      }
    })();
    return entry.finished;
  }

  /**
   * Drops `job`, registered in a commit that then failed (a full disk): it never runs, and a
   * later refresh of its file must not take that file's state as being read already.
   */
  withdraw(job: Job): void {
    const entry = job as Entry;
    entry.current = false;
    entry.controller.abort();
    this.remove(entry);
  }

  private remove(entry: Entry): void {
    const forFile = this.jobs.get(entry.file);
    forFile?.delete(entry);
    if (forFile?.size === 0) this.jobs.delete(entry.file);
  }

  /**
   * Marks `job` as no longer current once its rows are committed (a newer job for its file
   * then supersedes nothing); `false` when it was superseded first, so it must not commit.
   */
  retire(job: Job): boolean {
    const entry = job as Entry;
    if (job.signal.aborted) return false;
    entry.current = false;
    return true;
  }

  /**
   * Waits for a turn in `lane` and resolves with the function that gives it back, or with
   * `null` when the job is superseded first.
   */
  turn(lane: Lane, job: Job): Promise<(() => void) | null> {
    return this.lane(lane).acquire(job.signal);
  }

  /**
   * Resolves once no job runs; with `tables` (SQL names), once no job parses a file for one
   * of them (a statement waits only for the tables it reads).
   */
  async idle(tables?: readonly string[]): Promise<void> {
    const wanted = tables && new Set(tables.map((name) => name.toLowerCase()));
    for (;;) {
      const waiting: Promise<void>[] = [];
      for (const forFile of this.jobs.values()) {
        for (const entry of forFile) {
          if (entry.finished === undefined) continue;
          if (wanted === undefined || entry.tables.some((name) => wanted.has(name.toLowerCase())))
            waiting.push(entry.finished);
        }
      }
      if (waiting.length === 0) return;
      await Promise.allSettled(waiting);
    }
  }

  /** Stops every job: nothing more they found is written. */
  abortAll(): void {
    for (const forFile of this.jobs.values()) {
      for (const entry of forFile) {
        entry.current = false;
        entry.controller.abort();
      }
    }
  }
}
