import {
  MessageChannel,
  type MessagePort,
  receiveMessageOnPort,
  Worker,
} from "node:worker_threads";
import { createLMError, type ErrorPayload, fromErrorPayload, type LMError } from "./errors.js";
import { RETRY_AFTER_CAP_MS } from "./http-attempt.js";
import { displayUrl } from "./redact.js";
import { completionsUrl, type TransportRequest } from "./transport.js";
import type { CompletionResponse } from "./types.js";
import { WORKER_SOURCE } from "./worker-source.js";

/** What the worker sends back: never a thrown error, so typed errors survive the boundary. */
export type SyncResult =
  { ok: true; response: CompletionResponse } | { ok: false; error: ErrorPayload };

/** One call sent to the worker. */
export interface SyncCall {
  id: number;
  request: TransportRequest;
}

/** How long a starting worker may take to load (a loaded machine can be slow). */
const STARTUP_MS = 60_000;
/** Slack on top of the longest a call can legitimately take. */
const SLACK_MS = 10_000;

interface SyncWorker {
  worker: Worker;
  port: MessagePort;
  state: Int32Array;
  nextId: number;
}

let current: SyncWorker | undefined;

/**
 * `sendChatCompletion`, synchronously: the same code runs in one shared worker thread (started
 * on first use, never keeping the process alive) while this thread waits, always with a
 * deadline: `(maxRetries + 1)` attempts of `timeout`, the capped `Retry-After` waits, and slack.
 */
export function sendChatCompletionSync(request: TransportRequest): CompletionResponse {
  const sync = (current ??= startWorker(request));
  const id = (sync.nextId += 1);
  sync.port.postMessage({ id, request } satisfies SyncCall);
  const limit =
    (request.maxRetries + 1) * request.timeout + request.maxRetries * RETRY_AFTER_CAP_MS + SLACK_MS;
  const end = performance.now() + limit;
  for (;;) {
    const done = Atomics.load(sync.state, 0);
    if (done === id) break;
    if (Atomics.load(sync.state, 1) === 3) {
      current = undefined;
      throw workerError(request, "the worker thread of the synchronous path exited");
    }
    const left = end - performance.now();
    if (left <= 0) {
      stopWorker(sync);
      throw createLMError(
        "LM_TIMEOUT",
        `request timed out: no result for POST ${where(request)} within ${Math.round(limit)} ms ` +
          "(every attempt, retry wait and slack). Raise the timeout option for slow models.",
      );
    }
    Atomics.wait(sync.state, 0, done, left);
  }
  let message = receiveMessageOnPort(sync.port);
  while (message && (message.message as { id: number }).id !== id) {
    message = receiveMessageOnPort(sync.port);
  }
  if (!message) throw workerError(request, "the worker thread sent no result");
  const result = (message.message as { result: SyncResult }).result;
  if (result.ok) return result.response;
  const error = fromErrorPayload(result.error);
  // Start the stack at the caller, not at the rebuilding of the error.
  Error.captureStackTrace(error, sendChatCompletionSync);
  throw error;
}

function startWorker(request: TransportRequest): SyncWorker {
  const state = new Int32Array(new SharedArrayBuffer(8));
  const { port1, port2 } = new MessageChannel();
  let worker: Worker;
  try {
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      // Not the parent's flags (test runners, loaders): the worker is self-contained.
      execArgv: [],
      workerData: { port: port2, state },
      transferList: [port2],
    });
  } catch (error) {
    throw workerError(
      request,
      `could not start the worker thread of the synchronous path (${String(error)}). ` +
        "Use aforward, which needs no worker",
    );
  }
  // Failures surface through `state` instead; an unhandled 'error' event would crash the app.
  worker.on("error", () => undefined);
  worker.unref();
  port1.unref();
  const sync: SyncWorker = { worker, port: port1, state, nextId: 0 };
  const end = performance.now() + STARTUP_MS;
  while (Atomics.load(state, 1) === 0) {
    const left = end - performance.now();
    if (left <= 0) {
      stopWorker(sync);
      throw workerError(request, `the worker thread did not start within ${STARTUP_MS} ms`);
    }
    Atomics.wait(state, 1, 0, left);
  }
  if (Atomics.load(state, 1) !== 1) {
    stopWorker(sync);
    throw workerError(request, "the worker thread failed to start");
  }
  return sync;
}

function stopWorker(sync: SyncWorker): void {
  if (current === sync) current = undefined;
  void sync.worker.terminate().catch(() => undefined);
  sync.port.close();
}

function where(request: TransportRequest): string {
  return displayUrl(completionsUrl(request.baseUrl, request.query));
}

function workerError(request: TransportRequest, what: string): LMError {
  return createLMError(
    "LM_WORKER",
    `forward failed before any request to POST ${where(request)}: ${what}. ` +
      "aforward does not use the worker.",
  );
}
