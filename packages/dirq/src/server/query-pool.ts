import { type ChildProcess, fork } from "node:child_process";
import { availableParallelism } from "node:os";
import { DirqError } from "../errors.js";

/** What a query process answers. */
export type QueryAnswer =
  { ok: true; body: string } | { ok: false; message: string; user: boolean };

interface QueryReply {
  id: number;
  body?: string;
  error?: string;
  user?: boolean;
}

/** How a statement's answer is shaped: the JSON body, or an aligned text table. */
export type AnswerFormat = "json" | "table";

export interface RunOptions {
  format?: AnswerFormat;
  /** Aborting kills the statement's process (its work really stops) and rejects. */
  signal?: AbortSignal;
}

interface Runner {
  child: ChildProcess;
  busy: boolean;
}

/**
 * Query processes over the shared index. A statement runs in an idle process (a new one is
 * started when all are busy, up to a limit); one that outlives the timeout is killed, which
 * really stops its work, and its place is taken by a fresh process on demand.
 */
export class QueryPool {
  private readonly runners = new Set<Runner>();
  private readonly waiting: ((runner: Runner) => void)[] = [];
  private nextId = 0;
  private closed = false;
  readonly maxProcesses: number;

  constructor(
    private readonly databasePath: string,
    /** `null`: no time limit (the REPL). */
    private readonly timeoutMs: number | null,
    maxProcesses = Math.max(4, 2 * availableParallelism()),
  ) {
    this.maxProcesses = maxProcesses;
  }

  /** Starts one process ahead of the first query, so it pays no start-up. */
  warm(): void {
    if (this.runners.size === 0) this.release(this.start());
  }

  private start(): Runner {
    const child = fork(new URL("./query-process.js", import.meta.url), [this.databasePath], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      // Structured clone moves large result strings faster than JSON-in-JSON.
      serialization: "advanced",
    });
    const runner: Runner = { child, busy: true };
    this.runners.add(runner);
    child.once("exit", () => this.runners.delete(runner));
    // A send to a process that just died fails with EPIPE; run() reports it per query.
    child.on("error", () => {});
    return runner;
  }

  private acquire(): Promise<Runner> {
    for (const runner of this.runners) {
      if (!runner.busy) {
        runner.busy = true;
        return Promise.resolve(runner);
      }
    }
    if (this.runners.size < this.maxProcesses) return Promise.resolve(this.start());
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(runner: Runner): void {
    const next = this.waiting.shift();
    if (next) next(runner);
    else runner.busy = false;
  }

  private replace(runner: Runner): void {
    runner.child.kill("SIGKILL");
    this.runners.delete(runner);
    const next = this.waiting.shift();
    if (next && !this.closed) next(this.start());
  }

  /**
   * Runs a checked statement; rejects with a `QUERY_TIMEOUT` DirqError past the timeout, and
   * with a `QUERY_CANCELLED` one when `options.signal` aborts.
   */
  async run(sql: string, options: RunOptions = {}): Promise<QueryAnswer> {
    if (this.closed) throw new Error("the query pool is closed");
    const { signal, format = "json" } = options;
    const runner = await this.acquire();
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
        this.release(runner);
        if (reply.body !== undefined) resolve({ ok: true, body: reply.body });
        else
          resolve({
            ok: false,
            message: reply.error ?? "unknown error",
            user: reply.user === true,
          });
      };
      const onExit = () => {
        cleanup();
        this.replace(runner);
        reject(new Error("a query process exited while running a statement"));
      };
      const timer =
        this.timeoutMs === null
          ? null
          : setTimeout(() => {
              cleanup();
              this.replace(runner);
              const seconds = Math.round((this.timeoutMs ?? 0) / 1000);
              reject(
                new DirqError(
                  "QUERY_TIMEOUT",
                  `query exceeded the ${seconds}-second timeout and was stopped; narrow it (WHERE, LIMIT) and try again`,
                ),
              );
            }, this.timeoutMs);
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
    for (const runner of this.runners) runner.child.kill("SIGKILL");
    this.runners.clear();
  }
}
