import type { Worker } from "node:worker_threads";
import { inheritedExecArgv, workerThreads } from "../lazy-module.js";

/**
 * Hooks are started on a thread of their own (spawn-thread.ts): Node's `spawn()` returns only
 * once the child has started its program, and on a busy machine, or with a large heap, that
 * holds the calling thread for milliseconds per hook. On the main thread, a table whose files
 * change quickly would hold back every other file's rows, events and statements meanwhile.
 */

export type SpawnRequest =
  | {
      type: "spawn";
      id: number;
      program: string;
      args: string[];
      cwd: string;
      /** Added to the environment (the thread shares this process's). */
      marks?: Record<string, string>;
      /** Past this much stdout the hook's group is killed and its output dropped. */
      maxStdoutBytes: number;
      /** About how much of the end of stderr is kept. */
      stderrKeepBytes: number;
    }
  | { type: "close-pipes"; id: number };

export type SpawnAnswer =
  | { id: number; type: "spawned"; pid: number }
  | { id: number; type: "error"; code?: string; message: string; started: boolean }
  | {
      id: number;
      type: "close";
      code: number | null;
      signal: NodeJS.Signals | null;
      overflowed: boolean;
      stdout: Uint8Array;
      stderr: string;
    }
  /** The thread stopped before the hook ended. */
  | { id: number; type: "lost" };

type SpawnOptions = Omit<Extract<SpawnRequest, { type: "spawn" }>, "type" | "id">;

let thread: Worker | null = null;
const listeners = new Map<number, (answer: SpawnAnswer) => void>();
let nextId = 1;

function spawnThread(): Worker {
  if (thread !== null) return thread;
  const threads = workerThreads();
  const worker = new threads.Worker(new URL("./spawn-thread.js", import.meta.url), {
    env: threads.SHARE_ENV,
    execArgv: inheritedExecArgv(),
  });
  worker.on("message", (answer: SpawnAnswer) => {
    const listener = listeners.get(answer.id);
    if (answer.type === "close") listeners.delete(answer.id);
    listener?.(answer);
    if (listeners.size === 0) worker.unref();
  });
  // A thread that fails or exits reports its hooks as lost; the next hook starts a new one.
  const lost = () => {
    if (thread !== worker) return;
    thread = null;
    const orphans = [...listeners];
    listeners.clear();
    for (const [id, listener] of orphans) listener({ id, type: "lost" });
  };
  worker.on("error", lost);
  worker.on("exit", lost);
  worker.unref();
  thread = worker;
  return worker;
}

/** A hook started on the spawn thread: its answers go to `listener` until its `close`. */
export interface SpawnedHook {
  /** Closes the hook's pipes on the thread, so that its `close` comes (a hook past its limit). */
  closePipes(): void;
}

export function spawnHook(
  options: SpawnOptions,
  listener: (answer: SpawnAnswer) => void,
): SpawnedHook {
  const worker = spawnThread();
  const id = nextId++;
  listeners.set(id, listener);
  worker.ref();
  worker.postMessage({ type: "spawn", id, ...options } satisfies SpawnRequest);
  return {
    closePipes: () => worker.postMessage({ type: "close-pipes", id } satisfies SpawnRequest),
  };
}
