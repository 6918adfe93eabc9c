import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/**
 * A dependency loaded on first use: start-up counts (`dirq "SELECT 1"`), and most statements
 * never need it. Not for what the CLI's start path uses: the CLI bundle cannot carry a module
 * loaded this way, so it is read from node_modules at run time.
 */
export function lazyModule<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= require(name) as T;
    return loaded;
  };
}
