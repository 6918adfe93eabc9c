import type { ProgressPhase } from "../progress/reporter.js";
import type { SkippedPath } from "../scan/walk.js";
import type { Extractor } from "./extractor.js";
import type { HookRow } from "./hook-rows.js";

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

/**
 * Extracts every file's rows, `concurrency` at a time (default: the extractor's). A failure is
 * isolated to its file. Rejects only when the extractor cannot work at all (a hook program
 * that cannot be started). `signal` stops the hooks still running (their files are skipped).
 */
export async function parseFiles(
  extractor: Extractor,
  paths: readonly string[],
  options: {
    root: string;
    concurrency?: number;
    phase?: ProgressPhase;
    signal?: AbortSignal;
    /** Each file's outcome as soon as it is known (a persisted build commits them in batches). */
    onParsed?: (result: ParsedFile | SkippedPath) => void;
  },
): Promise<ParseResult> {
  const results: (ParsedFile | SkippedPath)[] = new Array(paths.length);
  const concurrency = Math.max(1, options.concurrency ?? extractor.concurrency);
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
        const parsed = await extractor.extract({ path, root: options.root }, options.signal);
        results[index] = parsed.ok ? { path, rows: parsed.rows } : { path, reason: parsed.reason };
        options.onParsed?.(results[index]);
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
