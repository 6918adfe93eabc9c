import { join } from "node:path";

/**
 * A file of the installed dirq package (`package.json`, `native/build/...`), by its path from
 * the package's folder. From this module's folder, not its URL: parsing a URL and turning it
 * back into a path cost a fifth of a millisecond of every start. (The CLI bundle lives one
 * folder deeper; scripts/build-cli.mjs rebases `import.meta.dirname`.)
 */
export function packageFile(...parts: string[]): string {
  return join(import.meta.dirname, "..", "..", ...parts);
}

/** dirq's native file system extension (native/dirq-fs.c), as scripts/build-native.mjs builds it. */
export function nativeLibraryFile(): string {
  return packageFile(
    "native",
    "build",
    process.platform === "darwin" ? "dirq_fs.dylib" : "dirq_fs.so",
  );
}
