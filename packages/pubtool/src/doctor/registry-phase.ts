import type { PackageEntry } from "../config/schema.js";
import { endpointsFrom, envValue } from "../endpoints.js";
import { describeResult, type HttpResponse, parseJson, request } from "../http/request.js";
import { knownSecrets, maskText } from "../publish/secret-mask.js";
import { type Declared, declaredPackages } from "./declared-phase.js";
import {
  type Check,
  neutralPhase,
  type Phase,
  phaseStatus,
  passingCheck,
  type Status,
} from "./report.js";

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

/** The publisher a trust policy declares, in the terms of a registration. */
export interface DeclaredPublisher {
  workflow: string;
  environment: string | null;
  /** `owner/repo`; `null` when neither the policy nor the checkout says. */
  repository: string | null;
}

/** The fields of `config` that differ from the declaration. */
export function differingFields(config: RegisteredConfig, declared: DeclaredPublisher): string[] {
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

/** What doctor concludes about one crate, and the message that says why. */
interface Finding {
  status: Status;
  message: string;
}

/** How to read the registrations: the registry's address, the read token, the environment. */
interface RegistryReader {
  base: string;
  token: string;
  env: NodeJS.ProcessEnv;
}

/** The heading of phase 3, also when it is skipped for want of a read token. */
export const REGISTRY_PHASE_HEADING = "trust policy (rustreg registry)";

/** Phase 3: each declared rustreg package against the registry's registrations. */
export async function registryPhase(
  packages: readonly PackageEntry[],
  env: NodeJS.ProcessEnv,
  repository: string | null,
): Promise<Phase | null> {
  const token = envValue(env, "RUSTREG_DOCTOR_TOKEN");
  if (token === undefined) return null;
  const crates = declaredPackages(packages).filter((entry) => entry.kind === "rustreg");
  if (crates.length === 0) {
    return neutralPhase(
      "registry",
      REGISTRY_PHASE_HEADING,
      "no rustreg package declares a trust_policy; nothing to compare",
    );
  }
  const reader: RegistryReader = { base: endpointsFrom(env).rustreg, token, env };
  const checks: Check[] = [];
  for (const entry of crates) {
    const check = passingCheck(`registry:${entry.name}`, `crate ${entry.name}`);
    const finding = await crateFinding(entry, repository, reader);
    check.status = finding.status;
    check.messages.push(finding.message);
    checks.push(check);
  }
  return { id: "registry", heading: REGISTRY_PHASE_HEADING, status: phaseStatus(checks), checks };
}

/** Reads the registrations of one crate and compares them with its declaration. */
async function crateFinding(
  entry: Declared,
  repository: string | null,
  reader: RegistryReader,
): Promise<Finding> {
  const policy = entry.trust_policy;
  const where = `trust-policy: ${policy.workflow}: crate ${entry.name}`;
  const result = await request(configsUrl(reader.base, entry.name), {
    headers: { authorization: reader.token, accept: "application/json" },
    env: reader.env,
  });
  if (result.kind !== "response" || result.status >= 500 || result.status === 429) {
    const why = result.kind === "response" && result.status === 429 ? "rate limited, " : "";
    return {
      status: "neutral",
      message: `skipped: the registry could not be read (${why}${describeResult(result)})`,
    };
  }
  const secrets = knownSecrets(reader.env, [reader.token]);
  const refused = refusedRead(result, where, secrets);
  if (refused !== null) return refused;
  const body = parseJson(result.text) as { github_configs?: RegisteredConfig[] } | undefined;
  if (result.status === 200 && !Array.isArray(body?.github_configs)) {
    return {
      status: "neutral",
      message: `skipped: the registry answered HTTP 200 with a body doctor cannot read (no github_configs list)`,
    };
  }
  if (result.status !== 200 || !Array.isArray(body?.github_configs)) {
    return {
      status: "fail",
      message: `${where}: unexpected answer from the registry (HTTP ${result.status}): ${registryError(result.text, secrets)}`,
    };
  }
  const declared: DeclaredPublisher = {
    workflow: policy.workflow,
    environment: policy.environment ?? null,
    repository: policy.repository ?? repository,
  };
  return compareRegistrations(body.github_configs, declared, where);
}

/** The registry's refusals that doctor can explain (401, 404, 400, 403); `null` for others. */
function refusedRead(
  result: HttpResponse,
  where: string,
  secrets: readonly string[],
): Finding | null {
  if (result.status === 401) {
    return {
      status: "fail",
      message: `${where}: the registry rejected RUSTREG_DOCTOR_TOKEN (HTTP 401)`,
    };
  }
  if (result.status === 404) {
    return {
      status: "fail",
      message: `${where}: the registry does not know this crate (HTTP 404); publish it once by the normal flow, then register the trusted publisher`,
    };
  }
  if (result.status === 400 || result.status === 403) {
    const hint =
      result.status === 403
        ? "; RUSTREG_DOCTOR_TOKEN must belong to an owner of the crate (a user, not a team) and have the trusted-publishing scope, or no scopes at all"
        : "";
    return {
      status: "fail",
      message: `${where}: the registry refused the read (HTTP ${result.status}): ${registryError(result.text, secrets)}${hint}`,
    };
  }
  return null;
}

/** Passes when one registration matches the declaration; else names the closest one's differences. */
function compareRegistrations(
  configs: readonly RegisteredConfig[],
  declared: DeclaredPublisher,
  where: string,
): Finding {
  if (configs.length === 0) {
    return {
      status: "fail",
      message: `${where}: no trusted publisher is registered for this crate`,
    };
  }
  const diffs = configs.map((config) => differingFields(config, declared));
  const match = configs.find((_, index) => diffs[index]?.length === 0);
  if (match !== undefined) {
    const repo = declared.repository === null ? " (repository not compared: unknown locally)" : "";
    return {
      status: "pass",
      message: `${where}: matches the registration for ${match.repository_owner}/${match.repository_name}${repo}`,
    };
  }
  const closest = diffs.reduce((best, fields) => (fields.length < best.length ? fields : best));
  return {
    status: "fail",
    message: `${where}: no registration matches; differing: ${closest.join("; ")}`,
  };
}
