import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { childStarting } from "../child-start.js";
import { childProcess } from "../lazy-module.js";
import type { Socket } from "node:net";
import { DirqError } from "../errors.js";
import { parseJsonLikeHookOutput, type StoredValue } from "../parse/hook-rows.js";

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
  | { ok: true; result: StoredValue; cached: boolean }
  | { ok: false; error: string; cached: boolean };

/** How much of a worker's stderr is kept to explain its failure. */
const STDERR_TAIL_CHARS = 2000;
/** How much of a garbage line a message quotes. */
const QUOTED_CHARS = 120;

/** Requests sent since the last `collect`, and their replies so far. */
interface Batch {
  firstId: number;
  /** Requests sent. */
  sent: number;
  replies: (WorkerReply | undefined)[];
  received: number;
  /** Set when the worker failed before `collect` was waiting. */
  failure: Error | null;
  /** Set by `collect`. */
  waiter: {
    onReply: (reply: WorkerReply, position: number) => void;
    resolve: (replies: WorkerReply[]) => void;
    reject: (error: Error) => void;
  } | null;
}

/** Requests are written to the worker in slices of this many lines. */
const WRITE_SLICE = 256;

/** Every worker this process has running, so that an exiting process leaves none behind. */
const running = new Set<WorkerProcess>();
/** Workers started ahead of their first call (`prestartWorker`), not taken yet, by `spawnKey`. */
const prestarted = new Map<string, ChildProcessWithoutNullStreams>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", stopAllWorkers);
}

/**
 * Kills every worker this process runs or started ahead of time, each with its process group
 * (what it started too): on exit, and on a signal that is about to end dirq.
 */
export function stopAllWorkers(): void {
  for (const worker of [...running]) worker.kill();
  for (const child of prestarted.values()) {
    child.stdin.end();
    killGroup(child, false);
  }
  prestarted.clear();
}

/** What makes two workers interchangeable: the same command in the same folder and group. */
function spawnKey(spec: WorkerSpec, sharedGroup: boolean): string {
  return JSON.stringify([spec.argv, spec.cwd, sharedGroup]);
}

function spawnWorker(spec: WorkerSpec, sharedGroup: boolean): ChildProcessWithoutNullStreams {
  childStarting();
  return childProcess().spawn(spec.argv[0] as string, spec.argv.slice(1), {
    cwd: spec.cwd,
    stdio: ["pipe", "pipe", "pipe"],
    detached: !sharedGroup,
  });
}

/**
 * Starts a worker before its first call (in dirq's one-shot CLI, as soon as the statement is
 * read), so that its start-up overlaps dirq's. The first `WorkerProcess` with the same command
 * takes it; one never taken is killed at exit like any other. A worker that cannot start or
 * exits before it is taken is dropped: the first call starts one as usual and reports why.
 */
export function prestartWorker(spec: WorkerSpec): void {
  const key = spawnKey(spec, false);
  if (prestarted.has(key)) return;
  installExitHook();
  const child = spawnWorker(spec, false);
  const drop = () => {
    if (prestarted.get(key) === child) prestarted.delete(key);
  };
  child.on("error", drop);
  child.on("exit", drop);
  child.stdin.on("error", () => {});
  // Until it is taken, the worker must not keep dirq running: one never taken is killed at exit.
  holdOpen(child, false);
  prestarted.set(key, child);
}

/** Whether a worker (its process and pipes) keeps dirq's event loop alive. */
function holdOpen(child: ChildProcessWithoutNullStreams, hold: boolean): void {
  for (const handle of [child, child.stdin, child.stdout, child.stderr] as Partial<Socket>[]) {
    if (hold) handle.ref?.();
    else handle.unref?.();
  }
}

/** The prestarted worker for `key` if it is still alive; it is no longer prestarted either way. */
function takePrestarted(key: string): ChildProcessWithoutNullStreams | null {
  const child = prestarted.get(key);
  if (child === undefined) return null;
  prestarted.delete(key);
  const alive = child.pid !== undefined && child.exitCode === null && child.signalCode === null;
  if (!alive) {
    killGroup(child, false);
    return null;
  }
  return child;
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

/** Messages read from a worker, and how to take a value out of one exactly (see `exact`). */
interface ReadMessages {
  messages: unknown[];
  /** A value of a message as a hook's value would be stored (see parseJsonLikeHookOutput). */
  exact: (value: unknown) => StoredValue;
}

/**
 * Complete response lines parsed as one JSON array, one value per line, or `null` when they are
 * not exactly that (a blank line, a line that is not JSON, a line with two values): the caller
 * then goes line by line. One parse of a read's few thousand lines costs less than one parse
 * per line, and many replies often arrive together at the end of an exchange.
 * A line break stays between the values: inside a JSON string it is invalid, so no value can
 * span two lines. Read as hook output is, so that a worker's integers beyond 2^53 stay exact.
 */
function parseLines(lines: string): ReadMessages | null {
  let count = 1;
  for (let at = lines.indexOf("\n"); at >= 0; at = lines.indexOf("\n", at + 1)) count++;
  let read: ReturnType<typeof parseJsonLikeHookOutput>;
  try {
    read = parseJsonLikeHookOutput(`[${lines.replaceAll("\n", ",\n")}]`);
  } catch {
    return null;
  }
  const { data, exact } = read;
  return Array.isArray(data) && data.length === count ? { messages: data, exact } : null;
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
  /**
   * Output read since the last line break, in the pieces it came in: only a new piece is
   * searched for a line break, so a long reply costs one pass over its text, not one per read.
   */
  private stdoutPieces: string[] = [];
  private stderrTail = "";
  private nextId = 1;
  private batch: Batch | null = null;
  /** Request lines not yet written. */
  private outgoing: string[] = [];
  /**
   * Whether the worker keeps this process's event loop alive: only while requests are out.
   * An idle worker must not keep a library user's script running (better-sqlite3 users do not
   * expect to call `close()` for their program to end); it is killed at exit either way.
   */
  private holding = false;

  constructor(
    readonly spec: WorkerSpec,
    private readonly options: { sharedGroup?: boolean } = {},
  ) {}

  /** Starts the worker unless it runs (also ahead of the first call, to overlap its start-up). */
  start(): ChildProcessWithoutNullStreams {
    if (this.child !== null) return this.child;
    installExitHook();
    const sharedGroup = this.options.sharedGroup === true;
    const child =
      takePrestarted(spawnKey(this.spec, sharedGroup)) ?? spawnWorker(this.spec, sharedGroup);
    this.child = child;
    this.holding = true;
    this.hold(child, false);
    this.stdoutPieces = [];
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

  private hold(child: ChildProcessWithoutNullStreams, hold: boolean): void {
    if (this.holding === hold) return;
    this.holding = hold;
    holdOpen(child, hold);
  }

  /** Ends the current batch with `error` and forgets the worker (the next call starts anew). */
  private fail(child: ChildProcessWithoutNullStreams, error: Error): void {
    if (this.child !== child) return;
    this.child = null;
    running.delete(this);
    killGroup(child, this.options.sharedGroup === true);
    this.hold(child, false);
    this.outgoing = [];
    const batch = this.batch;
    if (batch?.waiter) {
      this.batch = null;
      batch.waiter.reject(error);
    } else if (batch) {
      batch.failure ??= error;
    }
  }

  private onStdout(child: ChildProcessWithoutNullStreams, chunk: string): void {
    if (this.child !== child) return;
    const end = chunk.lastIndexOf("\n");
    if (end < 0) {
      this.stdoutPieces.push(chunk);
      return;
    }
    // Only the unfinished tail is kept; the complete lines are handled now.
    const pieces = this.stdoutPieces;
    pieces.push(chunk.slice(0, end));
    const lines = pieces.length === 1 ? (pieces[0] as string) : pieces.join("");
    this.stdoutPieces = end + 1 < chunk.length ? [chunk.slice(end + 1)] : [];
    const read = parseLines(lines);
    if (read === null) {
      this.onLines(child, lines);
      return;
    }
    const { messages, exact } = read;
    for (let i = 0; i < messages.length; i++) {
      const problem = this.onMessage(messages[i], exact);
      if (problem !== null) {
        // The line itself is quoted: found again only now, for the one message that needs it.
        this.garbage(child, lines.split("\n")[i] as string, problem);
        return;
      }
    }
  }

  /** Lines one by one: some line is not one JSON value (blank lines are allowed). */
  private onLines(child: ChildProcessWithoutNullStreams, lines: string): void {
    for (const raw of lines.split("\n")) {
      const line = raw.trim();
      if (line === "") continue;
      let read: ReturnType<typeof parseJsonLikeHookOutput>;
      try {
        read = parseJsonLikeHookOutput(line);
      } catch {
        return this.garbage(child, line, "which is not a JSON response");
      }
      const problem = this.onMessage(read.data, read.exact);
      if (problem !== null) return this.garbage(child, line, problem);
      if (this.child !== child) return;
    }
  }

  private garbage(child: ChildProcessWithoutNullStreams, line: string, why: string): void {
    const message = `the worker printed ${quote(line.trim())}, ${why}; it was stopped and is restarted on the next call`;
    this.fail(child, workerError(this.spec, message));
  }

  /**
   * Takes one response (`exact` takes a value out of it as a hook's value would be); returns
   * why it is not one (then nothing was taken), else `null`.
   */
  private onMessage(message: unknown, exact: (value: unknown) => StoredValue): string | null {
    if (typeof message !== "object" || message === null || Array.isArray(message)) {
      return 'which is not a response object {"id": n, "result": ...}';
    }
    const { id, result, error, meta } = message as Record<string, unknown>;
    const batch = this.batch;
    const index = typeof id === "number" && batch ? id - batch.firstId : -1;
    if (!batch || index < 0 || index >= batch.sent || batch.replies[index]) {
      return "whose id answers no request in flight";
    }
    const cached =
      typeof meta === "object" && meta !== null && (meta as { cached?: unknown }).cached === true;
    let reply: WorkerReply;
    if (error !== undefined) {
      // A string as it is; anything else as the JSON (or number) text it is stored as.
      reply = { ok: false, error: String(exact(error)), cached };
    } else if ("result" in (message as object)) {
      reply = { ok: true, result: exact(result), cached };
    } else {
      return 'which has neither "result" nor "error"';
    }
    batch.replies[index] = reply;
    batch.received++;
    if (batch.waiter) {
      batch.waiter.onReply(reply, index);
      if (batch.received === batch.sent) {
        this.batch = null;
        if (this.child) this.hold(this.child, false);
        batch.waiter.resolve(batch.replies as WorkerReply[]);
      }
    }
    return null;
  }

  /**
   * Sends one request (`argsJson`: its `args` array as JSON text), written along with others
   * in slices, so the worker starts answering while SQLite is still producing calls. Returns
   * its position in the batch `collect` answers.
   */
  send(argsJson: string): number {
    const child = this.child ?? this.start();
    // Requests are out: the process waits for their answers.
    this.hold(child, true);
    this.batch ??= {
      firstId: this.nextId,
      sent: 0,
      replies: [],
      received: 0,
      failure: null,
      waiter: null,
    };
    const id = this.nextId++;
    this.outgoing.push(`{"id":${id},"args":${argsJson}}\n`);
    if (this.outgoing.length >= WRITE_SLICE) this.flush(child);
    return this.batch.sent++;
  }

  private flush(child: ChildProcessWithoutNullStreams): void {
    if (this.outgoing.length === 0) return;
    child.stdin.write(this.outgoing.join(""));
    this.outgoing = [];
  }

  /**
   * Resolves with the replies to every request sent since the last collect, in order;
   * `onReply` sees each with its position as it arrives (those already in, first). Rejects with a `WORKER_FAILED` DirqError when the worker cannot start, dies or prints
   * something that is not a response; the worker is then gone and the next call restarts it.
   */
  collect(onReply: (reply: WorkerReply, position: number) => void): Promise<WorkerReply[]> {
    const batch = this.batch;
    if (batch === null) return Promise.resolve([]);
    if (batch.failure) {
      // A worker started after the failure (by a later call of the same pass) goes too.
      this.kill();
      return Promise.reject(batch.failure);
    }
    if (this.child) this.flush(this.child);
    batch.replies.forEach((reply, position) => {
      if (reply) onReply(reply, position);
    });
    if (batch.received === batch.sent) {
      this.batch = null;
      if (this.child) this.hold(this.child, false);
      return Promise.resolve(batch.replies as WorkerReply[]);
    }
    return new Promise<WorkerReply[]>((resolve, reject) => {
      batch.waiter = { onReply, resolve, reject };
    });
  }

  /** Stops the worker if requests are still out (a query failed before collecting them). */
  abandonBatch(): void {
    if (this.batch !== null) this.kill();
  }

  /** Stops the worker (and, in its own group, whatever it started). */
  kill(): void {
    const child = this.child;
    if (child === null) return;
    this.child = null;
    running.delete(this);
    child.stdin.end();
    killGroup(child, this.options.sharedGroup === true);
    // It is killed: dirq need not wait for the system to reap it before it can exit.
    this.hold(child, false);
    this.outgoing = [];
    this.batch?.waiter?.reject(workerError(this.spec, "the worker was stopped"));
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
