import type { Worker } from "node:worker_threads";
import { startThread } from "../node-options.js";
import { type ParsedOutput, parseHookOutput } from "./hook-rows.js";
import { movable, reviveLargeTexts } from "./large-text.js";

/**
 * Outputs from this size up are read on a thread of their own: reading tens of megabytes of
 * JSON takes the main thread long enough to hold back every other file's rows and events,
 * while below it the thread's round trip costs more than the parse.
 */
export const LARGE_OUTPUT_BYTES = 1024 * 1024;

export interface OutputRequest {
  id: number;
  output: Uint8Array;
}

export interface OutputAnswer {
  id: number;
  parsed: ParsedOutput;
}

let thread: Worker | null = null;
const pending = new Map<number, (parsed: ParsedOutput | null) => void>();
let nextId = 1;

function outputThread(): Worker {
  if (thread !== null) return thread;
  const worker = startThread(new URL("./output-thread.js", import.meta.url), {});
  worker.on("message", ({ id, parsed }: OutputAnswer) => {
    if (parsed.ok) reviveLargeTexts(parsed.rows);
    pending.get(id)?.(parsed);
    pending.delete(id);
    if (pending.size === 0) worker.unref();
  });
  // A thread that fails or exits hands its outputs back to be read here; the next one starts anew.
  const lost = () => {
    if (thread !== worker) return;
    thread = null;
    for (const settle of pending.values()) settle(null);
    pending.clear();
  };
  worker.on("error", lost);
  worker.on("exit", lost);
  worker.unref();
  thread = worker;
  return worker;
}

/**
 * A hook's output read as `parseHookOutput` reads it; a large one on the output thread, so the
 * main thread goes on with other files meanwhile; its large text values come back as
 * `LargeText`. `output` is not usable afterwards.
 */
export async function parseOutput(output: Buffer): Promise<ParsedOutput> {
  if (output.length < LARGE_OUTPUT_BYTES) return parseHookOutput(output);
  const bytes = movable(output);
  const parsed = await new Promise<ParsedOutput | null>((resolve) => {
    const worker = outputThread();
    const id = nextId++;
    pending.set(id, resolve);
    worker.ref();
    worker.postMessage({ id, output: bytes } satisfies OutputRequest, [
      bytes.buffer as ArrayBuffer,
    ]);
  });
  return parsed ?? { ok: false, reason: "the thread reading the hook's output stopped" };
}
