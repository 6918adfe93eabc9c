import type { ProgressPhase } from "../progress/reporter.js";
import type { SkippedPath } from "../scan/walk.js";
import type { Extractor } from "./extractor.js";
import type { HookRow } from "./hook-rows.js";
import { HookSlots } from "./hook-slots.js";

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

/** What `parseFiles` takes besides the extractor and the paths. */
interface ParseOptions {
  root: string;
  concurrency?: number;
  phase?: ProgressPhase;
  signal?: AbortSignal;
  /** Each file's outcome as soon as it is known (a persisted build commits them in batches). */
  onParsed?: (result: ParsedFile | SkippedPath) => void;
}

/** Extracts one file; the outcome goes to `results` and `onParsed`. */
async function extractInto(
  extractor: Extractor,
  paths: readonly string[],
  index: number,
  results: (ParsedFile | SkippedPath)[],
  options: ParseOptions,
): Promise<void> {
  const path = paths[index] as string;
  const parsed = await extractor.extract({ path, root: options.root }, options.signal);
  results[index] = parsed.ok ? { path, rows: parsed.rows } : { path, reason: parsed.reason };
  options.onParsed?.(results[index]);
}

/**
 * Extracts every file's rows, `concurrency` at a time (default: the extractor's). For a hook
 * (kind `hook`) the slot rule of `HookSlots` applies: a file whose hook has run for a while
 * stops counting, so a slow or hung hook never holds back the files after it, within a bound
 * on how many run at once in all. A failure is isolated to its file. Rejects only when the
 * extractor cannot work at all (a hook program that cannot be started). `signal` stops the
 * hooks still running (their files are skipped).
 */
export async function parseFiles(
  extractor: Extractor,
  paths: readonly string[],
  options: ParseOptions,
): Promise<ParseResult> {
  const results: (ParsedFile | SkippedPath)[] = new Array(paths.length);
  const concurrency = Math.max(1, options.concurrency ?? extractor.concurrency);
  let done = 0;
  const report = () => {
    const percent = paths.length === 0 ? 100 : Math.floor((done * 100) / paths.length);
    options.phase?.update(`indexing ${done}/${paths.length} files (${percent}%)`);
  };
  const extractOne = async (index: number) => {
    await extractInto(extractor, paths, index, results, options);
    done++;
    report();
  };
  report();
  if (extractor.kind === "hook") {
    await inSlots(paths.length, new HookSlots(concurrency), extractOne);
  } else {
    await inLanes(paths.length, concurrency, extractOne);
  }
  const files: ParsedFile[] = [];
  const skipped: SkippedPath[] = [];
  for (const result of results) {
    if ("rows" in result) files.push(result);
    else skipped.push(result);
  }
  return { files, skipped };
}

/** Runs `task` for 0..count-1, `lanes` at a time; the first failure rejects at once. */
async function inLanes(
  count: number,
  lanes: number,
  task: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failed = false;
  const lane = async () => {
    while (!failed && next < count) {
      try {
        await task(next++);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(lanes, count) }, lane));
}

/**
 * Runs `task` for 0..count-1, each once it holds a slot of `slots`; the first failure rejects
 * at once (a hung task never holds it up), and no task starts after it.
 */
async function inSlots(
  count: number,
  slots: HookSlots,
  task: (index: number) => Promise<void>,
): Promise<void> {
  let failure: { error: unknown } | null = null;
  let fail: (error: unknown) => void = () => {};
  const failing = new Promise<never>((_, reject) => {
    fail = reject;
  });
  // Only a rejection that wins the race below is seen; the others are the same failure.
  failing.catch(() => undefined);
  const run = async (index: number, release: () => void) => {
    try {
      await task(index);
    } catch (error) {
      failure ??= { error };
      fail(error);
    } finally {
      release();
    }
  };
  const startAll = async () => {
    const started: Promise<void>[] = [];
    for (let index = 0; index < count && failure === null; index++) {
      const release = await slots.acquire();
      if (release === null) break;
      if (failure !== null) {
        release();
        break;
      }
      started.push(run(index, release));
    }
    await Promise.all(started);
  };
  await Promise.race([startAll(), failing]);
}
