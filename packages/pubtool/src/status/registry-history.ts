import type { RegistryKind } from "../config/schema.js";
import { endpointsFrom } from "../endpoints.js";
import { describeResult, parseJson, request } from "../http/request.js";

/** A registry's public record of a package: its versions and the latest release. */
export type History =
  | { state: "found"; versions: string[]; latest: string | null }
  | { state: "absent" }
  | { state: "unreachable"; reason: string };

function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/** `@scope/name` travels as `@scope%2fname` in the jsreg protocol. */
export function jsregPath(name: string): string {
  return name.startsWith("@") ? `@${encodeURIComponent(name.slice(1))}` : encodeURIComponent(name);
}

/** Public, unauthenticated GET returning JSON, or why not. */
export async function getJson(
  url: string,
  env: NodeJS.ProcessEnv,
): Promise<{ status: number; body: Record<string, unknown> } | { failure: string }> {
  const result = await request(url, { headers: { accept: "application/json" }, env });
  if (result.kind !== "response") return { failure: `${describeResult(result)} from ${url}` };
  if (result.status !== 200 && result.status !== 404) {
    return { failure: `HTTP ${result.status} from ${url}` };
  }
  return { status: result.status, body: asRecord(parseJson(result.text)) };
}

/** Every version of `name` the registry has, from its public read API. */
export async function readHistory(
  kind: RegistryKind,
  name: string,
  env: NodeJS.ProcessEnv,
): Promise<History> {
  const endpoints = endpointsFrom(env);
  const url =
    kind === "rustreg"
      ? `${endpoints.rustreg}/api/v1/crates/${encodeURIComponent(name)}`
      : kind === "pyreg"
        ? `${endpoints.pyreg}/pypi/${encodeURIComponent(name)}/json`
        : `${endpoints.jsreg}/${jsregPath(name)}`;
  const got = await getJson(url, env);
  if ("failure" in got) return { state: "unreachable", reason: got.failure };
  if (got.status === 404) return { state: "absent" };
  const body = got.body;
  if (kind === "rustreg") {
    const versions = (Array.isArray(body.versions) ? body.versions : [])
      .map((entry) => asRecord(entry).num)
      .filter((num): num is string => typeof num === "string");
    const crate = asRecord(body.crate);
    const latest = crate.max_stable_version ?? crate.max_version ?? versions[0] ?? null;
    return { state: "found", versions, latest: typeof latest === "string" ? latest : null };
  }
  if (kind === "pyreg") {
    const versions = Object.keys(asRecord(body.releases));
    const latest = asRecord(body.info).version;
    return { state: "found", versions, latest: typeof latest === "string" ? latest : null };
  }
  const versions = Object.keys(asRecord(body.versions));
  const tagged = asRecord(body["dist-tags"]).latest;
  const latest = typeof tagged === "string" ? tagged : (versions[versions.length - 1] ?? null);
  return { state: "found", versions, latest };
}
