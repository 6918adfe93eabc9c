import { accessSync, constants, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { dirqCacheFolder } from "../cache-folder.js";
import { childProcess, crypto } from "../lazy-module.js";
import { makeFolder } from "../make-folder.js";
import { cacheNativeFolder, NATIVE_LIBRARY_NAME, packageNativeFolder } from "../native-library.js";
import { packageFile } from "../package-files.js";

// dirq has no install script (npm 11 asks users to approve each one, and pnpm, bun and
// --ignore-scripts skip them). Its native file system extension is built by the first query,
// REPL or server run instead: into the package's native/build/ when that folder can be
// written (with the record of SQLite's addon that spares later starts a search), else into
// dirq's cache folder. When it cannot be built (no C compiler), scripts/build-native.mjs
// leaves the reason in not-built.txt there, and the run says so on stderr, once: a marker in
// the cache folder remembers it. Runs after that find the library, or the reason, with a stat
// or two.

const NOT_BUILT = "not-built.txt";

/** How long a build may take before it is given up (the compiler is killed). */
const BUILD_TIMEOUT_MS = 120_000;

/**
 * Builds the native extension when this install has none yet, and returns the notice to print
 * when it could not be built (once per install and reason), or null. Never throws: without the
 * extension dirq walks with Node's fs.
 */
export function nativeNotice(env: NodeJS.ProcessEnv): string | null {
  if (env.DIRQ_NATIVE_FS === "0" || process.platform === "win32") return null;
  const own = packageNativeFolder();
  if (existsSync(join(own, NATIVE_LIBRARY_NAME))) return null;
  const cached = cacheNativeFolder(env);
  if (cached !== null && existsSync(join(cached, NATIVE_LIBRARY_NAME))) return null;
  // A failure recorded in the cache folder is about a build into it: one into this package's
  // own folder (another install, writable) is still tried.
  const records = packageWritable() ? null : cached;
  let failed = notBuiltRecord(own, records);
  if (failed === null) {
    if (!buildNative(env, own, cached)) return null;
    failed = notBuiltRecord(own, records);
    if (failed === null) return null;
  }
  return noticeOnce(env, failed);
}

/** The reason a build left (see scripts/build-native.mjs), with the folder it was for. */
function notBuiltRecord(
  own: string,
  cached: string | null,
): { folder: string; reason: string } | null {
  for (const folder of cached === null ? [own] : [own, cached]) {
    const path = join(folder, NOT_BUILT);
    if (!existsSync(path)) continue;
    try {
      return { folder, reason: readFileSync(path, "utf8").trim() };
    } catch {
      return null;
    }
  }
  return null;
}

/** Whether this process wrote to the package's own folder (else to the cache folder). */
function packageWritable(): boolean {
  try {
    accessSync(packageFile("native"), constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs scripts/build-native.mjs for this install, into the package's folder or else the cache
 * folder. False when no build ran: another run is building it (this one walks with Node's fs),
 * or there is nowhere to build it.
 */
function buildNative(env: NodeJS.ProcessEnv, own: string, cached: string | null): boolean {
  const intoPackage = packageWritable();
  const folder = intoPackage ? own : cached;
  if (folder === null) return false;
  try {
    makeFolder(folder);
  } catch {
    return false;
  }
  const lock = join(folder, "build.lock");
  if (!takeLock(lock)) return false;
  try {
    const node = (script: string, args: string[] = []) =>
      childProcess().spawnSync(process.execPath, [packageFile("scripts", script), ...args], {
        env,
        stdio: "ignore",
        timeout: BUILD_TIMEOUT_MS,
      });
    const built = node("build-native.mjs", intoPackage ? [] : ["--out", folder]);
    if (intoPackage) node("record-sqlite-addon.mjs");
    if (!existsSync(join(folder, NATIVE_LIBRARY_NAME)) && !existsSync(join(folder, NOT_BUILT))) {
      // A build that left no reason (killed, timed out): recorded, so no later run tries again.
      const status = built.error?.message ?? `exit ${built.status ?? built.signal}`;
      writeFileSync(join(folder, NOT_BUILT), `scripts/build-native.mjs ended (${status})\n`);
    }
  } catch {
    // Nothing to record it in: the next run tries again.
  } finally {
    rmSync(lock, { force: true });
  }
  return true;
}

/** Takes a lock file for this process; a lock whose process has ended is taken over. */
function takeLock(path: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(path, String(process.pid), { flag: "wx" });
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") return false;
      let holder: number;
      try {
        holder = Number(readFileSync(path, "utf8"));
        process.kill(holder, 0);
        return false;
      } catch (checked) {
        if ((checked as NodeJS.ErrnoException).code === "EPERM") return false;
        rmSync(path, { force: true });
      }
    }
  }
  return false;
}

/** The notice for a build that failed, or null when it was already given for this reason. */
function noticeOnce(
  env: NodeJS.ProcessEnv,
  failed: { folder: string; reason: string },
): string | null {
  const key = crypto()
    .createHash("sha256")
    .update(`${failed.folder}\n${failed.reason}`)
    .digest("hex")
    .slice(0, 16);
  const cache = dirqCacheFolder(env);
  if (cache !== null) {
    const marker = join(cache, `native-fs-notice-${key}`);
    if (existsSync(marker)) return null;
    try {
      makeFolder(cache);
      writeFileSync(marker, `${failed.reason}\n`);
    } catch {
      // Said again next time; nothing else depends on it.
    }
  }
  const out = failed.folder === packageNativeFolder() ? "" : ` --out ${failed.folder}`;
  return (
    `note: dirq's native file system extension could not be built (${failed.reason}). ` +
    "dirq works without it; listing and statting large trees and reading CSV and JSON Lines files cost more CPU. To build it, " +
    "install a C compiler (cc: e.g. apt-get install gcc, or xcode-select --install) and run " +
    `node ${packageFile("scripts", "build-native.mjs")}${out}. This note is shown once`
  );
}
