import { rmSync } from "node:fs";

/**
 * A small helper process of the server: when the server goes away, however it ends (even
 * `kill -9`), its IPC channel closes; this then stops the hook processes still running (the
 * server reports each one started and ended) and removes the server's temporary index
 * folder. The server does both itself on a clean shutdown; this covers the rest.
 */
const directory = process.argv[2];
const hooks = new Set<number>();

process.on("message", (message: { started?: number; ended?: number }) => {
  if (message.started !== undefined) hooks.add(message.started);
  if (message.ended !== undefined) hooks.delete(message.ended);
});
process.on("SIGINT", () => {});
process.on("SIGTERM", () => {});
process.on("disconnect", () => {
  for (const pid of hooks) {
    // Each hook leads its own process group: what it started goes with it.
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }
  if (directory) rmSync(directory, { recursive: true, force: true });
  process.exit(0);
});
