import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

/** What `auth login` stores. */
export interface StoredAuth {
  /** The web origin the device flow ran against. */
  host: string;
  /** The REST API base the token belongs to; it is sent nowhere else. */
  api?: string;
  client_id: string;
  access_token: string;
  token_type: string;
  scope: string;
  created_at: string;
}

/** `$XDG_CONFIG_HOME/pubtool/auth.json`, else `~/.config/pubtool/auth.json`. */
export function authFile(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME ? env.XDG_CONFIG_HOME : join(env.HOME || homedir(), ".config");
  return join(base, "pubtool", "auth.json");
}

/** Writes the login: directory 0700, file 0600 (also when they existed before). */
export function saveAuth(env: NodeJS.ProcessEnv, auth: StoredAuth): string {
  const file = authFile(env);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  chmodSync(dirname(file), 0o700);
  // A new file renamed over the old path: a symlink planted at auth.json is replaced, never
  // written through.
  const temporary = join(dirname(file), `.auth.json.${process.pid}.${Date.now()}.tmp`);
  writeFileSync(temporary, `${JSON.stringify(auth, null, 2)}\n`, { mode: 0o600, flag: "wx" });
  try {
    renameSync(temporary, file);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
  chmodSync(file, 0o600);
  return file;
}

/** The stored login, `null` when there is none or it is unreadable. */
export function loadAuth(env: NodeJS.ProcessEnv): StoredAuth | null {
  const file = authFile(env);
  if (!existsSync(file)) return null;
  try {
    const data = JSON.parse(readFileSync(file, "utf8")) as Partial<StoredAuth>;
    return typeof data.access_token === "string" && data.access_token !== ""
      ? (data as StoredAuth)
      : null;
  } catch {
    return null;
  }
}

/** Deletes the stored login; true when there was one. */
export function removeAuth(env: NodeJS.ProcessEnv): boolean {
  const file = authFile(env);
  if (!existsSync(file)) return false;
  rmSync(file);
  return true;
}

/** The API base a stored login belongs to (older files: derived from github.com only). */
export function apiOfAuth(auth: StoredAuth): string | null {
  if (typeof auth.api === "string" && auth.api !== "") return auth.api.replace(/\/+$/, "");
  return auth.host.replace(/\/+$/, "") === "https://github.com" ? "https://api.github.com" : null;
}
