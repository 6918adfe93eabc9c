import { childStarting } from "../child-start.js";
import { os } from "../lazy-module.js";
import { DirqError } from "../errors.js";
import { expandHookCommand, type HookCommand } from "./hook-command.js";
import { HookSlots, whenAborted } from "./hook-slots.js";
import { killProcessGroup, type SpawnAnswer, spawnHook, stopSpawnedHooks } from "./hook-spawner.js";
import type { HookTimeLimit } from "./hook-timeout.js";

/** How much of a failing hook's stderr a message quotes. */
const STDERR_TAIL_BYTES = 1000;

/**
 * Most a hook may print for one file. Past it the hook is stopped and the file skipped: a
 * hook that prints for ever must not take all memory (and JSON text this long is beyond what
 * one JavaScript string holds anyway).
 */
export const MAX_HOOK_OUTPUT_BYTES = 256 * 1024 * 1024;

export type HookOutcome = { ok: true; stdout: Buffer } | { ok: false; reason: string };

const ABANDONED: HookOutcome = { ok: false, reason: "hook was stopped: the work was abandoned" };

function tail(stderr: string): string {
  const text = stderr.trim();
  if (text.length <= STDERR_TAIL_BYTES) return text;
  return `…${text.slice(-STDERR_TAIL_BYTES)}`;
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

/** A hook started: its process id once its program runs; `abandoned` once its work is not wanted. */
interface RunningHook {
  pid: number | undefined;
  abandoned: boolean;
}

/** Hooks running now, so that a server shutting down can stop them. */
const running = new Set<RunningHook>();

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

let processSlots: HookSlots | undefined;
/**
 * The slots every hook of this process takes before it starts, whatever started it (a
 * table's fill, a live refresh, a one-shot query): one per CPU core for hooks that end
 * quickly, and a hard bound on hook processes in all, so that a thousand hung hooks are a
 * queue, never a thousand processes.
 */
export function hookProcessSlots(): HookSlots {
  processSlots ??= new HookSlots(Math.max(1, os().availableParallelism()));
  return processSlots;
}

/** Installs the one observer of hook processes (`null` removes it). */
export function observeHookProcesses(next: HookProcessObserver | null): void {
  observer = next;
}

/**
 * Kills a hook and every process it started: each hook leads its own process group, so a
 * child it forked (holding its stdout, or left behind) goes too.
 */
function killGroup(hook: RunningHook): void {
  if (hook.pid !== undefined) killProcessGroup(hook.pid);
}

/**
 * Stops every hook process still running, with the processes they started (a process shutting
 * down, or ended by a signal): a hung hook would otherwise keep it alive or outlive it. Their
 * files count as failed.
 */
export function stopRunningHooks(): void {
  for (const hook of running) {
    hook.abandoned = true;
    killGroup(hook);
  }
  // Hooks whose pid has not reached this thread yet (its message waits behind this call).
  stopSpawnedHooks();
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
 * the reason it failed (exit status, signal, time limit, stderr tail). Rejects with a
 * `HOOK_START_FAILED` DirqError when the program cannot be started at all. `signal` kills
 * the hook. The hook waits for one of the process's hook slots before it starts; its time
 * limit counts from its start.
 */
export async function runHook(
  command: HookCommand,
  file: { path: string; root: string },
  signal?: AbortSignal,
  limit?: HookTimeLimit,
): Promise<HookOutcome> {
  const argv = expandHookCommand(command, file);
  stopHooksOnExit();
  childStarting();
  const release = await hookProcessSlots().acquire(signal);
  if (release === null) return ABANDONED;
  try {
    return await startHook(command, argv, file.root, { signal, limit, release });
  } catch (error) {
    release();
    throw error;
  }
}

function startHook(
  command: HookCommand,
  [program, ...args]: string[],
  root: string,
  { signal, limit, release }: { signal?: AbortSignal; limit?: HookTimeLimit; release: () => void },
): Promise<HookOutcome> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      release();
      resolve(ABANDONED);
      return;
    }
    const hook: RunningHook = { pid: undefined, abandoned: false };
    running.add(hook);
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    let over = false;
    const stopWatching =
      signal === undefined
        ? () => {}
        : whenAborted(signal, () => {
            hook.abandoned = true;
            killGroup(hook);
            resolve(ABANDONED);
          });
    const ended = () => {
      if (over) return;
      over = true;
      clearTimeout(timer);
      release();
      stopWatching();
      running.delete(hook);
      if (hook.pid !== undefined) observer?.ended(hook.pid);
    };
    const spawned = spawnHook(
      {
        program: program as string,
        args,
        cwd: root,
        marks: observer?.environment,
        maxStdoutBytes: MAX_HOOK_OUTPUT_BYTES,
        stderrKeepBytes: STDERR_TAIL_BYTES * 4,
      },
      (answer) => {
        switch (answer.type) {
          case "spawned":
            hook.pid = answer.pid;
            observer?.started(answer.pid);
            // Stopped while it was starting: stop it now that it can be found.
            if (hook.abandoned) killGroup(hook);
            if (limit !== undefined && limit.seconds > 0) {
              timer = setTimeout(() => {
                timedOut = true;
                killGroup(hook);
                spawned.closePipes();
              }, limit.seconds * 1000);
            }
            return;
          case "error": {
            ended();
            const error = Object.assign(new Error(answer.message), { code: answer.code });
            if (answer.code === "ENOENT" || answer.code === "EACCES" || !answer.started) {
              reject(startFailure(command, error));
            } else {
              resolve({ ok: false, reason: answer.message });
            }
            return;
          }
          case "lost":
            ended();
            resolve({ ok: false, reason: "hook was stopped: the thread that started it ended" });
            return;
          case "close":
            ended();
            resolve(closedOutcome(answer, timedOut ? limit : undefined));
        }
      },
    );
  });
}

/** What a hook that ran to its end (or was stopped) gave. */
function closedOutcome(
  answer: Extract<SpawnAnswer, { type: "close" }>,
  exceededLimit: HookTimeLimit | undefined,
): HookOutcome {
  const detail = tail(answer.stderr);
  if (exceededLimit !== undefined) {
    const reason = `hook ran past its time limit of ${exceededLimit.seconds} s and was stopped (${exceededLimit.setBy})`;
    return { ok: false, reason: detail ? `${reason}: ${detail}` : reason };
  }
  if (answer.overflowed) {
    const mebibytes = MAX_HOOK_OUTPUT_BYTES / 1024 / 1024;
    return {
      ok: false,
      reason: `hook printed more than ${mebibytes} MiB for one file and was stopped`,
    };
  }
  if (answer.code === 0) {
    const { buffer, byteOffset, byteLength } = answer.stdout;
    return { ok: true, stdout: Buffer.from(buffer, byteOffset, byteLength) };
  }
  const status = answer.signal
    ? `was killed by ${answer.signal}`
    : `exited with code ${answer.code}`;
  return { ok: false, reason: detail ? `hook ${status}: ${detail}` : `hook ${status}` };
}
