import type { RegistryKind } from "../config/schema.js";
import { endpointsFrom } from "../endpoints.js";
import { describeResult, parseJson, request } from "../http/request.js";

/** Whether a version exists on its registry; "unknown" carries the reason. */
export type PublishedState =
  | { state: "published" }
  /** `packageExists`: false for a package's first publish, `null` when that is unknown. */
  | { state: "unpublished"; packageExists: boolean | null }
  | { state: "unknown"; reason: string };

/** The public URL that answers 404 when no version of the package exists. */
function packageUrl(kind: RegistryKind, name: string, env: NodeJS.ProcessEnv): string {
  const endpoints = endpointsFrom(env);
  if (kind === "rustreg") return `${endpoints.rustreg}/api/v1/crates/${encodeURIComponent(name)}`;
  if (kind === "pyreg") return `${endpoints.pyreg}/pypi/${encodeURIComponent(name)}/json`;
  return versionUrl(kind, name, "", env);
}

/** Whether any version of the package exists (`null` when the registry did not say). */
export async function packageExists(
  kind: RegistryKind,
  name: string,
  env: NodeJS.ProcessEnv,
): Promise<boolean | null> {
  const result = await request(packageUrl(kind, name, env), {
    headers: { accept: "application/json" },
    env,
  });
  if (result.kind !== "response") return null;
  if (result.status === 404) return false;
  return result.status === 200 ? true : null;
}

/** The public read URL used for `kind` (no credentials needed). */
export function versionUrl(
  kind: RegistryKind,
  name: string,
  version: string,
  env: NodeJS.ProcessEnv,
): string {
  const endpoints = endpointsFrom(env);
  if (kind === "rustreg") {
    return `${endpoints.rustreg}/api/v1/crates/${encodeURIComponent(name)}/${encodeURIComponent(version)}`;
  }
  if (kind === "pyreg") {
    return `${endpoints.pyreg}/pypi/${encodeURIComponent(name)}/${encodeURIComponent(version)}/json`;
  }
  // The packument: `@scope/name` travels as `@scope%2fname`.
  return `${endpoints.jsreg}/${name.startsWith("@") ? `@${encodeURIComponent(name.slice(1))}` : encodeURIComponent(name)}`;
}

/** Asks the registry whether `name@version` is already published. */
export async function readPublished(
  kind: RegistryKind,
  name: string,
  version: string,
  env: NodeJS.ProcessEnv,
): Promise<PublishedState> {
  const url = versionUrl(kind, name, version, env);
  const result = await request(url, { headers: { accept: "application/json" }, env });
  if (result.kind !== "response") return { state: "unknown", reason: describeResult(result) };
  if (result.status === 404) {
    return {
      state: "unpublished",
      packageExists: kind === "jsreg" ? false : await packageExists(kind, name, env),
    };
  }
  if (result.status !== 200)
    return { state: "unknown", reason: `HTTP ${result.status} from ${url}` };
  if (kind !== "jsreg") return { state: "published" };
  const body = parseJson(result.text) as { versions?: Record<string, unknown> } | undefined;
  return body?.versions && version in body.versions
    ? { state: "published" }
    : { state: "unpublished", packageExists: true };
}
