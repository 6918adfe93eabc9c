/**
 * Worker-thread entry of the synchronous path. `synckit` runs it in a worker and blocks the
 * calling thread with `Atomics.wait` until the (asynchronous) call below settles.
 */
import { runAsWorker } from "synckit";
import { toErrorPayload } from "./errors.js";
import { sendChatCompletion, type TransportRequest } from "./transport.js";
import type { SyncResult } from "./sync-transport.js";

runAsWorker(async (request: TransportRequest): Promise<SyncResult> => {
  try {
    return { ok: true, response: await sendChatCompletion(request) };
  } catch (error) {
    return { ok: false, error: toErrorPayload(error) };
  }
});
