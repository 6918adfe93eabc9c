import { mkdirSync } from "node:fs";
import { dirname } from "node:path";

/**
 * Makes a folder and the missing ones above it, one level at a time, and gives up at the first
 * failure: Node's recursive `mkdirSync` loops for ever where `mkdir` says ENOENT under a parent
 * that exists (a cache folder under `/proc`). Throws the system's error.
 */
export function makeFolder(path: string): void {
  try {
    mkdirSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return;
    const parent = dirname(path);
    if (code !== "ENOENT" || parent === path) throw error;
    makeFolder(parent);
    makeFolderIn(path);
  }
}

/** Makes a folder whose parent exists; another process making it at the same time is fine. */
function makeFolderIn(path: string): void {
  try {
    mkdirSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
}
