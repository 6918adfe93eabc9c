import { availableParallelism } from "node:os";
import type { ProgressPhase } from "../progress/reporter.js";
import type { SkippedPath } from "../scan/walk.js";
import type { HookCommand } from "./hook-command.js";
import { type HookRow, parseHookOutput } from "./hook-rows.js";
import { runHook } from "./run-hook.js";

export interface ParsedFile {
  /** Relative path of the file. */
  path: string;
  rows: HookRow[];
}

export interface ParseResult {
  /** Files that parsed, in the order given. */
  files: ParsedFile[];
  /** Files whose hook failed or printed something else than rows. */
  skipped: SkippedPath[];
}

/** Hooks in flight at once: one per CPU core. */
export function defaultHookConcurrency(): number {
  return Math.max(1, availableParallelism());
}

/**
 * Runs the hook over every file, `concurrency` at a time. A failure is isolated to its file.
 * Rejects only when the hook program cannot be started at all.
 */
export async function parseFiles(
  command: HookCommand,
  paths: readonly string[],
  options: { root: string; concurrency?: number; phase?: ProgressPhase },
): Promise<ParseResult> {
  const results: (ParsedFile | SkippedPath)[] = new Array(paths.length);
  const concurrency = Math.max(1, options.concurrency ?? defaultHookConcurrency());
  let next = 0;
  let done = 0;
  const report = () => {
    const percent = paths.length === 0 ? 100 : Math.floor((done * 100) / paths.length);
    options.phase?.update(`indexing ${done}/${paths.length} files (${percent}%)`);
  };
  let failed = false;
  const lane = async () => {
    while (!failed && next < paths.length) {
      const index = next++;
      const path = paths[index] as string;
      try {
        const outcome = await runHook(command, {
          path: `${options.root}/${path}`,
          root: options.root,
        });
        const parsed = outcome.ok ? parseHookOutput(outcome.stdout) : outcome;
        results[index] = parsed.ok ? { path, rows: parsed.rows } : { path, reason: parsed.reason };
      } catch (error) {
        failed = true;
        throw error;
      }
      done++;
      report();
    }
  };
  report();
  await Promise.all(Array.from({ length: Math.min(concurrency, paths.length) }, lane));
  const files: ParsedFile[] = [];
  const skipped: SkippedPath[] = [];
  for (const result of results) {
    if ("rows" in result) files.push(result);
    else skipped.push(result);
  }
  return { files, skipped };
}
