import { type Stats, statSync } from "node:fs";

/**
 * A path's stats (symlinks followed), or undefined when there is nothing the path leads to:
 * missing, or a lookup the system refuses (a folder on the way that cannot be searched, a file
 * on the way, a loop of symlinks).
 */
export function statOrNone(path: string): Stats | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}
