import { randomBytes } from "node:crypto";
import { existsSync, rmSync } from "node:fs";
import { childEnvironment } from "../node-options.js";
import { observeHookProcesses } from "../parse/run-hook.js";
import { HOOK_MARK_VARIABLE } from "./hook-mark.js";
import { startNodeReaper } from "./node-reaper.js";
import { startShellReaper } from "./shell-reaper.js";

/** What this process tells its reaper (shell-reaper.ts, or index-reaper.ts on Windows). */
export interface ReaperMessage {
  /** A hook process started, or ended. */
  started?: number;
  ended?: number;
  /** A temporary index folder to remove once this process has ended, or one removed already. */
  folder?: string;
  removed?: string;
}

/** Sends to this process's reaper; `null` until the first `startReaper`. */
let tell: ((message: ReaperMessage) => void) | null = null;
/** Whether the reaper started is the shell one (shell-reaper.ts). */
let shellReaper = false;

/**
 * Starts this process's reaper once (a shell program, see shell-reaper.ts; on Windows a Node.js
 * process, index-reaper.ts), a helper that stops the hooks this
 * process left running and removes its temporary index folders when it ends in any way
 * (`kill -9`, a crash, an exit without a close included); each call adds `directory` to the
 * folders it removes. A server, a REPL and every SDK index of one program share it.
 */
export function startReaper(directory: string): void {
  if (tell !== null) {
    tell({ folder: directory });
    return;
  }
  // Every hook carries this mark in its environment: the reaper also finds a hook this
  // process started but was killed before it could report.
  const mark = `${process.pid}-${randomBytes(8).toString("hex")}`;
  shellReaper = hasPosixShell();
  const send = shellReaper
    ? startShellReaper(directory, mark, childEnvironment())
    : startNodeReaper(directory, mark);
  tell = send;
  // The reaper stops hooks this process leaves behind when it is killed.
  observeHookProcesses({
    started: (pid) => send({ started: pid }),
    ended: (pid) => send({ ended: pid }),
    environment: { [HOOK_MARK_VARIABLE]: mark },
  });
}

/**
 * Whether this process's reaper can be given the children it must stop (see
 * `reapWithThisProcess`): started, and the shell reaper, which reads its pipe to the end
 * whatever came first. The Node.js one (Windows) misses what was told before it was up if this
 * process is gone by then, so a child that must not outlive this process watches for itself.
 */
export function reaperStopsChildren(): boolean {
  return tell !== null && shellReaper;
}

/**
 * Has this process's reaper stop `pid` (a process group's leader, with its group) if this
 * process ends in any way first; the function returned says it ended and no longer needs to.
 * Only once `reaperStopsChildren()`.
 */
export function reapWithThisProcess(pid: number): () => void {
  const send = tell;
  send?.({ started: pid });
  return () => send?.({ ended: pid });
}

/** Windows has no `/bin/sh`: the reaper is then a Node.js process (index-reaper.ts). */
function hasPosixShell(): boolean {
  return process.platform !== "win32" && existsSync("/bin/sh");
}

/**
 * Removes a temporary index at a clean stop. A query process still closing its connection
 * may touch SQLite's files there, so it retries; a failure is not worth a failed exit, since
 * the reaper removes the directory once this process has ended.
 */
export function removeIndexDirectory(directory: string): void {
  try {
    rmSync(directory, { recursive: true, force: true, maxRetries: 5 });
    tell?.({ removed: directory });
  } catch {
    // Left to the reaper.
  }
}
