import type { PackageEntry } from "../config/schema.js";
import { endpointsFrom, envValue } from "../endpoints.js";
import { describeResult, parseJson, request } from "../http/request.js";
import { knownSecrets, maskText } from "../publish/secret-mask.js";
import { declaredPackages } from "./declared-phase.js";
import { type Check, type Phase, phaseStatus, passingCheck } from "./report.js";

/** One trusted-publishing registration as the rustreg read endpoint returns it. */
export interface RegisteredConfig {
  repository_owner: string;
  repository_name: string;
  workflow_filename: string;
  environment: string | null;
}

/**
 * The read path: `GET <PUBTOOL_RUSTREG_URL>/api/v1/trusted_publishing/github_configs?crate=<name>`
 * with the token in `Authorization`, answering `{ "github_configs": [RegisteredConfig, ...] }`.
 */
export function configsUrl(base: string, crate: string): string {
  return `${base}/api/v1/trusted_publishing/github_configs?crate=${encodeURIComponent(crate)}`;
}

const same = (a: string | null | undefined, b: string | null | undefined) =>
  (a ?? "").toLowerCase() === (b ?? "").toLowerCase();

/** The fields of `config` that differ from the declaration. */
export function differingFields(
  config: RegisteredConfig,
  declared: { workflow: string; environment: string | null; repository: string | null },
): string[] {
  const fields: string[] = [];
  if (config.workflow_filename !== declared.workflow) {
    fields.push(
      `workflow filename (registered ${config.workflow_filename}, declared ${declared.workflow})`,
    );
  }
  // A registration without an environment accepts a run from any environment.
  const registeredEnvironment = config.environment ?? "";
  if (registeredEnvironment !== "" && !same(registeredEnvironment, declared.environment)) {
    fields.push(
      `environment (registered ${config.environment ?? "none"}, declared ${declared.environment ?? "none"})`,
    );
  }
  if (declared.repository !== null) {
    const registered = `${config.repository_owner}/${config.repository_name}`;
    if (!same(registered, declared.repository)) {
      fields.push(`repository (registered ${registered}, declared ${declared.repository})`);
    }
  }
  return fields;
}

/** The registry's own error text (`{"errors":[{"detail":...}]}`), else the start of the body. */
export function registryError(text: string, secrets: readonly string[] = []): string {
  const body = parseJson(text) as { errors?: { detail?: unknown }[] } | undefined;
  const details = Array.isArray(body?.errors)
    ? body.errors.map((error) => error?.detail).filter((detail) => typeof detail === "string")
    : [];
  const message = details.length > 0 ? details.join("; ") : text.trim() || "(empty body)";
  // Masked before shortening, so a cut cannot leave half a secret unmasked.
  return maskText(message, secrets).replace(/\s+/g, " ").slice(0, 300);
}

/** Phase 3: each declared rustreg package against the registry's registrations. */
export async function registryPhase(
  packages: readonly PackageEntry[],
  env: NodeJS.ProcessEnv,
  repository: string | null,
): Promise<Phase | null> {
  const heading = "trust policy (rustreg registry)";
  const token = envValue(env, "RUSTREG_DOCTOR_TOKEN");
  if (token === undefined) return null;
  const crates = declaredPackages(packages).filter((entry) => entry.kind === "rustreg");
  if (crates.length === 0) {
    const check: Check = {
      id: "registry",
      label: "no rustreg package declares a trust_policy; nothing to compare",
      status: "neutral",
      messages: [],
    };
    return { id: "registry", heading, status: "neutral", checks: [check] };
  }
  const base = endpointsFrom(env).rustreg;
  const checks: Check[] = [];
  for (const entry of crates) {
    const policy = entry.trust_policy;
    const check = passingCheck(`registry:${entry.name}`, `crate ${entry.name}`);
    checks.push(check);
    const where = `trust-policy: ${policy.workflow}: crate ${entry.name}`;
    const result = await request(configsUrl(base, entry.name), {
      headers: { authorization: token, accept: "application/json" },
      env,
    });
    if (result.kind !== "response" || result.status >= 500 || result.status === 429) {
      check.status = "neutral";
      const why = result.kind === "response" && result.status === 429 ? "rate limited, " : "";
      check.messages.push(
        `skipped: the registry could not be read (${why}${describeResult(result)})`,
      );
      continue;
    }
    if (result.status === 401) {
      check.status = "fail";
      check.messages.push(`${where}: the registry rejected RUSTREG_DOCTOR_TOKEN (HTTP 401)`);
      continue;
    }
    if (result.status === 404) {
      check.status = "fail";
      check.messages.push(
        `${where}: the registry does not know this crate (HTTP 404); publish it once by the normal flow, then register the trusted publisher`,
      );
      continue;
    }
    if (result.status === 400 || result.status === 403) {
      check.status = "fail";
      const hint =
        result.status === 403
          ? "; RUSTREG_DOCTOR_TOKEN must belong to an owner of the crate (a user, not a team) and have the trusted-publishing scope, or no scopes at all"
          : "";
      check.messages.push(
        `${where}: the registry refused the read (HTTP ${result.status}): ${registryError(result.text, knownSecrets(env, [token]))}${hint}`,
      );
      continue;
    }
    const body = parseJson(result.text) as { github_configs?: RegisteredConfig[] } | undefined;
    if (result.status === 200 && !Array.isArray(body?.github_configs)) {
      check.status = "neutral";
      check.messages.push(
        `skipped: the registry answered HTTP 200 with a body doctor cannot read (no github_configs list)`,
      );
      continue;
    }
    if (result.status !== 200 || !Array.isArray(body?.github_configs)) {
      check.status = "fail";
      check.messages.push(
        `${where}: unexpected answer from the registry (HTTP ${result.status}): ${registryError(result.text, knownSecrets(env, [token]))}`,
      );
      continue;
    }
    const configs = body.github_configs;
    if (configs.length === 0) {
      check.status = "fail";
      check.messages.push(`${where}: no trusted publisher is registered for this crate`);
      continue;
    }
    const declared = {
      workflow: policy.workflow,
      environment: policy.environment ?? null,
      repository: policy.repository ?? repository,
    };
    const diffs = configs.map((config) => differingFields(config, declared));
    const matchIndex = diffs.findIndex((fields) => fields.length === 0);
    if (matchIndex >= 0) {
      const config = configs[matchIndex] as RegisteredConfig;
      const repo =
        declared.repository === null ? " (repository not compared: unknown locally)" : "";
      check.messages.push(
        `${where}: matches the registration for ${config.repository_owner}/${config.repository_name}${repo}`,
      );
      continue;
    }
    check.status = "fail";
    const closest = diffs.reduce((best, fields) => (fields.length < best.length ? fields : best));
    check.messages.push(`${where}: no registration matches; differing: ${closest.join("; ")}`);
  }
  return { id: "registry", heading, status: phaseStatus(checks), checks };
}
