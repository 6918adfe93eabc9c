import { rmSync } from "node:fs";

/**
 * A small helper process of the server: when the server goes away, however it ends (even
 * `kill -9`), its IPC channel closes and this removes the server's temporary index folder.
 * The server removes it itself on a clean shutdown; this covers the rest.
 */
const directory = process.argv[2];

process.on("SIGINT", () => {});
process.on("SIGTERM", () => {});
process.on("disconnect", () => {
  if (directory) rmSync(directory, { recursive: true, force: true });
  process.exit(0);
});
