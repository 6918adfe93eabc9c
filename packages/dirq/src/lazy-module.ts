import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/**
 * A dependency loaded on first use: start-up counts (`dirq "SELECT 1"`), and most statements
 * never need the glob, ignore, shell-word or config libraries.
 */
export function lazyModule<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= require(name) as T;
    return loaded;
  };
}
