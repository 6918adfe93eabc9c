import { realpathSync } from "node:fs";

/**
 * A path with every symlink resolved, as `realpathSync` gives it. One realpath(3) call where
 * the C library has it: Node's JavaScript version lstats each component of the path in turn.
 * Windows keeps Node's own, which differs from the native one on subst and network drives.
 */
export function realPath(path: string): string {
  return process.platform === "win32" ? realpathSync(path) : realpathSync.native(path);
}
