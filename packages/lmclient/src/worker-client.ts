import {
  MessageChannel,
  type MessagePort,
  receiveMessageOnPort,
  Worker,
} from "node:worker_threads";
import { Deadline } from "./deadline.js";
import { createLMError, type ErrorPayload, fromErrorPayload, type LMError } from "./errors.js";
import { displayUrl } from "./redact.js";
import { completionsUrl, RETRY_AFTER_CAP_MS, type TransportRequest } from "./request.js";
import type { CompletionResponse } from "./types.js";
import { UNDICI_SOURCE, WORKER_SOURCE } from "./worker-source.js";

/** One call sent to the worker. */
export interface WorkerCall {
  id: number;
  request: TransportRequest;
}

/**
 * What the worker sends back: never a thrown error, so typed errors survive the boundary. The
 * response travels as JSON text, cheaper to copy between threads than the object.
 */
export type WorkerResult =
  { id: number; ok: true; responseJson: string } | { id: number; ok: false; error: ErrorPayload };

/** How long a starting worker may take to load before `forward` gives up (busy machines). */
const STARTUP_MS = 60_000;
/** Slack on top of the longest a call can legitimately take. */
const SLACK_MS = 10_000;

interface TransportWorker {
  worker: Worker;
  syncPort: MessagePort;
  asyncPort: MessagePort;
  state: Int32Array;
  nextId: number;
  pending: Map<number, { resolve: (result: WorkerResult) => void; reject: (e: Error) => void }>;
  /** Why the worker is unusable, once it is. */
  failure: string | undefined;
}

let current: TransportWorker | undefined;

/**
 * The longest one call can take: every attempt's timeout, the capped `Retry-After` waits and
 * slack. Neither path waits for the worker longer than this.
 */
function callLimit(request: TransportRequest): number {
  return (
    (request.maxRetries + 1) * request.timeout + request.maxRetries * RETRY_AFTER_CAP_MS + SLACK_MS
  );
}

/**
 * `sendChatCompletion` in the worker thread, while this thread blocks (with a deadline) until
 * it settles. Returns the response or throws the same `LMError` the worker's call ended in.
 */
export function sendChatCompletionSync(request: TransportRequest): CompletionResponse {
  const transport = workerFor(request);
  waitUntilStarted(transport, request);
  const id = (transport.nextId += 1);
  transport.syncPort.postMessage({ id, request } satisfies WorkerCall);
  const limit = callLimit(request);
  const end = performance.now() + limit;
  for (;;) {
    const done = Atomics.load(transport.state, 0);
    if (done === id) break;
    if (Atomics.load(transport.state, 1) === 3) {
      stopWorker(transport, "the worker thread exited");
      throw workerError(request, "the worker thread exited during the call");
    }
    const left = end - performance.now();
    if (left <= 0) {
      stopWorker(transport, "a call exceeded its deadline");
      throw deadlineError(request, limit);
    }
    Atomics.wait(transport.state, 0, done, left);
  }
  let message = receiveMessageOnPort(transport.syncPort);
  while (message && (message.message as WorkerResult).id !== id) {
    message = receiveMessageOnPort(transport.syncPort);
  }
  if (!message) throw workerError(request, "the worker thread sent no result");
  return settle(message.message as WorkerResult, sendChatCompletionSync);
}

/** `sendChatCompletion` in the worker thread, without blocking this one. */
export function sendChatCompletionAsync(request: TransportRequest): Promise<CompletionResponse> {
  const transport = workerFor(request);
  const id = (transport.nextId += 1);
  const limit = callLimit(request);
  return new Promise<WorkerResult>((resolve, reject) => {
    const deadline = new Deadline(limit, () => {
      transport.pending.delete(id);
      reject(deadlineError(request, limit));
    });
    const done = () => {
      deadline.clear();
      transport.pending.delete(id);
      if (transport.pending.size === 0) transport.asyncPort.unref();
    };
    transport.pending.set(id, {
      resolve: (result) => {
        done();
        resolve(result);
      },
      reject: (error) => {
        done();
        reject(error);
      },
    });
    // Keeps the process alive while a call is in flight (the worker itself never does).
    transport.asyncPort.ref();
    transport.asyncPort.postMessage({ id, request } satisfies WorkerCall);
  }).then((result) => settle(result, sendChatCompletionAsync));
}

function settle(result: WorkerResult, caller: (...args: never[]) => unknown): CompletionResponse {
  if (result.ok) return JSON.parse(result.responseJson) as CompletionResponse;
  const error = fromErrorPayload(result.error);
  // Start the stack at the caller, not at the rebuilding of the error.
  Error.captureStackTrace(error, caller);
  throw error;
}

function workerFor(request: TransportRequest): TransportWorker {
  if (current && current.failure === undefined) return current;
  const state = new Int32Array(new SharedArrayBuffer(8));
  const sync = new MessageChannel();
  const async = new MessageChannel();
  let worker: Worker;
  try {
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      // Not the parent's flags (test runners, loaders): the worker is self-contained.
      execArgv: [],
      // The bundled undici travels along, compressed; the worker evaluates it only for a proxy
      // or where Node's own fetch cannot serve (see http-stack).
      workerData: {
        syncPort: sync.port2,
        asyncPort: async.port2,
        state,
        undiciSource: UNDICI_SOURCE,
      },
      transferList: [sync.port2, async.port2],
    });
  } catch (error) {
    // Node's permission model (--permission, --experimental-permission) forbids threads unless
    // allowed; both methods make their requests in the worker, so say how to allow it.
    const denied = (error as { code?: unknown } | null)?.code === "ERR_ACCESS_DENIED";
    const hint = denied
      ? "; lmclient makes every request (forward and aforward) in a worker thread: run node " +
        "with --allow-worker"
      : "";
    throw workerError(request, `could not start a worker thread (${String(error)})${hint}`);
  }
  const transport: TransportWorker = {
    worker,
    syncPort: sync.port1,
    asyncPort: async.port1,
    state,
    nextId: 0,
    pending: new Map(),
    failure: undefined,
  };
  transport.asyncPort.on("message", (result: WorkerResult) => {
    transport.pending.get(result.id)?.resolve(result);
  });
  // Never keeps the process alive; a pending aforward refs the port until it settles.
  // (Unref after adding the listener: adding one refs the port.)
  worker.unref();
  transport.syncPort.unref();
  transport.asyncPort.unref();
  const fail = (why: string) => stopWorker(transport, why);
  worker.on("error", (error) => fail(`the worker thread failed: ${error.message}`));
  worker.on("exit", (code) => fail(`the worker thread exited with code ${code}`));
  current = transport;
  return transport;
}

function waitUntilStarted(transport: TransportWorker, request: TransportRequest): void {
  const end = performance.now() + STARTUP_MS;
  while (Atomics.load(transport.state, 1) === 0) {
    const left = end - performance.now();
    if (left <= 0) {
      stopWorker(transport, "it did not start in time");
      throw workerError(request, `the worker thread did not start within ${STARTUP_MS} ms`);
    }
    Atomics.wait(transport.state, 1, 0, left);
  }
  if (Atomics.load(transport.state, 1) !== 1) {
    stopWorker(transport, "it failed to start");
    throw workerError(request, "the worker thread failed to start");
  }
}

/** Marks the worker unusable, fails its pending calls, and lets the next call start another. */
function stopWorker(transport: TransportWorker, why: string): void {
  if (transport.failure !== undefined) return;
  transport.failure = why;
  if (current === transport) current = undefined;
  for (const [id, call] of transport.pending) {
    call.reject(
      createLMError("LM_WORKER", `the HTTP worker thread stopped (${why}) during call ${id}.`),
    );
  }
  transport.pending.clear();
  void transport.worker.terminate().catch(() => undefined);
  transport.syncPort.close();
  transport.asyncPort.close();
}

function where(request: TransportRequest): string {
  return `POST ${displayUrl(completionsUrl(request.baseUrl, request.search))}`;
}

function deadlineError(request: TransportRequest, limit: number): LMError {
  return createLMError(
    "LM_TIMEOUT",
    `request timed out: no result for ${where(request)} within ${Math.round(limit)} ms ` +
      "(every attempt, retry wait and slack). Raise the timeout option for slow models.",
  );
}

function workerError(request: TransportRequest, what: string): LMError {
  return createLMError("LM_WORKER", `the call to ${where(request)} could not run: ${what}.`);
}
