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
