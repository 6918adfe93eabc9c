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
