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

/**
 * The current repository as `owner/repo`: `GITHUB_REPOSITORY` when set (inside a workflow run),
 * else the `origin` remote of the git repository at `cwd`; `null` when neither is known.
 */
export function currentRepository(cwd: string, env: NodeJS.ProcessEnv): string | null {
  const fromEnv = env.GITHUB_REPOSITORY;
  if (fromEnv && /^[^/\s]+\/[^/\s]+$/.test(fromEnv)) return fromEnv;
  try {
    const url = execFileSync("git", ["config", "--get", "remote.origin.url"], {
      cwd,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      env: { PATH: env.PATH ?? "", HOME: env.HOME ?? "" },
    });
    return repositoryFromRemote(url);
  } catch {
    return null;
  }
}
