import { join } from "node:path";

/**
 * A file of the installed dirq package (`package.json`, `native/build/...`), by its path from
 * the package's folder. From this module's folder, not its URL: parsing a URL and turning it
 * back into a path is a cost every start would pay. (The CLI bundle lives one
 * folder deeper; scripts/build-cli.mjs rebases `import.meta.dirname`.)
 */
export function packageFile(...parts: string[]): string {
  return join(import.meta.dirname, "..", "..", ...parts);
}
