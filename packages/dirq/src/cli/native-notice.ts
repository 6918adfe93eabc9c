import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { crypto } from "../lazy-module.js";

/**
 * When the install could not compile dirq's native file system extension (no C compiler),
 * scripts/build-native.mjs leaves the reason in native/build/not-built.txt: npm shows an
 * install script's stderr only when the script fails, and that one never fails. The first run
 * after such an install says so on stderr, once: a marker in the cache folder remembers it.
 */
const NOT_BUILT = fileURLToPath(new URL("../../../native/build/not-built.txt", import.meta.url));
const LIBRARY = fileURLToPath(
  process.platform === "darwin"
    ? new URL("../../../native/build/dirq_fs.dylib", import.meta.url)
    : new URL("../../../native/build/dirq_fs.so", import.meta.url),
);
const BUILD_SCRIPT = fileURLToPath(new URL("../../../scripts/build-native.mjs", import.meta.url));

/** dirq's cache folder: `DIRQ_CACHE_DIR`, else `$XDG_CACHE_HOME/dirq`, else `~/.cache/dirq`. */
function cacheFolder(env: NodeJS.ProcessEnv): string {
  if (env.DIRQ_CACHE_DIR) return env.DIRQ_CACHE_DIR;
  return join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "dirq");
}

/**
 * The notice to print (once per install and reason), or null. Remembers that it was given;
 * a cache folder that cannot be written only means the notice may come again.
 */
export function nativeNotice(env: NodeJS.ProcessEnv): string | null {
  if (env.DIRQ_NATIVE_FS === "0" || !existsSync(NOT_BUILT) || existsSync(LIBRARY)) return null;
  let reason: string;
  try {
    reason = readFileSync(NOT_BUILT, "utf8").trim();
  } catch {
    return null;
  }
  const key = crypto()
    .createHash("sha256")
    .update(`${NOT_BUILT}\n${reason}`)
    .digest("hex")
    .slice(0, 16);
  const marker = join(cacheFolder(env), `native-fs-notice-${key}`);
  if (existsSync(marker)) return null;
  try {
    mkdirSync(cacheFolder(env), { recursive: true });
    writeFileSync(marker, `${reason}\n`);
  } catch {
    // Said again next time; nothing else depends on it.
  }
  return (
    `note: dirq's native file system extension was not built at install (${reason}). ` +
    "dirq works without it; listing and statting large trees costs more CPU. To build it, " +
    "install a C compiler (cc: e.g. apt-get install gcc, or xcode-select --install) and run " +
    `npm rebuild dirq (or node ${BUILD_SCRIPT}). This note is shown once`
  );
}
