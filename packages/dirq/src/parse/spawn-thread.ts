import { type ChildProcess, spawn } from "node:child_process";
import { parentPort, workerData } from "node:worker_threads";
import {
  FIRST_PID,
  killProcessGroup,
  SPAWNING,
  type SpawnAnswer,
  type SpawnRequest,
  STOPPING,
} from "./hook-spawner.js";

/**
 * The thread of `HookSpawner`: starts the hooks it is told to and collects their output, so
 * that the main thread never waits in `spawn()` (Node returns from it only once the child has
 * started its program: milliseconds per hook, more with a large heap) nor handles their
 * pipes' data.
 */

/** Keeps only the last bytes of a stream, so a chatty hook's stderr never piles up. */
function keepTail(chunks: Buffer[], chunk: Buffer, keep: number): void {
  chunks.push(chunk);
  let size = chunks.reduce((sum, part) => sum + part.length, 0);
  while (chunks.length > 1 && size - (chunks[0]?.length ?? 0) >= keep) {
    size -= chunks.shift()?.length ?? 0;
  }
}

function killGroup(child: ChildProcess): void {
  if (child.pid !== undefined) killProcessGroup(child.pid);
}

/** Shared with the main thread (hook-spawner.ts): spawns under way, stopping, live pids. */
const registry = (workerData as { registry: Int32Array }).registry;

/** Records a started hook's pid where the main thread finds it; its slot (0: none free). */
function register(pid: number): number {
  for (let slot = FIRST_PID; slot < registry.length; slot++) {
    if (Atomics.compareExchange(registry, slot, 0, pid) === 0) return slot;
  }
  return 0;
}

/**
 * Spawns unless the process is stopping its hooks, with the pid recorded before the main
 * thread can look: it waits for spawns under way before it reads the pids.
 */
function spawnRegistered(
  request: Extract<SpawnRequest, { type: "spawn" }>,
): { child: ChildProcess; slot: number } | null {
  Atomics.add(registry, SPAWNING, 1);
  try {
    if (Atomics.load(registry, STOPPING) !== 0) return null;
    const { program, args, cwd, marks } = request;
    // Its own process group, so that stopping it stops whatever it started.
    const child = spawn(program, args, {
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
      env: marks === undefined ? process.env : { ...process.env, ...marks },
    });
    return { child, slot: child.pid === undefined ? 0 : register(child.pid) };
  } finally {
    Atomics.sub(registry, SPAWNING, 1);
    Atomics.notify(registry, SPAWNING);
  }
}

const children = new Map<number, ChildProcess>();
const post = (answer: SpawnAnswer, transfer: ArrayBuffer[] = []) =>
  parentPort?.postMessage(answer, transfer);

function start(request: Extract<SpawnRequest, { type: "spawn" }>): void {
  const { id, maxStdoutBytes, stderrKeepBytes } = request;
  const started = spawnRegistered(request);
  if (started === null) {
    post({ id, type: "lost" });
    return;
  }
  const { child, slot } = started;
  children.set(id, child);
  if (child.pid !== undefined) post({ id, type: "spawned", pid: child.pid });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  let printed = 0;
  let overflowed = false;
  child.stdout?.on("data", (chunk: Buffer) => {
    printed += chunk.length;
    if (printed > maxStdoutBytes) {
      if (!overflowed) killGroup(child);
      overflowed = true;
      stdout.length = 0;
      return;
    }
    stdout.push(chunk);
  });
  child.stderr?.on("data", (chunk: Buffer) => keepTail(stderr, chunk, stderrKeepBytes));
  child.on("error", (error: NodeJS.ErrnoException) => {
    post({ id, type: "error", code: error.code, message: error.message, started: !!child.pid });
  });
  child.on("close", (code, signal) => {
    children.delete(id);
    // Whatever it started and left behind (a daemon with its own output) is stopped too.
    killGroup(child);
    if (slot !== 0) Atomics.store(registry, slot, 0);
    const output = overflowed ? Buffer.alloc(0) : Buffer.concat(stdout);
    // Buffer.concat of one chunk may hand back a slice of a shared pool: copy to move it.
    const own =
      output.byteOffset === 0 && output.byteLength === output.buffer.byteLength
        ? output
        : new Uint8Array(output);
    post(
      {
        id,
        type: "close",
        code,
        signal,
        overflowed,
        stdout: own,
        stderr: Buffer.concat(stderr).toString("utf8"),
      },
      [own.buffer as ArrayBuffer],
    );
  });
}

parentPort?.on("message", (request: SpawnRequest) => {
  if (request.type === "spawn") {
    start(request);
    return;
  }
  // Past its time limit: the group was killed, but a process that left the group may still
  // hold the pipes; the hook is over anyway.
  const child = children.get(request.id);
  child?.stdout?.destroy();
  child?.stderr?.destroy();
});
