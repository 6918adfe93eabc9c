import { lstatSync, realpathSync, statSync } from "node:fs";

/** What a name that is not valid UTF-8 shows in place of each bad byte sequence. */
export const RAW_NAME_MARK = "\uFFFD";

/** Whether `target` (a resolved, absolute path) is `root` or below it. */
export function isInsideRoot(root: string, target: string): boolean {
  return target === root || target.startsWith(root.endsWith("/") ? root : `${root}/`);
}

/**
 * Whether the entry at `absolute` is a row: a regular file, or a symlink whose target resolves
 * to a regular file inside `root`. A FIFO, socket or device is never one (and is never opened);
 * a link that cannot be resolved (missing, a loop, through a file, no permission) is a broken
 * link, and a link leading outside the root is not followed. Never throws.
 */
export function isListedFileAt(root: string, absolute: string | Buffer): boolean {
  try {
    const own = lstatSync(absolute, { throwIfNoEntry: false });
    if (own === undefined) return false;
    if (own.isFile()) return true;
    if (!own.isSymbolicLink()) return false;
    const target = realpathSync(absolute);
    if (!isInsideRoot(root, target)) return false;
    return statSync(target, { throwIfNoEntry: false })?.isFile() ?? false;
  } catch {
    return false;
  }
}
