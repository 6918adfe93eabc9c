import { fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { observeHookProcesses } from "../parse/run-hook.js";
import { HOOK_MARK_VARIABLE } from "./hook-mark.js";

/**
 * Starts the helper (index-reaper.ts) that removes `directory`, the temporary index of a
 * server or a REPL, and stops running hooks when this process ends in any way (kill -9
 * included); both do it themselves when they stop cleanly.
 */
export function startReaper(directory: string): void {
  // Every hook carries this mark in its environment: the reaper also finds a hook this
  // process started but was killed before it could report.
  const mark = `${process.pid}-${randomBytes(8).toString("hex")}`;
  const reaper = fork(new URL("./index-reaper.js", import.meta.url), [directory, mark], {
    stdio: ["ignore", "ignore", "ignore", "ipc"],
    // Its own process group: a SIGKILL of this process's whole group (a cancelled CI job, a
    // container stop, `kill -9 -- -<pgid>`) must not take the reaper with it.
    detached: true,
  });
  reaper.on("error", () => {});
  reaper.unref();
  reaper.channel?.unref();
  // The reaper stops hooks this process leaves behind when it is killed.
  const tell = (message: { started?: number; ended?: number }) => {
    if (reaper.connected) reaper.send(message, undefined, undefined, () => {});
  };
  observeHookProcesses({
    started: (pid) => tell({ started: pid }),
    ended: (pid) => tell({ ended: pid }),
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
  } catch {
    // Left to the reaper.
  }
}
