import type { ChildProcess } from "node:child_process";
import { childStarting } from "../child-start.js";
import { childProcess } from "../lazy-module.js";
import { DirqError } from "../errors.js";
import { expandHookCommand, type HookCommand } from "./hook-command.js";

/** How much of a failing hook's stderr a message quotes. */
const STDERR_TAIL_BYTES = 1000;

/**
 * Most a hook may print for one file. Past it the hook is stopped and the file skipped: a
 * hook that prints for ever must not take all memory (and JSON text this long is beyond what
 * one JavaScript string holds anyway).
 */
export const MAX_HOOK_OUTPUT_BYTES = 256 * 1024 * 1024;

export type HookOutcome = { ok: true; stdout: Buffer } | { ok: false; reason: string };

function tail(chunks: Buffer[]): string {
  const text = Buffer.concat(chunks).toString("utf8").trim();
  if (text.length <= STDERR_TAIL_BYTES) return text;
  return `…${text.slice(-STDERR_TAIL_BYTES)}`;
}

/** Keeps only the last bytes of a stream, so a chatty hook's stderr never piles up. */
function keepTail(chunks: Buffer[], chunk: Buffer): void {
  chunks.push(chunk);
  let size = chunks.reduce((sum, part) => sum + part.length, 0);
  while (chunks.length > 1 && size - (chunks[0]?.length ?? 0) >= STDERR_TAIL_BYTES * 4) {
    size -= chunks.shift()?.length ?? 0;
  }
}

function startFailure(command: HookCommand, error: NodeJS.ErrnoException): DirqError {
  const program = command.argv[0] ?? "";
  const why =
    error.code === "ENOENT"
      ? `program '${program}' not found (check the name, or give its path)`
      : error.code === "EACCES"
        ? `program '${program}' is not executable (chmod +x it, or run it through its interpreter)`
        : `program '${program}' could not be started: ${error.message}`;
  return new DirqError("HOOK_START_FAILED", `on-file command '${command.text}': ${why}`, {
    cause: error,
  });
}

/** Hook processes running now, so that a server shutting down can stop them. */
const running = new Set<ChildProcess>();

/** Told about every hook process started and ended (a server's reaper keeps the list). */
export interface HookProcessObserver {
  started(pid: number): void;
  ended(pid: number): void;
  /**
   * Variables added to every hook's environment (and so to whatever it starts): a mark by
   * which a hook can be found even when its start was never reported (dirq killed between
   * starting it and telling the observer).
   */
  environment?: Record<string, string>;
}

let observer: HookProcessObserver | null = null;

/** Installs the one observer of hook processes (`null` removes it). */
export function observeHookProcesses(next: HookProcessObserver | null): void {
  observer = next;
}

/**
 * Kills a hook and every process it started: each hook leads its own process group, so a
 * child it forked (holding its stdout, or left behind) goes too.
 */
function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // The group is gone already (only the leader ran, and it was reaped).
    child.kill("SIGKILL");
  }
}

/**
 * Stops every hook process still running, with the processes they started (a process shutting
 * down, or ended by a signal): a hung hook would otherwise keep it alive or outlive it. Their
 * files count as failed.
 */
export function stopRunningHooks(): void {
  for (const child of running) killGroup(child);
}

let exitHookInstalled = false;
/** However this process ends normally, no hook it started outlives it. */
function stopHooksOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", stopRunningHooks);
}

/**
 * Runs the hook for one file in `root` and collects its stdout as it streams (both pipes are
 * always drained, so a hook never blocks on a full pipe). Resolves with the output, or with
 * the reason it failed (exit status, signal, stderr tail). Rejects with a `HOOK_START_FAILED`
 * DirqError when the program cannot be started at all. `signal` kills the hook.
 */
export function runHook(
  command: HookCommand,
  file: { path: string; root: string },
  signal?: AbortSignal,
): Promise<HookOutcome> {
  const [program, ...args] = expandHookCommand(command, file);
  stopHooksOnExit();
  childStarting();
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      resolve({ ok: false, reason: "hook was stopped: the work was abandoned" });
      return;
    }
    // Its own process group, so that stopping it stops whatever it started.
    const marks = observer?.environment;
    const child = childProcess().spawn(program as string, args, {
      cwd: file.root,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
      env: marks === undefined ? process.env : { ...process.env, ...marks },
    });
    running.add(child);
    const pid = child.pid;
    if (pid !== undefined) observer?.started(pid);
    const onAbort = () => {
      killGroup(child);
      resolve({ ok: false, reason: "hook was stopped: the work was abandoned" });
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    const ended = () => {
      signal?.removeEventListener("abort", onAbort);
      if (!running.delete(child)) return;
      if (pid !== undefined) observer?.ended(pid);
    };
    child.once("close", ended);
    child.once("error", ended);
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let printed = 0;
    let overflowed = false;
    child.stdout.on("data", (chunk: Buffer) => {
      printed += chunk.length;
      if (printed > MAX_HOOK_OUTPUT_BYTES) {
        if (!overflowed) killGroup(child);
        overflowed = true;
        stdout.length = 0;
        return;
      }
      stdout.push(chunk);
    });
    child.stderr.on("data", (chunk: Buffer) => keepTail(stderr, chunk));
    child.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT" || error.code === "EACCES" || child.pid === undefined) {
        reject(startFailure(command, error));
      } else {
        resolve({ ok: false, reason: error.message });
      }
    });
    child.on("close", (code, signal) => {
      // Whatever it started and left behind (a daemon with its own output) is stopped too.
      killGroup(child);
      if (overflowed) {
        const limit = MAX_HOOK_OUTPUT_BYTES / 1024 / 1024;
        resolve({
          ok: false,
          reason: `hook printed more than ${limit} MiB for one file and was stopped`,
        });
        return;
      }
      if (code === 0) {
        resolve({ ok: true, stdout: Buffer.concat(stdout) });
        return;
      }
      const status = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      const detail = tail(stderr);
      resolve({ ok: false, reason: detail ? `hook ${status}: ${detail}` : `hook ${status}` });
    });
  });
}
