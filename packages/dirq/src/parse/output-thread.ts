import { parentPort } from "node:worker_threads";
import { parseHookOutput } from "./hook-rows.js";
import type { OutputRequest, OutputAnswer } from "./large-output.js";
import { makeLargeTexts } from "./large-text.js";

/**
 * The thread of `parseLargeOutput`: reads the hooks' outputs it is sent, one at a time, and
 * posts their rows back (structured clone keeps Maps, bigints and strings as they are). A large
 * text value goes back as a `LargeText`, its bytes moved, not copied.
 */
parentPort?.on("message", ({ id, output }: OutputRequest) => {
  let answer: OutputAnswer;
  let moved: ArrayBuffer[] = [];
  try {
    const parsed = parseHookOutput(Buffer.from(output));
    if (parsed.ok) moved = makeLargeTexts(parsed.rows);
    answer = { id, parsed };
  } catch (error) {
    answer = { id, parsed: { ok: false, reason: (error as Error).message } };
  }
  parentPort?.postMessage(answer, moved);
});
