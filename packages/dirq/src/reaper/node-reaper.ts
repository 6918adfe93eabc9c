import { fork } from "node:child_process";
import { childEnvironment, childExecArgv } from "../node-options.js";
import type { ReaperMessage } from "./reaper.js";

/** Starts index-reaper.ts for `directory`; returns how to tell it of hooks and folders. */
export function startNodeReaper(directory: string, mark: string): (message: ReaperMessage) => void {
  const reaper = fork(new URL("./index-reaper.js", import.meta.url), [directory, mark], {
    stdio: ["ignore", "ignore", "ignore", "ipc"],
    execArgv: childExecArgv(),
    env: childEnvironment(),
    // Its own process group, as the shell reaper's (see shell-reaper.ts).
    detached: true,
  });
  reaper.on("error", () => {});
  // It never keeps this process alive: it waits for this process's end, not the reverse.
  reaper.unref();
  reaper.channel?.unref();
  return (message) => {
    if (reaper.connected) reaper.send(message, undefined, undefined, () => {});
  };
}
