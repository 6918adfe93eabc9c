import { readdirSync, readFileSync } from "node:fs";

/**
 * The environment variable that marks the hooks of one server (and what they start): the
 * server's reaper finds them by it when the server was killed before it could report one.
 */
export const HOOK_MARK_VARIABLE = "DIRQ_SERVER_MARK";

/**
 * The processes whose environment carries `mark`, read from /proc (Linux); elsewhere none are
 * found and the reaper relies on what the server reported.
 */
export function markedProcesses(mark: string): number[] {
  const needle = `\0${HOOK_MARK_VARIABLE}=${mark}\0`;
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // A leading NUL lets the first variable match as the others do.
      if (`\0${readFileSync(`/proc/${entry}/environ`, "latin1")}`.includes(needle)) {
        found.push(Number(entry));
      }
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}
