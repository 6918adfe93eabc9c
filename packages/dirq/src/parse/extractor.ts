import { crypto, os } from "../lazy-module.js";
import { readFileSync } from "node:fs";
import type { HookCommand } from "./hook-command.js";
import { type HookRow, parseJsonExactRows, toRows } from "./hook-rows.js";
import { parseOutput } from "./large-output.js";
import { DEFAULT_HOOK_TIMEOUT_SECONDS, type HookTimeLimit } from "./hook-timeout.js";
import { runHook } from "./run-hook.js";

/** One file's rows, or why the file is skipped (its other tables' rows and other files stand). */
export type ExtractOutcome = { ok: true; rows: HookRow[] } | { ok: false; reason: string };

/** What turns a file into rows: a hook process, an extract function, or a built-in format. */
export type ExtractorKind = "hook" | "function" | "format";

/** The file to extract rows from: its path relative to the root, and the root. */
export interface ExtractTarget {
  path: string;
  root: string;
}

/**
 * What turns one file into rows: the parse seam. Building a table and refreshing it after a
 * change both go through it, whatever produces the rows.
 */
export interface Extractor {
  /**
   * Stable text naming what produces the rows (`command:<text>`, `function:<name>:<hash>`):
   * a change of extractor is a change of the table's spec.
   */
  readonly id: string;
  /**
   * The program that runs, as the command names it: the script an interpreter gets as its
   * first argument (`node parse.js {path}`), else the executable. A persisted table is
   * rebuilt when its content changes. Other arguments never count (a `--log` file changes
   * with every run). Empty for an in-process function (its source is in `id`).
   */
  readonly inputs: readonly string[];
  /** Files extracted at once unless the index says otherwise. */
  readonly concurrency: number;
  /**
   * What does the work, which decides where it waits its turn: `hook`, one process per file
   * (a hook that runs long stops counting against `concurrency`: the rule of `HookSlots`),
   * `function`, an extract function of a program (in this process or the SDK's), `format`, a
   * built-in reader. A live refresh runs hooks in a lane of their own, so files of the other
   * kinds never wait behind hook processes (see `ExtractScheduler`).
   */
  readonly kind: ExtractorKind;
  /**
   * Rows of one file, or the reason it is skipped: never rejects for one bad file. Rejects (a
   * `DirqError`) only when no file can be extracted at all, such as a hook program that cannot
   * be started; never throws (a failure is a rejection). `signal` abandons the work (a running
   * hook is killed).
   */
  extract(file: ExtractTarget, signal?: AbortSignal): Promise<ExtractOutcome>;
}

/** Rows as an in-process extract function returns them: an array of plain objects. */
export type ExtractedRows = readonly Record<string, unknown>[];

/**
 * An in-process extract function: the file's path relative to the root and its bytes, to its
 * rows (sync or async). Throwing skips the file with the error's message. The rows may also
 * come as JSON text (a string or bytes) holding an array of row objects, read as a hook's
 * output is: exact integers, and a number written with a fraction or exponent (`3.0`) a REAL;
 * there a value `{"$base64": "..."}` is a BLOB. A row value that is a `Uint8Array` (a `Buffer`)
 * is a BLOB.
 */
export type ExtractFunction = (
  path: string,
  content: Buffer,
) => ExtractedRows | string | Uint8Array | Promise<ExtractedRows | string | Uint8Array>;

/** Programs that run a script given as their first argument that is not an option. */
const INTERPRETERS = new Set([
  "node",
  "nodejs",
  "python",
  "python2",
  "python3",
  "bash",
  "sh",
  "dash",
  "zsh",
  "deno",
  "bun",
  "ruby",
  "perl",
  "php",
]);

/**
 * The word of a hook's argv that names the program whose content decides its output: an
 * interpreter's script (its first argument that is no option and no `run` subcommand), or
 * the executable itself. `[]` when the script is not a plain word (`sh -c '...'`: the text
 * is the command's, which counts already).
 */
export function hookProgram(argv: readonly string[]): string[] {
  const [program, ...args] = argv;
  if (program === undefined) return [];
  const name = program.slice(program.lastIndexOf("/") + 1).replace(/\d+(\.\d+)*$/, "");
  if (!INTERPRETERS.has(name) && !INTERPRETERS.has(program.slice(program.lastIndexOf("/") + 1))) {
    return [program];
  }
  const script = args.find(
    (word, i) => !word.startsWith("-") && !(i === 0 && word === "run" && /^(deno|bun)$/.test(name)),
  );
  if (script === undefined || /\{(path|root)\}/.test(script)) return [];
  // `sh -c 'text'`, `python3 -m module`, `node -e code`: the first plain word is no script.
  const before = args.slice(0, args.indexOf(script));
  if (before.some((word) => /^(-c|-e|-m|-p|--eval|--print|-E|-r)$/.test(word))) return [];
  return [script];
}

/** The time limit of a hook nothing sets one for. */
export const DEFAULT_HOOK_TIME_LIMIT: HookTimeLimit = {
  seconds: DEFAULT_HOOK_TIMEOUT_SECONDS,
  setBy: "the default: a table's timeout key or --hook-timeout sets another, 0 = none",
};

/**
 * The on-file hook: one process per file, printing a JSON array of row objects, stopped past
 * `limit`. The limit is not part of `id`: it changes no row a hook prints in time.
 */
export function commandExtractor(
  command: HookCommand,
  limit: HookTimeLimit = DEFAULT_HOOK_TIME_LIMIT,
): Extractor {
  return {
    id: `command:${command.text}`,
    inputs: hookProgram(command.argv),
    // A hook is a process: more at once than cores only adds contention.
    concurrency: Math.max(1, os().availableParallelism()),
    kind: "hook",
    async extract(file, signal) {
      const outcome = await runHook(
        command,
        { path: `${file.root}/${file.path}`, root: file.root },
        signal,
        limit,
      );
      return outcome.ok ? parseOutput(outcome.stdout) : outcome;
    },
  };
}

/** Calls in flight for an in-process extractor: async extract functions overlap. */
const FUNCTION_CONCURRENCY = 16;

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === "function";
}

function describeThrown(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/**
 * An in-process extract function, called once per file with the file's content: no process per
 * file. `name` (the table's) and the function's source make up its id; `concurrency` calls may
 * be in flight at once.
 */
export function functionExtractor(
  name: string,
  extract: ExtractFunction,
  concurrency: number = FUNCTION_CONCURRENCY,
): Extractor {
  const digest = crypto().createHash("sha256").update(String(extract)).digest("hex").slice(0, 16);
  return {
    id: `function:${name}:${digest}`,
    kind: "function",
    inputs: [],
    concurrency,
    async extract(file) {
      let content: Buffer;
      try {
        // Synchronous: for the small files tables hold, one blocking read costs a fraction of
        // the promise machinery of an async one (open, stat, read, close, each a round trip).
        content = readFileSync(`${file.root}/${file.path}`);
      } catch (error) {
        return { ok: false, reason: `cannot read the file: ${describeThrown(error)}` };
      }
      let result: unknown;
      try {
        result = extract(file.path, content);
        // A synchronous function's rows need no trip through the microtask queue.
        if (isThenable(result)) result = await result;
      } catch (error) {
        return { ok: false, reason: `extract failed: ${describeThrown(error)}` };
      }
      const source = { whole: "extract returned", row: "extract's result" };
      if (typeof result === "string" || result instanceof Uint8Array) {
        return parseJsonExactRows(result, source, true);
      }
      return toRows(result, source);
    },
  };
}
