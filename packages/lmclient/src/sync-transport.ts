import { fileURLToPath } from "node:url";
import { createSyncFn } from "synckit";
import { type ErrorPayload, fromErrorPayload } from "./errors.js";
import type { TransportRequest } from "./transport.js";
import type { CompletionResponse } from "./types.js";

/** What the worker sends back: never a thrown error, so typed errors survive the boundary. */
export type SyncResult =
  { ok: true; response: CompletionResponse } | { ok: false; error: ErrorPayload };

type SyncFn = (request: TransportRequest) => SyncResult;

// Compiled next to this file: dist/src/sync-worker.js.
const WORKER_PATH = fileURLToPath(new URL("./sync-worker.js", import.meta.url));

let syncFn: SyncFn | undefined;

/**
 * `sendChatCompletion`, synchronously: the same code runs in one shared worker thread (started
 * on first use, never keeping the process alive) while this thread waits.
 */
export function sendChatCompletionSync(request: TransportRequest): CompletionResponse {
  // No wait limit here: the per-attempt `timeout` and `maxRetries` bound the call.
  syncFn ??= createSyncFn(WORKER_PATH, { execArgv: [] }) as SyncFn;
  const result = syncFn(request);
  if (result.ok) return result.response;
  const error = fromErrorPayload(result.error);
  // Start the stack at the caller, not at the rebuilding of the error.
  Error.captureStackTrace(error, sendChatCompletionSync);
  throw error;
}
