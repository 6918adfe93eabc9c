import type { Writable } from "node:stream";
import { apiOfAuth, loadAuth } from "../auth/store.js";
import { endpointsFrom, envValue } from "../endpoints.js";
import { isPubtoolError } from "../errors.js";
import { getAllPages } from "../github/api.js";
import { currentRepository, originUrl, remoteHost, workflowHosts } from "../repository.js";
import {
  describeValue,
  FALLBACK_VARIABLES,
  registryOfSecret,
  toolVariable,
} from "./credential-names.js";

/** One row of the `token list` table. */
export interface TokenRow {
  registry: string;
  source: "env" | "repo-secret" | "environment-secret";
  name: string;
  details: string;
}

/**
 * Rows for the fallback variables and the variables the registries' own tools read that are set
 * (non-empty) in `env`. Values are never included.
 */
export function environmentRows(env: NodeJS.ProcessEnv): TokenRow[] {
  const rows: TokenRow[] = [];
  for (const variable of FALLBACK_VARIABLES) {
    const value = envValue(env, variable.name);
    if (value === undefined) continue;
    rows.push({
      registry: variable.registry,
      source: "env",
      name: variable.name,
      details: `${variable.purpose}; ${describeValue(value)}`,
    });
  }
  for (const name of Object.keys(env).sort()) {
    const value = envValue(env, name);
    const tool = toolVariable(name);
    if (value === undefined || tool === undefined) continue;
    rows.push({
      registry: tool.registry,
      source: "env",
      name,
      details: `${tool.purpose}; ${describeValue(value)}`,
    });
  }
  return rows;
}

/** Renders rows as an aligned table with the header `REGISTRY SOURCE ENV/NAME DETAILS`. */
export function renderTable(rows: readonly TokenRow[]): string {
  const header = ["REGISTRY", "SOURCE", "ENV/NAME", "DETAILS"];
  const cells = [header, ...rows.map((row) => [row.registry, row.source, row.name, row.details])];
  const widths = [0, 1, 2].map((i) => Math.max(...cells.map((line) => (line[i] ?? "").length)));
  return cells
    .map((line) =>
      line
        .map((cell, i) => (i < 3 ? cell.padEnd(widths[i] ?? 0) : cell))
        .join("  ")
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join("");
}

interface SecretsResult {
  rows: TokenRow[];
  note: string | null;
  failed: boolean;
}

/** A secret as the host lists it: its name and when it was set, never its value. */
interface ListedSecret {
  name: string;
  updated_at?: string;
}

/** Where secrets are set, as their rows show it. */
interface SecretPlace {
  source: "repo-secret" | "environment-secret";
  /** Put before each secret's name (`prod/` for an environment's secrets). */
  prefix: string;
  /** The start of each row's details: `owner/repo`, or `owner/repo, environment prod`. */
  where: string;
}

/** Rows for the secrets whose names look like a registry credential. */
function credentialRows(secrets: readonly ListedSecret[], place: SecretPlace): TokenRow[] {
  return secrets.flatMap((secret) => {
    const registry = registryOfSecret(secret.name);
    if (registry === null) return [];
    const updated = secret.updated_at ? `, updated ${secret.updated_at}` : "";
    const row: TokenRow = {
      registry,
      source: place.source,
      name: `${place.prefix}${secret.name}`,
      details: `${place.where}${updated}`,
    };
    return [row];
  });
}

async function secretRows(cwd: string, env: NodeJS.ProcessEnv): Promise<SecretsResult> {
  const auth = loadAuth(env);
  if (auth === null) {
    return {
      rows: [],
      note: "note: not logged in; run `pubtool auth login` to list repository and environment secrets",
      failed: false,
    };
  }
  const base = endpointsFrom(env).githubApi;
  const boundTo = apiOfAuth(auth);
  if (boundTo !== base) {
    return {
      rows: [],
      note: `note: secrets not listed: the stored login belongs to ${boundTo ?? auth.host}, not ${base} (PUBTOOL_GITHUB_API_URL); it is not sent there. Run pubtool auth login with the same settings`,
      failed: true,
    };
  }
  const repository = currentRepository(cwd, env);
  if (repository === null) {
    const origin = originUrl(cwd, env);
    const host = origin === null ? null : remoteHost(origin);
    const why =
      host !== null && !workflowHosts(env).includes(host)
        ? `the origin remote is on ${host}, not on the workflow host`
        : "unknown repository";
    return {
      rows: [],
      note: `note: secrets not listed: ${why}; set GITHUB_REPOSITORY=<owner>/<repo>${host === null ? " or add a git remote named origin" : ""}`,
      failed: true,
    };
  }
  const client = { base, token: auth.access_token, env };
  const rows: TokenRow[] = [];
  try {
    const secrets = await getAllPages<ListedSecret>(
      client,
      `/repos/${repository}/actions/secrets`,
      "secrets",
    );
    rows.push(...credentialRows(secrets, { source: "repo-secret", prefix: "", where: repository }));
    // 404: environments are not available for this repository (plan or visibility): none.
    const environments = await getAllPages<{ name: string }>(
      client,
      `/repos/${repository}/environments`,
      "environments",
      { notFoundIsEmpty: true },
    );
    for (const environment of environments) {
      const envSecrets = await getAllPages<ListedSecret>(
        client,
        `/repos/${repository}/environments/${encodeURIComponent(environment.name)}/secrets`,
        "secrets",
      );
      const place: SecretPlace = {
        source: "environment-secret",
        prefix: `${environment.name}/`,
        where: `${repository}, environment ${environment.name}`,
      };
      rows.push(...credentialRows(envSecrets, place));
    }
  } catch (error) {
    if (!isPubtoolError(error)) throw error;
    return { rows, note: `note: secrets not listed: ${error.message}`, failed: true };
  }
  return { rows, note: null, failed: false };
}

/** `pubtool token list [--secrets]`. */
export async function runTokenList(options: {
  secrets: boolean;
  cwd: string;
  env: NodeJS.ProcessEnv;
  out: Writable;
  err: Writable;
}): Promise<number> {
  const rows = environmentRows(options.env);
  let failed = false;
  if (options.secrets) {
    const result = await secretRows(options.cwd, options.env);
    rows.push(...result.rows);
    if (result.note !== null) options.err.write(`${result.note}\n`);
    failed = result.failed;
  }
  options.out.write(renderTable(rows));
  return failed ? 1 : 0;
}
