/**
 * The worker thread that makes every HTTP request, for `forward` and `aforward` alike. Not
 * loaded from a file: the build bundles it with its dependencies into one script
 * (`worker-source.js`) that `worker-client` starts with `eval`, so it works unchanged inside an
 * application bundle (esbuild, ESM or CommonJS). Its timers run on its own event loop, so a
 * blocked application thread cannot fire them early or late.
 *
 * `workerData` holds two ports and an `Int32Array` on shared memory. Synchronous calls come in
 * on `syncPort`; their result is posted back on it before `state[0]` is set to the call's id
 * and the waiting thread woken. Asynchronous calls come and go on `asyncPort`. `state[1]` is
 * the worker's status: 0 starting, 1 ready, 2 failed to start, 3 exited.
 */
import { type MessagePort, workerData } from "node:worker_threads";
import { createLMError, isLMError, toErrorPayload } from "./errors.js";
import { sendChatCompletion } from "./transport.js";
import type { WorkerCall, WorkerResult } from "./worker-client.js";

const { syncPort, asyncPort, state } = workerData as {
  syncPort: MessagePort;
  asyncPort: MessagePort;
  state: Int32Array;
};

async function run({ id, request }: WorkerCall): Promise<WorkerResult> {
  try {
    return { id, ok: true, responseJson: JSON.stringify(await sendChatCompletion(request)) };
  } catch (error) {
    // `sendChatCompletion` throws only LMErrors; anything else is a bug, still typed.
    const typed = isLMError(error)
      ? error
      : createLMError("LM_WORKER", `unexpected failure in the request worker: ${String(error)}`);
    return { id, ok: false, error: toErrorPayload(typed) };
  }
}

syncPort.on("message", (call: WorkerCall) => {
  void run(call).then((result) => {
    syncPort.postMessage(result);
    Atomics.store(state, 0, call.id);
    Atomics.notify(state, 0);
  });
});
asyncPort.on("message", (call: WorkerCall) => {
  void run(call).then((result) => asyncPort.postMessage(result));
});
process.on("exit", () => {
  Atomics.store(state, 1, 3);
  Atomics.notify(state, 0);
});
Atomics.store(state, 1, 1);
Atomics.notify(state, 1);
