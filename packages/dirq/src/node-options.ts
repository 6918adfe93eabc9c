import type { Worker, WorkerOptions } from "node:worker_threads";
import { workerThreads } from "./lazy-module.js";

/**
 * The Node options (`node <options> dirq.cjs …`) dirq's own threads and Node child processes
 * are started with: the user's, so that a memory limit, a loader or an experimental feature
 * holds for all of dirq, less what would make them run something else or fight the parent.
 * `NODE_OPTIONS` needs nothing here: it is in the environment, which children inherit, and a
 * thread shares its process's.
 */

/** Options that take the next argument as their value, when not written `--name=value`. */
const TAKES_VALUE = new Set([
  "-e",
  "--eval",
  "-p",
  "--print",
  "--input-type",
  "--inspect-port",
  "--debug-port",
  "--inspect-publish-uid",
  "--watch-path",
]);

/**
 * Options no child of dirq's may have. A program given as a string (`node --input-type=module
 * -e …`, a common way to run a script that uses the SDK): a child would run that string instead
 * of its own file, and a thread refuses to load its file. The inspector (`--inspect`,
 * `--inspect-brk`, …): a child would try to listen on the parent's port (or wait there for a
 * debugger, with `-brk`); threads are debugged through the parent's inspector anyway. The test
 * runner and watch mode: they are about the user's program, not dirq's own files.
 */
const NOT_INHERITED =
  /^(-e|-p|--eval|--print|--input-type|--inspect[\w-]*|--debug-port|--test[\w-]*|--watch[\w-]*)(=|$)/;

/** `args` less the options a child does not inherit (and the value each takes, if apart). */
function inherited(args: readonly string[], unquoted = (arg: string) => arg): string[] {
  const kept: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = unquoted(args[i] as string);
    if (!NOT_INHERITED.test(arg)) {
      kept.push(args[i] as string);
    } else if (TAKES_VALUE.has(arg)) {
      i++;
    }
  }
  return kept;
}

/** The options of this process that a Node child process of dirq's is started with. */
export function childExecArgv(): string[] {
  return inherited(process.execArgv);
}

/** NODE_OPTIONS's words, as Node splits them: at spaces, outside double quotes. */
const NODE_OPTIONS_WORD = /(?:"(?:[^"\\]|\\.)*"|[^\s"])+/g;

/**
 * The environment of a Node child process of dirq's: this process's, with NODE_OPTIONS less
 * what a child does not inherit (its inspector options, as for `childExecArgv`). Hooks and
 * worker functions are the user's programs and get the environment as it is.
 */
export function childEnvironment(): NodeJS.ProcessEnv {
  const options = process.env.NODE_OPTIONS;
  if (options === undefined) return process.env;
  const words = options.match(NODE_OPTIONS_WORD) ?? [];
  const kept = inherited(words, (word) => word.replaceAll('"', ""));
  if (kept.length === words.length) return process.env;
  return { ...process.env, NODE_OPTIONS: kept.join(" ") };
}

/**
 * What a thread is started with: a child's options less those Node refuses in a thread (a V8
 * option such as `--max-old-space-size`, or one for the whole process such as `--title`),
 * learned from Node's own refusal (it names them) at the first thread, then kept.
 */
let threadArgs: string[] | undefined;

/** The options Node named in a refusal of a thread's options; `null` for any other error. */
function refusedOptions(error: unknown): string[] | null {
  const { code, message } = error as { code?: string; message?: string };
  if (code !== "ERR_WORKER_INVALID_EXEC_ARGV" || message === undefined) return null;
  const list = message.slice(message.indexOf(": ") + 2).replace(/\.$/, "");
  return list.split(", ");
}

/** Starts a thread of dirq's running `script`, with the Node options a thread accepts. */
export function startThread(script: string | URL, options: WorkerOptions): Worker {
  const { Worker } = workerThreads();
  let args = threadArgs ?? childExecArgv();
  for (;;) {
    try {
      const thread = new Worker(script, { ...options, execArgv: args });
      threadArgs = args;
      return thread;
    } catch (error) {
      const refused = refusedOptions(error);
      const left: string[] = args.filter((arg) => !refused?.includes(arg));
      if (refused === null || left.length === args.length) throw error;
      args = left;
    }
  }
}
