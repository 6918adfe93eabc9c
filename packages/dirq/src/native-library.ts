import { existsSync } from "node:fs";
import { join } from "node:path";
import { dirqCacheFolder } from "./cache-folder.js";
import { packageFile } from "./package-files.js";
import { readVersion } from "./version.js";

/** The native file system extension's file name on this platform (scripts/build-native.mjs). */
export const NATIVE_LIBRARY_NAME = process.platform === "darwin" ? "dirq_fs.dylib" : "dirq_fs.so";

/** Where the package's own build of the extension goes: `npm run build`, or a first run. */
export function packageNativeFolder(): string {
  return packageFile("native", "build");
}

/**
 * Where a first run builds the extension when the package's own folder cannot be written (a
 * global install owned by root): dirq's cache folder, one build per dirq version and platform.
 */
export function cacheNativeFolder(env: NodeJS.ProcessEnv): string | null {
  const cache = dirqCacheFolder(env);
  if (cache === null) return null;
  return join(cache, `native-${readVersion()}-${process.platform}-${process.arch}`);
}

let found: string | undefined;

/**
 * dirq's native file system extension (native/dirq-fs.c): the package's own build, else the
 * one a first run built in dirq's cache folder (see src/cli/native-notice.ts). A path that may
 * not exist: the callers check, and walk with Node's fs without it.
 */
export function nativeLibraryFile(): string {
  if (found !== undefined) return found;
  const own = join(packageNativeFolder(), NATIVE_LIBRARY_NAME);
  if (existsSync(own)) return (found = own);
  const folder = cacheNativeFolder(process.env);
  const cached = folder === null ? null : join(folder, NATIVE_LIBRARY_NAME);
  if (cached !== null && existsSync(cached)) return (found = cached);
  return own;
}
