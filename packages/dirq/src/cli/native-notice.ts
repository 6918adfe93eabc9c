import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { crypto, os } from "../lazy-module.js";
import { nativeLibraryFile, packageFile } from "../package-files.js";

// When the install could not compile dirq's native file system extension (no C compiler),
// scripts/build-native.mjs leaves the reason in native/build/not-built.txt: npm shows an
// install script's stderr only when the script fails, and that one never fails. The first run
// after such an install says so on stderr, once: a marker in the cache folder remembers it.

/** dirq's cache folder: `DIRQ_CACHE_DIR`, else `$XDG_CACHE_HOME/dirq`, else `~/.cache/dirq`. */
function cacheFolder(env: NodeJS.ProcessEnv): string {
  if (env.DIRQ_CACHE_DIR) return env.DIRQ_CACHE_DIR;
  return join(env.XDG_CACHE_HOME || join(os().homedir(), ".cache"), "dirq");
}

/**
 * The notice to print (once per install and reason), or null. Remembers that it was given;
 * a cache folder that cannot be written only means the notice may come again.
 */
export function nativeNotice(env: NodeJS.ProcessEnv): string | null {
  if (env.DIRQ_NATIVE_FS === "0") return null;
  const notBuilt = packageFile("native", "build", "not-built.txt");
  if (!existsSync(notBuilt) || existsSync(nativeLibraryFile())) return null;
  let reason: string;
  try {
    reason = readFileSync(notBuilt, "utf8").trim();
  } catch {
    return null;
  }
  const key = crypto()
    .createHash("sha256")
    .update(`${notBuilt}\n${reason}`)
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
    `npm rebuild dirq (or node ${packageFile("scripts", "build-native.mjs")}). This note is shown once`
  );
}
