import type { SqliteDatabase } from "../indexer/database.js";
import { DirqError } from "../errors.js";
import type { ProgressReporter } from "../progress/reporter.js";
import { WorkerProcess, type WorkerSpec } from "./worker-process.js";

export type { WorkerSpec };

/**
 * A statement whose worker calls keep changing from one pass to the next (each answer leads
 * to calls nobody asked before) is stopped after this many exchanges.
 */
const MAX_ROUNDS = 32;

/** Marks a call sent to the worker whose answer has not come back yet. */
const PENDING: unique symbol = Symbol("pending");

/** One function's calls in the query being answered. */
interface CallState {
  /**
   * Answers by call key, kept across the passes of one query; `PENDING` while a call is out
   * (so a repeat in the same pass is not sent again).
   */
  answers: Map<CallKey, unknown>;
  /** The keys of the calls sent in this pass, by their position in the batch. */
  sent: CallKey[];
  worker: WorkerProcess;
  /** How often each argument list was seen in this pass (non-deterministic functions). */
  seen: Map<CallKey, number>;
}

/**
 * A function argument as JSON text, as the worker receives it: JSON has no integers beyond 2^53
 * (sent as their digits in a string) and no blobs (sent as hex text). Written by hand: it runs
 * once per call, where a generic JSON.stringify of the whole request is a large part of a pass.
 */
function argumentJson(value: unknown): string {
  if (typeof value === "bigint") {
    return Number.isSafeInteger(Number(value)) ? value.toString() : `"${value}"`;
  }
  if (Buffer.isBuffer(value)) return `"${value.toString("hex")}"`;
  return JSON.stringify(value) ?? "null";
}

/** The `args` array of a request as JSON text. */
function argumentsJson(args: readonly unknown[]): string {
  if (args.length === 1) return `[${argumentJson(args[0])}]`;
  return `[${args.map(argumentJson).join(",")}]`;
}

/**
 * A call's identity: a single INTEGER (bigint) or REAL (number) argument is its own key (a
 * primitive that never equals a string key, so no string is built); anything else is a string
 * tagged with types and lengths, which distinguishes `1` from `'1'` and a blob from its hex
 * text. Built by hand because it runs once per call on every pass.
 */
type CallKey = string | bigint | number;

function callKey(args: readonly unknown[]): CallKey {
  if (args.length === 1) {
    // The common case, without the generic loop.
    const value = args[0];
    if (typeof value === "bigint" || typeof value === "number") return value;
    if (typeof value === "string") return `1s${value}`;
  }
  let key = `${args.length}`;
  for (const value of args) {
    if (value === null) key += "z;";
    else if (typeof value === "bigint") key += `bigint${value};`;
    else if (typeof value === "number") key += `number${value};`;
    else if (typeof value === "string") key += `s${value.length}:${value}`;
    else if (Buffer.isBuffer(value)) key += `b${value.toString("hex")};`;
    else key += `j${JSON.stringify(value)};`;
  }
  return key;
}

/**
 * The worker-backed SQL functions of one connection, and how a statement that calls them is
 * answered.
 *
 * SQLite calls a scalar function synchronously; a worker answers asynchronously. A statement
 * that calls a worker function is therefore run in passes: during a pass, a call whose answer
 * is known returns it, any other call is recorded and returns NULL. After a pass with unknown
 * calls, all of them go to the workers in one pipelined batch per function, and the statement
 * runs again. The first pass with no unknown call is the real answer. Most statements take two
 * passes; one whose later calls depend on earlier answers (`f(f(x))`, `WHERE f(x) = ...`) takes
 * one more per level. Calls are keyed by their arguments, and for a non-deterministic function
 * also by how often those arguments were seen before in the pass, so each call still gets its
 * own round trip.
 */
export class WorkerFunctions {
  private readonly workers = new Map<string, WorkerProcess>();
  /** Call state of the query being answered; `null` between queries. */
  private calls: Map<string, CallState> | null = null;
  /** Calls of the current pass still without an answer, over all functions. */
  private unanswered = 0;
  /** The statement being answered: the next waits for it. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly specs: readonly WorkerSpec[],
    private readonly options: { sharedGroup?: boolean } = {},
  ) {
    for (const spec of specs) {
      this.workers.set(spec.name.toLowerCase(), new WorkerProcess(spec, options));
    }
  }

  /** Declares every function on `db`. */
  register(db: SqliteDatabase): void {
    for (const spec of this.specs) {
      const key = spec.name.toLowerCase();
      db.function(
        spec.name,
        { varargs: true, deterministic: spec.deterministic, safeIntegers: true },
        (...args: unknown[]) => this.call(key, spec, args),
      );
    }
  }

  private call(key: string, spec: WorkerSpec, args: unknown[]): unknown {
    const state = this.calls?.get(key);
    if (state === undefined) {
      throw new DirqError(
        "WORKER_FAILED",
        `worker function ${spec.name} can only be called by a query, not while tables are built (from a ddl trigger, index or generated column); call it in the query instead`,
      );
    }
    let callId = callKey(args);
    if (!spec.deterministic) {
      const seen = state.seen.get(callId);
      state.seen.set(callId, seen === undefined ? 1 : seen + 1);
      // The first call with these arguments keeps the plain key (no new string to build and
      // hash); a repeat is prefixed with its count, which no string key starts with (those
      // start with the number of arguments and a type letter).
      if (seen !== undefined) {
        const plain = typeof callId === "string" ? callId : `1${typeof callId}${callId}`;
        callId = `${seen}#${plain}`;
      }
    }
    // Answers are never `undefined` (a JSON null is stored as null).
    const answer = state.answers.get(callId);
    if (answer === PENDING) return null;
    if (answer !== undefined) return answer;
    // Sent at once: the worker answers while this pass goes on.
    state.answers.set(callId, PENDING);
    state.sent[state.worker.send(argumentsJson(args))] = callId;
    this.unanswered++;
    return null;
  }

  /** The worker functions among `called` (lower-cased names, see `functionsCalledBy`). */
  calledIn(called: ReadonlySet<string>): WorkerSpec[] {
    return this.specs.filter((spec) => called.has(spec.name.toLowerCase()));
  }

  /**
   * Answers a statement that calls worker functions: `pass` runs it once (synchronously) and
   * returns its result, `pending()` telling whether any call of this pass is still unanswered
   * (so rows of a pass that will be thrown away need not be kept).
   */
  run<T>(
    pass: (pending: () => boolean) => T,
    progress: ProgressReporter,
    called: readonly WorkerSpec[] = [],
  ): Promise<T> {
    // One statement at a time: a worker answers one batch at a time, and the call state is
    // the statement's. Overlapping queries (the library allows them) wait their turn.
    const result = this.queue.then(() => this.runNow(pass, progress, called));
    this.queue = result.catch(() => undefined);
    return result;
  }

  private async runNow<T>(
    pass: (pending: () => boolean) => T,
    progress: ProgressReporter,
    called: readonly WorkerSpec[],
  ): Promise<T> {
    const calls = new Map<string, CallState>();
    for (const [key, worker] of this.workers) {
      calls.set(key, { answers: new Map(), sent: [], seen: new Map(), worker });
    }
    const pending = () => this.unanswered > 0;
    // The statement is about to call these: their start-up overlaps the first pass.
    for (const spec of called) this.workers.get(spec.name.toLowerCase())?.start();
    let phase: ReturnType<ProgressReporter["start"]> | null = null;
    let sent = 0;
    let cached = 0;
    const line = () => `running ${sent} worker calls${cached > 0 ? ` (${cached} cached)` : ""}`;
    this.calls = calls;
    try {
      for (let round = 0; ; round++) {
        for (const state of calls.values()) {
          state.sent = [];
          state.seen.clear();
        }
        this.unanswered = 0;
        const result = pass(pending);
        if (!pending()) {
          phase?.finish((duration) => `ran ${sent} worker calls in ${duration}`);
          return result;
        }
        if (round >= MAX_ROUNDS) {
          throw new DirqError(
            "WORKER_FAILED",
            `the statement's worker calls did not settle after ${MAX_ROUNDS} exchanges (each answer led to new calls); simplify how worker results feed other worker calls`,
          );
        }
        phase ??= progress.start();
        const current = phase;
        // Every exchange is let finish (or fail) before the first failure is reported, so
        // that no worker is left answering a batch nobody waits for.
        const exchanges = await Promise.allSettled(
          [...calls.values()].map(async (state) => {
            if (state.sent.length === 0) return;
            sent += state.sent.length;
            current.update(line());
            // Only a cache hit changes the line: the other replies need no update.
            await this.exchange(state, () => {
              cached++;
              current.update(line());
            });
          }),
        );
        // The round's final count (with its cache hits) is shown, whatever the rate limit.
        current.update(line(), true);
        for (const exchange of exchanges) {
          if (exchange.status === "rejected") throw exchange.reason;
        }
      }
    } finally {
      this.calls = null;
      // A pass that failed may have left requests unanswered: such a worker is stopped (the
      // next call starts a fresh one) rather than waited for.
      for (const worker of this.workers.values()) worker.abandonBatch();
    }
  }

  /**
   * One worker's answers to the calls a pass sent it, each stored as it arrives (while the
   * worker is still answering the rest), so nothing is left to do once the last one is in.
   * Fails with the first failed call's error, in the order SQLite made the calls.
   */
  private async exchange(state: CallState, onCached: () => void): Promise<void> {
    const failed = { position: -1, error: "" };
    await state.worker.collect((reply, position) => {
      const callId = state.sent[position] as CallKey;
      if (reply.ok) state.answers.set(callId, reply.result);
      else {
        state.answers.delete(callId);
        if (failed.position < 0 || position < failed.position) {
          failed.position = position;
          failed.error = reply.error;
        }
      }
      if (reply.cached) onCached();
    });
    if (failed.position >= 0) {
      const name = state.worker.spec.name;
      throw new DirqError("WORKER_FAILED", `worker function ${name}: ${failed.error}`);
    }
  }

  /** Stops every worker. */
  close(): void {
    for (const worker of this.workers.values()) worker.kill();
  }
}
