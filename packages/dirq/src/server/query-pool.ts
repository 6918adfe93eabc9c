import { type ChildProcess, fork } from "node:child_process";
import { availableParallelism } from "node:os";
import { type ConnectionProfile, EMPTY_PROFILE } from "../connection/profile.js";
import { DirqError } from "../errors.js";

/** What a query process answers. */
export type QueryAnswer =
  /** `body`: JSON answers as UTF-8 bytes (written to the socket as they are), tables as text. */
  | { ok: true; body: string | Uint8Array }
  | { ok: false; message: string; user: boolean; tooLarge?: boolean };

interface QueryReply {
  id: number;
  body?: string | Uint8Array;
  error?: string;
  user?: boolean;
  tooLarge?: boolean;
  /** The process leaves after this reply (it held a large answer): do not reuse it. */
  retiring?: boolean;
}

/** How a statement's answer is shaped: the JSON body, or an aligned text table. */
export type AnswerFormat = "json" | "table";

export interface RunOptions {
  format?: AnswerFormat;
  /** Aborting kills the statement's process (its work really stops) and rejects. */
  signal?: AbortSignal;
  /** When the statement must have answered (ms since the epoch); none: no limit. */
  deadline?: number;
}

interface Runner {
  child: ChildProcess;
  busy: boolean;
  /** When its current statement started (ms), for telling slow statements from quick ones. */
  since: number;
}

/** A statement running longer than this no longer counts against the pool's size. */
const SLOW_AFTER_MS = 1_000;

export interface QueryPoolOptions {
  /** The shared index (WAL) the processes read. */
  databasePath: string;
  /** The 30-second limit: counted from a request's arrival, queueing included. */
  timeoutMs: number;
  /** Answers larger than this (bytes of JSON) are refused with a `tooLarge` error. */
  maxAnswerBytes: number;
  /** Processes for quick statements; default max(4, 2 × cores). */
  maxProcesses?: number;
  /** Extensions and worker functions the processes' connections load (the index's own). */
  profile?: ConnectionProfile;
}

function timeoutError(timeoutMs: number): DirqError {
  const seconds = Math.round(timeoutMs / 1000);
  return new DirqError(
    "QUERY_TIMEOUT",
    `query exceeded the ${seconds}-second timeout and was stopped; narrow it (WHERE, LIMIT) and try again`,
  );
}

/**
 * Query processes over the shared index. A statement runs in an idle process (a new one is
 * started when all are busy, up to a limit); one that outlives the timeout is killed, which
 * really stops its work, and its place is taken by a fresh process on demand. Statements that
 * have run for a while stop counting against the limit (up to a hard cap), so a few runaway
 * statements never starve quick ones. A process that produced a large answer leaves after it,
 * so its memory goes back to the system.
 */
export class QueryPool {
  private readonly runners = new Set<Runner>();
  private readonly waiting: ((runner: Runner) => void)[] = [];
  private nextId = 0;
  private closed = false;
  readonly maxProcesses: number;
  private readonly hardCap: number;

  constructor(private readonly options: QueryPoolOptions) {
    this.maxProcesses = options.maxProcesses ?? Math.max(4, 2 * availableParallelism());
    this.hardCap = 4 * this.maxProcesses;
  }

  /** Starts one process ahead of the first query, so it pays no start-up. */
  warm(): void {
    if (this.runners.size === 0) this.release(this.start());
  }

  private start(): Runner {
    const args = [
      this.options.databasePath,
      String(this.options.maxAnswerBytes),
      JSON.stringify(this.options.profile ?? EMPTY_PROFILE),
    ];
    const child = fork(new URL("./query-process.js", import.meta.url), args, {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      // Its own process group: killing the group also stops the worker processes of its
      // worker-backed functions, even one that hangs.
      detached: true,
      // Structured clone moves large result strings faster than JSON-in-JSON.
      serialization: "advanced",
    });
    const runner: Runner = { child, busy: true, since: Date.now() };
    this.runners.add(runner);
    child.once("exit", () => this.runners.delete(runner));
    // A send to a process that just died fails with EPIPE; run() reports it per query.
    child.on("error", () => {});
    return runner;
  }

  /** Busy processes whose statement is still young: the ones the size limit counts. */
  private quickBusy(now: number): number {
    let count = 0;
    for (const runner of this.runners) {
      if (runner.busy && now - runner.since < SLOW_AFTER_MS) count++;
    }
    return count;
  }

  private canStart(): boolean {
    if (this.runners.size >= this.hardCap) return false;
    if (this.runners.size < this.maxProcesses) return true;
    return this.quickBusy(Date.now()) < this.maxProcesses;
  }

  private acquire(): { runner: Runner } | { wait: Promise<Runner>; cancel: () => void } {
    for (const runner of this.runners) {
      if (!runner.busy) {
        runner.busy = true;
        return { runner };
      }
    }
    if (this.canStart()) return { runner: this.start() };
    let resolveWait!: (runner: Runner) => void;
    const wait = new Promise<Runner>((resolve) => {
      resolveWait = resolve;
    });
    this.waiting.push(resolveWait);
    // Quick statements should not wait behind slow ones for long: look again once the busy
    // ones may have become "slow".
    const retry = setTimeout(() => this.admitWaiting(), SLOW_AFTER_MS);
    retry.unref();
    return {
      wait,
      cancel: () => {
        clearTimeout(retry);
        const at = this.waiting.indexOf(resolveWait);
        if (at !== -1) this.waiting.splice(at, 1);
      },
    };
  }

  /** Starts processes for waiting statements while the limits allow. */
  private admitWaiting(): void {
    while (this.waiting.length > 0 && !this.closed && this.canStart()) {
      this.waiting.shift()?.(this.start());
    }
    if (this.waiting.length > 0 && !this.closed) {
      setTimeout(() => this.admitWaiting(), SLOW_AFTER_MS).unref();
    }
  }

  /** An idle process, waiting for one until `deadline` or until `signal` aborts. */
  private async acquireBefore(deadline?: number, signal?: AbortSignal): Promise<Runner> {
    const acquired = this.acquire();
    if ("runner" in acquired) return acquired.runner;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      if (deadline !== undefined) {
        timer = setTimeout(
          () => reject(timeoutError(this.options.timeoutMs)),
          Math.max(0, deadline - Date.now()),
        );
      }
      onAbort = () =>
        reject(new DirqError("QUERY_CANCELLED", "interrupted: the statement was stopped"));
      if (signal?.aborted) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
    });
    try {
      return await Promise.race([acquired.wait, stopped]);
    } catch (error) {
      acquired.cancel();
      throw error;
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener("abort", onAbort);
    }
  }

  private release(runner: Runner): void {
    const next = this.waiting.shift();
    if (next) next(runner);
    else runner.busy = false;
  }

  private replace(runner: Runner): void {
    killGroup(runner.child);
    this.runners.delete(runner);
    const next = this.waiting.shift();
    if (next && !this.closed) next(this.start());
  }

  /**
   * Runs a checked statement. Rejects with a `QUERY_TIMEOUT` DirqError at `options.deadline`
   * (ms since the epoch; none: no limit, as in the REPL), whether the statement was still
   * queued or running, and with a `QUERY_CANCELLED` one when `options.signal` aborts.
   */
  async run(sql: string, options: RunOptions = {}): Promise<QueryAnswer> {
    if (this.closed) throw new Error("the query pool is closed");
    const { signal, format = "json", deadline } = options;
    const runner = await this.acquireBefore(deadline, signal);
    runner.since = Date.now();
    const id = this.nextId++;
    return new Promise<QueryAnswer>((resolve, reject) => {
      const cleanup = () => {
        if (timer !== null) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        runner.child.off("message", onMessage);
        runner.child.off("exit", onExit);
      };
      const onAbort = () => {
        cleanup();
        this.replace(runner);
        reject(new DirqError("QUERY_CANCELLED", "interrupted: the statement was stopped"));
      };
      const onMessage = (reply: QueryReply) => {
        if (reply.id !== id) return;
        cleanup();
        if (reply.retiring) {
          this.runners.delete(runner);
          const next = this.waiting.shift();
          if (next && !this.closed) next(this.start());
        } else {
          this.release(runner);
        }
        if (reply.body !== undefined) resolve({ ok: true, body: reply.body });
        else
          resolve({
            ok: false,
            message: reply.error ?? "unknown error",
            user: reply.user === true,
            tooLarge: reply.tooLarge === true,
          });
      };
      const onExit = () => {
        cleanup();
        this.replace(runner);
        reject(new Error("a query process exited while running a statement"));
      };
      const timer =
        deadline === undefined
          ? null
          : setTimeout(
              () => {
                cleanup();
                this.replace(runner);
                reject(timeoutError(this.options.timeoutMs));
              },
              Math.max(0, deadline - Date.now()),
            );
      runner.child.on("message", onMessage);
      runner.child.once("exit", onExit);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      runner.child.send({ id, sql, format }, (error) => {
        if (error) onExit();
      });
    });
  }

  /** Stops every query process. */
  close(): void {
    this.closed = true;
    for (const runner of this.runners) killGroup(runner.child);
    this.runners.clear();
  }
}

/** Kills a query process and everything in its process group (its function workers). */
function killGroup(child: ChildProcess): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
  } catch {
    child.kill("SIGKILL");
  }
}
