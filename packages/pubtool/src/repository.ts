import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

/** `dir` and its ancestors, nearest first. */
export function ancestors(dir: string): string[] {
  const list: string[] = [];
  for (let current = resolve(dir); ; current = dirname(current)) {
    list.push(current);
    if (dirname(current) === current) return list;
  }
}

/**
 * The root of the repository `cwd` is in: the nearest folder with `.git` (a folder, or a file in
 * a worktree); outside git, the nearest with `.github/workflows` or `pubtool.toml`; else `cwd`.
 */
export function findRepositoryRoot(cwd: string): string {
  const folders = ancestors(cwd);
  return (
    folders.find((dir) => existsSync(join(dir, ".git"))) ??
    folders.find(
      (dir) =>
        existsSync(join(dir, ".github", "workflows")) || existsSync(join(dir, "pubtool.toml")),
    ) ??
    resolve(cwd)
  );
}

/** `owner/repo` of a GitHub remote URL (https, ssh or scp-like), `null` otherwise. */
export function repositoryFromRemote(url: string): string | null {
  const match =
    /^(?:https?:\/\/(?:[^@/]+@)?[^/]+\/|ssh:\/\/(?:[^@/]+@)?[^/]+\/|[^@/\s]+@[^:/\s]+:)([^/\s]+)\/([^/\s]+?)(?:\.git)?\/?$/.exec(
      url.trim(),
    );
  return match ? `${match[1]}/${match[2]}` : null;
}

/** The host name of a remote URL (https, ssh or scp-like), lower case; `null` for a path. */
export function remoteHost(url: string): string | null {
  const match =
    /^(?:https?:\/\/(?:[^@/]+@)?([^/:]+)(?::\d+)?\/|ssh:\/\/(?:[^@/]+@)?([^/:]+)(?::\d+)?\/|[^@/\s]+@([^:/\s]+):)/.exec(
      url.trim(),
    );
  const host = match ? (match[1] ?? match[2] ?? match[3]) : undefined;
  return host ? host.toLowerCase() : null;
}

/** The hosts whose remotes name a workflow-host repository: github.com and `PUBTOOL_GITHUB_URL`'s. */
export function workflowHosts(env: NodeJS.ProcessEnv): string[] {
  const hosts = ["github.com"];
  const custom = env.PUBTOOL_GITHUB_URL;
  if (custom) {
    try {
      hosts.push(new URL(custom).hostname.toLowerCase());
    } catch {
      // Not a URL: only github.com counts.
    }
  }
  return hosts;
}

/** The `origin` remote URL of the git repository at `cwd`, `null` when there is none. */
export function originUrl(cwd: string, env: NodeJS.ProcessEnv): string | null {
  try {
    const url = execFileSync("git", ["config", "--get", "remote.origin.url"], {
      cwd,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      env: { PATH: env.PATH ?? "", HOME: env.HOME ?? "" },
    });
    return url.trim() || null;
  } catch {
    return null;
  }
}

/**
 * The current repository as `owner/repo`: `GITHUB_REPOSITORY` when set (inside a workflow run),
 * else the `origin` remote of the git repository at `cwd` when it is on the workflow host (a
 * GitLab or self-hosted origin names no repository there); `null` when neither is known.
 */
export function currentRepository(cwd: string, env: NodeJS.ProcessEnv): string | null {
  const fromEnv = env.GITHUB_REPOSITORY;
  if (fromEnv && /^[^/\s]+\/[^/\s]+$/.test(fromEnv)) return fromEnv;
  const url = originUrl(cwd, env);
  if (url === null) return null;
  const host = remoteHost(url);
  if (host === null || !workflowHosts(env).includes(host)) return null;
  return repositoryFromRemote(url);
}
