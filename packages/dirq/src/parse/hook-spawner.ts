import type { Worker } from "node:worker_threads";
import { workerThreads } from "../lazy-module.js";
import { startThread } from "../node-options.js";

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

/**
 * What the spawn thread shares with this one, so that a process that is ending can stop every
 * hook at once, without waiting for messages: a signal's handler may run before the message
 * that names a hook's pid has arrived. [SPAWNING]: spawns under way on the thread; [STOPPING]:
 * set when the process stops its hooks (the thread then starts no more); from FIRST_PID on,
 * the pid of every hook the thread started and whose pipes are not closed yet (0: free).
 */
export const SPAWNING = 0;
export const STOPPING = 1;
export const FIRST_PID = 2;
/** Above the hard bound on hook processes (hook-slots.ts) on any machine with a few cores. */
const PID_SLOTS = 4096;
/** How long stopping waits for a spawn under way to give its pid. */
const SPAWN_WAIT_MS = 2_000;

let thread: Worker | null = null;
let registry: Int32Array | null = null;
const listeners = new Map<number, (answer: SpawnAnswer) => void>();
let nextId = 1;

function spawnThread(): Worker {
  if (thread !== null) return thread;
  const threads = workerThreads();
  const shared = new Int32Array(new SharedArrayBuffer((FIRST_PID + PID_SLOTS) * 4));
  const worker = startThread(new URL("./spawn-thread.js", import.meta.url), {
    env: threads.SHARE_ENV,
    workerData: { registry: shared },
  });
  worker.on("message", (answer: SpawnAnswer) => {
    const listener = listeners.get(answer.id);
    // Either ends the hook: a spawn refused once hooks are being stopped is `lost`, and a
    // listener left behind would keep the thread, and so the process, alive.
    if (answer.type === "close" || answer.type === "lost") listeners.delete(answer.id);
    listener?.(answer);
    if (listeners.size === 0) worker.unref();
  });
  // A thread that fails or exits reports its hooks as lost; the next hook starts a new one.
  const lost = () => {
    if (thread !== worker) return;
    thread = null;
    registry = null;
    const orphans = [...listeners];
    listeners.clear();
    for (const [id, listener] of orphans) listener({ id, type: "lost" });
  };
  worker.on("error", lost);
  worker.on("exit", lost);
  worker.unref();
  thread = worker;
  registry = shared;
  return worker;
}

/**
 * Kills the process group of every hook the spawn thread started and has not seen end, and
 * keeps it from starting any more: for a process that is ending (a signal, an exit, a session's
 * end). Synchronous: a spawn under way is waited for (briefly), so its hook is stopped too.
 */
export function stopSpawnedHooks(): void {
  const shared = registry;
  if (shared === null) return;
  Atomics.store(shared, STOPPING, 1);
  const deadline = Date.now() + SPAWN_WAIT_MS;
  for (let under = Atomics.load(shared, SPAWNING); under > 0;) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    Atomics.wait(shared, SPAWNING, under, left);
    under = Atomics.load(shared, SPAWNING);
  }
  for (let slot = FIRST_PID; slot < shared.length; slot++) {
    const pid = Atomics.load(shared, slot);
    if (pid !== 0) killProcessGroup(pid);
  }
}

/** Kills a hook's process group (each hook leads its own), or the hook alone when it has none. */
export function killProcessGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Ended already.
    }
  }
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
