import { fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { childEnvironment, childExecArgv } from "../node-options.js";
import { observeHookProcesses } from "../parse/run-hook.js";
import { HOOK_MARK_VARIABLE } from "./hook-mark.js";

/** What this process tells its reaper (index-reaper.ts). */
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

/**
 * Starts this process's reaper once (index-reaper.ts), a helper that stops the hooks this
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
  const reaper = fork(new URL("./index-reaper.js", import.meta.url), [directory, mark], {
    stdio: ["ignore", "ignore", "ignore", "ipc"],
    execArgv: childExecArgv(),
    env: childEnvironment(),
    // Its own process group: a SIGKILL of this process's whole group (a cancelled CI job, a
    // container stop, `kill -9 -- -<pgid>`) must not take the reaper with it.
    detached: true,
  });
  reaper.on("error", () => {});
  // It never keeps this process alive: it waits for this process's end, not the reverse.
  reaper.unref();
  reaper.channel?.unref();
  const send = (message: ReaperMessage) => {
    if (reaper.connected) reaper.send(message, undefined, undefined, () => {});
  };
  tell = send;
  // The reaper stops hooks this process leaves behind when it is killed.
  observeHookProcesses({
    started: (pid) => send({ started: pid }),
    ended: (pid) => send({ ended: pid }),
    environment: { [HOOK_MARK_VARIABLE]: mark },
  });
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
