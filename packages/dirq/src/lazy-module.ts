import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/**
 * A dependency loaded on first use: start-up counts (`dirq "SELECT 1"`), and most statements
 * never need it. For Node built-ins (child processes, crypto, worker threads) and for packages
 * the CLI bundle leaves out (a package loaded this way is read from node_modules at run time,
 * so not for what the CLI's start path uses).
 */
export function lazyModule<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= require(name) as T;
    return loaded;
  };
}

/** The Node built-ins most statements never need, each loaded once on first use. */
export const childProcess = lazyModule<typeof import("node:child_process")>("node:child_process");
export const crypto = lazyModule<typeof import("node:crypto")>("node:crypto");
export const os = lazyModule<typeof import("node:os")>("node:os");
export const workerThreads =
  lazyModule<typeof import("node:worker_threads")>("node:worker_threads");

/** Options that take the next argument as their value, when not written `--name=value`. */
const STRING_INPUT_OPTIONS = new Set(["-e", "--eval", "-p", "--print", "--input-type"]);

/**
 * The Node options for a worker thread or Node child process of dirq's: the process's own, less
 * those about a program given as a string (`node --input-type=module -e …`, a common way to run
 * a script that uses the SDK). A thread inherits them by default and then refuses to load its
 * file; a child given them would run that string instead of its own file.
 */
export function inheritedExecArgv(): string[] {
  const kept: string[] = [];
  const args = process.execArgv;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (STRING_INPUT_OPTIONS.has(arg)) {
      i++;
      continue;
    }
    if (arg.startsWith("--input-type=") || arg.startsWith("--eval=") || arg.startsWith("--print="))
      continue;
    kept.push(arg);
  }
  return kept;
}
