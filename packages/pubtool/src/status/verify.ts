import type { Config } from "../config/load-config.js";
import type { PackageEntry, RegistryKind } from "../config/schema.js";
import { endpointsFrom } from "../endpoints.js";
import { getJson, jsregPath, readHistory } from "./registry-history.js";

/**
 * How the last release was published, from the registry's public provenance:
 * `oidc` (a trusted publisher's record), `token` (the registry would record one, and has none),
 * `not-shown` (the registry cannot tell), `unpublished`, `unreachable`.
 */
export type Verdict = "oidc" | "token" | "not-shown" | "unpublished" | "unreachable";

export interface PackageVerification {
  name: string;
  kind: RegistryKind;
  version: string | null;
  verdict: Verdict;
  /** What the registry's record says, in words. */
  detail: string;
}

export interface VerifyReport {
  ok: boolean;
  packages: PackageVerification[];
}

function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function text(value: unknown): string {
  return typeof value === "string" || typeof value === "number" ? String(value) : "?";
}

type Evidence = Pick<PackageVerification, "verdict" | "detail">;

/** crates.io records a trusted publish on the version (`trustpub_data`). */
async function rustregEvidence(
  name: string,
  version: string,
  env: NodeJS.ProcessEnv,
): Promise<Evidence> {
  const url = `${endpointsFrom(env).rustreg}/api/v1/crates/${encodeURIComponent(name)}/${encodeURIComponent(version)}`;
  const got = await getJson(url, env);
  if ("failure" in got) return { verdict: "unreachable", detail: got.failure };
  const record = asRecord(got.body.version);
  const data = asRecord(record.trustpub_data);
  if (Object.keys(data).length > 0) {
    return {
      verdict: "oidc",
      detail: `trusted publishing (${text(data.provider)}: ${text(data.repository)}, run ${text(data.run_id)})`,
    };
  }
  const by = asRecord(record.published_by).login;
  return {
    verdict: "token",
    detail: `no trusted-publishing record on the version${typeof by === "string" ? ` (published by ${by} with an API token)` : ""}`,
  };
}

/** npm keeps a publish's attestations; a trusted publish always has a provenance statement. */
async function jsregEvidence(
  name: string,
  version: string,
  env: NodeJS.ProcessEnv,
): Promise<Evidence> {
  const url = `${endpointsFrom(env).jsreg}/-/npm/v1/attestations/${jsregPath(name)}@${encodeURIComponent(version)}`;
  const got = await getJson(url, env);
  if ("failure" in got) return { verdict: "unreachable", detail: got.failure };
  const attestations = Array.isArray(got.body.attestations) ? got.body.attestations : [];
  const provenance = attestations
    .map(asRecord)
    .find((entry) => String(entry.predicateType ?? "").startsWith("https://slsa.dev/provenance/"));
  if (got.status === 404 || provenance === undefined) {
    return {
      verdict: "token",
      detail:
        "no provenance attestation: published with a token (a trusted publish always has one)",
    };
  }
  const workflow = provenanceWorkflow(provenance);
  return {
    verdict: "oidc",
    detail: `provenance attestation${workflow === null ? "" : ` from ${workflow}`}`,
  };
}

/** `owner/repo .github/workflows/release.yml`, from a SLSA provenance statement's envelope. */
function provenanceWorkflow(attestation: Record<string, unknown>): string | null {
  const payload = asRecord(asRecord(attestation.bundle).dsseEnvelope).payload;
  if (typeof payload !== "string") return null;
  try {
    const statement = asRecord(JSON.parse(Buffer.from(payload, "base64").toString("utf8")));
    const workflow = asRecord(
      asRecord(asRecord(asRecord(statement.predicate).buildDefinition).externalParameters).workflow,
    );
    if (typeof workflow.repository !== "string") return null;
    return `${workflow.repository.replace(/^https:\/\/github\.com\//, "")} ${text(workflow.path)}`;
  } catch {
    return null;
  }
}

/** PyPI serves PEP 740 provenance per file; only a trusted publisher can attach it. */
async function pyregEvidence(
  name: string,
  version: string,
  env: NodeJS.ProcessEnv,
): Promise<Evidence> {
  const base = endpointsFrom(env).pyreg;
  const release = await getJson(
    `${base}/pypi/${encodeURIComponent(name)}/${encodeURIComponent(version)}/json`,
    env,
  );
  if ("failure" in release) return { verdict: "unreachable", detail: release.failure };
  const files = (Array.isArray(release.body.urls) ? release.body.urls : [])
    .map((entry) => asRecord(entry).filename)
    .filter((file): file is string => typeof file === "string");
  const file = files[0];
  if (file === undefined) return { verdict: "not-shown", detail: "the release has no files" };
  const url = `${base}/integrity/${encodeURIComponent(name)}/${encodeURIComponent(version)}/${encodeURIComponent(file)}/provenance`;
  const got = await getJson(url, env);
  if ("failure" in got) return { verdict: "unreachable", detail: got.failure };
  const bundle = asRecord(
    (Array.isArray(got.body.attestation_bundles) ? got.body.attestation_bundles : [])[0],
  );
  const publisher = asRecord(bundle.publisher);
  if (got.status === 404 || Object.keys(publisher).length === 0) {
    return {
      verdict: "not-shown",
      detail: `no PEP 740 provenance on ${file}: a token upload, or a trusted publish that sent no attestations (pubtool's own upload sends none), cannot be told apart`,
    };
  }
  const environment =
    typeof publisher.environment === "string" ? `, environment ${publisher.environment}` : "";
  return {
    verdict: "oidc",
    detail: `trusted publisher ${text(publisher.kind)}: ${text(publisher.repository)}, workflow ${text(publisher.workflow)}${environment} (provenance of ${file})`,
  };
}

const EVIDENCE: Record<RegistryKind, typeof rustregEvidence> = {
  rustreg: rustregEvidence,
  pyreg: pyregEvidence,
  jsreg: jsregEvidence,
};

async function verifyPackage(
  entry: PackageEntry,
  env: NodeJS.ProcessEnv,
): Promise<PackageVerification> {
  const base = { name: entry.name, kind: entry.kind };
  const history = await readHistory(entry.kind, entry.name, env);
  if (history.state === "unreachable") {
    return { ...base, version: null, verdict: "unreachable", detail: history.reason };
  }
  if (history.state === "absent" || history.latest === null) {
    return {
      ...base,
      version: null,
      verdict: "unpublished",
      detail: `no release on ${entry.kind}`,
    };
  }
  const evidence = await EVIDENCE[entry.kind](entry.name, history.latest, env);
  return { ...base, version: history.latest, ...evidence };
}

/** `pubtool verify`: was each package's last release published by OIDC? Read-only, no secrets. */
export async function runVerify(config: Config, env: NodeJS.ProcessEnv): Promise<VerifyReport> {
  const packages = await Promise.all(config.packages.map((entry) => verifyPackage(entry, env)));
  return { ok: packages.every((entry) => entry.verdict !== "token"), packages };
}

const MARK: Record<Verdict, string> = {
  oidc: "✓",
  token: "✗",
  "not-shown": "-",
  unpublished: "-",
  unreachable: "-",
};

export function renderVerify(report: VerifyReport): string {
  const lines = report.packages.map((entry) => {
    const version = entry.version === null ? "" : ` ${entry.version}`;
    return `${MARK[entry.verdict]} ${entry.name} (${entry.kind})${version}: ${entry.verdict}: ${entry.detail}`;
  });
  const tokens = report.packages.filter((entry) => entry.verdict === "token").length;
  lines.push(
    tokens === 0
      ? "verify: no last release shows a token publish"
      : `verify: ${tokens} last release${tokens === 1 ? " was" : "s were"} published with a token; set up trusted publishing and release from the workflow`,
  );
  return `${lines.join("\n")}\n`;
}
