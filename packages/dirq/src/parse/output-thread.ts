import { parentPort } from "node:worker_threads";
import { parseHookOutput } from "./hook-rows.js";
import type { OutputRequest, OutputAnswer } from "./large-output.js";

/**
 * The thread of `parseLargeOutput`: reads the hooks' outputs it is sent, one at a time, and
 * posts their rows back (structured clone keeps Maps, bigints and strings as they are).
 */
parentPort?.on("message", ({ id, output }: OutputRequest) => {
  let answer: OutputAnswer;
  try {
    answer = { id, parsed: parseHookOutput(Buffer.from(output)) };
  } catch (error) {
    answer = { id, parsed: { ok: false, reason: (error as Error).message } };
  }
  parentPort?.postMessage(answer);
});
