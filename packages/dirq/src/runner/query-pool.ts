import { availableParallelism } from "node:os";
import type { ConnectionProfile } from "../connection/profile.js";
import { DirqError } from "../errors.js";
import { type BoundArguments, encodeArguments } from "../query/parameters.js";
import {
  type AnswerFormat,
  type Job,
  PooledProcess,
  type QueryAnswer,
  type RetireReason,
} from "./pooled-process.js";
import {
  AnswerKind,
  encodeFrame,
  type Frame,
  NO_WORKER_CALLS,
  RequestKind,
} from "./query-frames.js";

export type { AnswerFormat, QueryAnswer };

const REQUEST_KINDS: Readonly<Record<AnswerFormat, number>> = {
  json: RequestKind.Json,
  table: RequestKind.Table,
  csv: RequestKind.Csv,
};

export interface RunOptions {
  format?: AnswerFormat;
  /** Aborting kills the statement's process (its work really stops) and rejects. */
  signal?: AbortSignal;
  /** When the statement must have answered (ms since the epoch); none: no limit. */
  deadline?: number;
  /**
   * Whether it may call a worker-backed function (`PreparedStatement.callsWorkers`); unknown
   * (the default): the query process finds out itself.
   */
  callsWorkers?: boolean;
  /** Values bound to its parameters (`bindArguments`; JSON answers only). */
  args?: BoundArguments;
}

/** A statement running longer than this no longer counts against the pool's size. */
const SLOW_AFTER_MS = 1_000;
/**
 * A process whose statement has run this long gets nothing new, and the statements queued
 * behind it go to other processes: a quick statement never waits long behind a slow one.
 */
const STALL_AFTER_MS = 50;
/**
 * Statements sent to one process before it answers the first. More than one lets a busy
 * process work through several in a row and the pool send them in one write; the stall rule
 * above bounds what a statement can wait behind.
 */
const PIPELINE_DEPTH = 8;
/**
 * An idle process beyond the pool's size (one started for a burst of slow statements) ends
 * once it has had nothing to do for this long: a burst leaves no crowd of idle processes
 * holding memory, and one that follows soon after still finds them.
 */
const SURPLUS_IDLE_MS = 1_500;

export interface QueryPoolOptions {
  /** The shared index (WAL) the processes read. */
  databasePath: string;
  /** The 30-second limit: counted from a request's arrival, queueing included. */
  timeoutMs: number;
  /** Answers larger than this (bytes of JSON) are refused with a `tooLarge` error. */
  maxAnswerBytes: number;
  /** Processes for quick statements; default one per core, at least two. */
  maxProcesses?: number;
  /** Extensions and worker functions the processes' connections load (the index's own). */
  profile?: ConnectionProfile;
  /**
   * Whether the processes keep this process's event loop alive (default `true`). The SDK says
   * `false`: a script must end by itself, and holds the loop itself while a statement is out.
   */
  keepAlive?: boolean;
}

function timeoutError(timeoutMs: number): DirqError {
  const seconds = Math.round(timeoutMs / 1000);
  return new DirqError(
    "QUERY_TIMEOUT",
    `query exceeded the ${seconds}-second timeout and was stopped; narrow it (WHERE, LIMIT) and try again`,
  );
}

/** A statement the pool can no longer run: the server is stopping (not an internal fault). */
export function stoppingError(): DirqError {
  return new DirqError("SERVER_STOPPING", "the server is shutting down; try again later");
}

function cancelledError(): DirqError {
  return new DirqError("QUERY_CANCELLED", "interrupted: the statement was stopped");
}

/**
 * Query processes over the shared index. Statements wait in the pool and go to the process
 * with the fewest outstanding (up to PIPELINE_DEPTH each; a new process is started when every
 * one is full, up to a limit). A statement that outlives its deadline is stopped by killing
 * its process, which really stops its work; the statements queued behind it go elsewhere.
 * Statements that have run for a while stop counting against the limit (up to a hard cap),
 * so a few runaway statements never starve quick ones. A process that produced a large
 * answer leaves after it, so its memory goes back to the system.
 */
export class QueryPool {
  private readonly runners = new Set<PooledProcess>();
  private readonly waiting: Job[] = [];
  /**
   * The statements out for each caller's signal, stopped together when it aborts: one
   * listener per signal (the server has one per connection), not one per statement.
   */
  private readonly bySignal = new WeakMap<AbortSignal, Set<Job>>();
  private nextId = 1;
  private closed = false;
  private flushScheduled = false;
  private watch: NodeJS.Timeout | null = null;
  private shrink: NodeJS.Timeout | null = null;
  readonly maxProcesses: number;
  private readonly hardCap: number;

  constructor(private readonly options: QueryPoolOptions) {
    // Statements are CPU work (the index is in the page cache): more processes than cores
    // only take turns on them, with fewer answers a second and a longer tail.
    this.maxProcesses = options.maxProcesses ?? Math.max(2, availableParallelism());
    this.hardCap = 4 * Math.max(this.maxProcesses, 4);
  }

  /**
   * Starts processes ahead of the first queries, so they pay no start-up: up to `count` in all
   * (one by default), never more than the pool's size.
   */
  warm(count = 1): void {
    const wanted = Math.min(count, this.maxProcesses);
    while (this.runners.size < wanted && !this.closed) this.start();
  }

  private start(): PooledProcess {
    const { databasePath, maxAnswerBytes, profile, keepAlive } = this.options;
    const runner = new PooledProcess(
      { databasePath, maxAnswerBytes, profile, keepAlive },
      {
        answered: (from, frame) => this.answered(from, frame),
        ready: () => this.pump(),
        lost: (from) => this.lost(from),
      },
    );
    this.runners.add(runner);
    return runner;
  }

  /** Takes a process out of the pool (see `RetireReason`); the statements it held. */
  private retire(runner: PooledProcess, reason: RetireReason): Job[] {
    this.runners.delete(runner);
    return runner.retire(reason);
  }

  /** A process went away: its running statement fails, the ones behind it go elsewhere. */
  private lost(runner: PooledProcess): void {
    if (runner.gone) {
      this.runners.delete(runner);
      return;
    }
    const ready = runner.ready;
    const [head, ...rest] = this.retire(runner, "lost");
    // One that dies before it is up holds no statement: the first waiting one fails in its
    // place, as it would have had it been sent there, so a process that cannot start is not
    // started again and again for the same statement.
    if (!ready) {
      const first = this.waiting.shift();
      if (first !== undefined) {
        first.settle();
        first.reject(new Error("a query process exited before it could run a statement"));
      }
    }
    this.requeue(rest);
    if (head !== undefined) {
      head.settle();
      head.reject(new Error("a query process exited while running a statement"));
    }
    this.pump();
  }

  /** Jobs back to the front of the queue, in their order. */
  private requeue(jobs: Job[]): void {
    for (const job of jobs) job.runner = null;
    this.waiting.unshift(...jobs);
  }

  private answered(runner: PooledProcess, frame: Frame): void {
    runner.headSince = Date.now();
    const at = runner.jobs.findIndex((job) => job.id === frame.id);
    // Not found: a statement stopped before its answer came (it was cancelled or expired).
    const job = at === -1 ? undefined : runner.jobs.splice(at, 1)[0];
    if (runner.leaving && runner.jobs.length === 0) this.retire(runner, "held a large answer");
    if (job !== undefined) {
      job.settle();
      job.resolve(answerOf(job, frame));
    }
    this.pump();
  }

  /**
   * Busy processes whose statement is still young, and processes still starting: the ones the
   * size limit counts.
   */
  private quickBusy(now: number): number {
    let count = 0;
    for (const runner of this.runners) {
      if (runner.starting || (runner.jobs.length > 0 && !runner.busyFor(now, SLOW_AFTER_MS)))
        count++;
    }
    return count;
  }

  private canStart(now: number): boolean {
    if (this.runners.size >= this.hardCap) return false;
    if (this.runners.size < this.maxProcesses) return true;
    return this.quickBusy(now) < this.maxProcesses;
  }

  /** The process to send the next statement to: the least loaded one that is not stalled. */
  private pick(now: number): PooledProcess | null {
    let best: PooledProcess | null = null;
    for (const runner of this.runners) {
      if (!runner.ready || runner.leaving || runner.jobs.length >= PIPELINE_DEPTH) continue;
      if (runner.busyFor(now, STALL_AFTER_MS)) continue;
      if (best === null || runner.jobs.length < best.jobs.length) best = runner;
      if (best.jobs.length === 0) break;
    }
    return best;
  }

  /** Sends waiting statements to processes while any can take one. */
  private pump(): void {
    const now = Date.now();
    while (this.waiting.length > 0 && !this.closed) {
      const runner = this.pick(now);
      if (runner === null) {
        this.startFor(now);
        break;
      }
      const job = this.waiting.shift() as Job;
      const idle = runner.jobs.length === 0;
      if (idle) runner.headSince = now;
      runner.jobs.push(job);
      job.runner = runner;
      const frame =
        job.args === null
          ? encodeFrame(job.id, REQUEST_KINDS[job.format], job.sql, job.flags)
          : encodeFrame(
              job.id,
              RequestKind.JsonBound,
              `${encodeArguments(job.args)}\n${job.sql}`,
              job.flags,
            );
      // An idle process gets its statement at once: waiting for the end of the turn would put
      // a whole slice of a table build (which yields only every few milliseconds) in between.
      // A busy one cannot start it before its current one is done anyway: it gets the
      // statements of this turn together.
      if (idle && !runner.hasQueued) runner.write(frame);
      else this.send(runner, frame);
    }
    this.watchStalls();
    this.watchSurplus();
  }

  /**
   * Starts a process for statements no process can take now, unless one is starting already.
   * The statements stay in the pool meanwhile and go to whichever process is free first: one
   * that answers, or the one that comes up (which then takes several, as any idle one does).
   */
  private startFor(now: number): void {
    for (const runner of this.runners) if (runner.starting) return;
    if (this.canStart(now)) this.start();
  }

  /** While there are more processes than the pool's size, looks for surplus ones to retire. */
  private watchSurplus(): void {
    if (this.shrink !== null || this.closed || this.runners.size <= this.maxProcesses) return;
    this.shrink = setTimeout(() => {
      this.shrink = null;
      this.retireSurplus(Date.now());
      this.watchSurplus();
    }, SURPLUS_IDLE_MS / 2);
    this.shrink.unref();
  }

  /**
   * Ends idle processes beyond the pool's size. Counted as `canStart` counts: a process on a
   * statement that has run for a while is not, so idle ones stay ready for quick statements
   * while runaways run.
   */
  private retireSurplus(now: number): void {
    const counted = (runner: PooledProcess) =>
      !runner.leaving && !runner.busyFor(now, SLOW_AFTER_MS);
    let surplus = [...this.runners].filter(counted).length - this.maxProcesses;
    for (const runner of [...this.runners]) {
      if (surplus <= 0) break;
      if (!runner.ready || runner.leaving || runner.jobs.length > 0) continue;
      if (now - runner.headSince < SURPLUS_IDLE_MS) continue;
      this.retire(runner, "surplus");
      surplus--;
    }
  }

  /** Queues a frame; every frame of this event-loop turn goes out in one write per process. */
  private send(runner: PooledProcess, frame: Buffer): void {
    runner.queue(frame);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      for (const each of this.runners) each.flush();
    });
  }

  /**
   * While statements are out, looks every little while for processes stuck on a slow one:
   * what waits behind it goes back to the pool (and is cancelled there), and the pool may
   * start a process for it.
   */
  private watchStalls(): void {
    const busy = this.waiting.length > 0 || [...this.runners].some((r) => r.jobs.length > 0);
    if (!busy || this.closed) {
      if (this.watch !== null) clearInterval(this.watch);
      this.watch = null;
      return;
    }
    if (this.watch !== null) return;
    this.watch = setInterval(() => {
      const now = Date.now();
      for (const runner of this.runners) {
        if (runner.jobs.length < 2 || !runner.busyFor(now, STALL_AFTER_MS)) continue;
        const behind = runner.jobs.splice(1);
        for (const job of behind) this.send(runner, encodeFrame(job.id, RequestKind.Cancel));
        this.requeue(behind);
      }
      this.pump();
    }, STALL_AFTER_MS / 2);
    this.watch.unref();
  }

  /** Stops a statement: dropped from the pool, cancelled in its process, or its process killed. */
  private stop(job: Job, error: DirqError): void {
    job.settle();
    const runner = job.runner;
    if (runner === null) {
      const at = this.waiting.indexOf(job);
      if (at !== -1) this.waiting.splice(at, 1);
    } else if (runner.jobs[0] === job) {
      // It is running: only killing its process stops it. The statements sent behind it have
      // not started: they go to another process (left to `lost`, the first of them would fail
      // as if it had been the one running).
      runner.jobs.shift();
      this.requeue(runner.jobs.splice(0));
      this.lost(runner);
    } else {
      runner.jobs.splice(runner.jobs.indexOf(job), 1);
      this.send(runner, encodeFrame(job.id, RequestKind.Cancel));
    }
    job.reject(error);
  }

  /**
   * Runs a checked statement. Rejects with a `QUERY_TIMEOUT` DirqError at `options.deadline`
   * (ms since the epoch; none: no limit, as in the REPL), whether the statement was still
   * queued or running, and with a `QUERY_CANCELLED` one when `options.signal` aborts.
   */
  run(sql: string, options: RunOptions = {}): Promise<QueryAnswer> {
    if (this.closed) return Promise.reject(stoppingError());
    const { signal, format = "json", deadline } = options;
    const flags = options.callsWorkers === false ? NO_WORKER_CALLS : 0;
    if (signal?.aborted) return Promise.reject(cancelledError());
    return new Promise<QueryAnswer>((resolve, reject) => {
      let timer: NodeJS.Timeout | null = null;
      const watched = signal === undefined ? null : this.jobsOf(signal);
      const job: Job = {
        id: this.nextId++,
        sql,
        format,
        args: options.args ?? null,
        flags,
        resolve,
        reject,
        runner: null,
        settle: () => {
          if (timer !== null) clearTimeout(timer);
          watched?.delete(job);
        },
      };
      if (this.nextId > 0xffff_ffff) this.nextId = 1;
      if (deadline !== undefined) {
        const wait = Math.max(0, deadline - Date.now());
        timer = setTimeout(() => this.stop(job, timeoutError(this.options.timeoutMs)), wait);
      }
      watched?.add(job);
      this.waiting.push(job);
      this.pump();
    });
  }

  /** The statements out for `signal`, which it stops when it aborts. */
  private jobsOf(signal: AbortSignal): Set<Job> {
    let jobs = this.bySignal.get(signal);
    if (jobs === undefined) {
      const out = new Set<Job>();
      signal.addEventListener(
        "abort",
        () => {
          for (const job of [...out]) this.stop(job, cancelledError());
        },
        { once: true },
      );
      this.bySignal.set(signal, out);
      jobs = out;
    }
    return jobs;
  }

  /** Stops every query process; statements still out fail. */
  close(): void {
    this.closed = true;
    if (this.watch !== null) clearInterval(this.watch);
    if (this.shrink !== null) clearTimeout(this.shrink);
    const jobs = [...this.waiting];
    this.waiting.length = 0;
    for (const runner of [...this.runners]) jobs.push(...this.retire(runner, "pool closed"));
    for (const job of jobs) {
      job.settle();
      job.reject(stoppingError());
    }
  }
}

function answerOf(job: Job, frame: Frame): QueryAnswer {
  if (frame.kind === AnswerKind.Body) {
    // A view into the read chunk: whoever keeps it (the result cache) takes its own copy. A
    // table stays bytes too: it may be longer than the longest string.
    return { ok: true, body: frame.payload };
  }
  const error = JSON.parse(frame.payload.toString("utf8")) as {
    message?: string;
    user?: boolean;
    tooLarge?: boolean;
  };
  return {
    ok: false,
    message: error.message ?? "unknown error",
    user: error.user === true,
    tooLarge: error.tooLarge === true,
  };
}
