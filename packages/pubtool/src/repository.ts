import { execFileSync } from "node:child_process";

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
