import { type ChildProcess, fork } from "node:child_process";
import { availableParallelism } from "node:os";
import { type ConnectionProfile, EMPTY_PROFILE } from "../connection/profile.js";
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
    private readonly timeoutMs: number,
    maxProcesses = Math.max(4, 2 * availableParallelism()),
    private readonly profile: ConnectionProfile = EMPTY_PROFILE,
  ) {
    this.maxProcesses = maxProcesses;
  }

  /** Starts one process ahead of the first query, so it pays no start-up. */
  warm(): void {
    if (this.runners.size === 0) this.release(this.start());
  }

  private start(): Runner {
    const args = [this.databasePath, JSON.stringify(this.profile)];
    const child = fork(new URL("./query-process.js", import.meta.url), args, {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      // Its own process group: killing the group also stops the worker processes of its
      // worker-backed functions, even one that hangs.
      detached: true,
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
    killGroup(runner.child);
    this.runners.delete(runner);
    const next = this.waiting.shift();
    if (next && !this.closed) next(this.start());
  }

  /** Runs a checked statement; rejects with a `QUERY_TIMEOUT` DirqError past the timeout. */
  async run(sql: string): Promise<QueryAnswer> {
    if (this.closed) throw new Error("the query pool is closed");
    const runner = await this.acquire();
    const id = this.nextId++;
    return new Promise<QueryAnswer>((resolve, reject) => {
      const cleanup = () => {
        clearTimeout(timer);
        runner.child.off("message", onMessage);
        runner.child.off("exit", onExit);
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
      const timer = setTimeout(() => {
        cleanup();
        this.replace(runner);
        const seconds = Math.round(this.timeoutMs / 1000);
        reject(
          new DirqError(
            "QUERY_TIMEOUT",
            `query exceeded the ${seconds}-second timeout and was stopped; narrow it (WHERE, LIMIT) and try again`,
          ),
        );
      }, this.timeoutMs);
      runner.child.on("message", onMessage);
      runner.child.once("exit", onExit);
      runner.child.send({ id, sql }, (error) => {
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
