import { isAbsolute, join } from "node:path";
import { os } from "./lazy-module.js";

/**
 * dirq's cache folder, as bin/dirq.cjs finds it (docs/install.md): `DIRQ_CACHE_DIR`, else
 * `$XDG_CACHE_HOME/dirq`, else `~/.cache/dirq` (`~/Library/Caches/dirq` on macOS,
 * `%LOCALAPPDATA%\dirq\Cache` on Windows); null when there is no home folder to put it in.
 */
export function dirqCacheFolder(env: NodeJS.ProcessEnv): string | null {
  if (env.DIRQ_CACHE_DIR) return env.DIRQ_CACHE_DIR;
  if (process.platform === "win32") {
    return env.LOCALAPPDATA ? join(env.LOCALAPPDATA, "dirq", "Cache") : null;
  }
  // The XDG spec says a relative value is invalid and must be ignored.
  if (env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME)) {
    return join(env.XDG_CACHE_HOME, "dirq");
  }
  let home = env.HOME;
  try {
    home ||= os().homedir();
  } catch {
    return null;
  }
  if (!home) return null;
  return process.platform === "darwin"
    ? join(home, "Library", "Caches", "dirq")
    : join(home, ".cache", "dirq");
}
