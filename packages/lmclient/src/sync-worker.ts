/**
 * Worker-thread side of the synchronous path. Not loaded from a file: the build bundles it with
 * its dependencies into one script (`worker-source.js`), which `sync-transport` starts with
 * `eval`, so it works unchanged inside an application bundle (esbuild, ESM or CommonJS).
 *
 * Protocol: `workerData` holds a `MessagePort` and an `Int32Array` on shared memory.
 * `state[0]` is the id of the last finished call, `state[1]` the worker's status. Each result is
 * posted on the port before `state[0]` is set and the waiting thread woken.
 */
import { type MessagePort, workerData } from "node:worker_threads";
import { toErrorPayload } from "./errors.js";
import type { SyncResult, SyncCall } from "./sync-transport.js";
import { sendChatCompletion } from "./transport.js";

/** `state[1]`: 0 starting, 1 ready, 2 failed to start, 3 exited. */
export const WORKER_READY = 1;
export const WORKER_EXITED = 3;

const { port, state } = workerData as { port: MessagePort; state: Int32Array };

async function run({ id, request }: SyncCall): Promise<void> {
  let result: SyncResult;
  try {
    result = { ok: true, response: await sendChatCompletion(request) };
  } catch (error) {
    result = { ok: false, error: toErrorPayload(error) };
  }
  port.postMessage({ id, result });
  Atomics.store(state, 0, id);
  Atomics.notify(state, 0);
}

port.on("message", (call: SyncCall) => void run(call));
process.on("exit", () => {
  Atomics.store(state, 1, WORKER_EXITED);
  Atomics.notify(state, 0);
});
Atomics.store(state, 1, WORKER_READY);
Atomics.notify(state, 1);
