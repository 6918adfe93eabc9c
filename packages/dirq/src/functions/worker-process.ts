import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { DirqError } from "../errors.js";

/** One worker-backed SQL function as a connection profile carries it (serializable). */
export interface WorkerSpec {
  /** The SQL name. */
  name: string;
  /** The command, split like an on-file hook, relative program already resolved. */
  argv: string[];
  /** The command as written, for messages. */
  command: string;
  /** Working directory of the worker (the config file's folder). */
  cwd: string;
  /** Identical arguments inside one query are sent once. */
  deterministic: boolean;
  /** `config.toml: dirq.function[0]`, for messages. */
  origin: string;
}

/** A worker's answer to one request. */
export type WorkerReply =
  { ok: true; result: unknown; cached: boolean } | { ok: false; error: string; cached: boolean };

/** How much of a worker's stderr is kept to explain its failure. */
const STDERR_TAIL_CHARS = 2000;
/** How much of a garbage line a message quotes. */
const QUOTED_CHARS = 120;

interface Batch {
  replies: (WorkerReply | undefined)[];
  firstId: number;
  remaining: number;
  onReply: (reply: WorkerReply) => void;
  resolve: (replies: WorkerReply[]) => void;
  reject: (error: Error) => void;
}

/** Every worker this process has running, so that an exiting process leaves none behind. */
const running = new Set<WorkerProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const worker of running) worker.kill();
  });
}

function workerError(spec: WorkerSpec, message: string): DirqError {
  return new DirqError(
    "WORKER_FAILED",
    `worker function ${spec.name} (${spec.command}): ${message}`,
  );
}

function quote(line: string): string {
  const shown = line.length > QUOTED_CHARS ? `${line.slice(0, QUOTED_CHARS)}…` : line;
  return JSON.stringify(shown);
}

/**
 * One long-lived worker process speaking newline-delimited JSON: request
 * `{"id": n, "args": [...]}`, response `{"id": n, "result": v}` or `{"id": n, "error": "..."}`,
 * optionally with `"meta": {"cached": true}`. Started on first use; after it dies, prints
 * garbage or is stopped, the next exchange starts a fresh one.
 *
 * The worker runs in its own process group (so dirq can kill whatever it started too), or,
 * with `sharedGroup`, in dirq's own group (a server query process, whose whole group the
 * server kills on a timeout). If dirq dies without a chance to kill it, the worker's stdin
 * reaches end of file: worker authors are told to exit then.
 */
export class WorkerProcess {
  private child: ChildProcessWithoutNullStreams | null = null;
  private stdoutBuffer = "";
  private stderrTail = "";
  private nextId = 1;
  private batch: Batch | null = null;

  constructor(
    readonly spec: WorkerSpec,
    private readonly options: { sharedGroup?: boolean } = {},
  ) {}

  private start(): ChildProcessWithoutNullStreams {
    installExitHook();
    const child = spawn(this.spec.argv[0] as string, this.spec.argv.slice(1), {
      cwd: this.spec.cwd,
      stdio: ["pipe", "pipe", "pipe"],
      detached: this.options.sharedGroup !== true,
    });
    this.child = child;
    this.stdoutBuffer = "";
    this.stderrTail = "";
    running.add(this);
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => this.onStdout(child, chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL_CHARS);
    });
    // A write to a worker that just died fails with EPIPE; its exit is reported instead.
    child.stdin.on("error", () => {});
    child.on("error", (error) => {
      const reason =
        (error as NodeJS.ErrnoException).code === "ENOENT"
          ? `cannot be started: ${this.spec.argv[0]} was not found`
          : `cannot be started: ${error.message}`;
      this.fail(child, workerError(this.spec, `${reason} (${this.spec.origin})`));
    });
    child.on("exit", (code, signal) => {
      const how = signal === null ? `exited with status ${code}` : `was killed by ${signal}`;
      const tail = this.stderrTail.trim();
      const detail = tail === "" ? "" : `; its stderr ended with: ${tail}`;
      this.fail(
        child,
        workerError(
          this.spec,
          `the worker ${how} while answering; it is restarted on the next call${detail}`,
        ),
      );
    });
    return child;
  }

  /** Ends the current batch with `error` and forgets the worker (the next call starts anew). */
  private fail(child: ChildProcessWithoutNullStreams, error: Error): void {
    if (this.child !== child) return;
    this.child = null;
    running.delete(this);
    killGroup(child, this.options.sharedGroup === true);
    const batch = this.batch;
    this.batch = null;
    batch?.reject(error);
  }

  private onStdout(child: ChildProcessWithoutNullStreams, chunk: string): void {
    if (this.child !== child) return;
    this.stdoutBuffer += chunk;
    let newline: number;
    while ((newline = this.stdoutBuffer.indexOf("\n")) >= 0) {
      const line = this.stdoutBuffer.slice(0, newline).trim();
      this.stdoutBuffer = this.stdoutBuffer.slice(newline + 1);
      if (line === "") continue;
      this.onLine(child, line);
      if (this.child !== child) return;
    }
  }

  private onLine(child: ChildProcessWithoutNullStreams, line: string): void {
    const garbage = (why: string) =>
      this.fail(
        child,
        workerError(
          this.spec,
          `the worker printed ${quote(line)}, ${why}; it was stopped and is restarted on the next call`,
        ),
      );
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      return garbage("which is not a JSON response");
    }
    if (typeof message !== "object" || message === null || Array.isArray(message)) {
      return garbage('which is not a response object {"id": n, "result": ...}');
    }
    const { id, result, error, meta } = message as Record<string, unknown>;
    const batch = this.batch;
    const index = typeof id === "number" && batch ? id - batch.firstId : -1;
    if (!batch || index < 0 || index >= batch.replies.length || batch.replies[index]) {
      return garbage("whose id answers no request in flight");
    }
    const cached =
      typeof meta === "object" && meta !== null && (meta as { cached?: unknown }).cached === true;
    let reply: WorkerReply;
    if (error !== undefined) {
      reply = {
        ok: false,
        error: typeof error === "string" ? error : JSON.stringify(error),
        cached,
      };
    } else if ("result" in (message as object)) {
      reply = { ok: true, result, cached };
    } else {
      return garbage('which has neither "result" nor "error"');
    }
    batch.replies[index] = reply;
    batch.onReply(reply);
    if (--batch.remaining === 0) {
      this.batch = null;
      batch.resolve(batch.replies as WorkerReply[]);
    }
  }

  /**
   * Sends every argument list at once (pipelined) and resolves with the replies in order.
   * Rejects with a `WORKER_FAILED` DirqError when the worker cannot start, dies or prints
   * something that is not a response; the worker is then gone and the next call restarts it.
   */
  exchange(
    argLists: readonly unknown[][],
    onReply: (reply: WorkerReply) => void,
  ): Promise<WorkerReply[]> {
    if (this.batch) throw new Error(`worker ${this.spec.name} is already answering a batch`);
    if (argLists.length === 0) return Promise.resolve([]);
    const child = this.child ?? this.start();
    const firstId = this.nextId;
    this.nextId += argLists.length;
    return new Promise<WorkerReply[]>((resolve, reject) => {
      this.batch = {
        replies: new Array<WorkerReply | undefined>(argLists.length),
        firstId,
        remaining: argLists.length,
        onReply,
        resolve,
        reject,
      };
      const lines = argLists.map((args, i) => `${JSON.stringify({ id: firstId + i, args })}\n`);
      // One write per slice keeps the pipe busy without building one huge string.
      const SLICE = 512;
      for (let i = 0; i < lines.length; i += SLICE) {
        child.stdin.write(lines.slice(i, i + SLICE).join(""));
      }
    });
  }

  /** Stops the worker (and, in its own group, whatever it started). */
  kill(): void {
    const child = this.child;
    if (child === null) return;
    this.child = null;
    running.delete(this);
    child.stdin.end();
    killGroup(child, this.options.sharedGroup === true);
    this.batch?.reject(workerError(this.spec, "the worker was stopped"));
    this.batch = null;
  }
}

function killGroup(child: ChildProcessWithoutNullStreams, sharedGroup: boolean): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    // A negative pid is the process group the detached worker leads.
    process.kill(sharedGroup ? child.pid : -child.pid, "SIGKILL");
  } catch {
    child.kill("SIGKILL");
  }
}
