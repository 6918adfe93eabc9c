import { rmSync } from "node:fs";
import { markedProcesses } from "./hook-mark.js";
import type { ReaperMessage } from "./reaper.js";

/**
 * The reaper where there is no POSIX shell (Windows; see reaper.ts and shell-reaper.ts), a
 * small helper process of the server, the REPL or a program using the SDK:
 * when its parent goes away, however it ends (even `kill -9`), its IPC channel closes; this
 * then stops the hook processes still running (the parent reports each one started and ended)
 * and removes the parent's temporary index folders. The parent does both itself on a clean
 * stop; this covers the rest. What the parent told it before it was up is lost if the parent
 * is gone by then (Node.js drops an IPC channel whose other end closed first): only the first
 * folder, an argument, is sure to be removed then.
 */
const directories = new Set<string>(process.argv[2] ? [process.argv[2]] : []);
/** The mark in every hook's environment (see hook-mark.ts). */
const mark = process.argv[3];
const hooks = new Set<number>();

process.on("message", (message: ReaperMessage) => {
  if (message.started !== undefined) hooks.add(message.started);
  if (message.ended !== undefined) hooks.delete(message.ended);
  if (message.folder !== undefined) directories.add(message.folder);
  if (message.removed !== undefined) directories.delete(message.removed);
});
process.on("SIGINT", () => {});
process.on("SIGTERM", () => {});
/** Stops every hook the parent left and removes its index folders, then exits. */
function reap(): void {
  // Also the hooks the server started but was killed before it could report.
  const marked = mark ? markedProcesses(mark) : [];
  for (const pid of new Set([...hooks, ...marked])) {
    // Each hook leads its own process group: what it started goes with it.
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }
  for (const directory of directories) {
    try {
      // Query processes outlive a killed server by up to a quarter second (their watchdogs):
      // one may still touch SQLite's files in the folder, so the removal retries.
      rmSync(directory, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    } catch {
      // Nothing else to try: the folder is in the system's temporary directory.
    }
  }
  process.exit(0);
}

process.on("disconnect", reap);
// The server was killed before this process was even up (a loaded machine starts Node slowly):
// there is no channel left to close, and nothing it reported; the marks still find its hooks.
if (!process.connected) reap();
