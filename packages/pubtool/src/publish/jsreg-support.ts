import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { basename } from "node:path";
import { matchFiles } from "./pyreg-upload.js";
import { childEnv } from "./child-env.js";

/** The oldest npm that performs the trusted-publishing (OIDC) exchange itself. */
export const MIN_NPM_FOR_OIDC = "11.5.1";

/**
 * What npm needs under OIDC: the token request pair, and the workflow identity it puts into the
 * provenance statement. Never `GITHUB_TOKEN`, `ACTIONS_RUNTIME_TOKEN` or registry tokens.
 */
export const NPM_OIDC_VARIABLES = [
  "CI",
  "GITHUB_ACTIONS",
  "ACTIONS_ID_TOKEN_REQUEST_URL",
  "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
  "GITHUB_SERVER_URL",
  "GITHUB_REPOSITORY",
  "GITHUB_REPOSITORY_ID",
  "GITHUB_REPOSITORY_OWNER",
  "GITHUB_REPOSITORY_OWNER_ID",
  "GITHUB_WORKFLOW",
  "GITHUB_WORKFLOW_REF",
  "GITHUB_WORKFLOW_SHA",
  "GITHUB_REF",
  "GITHUB_SHA",
  "GITHUB_RUN_ID",
  "GITHUB_RUN_ATTEMPT",
  "GITHUB_EVENT_NAME",
  "GITHUB_JOB",
  "RUNNER_ENVIRONMENT",
  "RUNNER_OS",
  "RUNNER_ARCH",
];

/** Compares dotted versions numerically (`11.10.0` > `11.5.1`); pre-release tags are ignored. */
export function compareVersions(a: string, b: string): number {
  const parts = (version: string) =>
    (version.trim().replace(/^v/, "").split(/[-+]/)[0] ?? "").split(".").map(Number);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const diff = (x[i] ?? 0) - (y[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

/** The version of the `npm` on PATH, `null` when there is none or it does not answer. */
export function npmVersion(env: NodeJS.ProcessEnv): string | null {
  const result = spawnSync("npm", ["--version"], {
    env: childEnv(env, []),
    encoding: "utf8",
    timeout: 30_000,
  });
  const version = result.status === 0 ? result.stdout.trim().split("\n").pop()?.trim() : "";
  return version && /^\d+\.\d+/.test(version) ? version : null;
}

/** A problem with npm for trusted publishing, or `null` when the runner's npm is new enough. */
export function npmOidcProblem(env: NodeJS.ProcessEnv): string | null {
  const version = npmVersion(env);
  if (version === null) return "npm was not found on PATH (trusted publishing runs npm publish)";
  if (compareVersions(version, MIN_NPM_FOR_OIDC) >= 0) return null;
  return `npm ${version} is older than ${MIN_NPM_FOR_OIDC}, the first npm that performs the trusted-publishing exchange; add a step \`npm install -g npm@latest\` (or use node-version 24 or newer in setup-node) before pubtool publish`;
}

/**
 * Why provenance cannot be generated in this run, `null` when it can: the registry accepts
 * provenance only from public repositories built on the host's own runners.
 */
export function provenanceBlocker(env: NodeJS.ProcessEnv): string | null {
  if (env.RUNNER_ENVIRONMENT === "self-hosted") {
    return "the job runs on a self-hosted runner (RUNNER_ENVIRONMENT=self-hosted)";
  }
  const eventPath = env.GITHUB_EVENT_PATH;
  if (eventPath && existsSync(eventPath)) {
    try {
      const event = JSON.parse(readFileSync(eventPath, "utf8")) as {
        repository?: { private?: boolean; visibility?: string };
      };
      const repository = event.repository;
      if (repository?.private === true || (repository?.visibility ?? "public") !== "public") {
        return `the repository is ${repository?.visibility ?? "private"} (GITHUB_EVENT_PATH)`;
      }
    } catch {
      // An unreadable event file says nothing about visibility.
    }
  }
  return null;
}

/** What npm's failed publish means, read from its output. */
export type NpmFailure =
  /** The transparency log refused a duplicate entry: a retried publish, maybe already through. */
  { kind: "tlog-duplicate" } | { kind: "explained"; message: string };

/**
 * Explains npm's publish failures that its own words leave opaque. `oidc` is true when npm made
 * the trusted-publishing exchange; `name` is the package. `null` when there is nothing to add.
 */
export function explainNpmFailure(tail: string, name: string, oidc: boolean): NpmFailure | null {
  if (
    /TLOG_CREATE_ENTRY_ERROR|equivalent entry already exists in the transparency log/i.test(tail)
  ) {
    return { kind: "tlog-duplicate" };
  }
  if (/too similar to existing package/i.test(tail)) {
    return {
      kind: "explained",
      message: `the registry refuses the name ${name}: it is too similar to an existing package's (npm compares names with punctuation removed and case folded). No token or trusted publisher gets past this; rename the package or publish it under a scope (@owner/${name.replace(/^@[^/]+\//, "")})`,
    };
  }
  if (/\bE404\b|404 Not Found - PUT/i.test(tail)) {
    const why = oidc
      ? `the registry did not accept this workflow as a trusted publisher of ${name}: the package's trusted publisher on the registry names another repository, workflow file or environment, or has none set up, or the package does not exist yet (its first version must be published with a token). Check the package's settings (Trusted publishing) on the registry`
      : `the token may not publish ${name} (npm answers an unauthorized publish with E404, not E401 or E403): it belongs to a user who is not a maintainer, or it is read-only, or the package does not exist and the token cannot create it`;
    return { kind: "explained", message: `npm answered E404: ${why}` };
  }
  return null;
}

/** The file `npm pack` makes of `name` `version`: `dirq-1.0.0.tgz`, `acme-core-1.0.0.tgz` for `@acme/core`. */
export function packedFileName(name: string, version: string): string {
  return `${name.replace(/^@/, "").replace("/", "-")}-${version}.tgz`;
}

/**
 * The packed tarball of `name` `version` among the files `globs` match under `dir` (a release
 * built in another job publishes what it built, not the folder again); `null` when none does.
 */
export function findPackedTarball(
  dir: string,
  globs: readonly string[],
  name: string,
  version: string,
): string | null {
  const wanted = packedFileName(name, version);
  const files = globs.flatMap((pattern) => matchFiles(dir, pattern));
  return files.find((file) => basename(file) === wanted) ?? null;
}
