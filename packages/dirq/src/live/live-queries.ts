import { DirqError } from "../errors.js";
import {
  HistoryBudget,
  LiveQuery,
  type LiveFrame,
  type LiveQueryLimits,
  type LiveQueryRequest,
} from "./live-query.js";
import type { LiveSession } from "./live-session.js";
import { DiffThread, LARGE_DIFF_BYTES } from "./large-diff.js";
import { HISTORY_MS } from "./event-history.js";
import { IdleAlarm } from "./waiters.js";

export type { LiveFrame, LiveQueryLimits, LiveQueryRequest };

/** Diff frames a live query keeps for clients that resume. */
export const LIVE_HISTORY_FRAMES = 1024;
/** Bytes of diff frames a live query keeps. */
export const LIVE_HISTORY_BYTES = 16 * 1024 * 1024;
/** How long a live query keeps a frame: the resume window, as `/events` has (`HISTORY_MS`). */
export const LIVE_HISTORY_MS = HISTORY_MS;
/** Characters of frames the histories of all live queries keep together, by default. */
export const LIVE_HISTORY_TOTAL_BYTES = 32 * 1024 * 1024;
/**
 * How long a live query nobody subscribes to any more goes on: a client that reconnects
 * meanwhile resumes from its history instead of getting a new snapshot.
 */
export const LIVE_LINGER_MS = 30_000;

export interface LiveQueriesOptions extends Partial<Omit<LiveQueryLimits, "historyBudget">> {
  timeoutMs: number;
  /** See `LIVE_LINGER_MS`. */
  lingerMs?: number;
  /** See `LIVE_HISTORY_TOTAL_BYTES`. */
  historyTotalBytes?: number;
}

interface Entry {
  request: LiveQueryRequest;
  query: Promise<LiveQuery>;
  /** The query once its first answer is in. */
  started: LiveQuery | null;
  subscribers: number;
  linger: NodeJS.Timeout | null;
}

/** One running live query, as `LiveQueries.stats` describes it. */
export interface LiveQueryStats {
  sql: string;
  params: LiveQueryRequest["params"] | null;
  key: readonly string[] | null;
  incremental: boolean;
  /** Subscriptions open now (0 while it lingers). */
  subscribers: number;
  /** Evaluations after its first answer. */
  runs: number;
  /** Frames it made after its first answer (diffs, errors, new snapshots). */
  frames: number;
  /** Bytes (UTF-8) of the frames' data it keeps for clients that resume. */
  historyChars: number;
  /** Frames its history dropped for its bounds so far (0: not full yet). */
  historyDropped: number;
  /** Bytes of the blocks its history's frames lie in (the memory it holds). */
  historyHeldBytes: number;
  /** CPU milliseconds of its file-by-file runs on the server's main thread (0 re-run whole). */
  byFileCpuMs: number;
  /** Whether a diff to a new answer is being made now (see `LiveQuery.diffing`). */
  diffing: boolean;
}

/** `<run>-<n>`: the live query's run and the number of the last frame read. */
function parseId(id: string | undefined): { run: string; n: number } | null {
  if (id === undefined) return null;
  const dash = id.lastIndexOf("-");
  const digits = id.slice(dash + 1);
  if (dash === -1 || !/^\d{1,15}$/.test(digits)) return null;
  return { run: id.slice(0, dash), n: Number(digits) };
}

/**
 * One client's place in a live query: it reads the frames after the last one it read, or a
 * new snapshot when it starts, resumes too late, or falls behind the history. It holds a
 * number, not frames: memory is the query's history's, however slowly it reads.
 */
export class LiveSubscription {
  private after: number;
  private needsSnapshot: boolean;
  private first: LiveFrame | null;
  private isClosed = false;
  /** The wait for the next frame's time limit, made once (see `IdleAlarm`). */
  private alarm: IdleAlarm | null = null;
  private alarmMs = 0;

  constructor(
    readonly query: LiveQuery,
    lastEventId: string | undefined,
    private readonly onClose: () => void,
  ) {
    const resume = parseId(lastEventId);
    if (resume !== null && resume.run === query.run && query.canResumeAfter(resume.n)) {
      this.after = resume.n;
      this.needsSnapshot = false;
      this.first = query.ready(resume.n);
    } else {
      this.after = query.head;
      this.needsSnapshot = true;
      this.first = null;
    }
  }

  get closed(): boolean {
    return this.isClosed || this.query.closed;
  }

  /**
   * The next frame; `null` when `idleMs` passed without one (time for a keep-alive);
   * `undefined` once closed.
   */
  async next(idleMs: number): Promise<LiveFrame | null | undefined> {
    let frame = this.take();
    if (frame === null && !this.closed) {
      if (this.alarm === null || this.alarmMs !== idleMs) {
        this.alarm?.stop();
        this.alarm = new IdleAlarm(idleMs);
        this.alarmMs = idleMs;
      }
      await this.query.waitForFrame(this.alarm);
      frame = this.take();
    }
    if (!this.closed) return frame;
    this.alarm?.stop();
    return undefined;
  }

  /** The next frame if one is there now, else `null` (closed too), without waiting. */
  poll(): LiveFrame | null {
    return this.closed ? null : this.take();
  }

  private take(): LiveFrame | null {
    if (this.first !== null) {
      const first = this.first;
      this.first = null;
      return first;
    }
    if (!this.needsSnapshot && this.after < this.query.head) {
      const frame = this.query.frameAfter(this.after);
      if (frame !== undefined) {
        this.after++;
        return frame;
      }
      // Fell behind the history: what it missed is gone, the whole answer replaces it.
      this.needsSnapshot = true;
    }
    if (!this.needsSnapshot) return null;
    this.needsSnapshot = false;
    this.after = this.query.head;
    return this.query.snapshot();
  }

  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.alarm?.stop();
    this.onClose();
    this.query.wake();
  }
}

/**
 * The live queries of one session: one evaluator per distinct statement, parameter values,
 * key and way, shared by every subscriber; it stops `lingerMs` after its last subscriber left.
 */
export class LiveQueries {
  private readonly entries = new Map<string, Entry>();
  private readonly limits: LiveQueryLimits;
  private readonly lingerMs: number;
  /** Cuts and diffs the large answers of every live query here (started at the first one). */
  private readonly diffThread = new DiffThread();
  private isClosed = false;

  constructor(
    private readonly session: LiveSession,
    options: LiveQueriesOptions,
  ) {
    this.limits = {
      timeoutMs: options.timeoutMs,
      historyFrames: options.historyFrames ?? LIVE_HISTORY_FRAMES,
      historyBytes: options.historyBytes ?? LIVE_HISTORY_BYTES,
      historyMs: options.historyMs ?? LIVE_HISTORY_MS,
      diffThreadBytes: options.diffThreadBytes ?? LARGE_DIFF_BYTES,
      historyBudget: new HistoryBudget(options.historyTotalBytes ?? LIVE_HISTORY_TOTAL_BYTES),
      measureCpu: options.measureCpu ?? false,
    };
    this.lingerMs = options.lingerMs ?? LIVE_LINGER_MS;
  }

  /** What bounds each live query's history, and all of them together. */
  get historyBounds(): { frames: number; bytes: number; ms: number; totalBytes: number } {
    const { historyFrames, historyBytes, historyMs, historyBudget } = this.limits;
    return {
      frames: historyFrames,
      bytes: historyBytes,
      ms: historyMs,
      totalBytes: historyBudget.chars,
    };
  }

  /** Live queries running now (distinct statements, values and keys). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * What each running live query costs: how many subscribers share it and how many times it
   * evaluated again since its first answer. A benchmark's way to see that a commit runs only
   * the queries that read its tables, and that subscribers share one evaluator.
   */
  stats(): LiveQueryStats[] {
    const stats: LiveQueryStats[] = [];
    for (const entry of this.entries.values()) {
      const query = entry.started;
      if (query === null) continue;
      const { sql, params, key } = entry.request;
      stats.push({
        sql,
        params: params ?? null,
        key: key ?? null,
        incremental: query.incremental,
        subscribers: entry.subscribers,
        runs: query.runs,
        frames: query.head,
        historyChars: query.historyChars,
        historyDropped: query.historyDropped,
        historyHeldBytes: query.historyHeldBytes,
        byFileCpuMs: query.byFileCpuMs,
        diffing: query.diffing,
      });
    }
    return stats;
  }

  /**
   * A subscription to the live query `request` asks for, from a new snapshot, or after the
   * frame `lastEventId` names when its query still keeps what followed. Rejects with a
   * `DirqError` when the statement cannot run (its first run failed, a key column is not in
   * its answer), as `POST /query` would.
   */
  async open(request: LiveQueryRequest, lastEventId?: string): Promise<LiveSubscription> {
    if (this.isClosed)
      throw new DirqError("INDEX_CLOSED", "the index is closing: no new live query");
    const name = JSON.stringify([
      request.sql,
      request.params ?? null,
      request.key ?? null,
      request.incremental !== false,
    ]);
    let entry = this.entries.get(name);
    if (entry === undefined) {
      const started = LiveQuery.start(this.session, request, this.limits, this.diffThread);
      const made: Entry = { request, query: started, started: null, subscribers: 0, linger: null };
      entry = made;
      this.entries.set(name, made);
      started.then(
        (query) => (made.started = query),
        () => {
          if (this.entries.get(name) === made) this.entries.delete(name);
        },
      );
    }
    entry.subscribers++;
    if (entry.linger !== null) clearTimeout(entry.linger);
    entry.linger = null;
    const held = entry;
    let query: LiveQuery;
    try {
      query = await held.query;
    } catch (error) {
      held.subscribers--;
      throw error;
    }
    return new LiveSubscription(query, lastEventId, () => this.left(name, held));
  }

  private left(name: string, entry: Entry): void {
    entry.subscribers--;
    if (entry.subscribers > 0 || this.isClosed) return;
    entry.linger = setTimeout(() => {
      if (entry.subscribers > 0 || this.entries.get(name) !== entry) return;
      this.entries.delete(name);
      void entry.query.then((query) => query.close());
    }, this.lingerMs);
    entry.linger.unref();
  }

  /** Stops every live query (their subscriptions end) and the diff thread. */
  close(): void {
    this.isClosed = true;
    this.diffThread.close();
    for (const entry of this.entries.values()) {
      if (entry.linger !== null) clearTimeout(entry.linger);
      void entry.query.then(
        (query) => query.close(),
        () => undefined,
      );
    }
    this.entries.clear();
  }
}
