import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { endpointsFrom, envValue } from "../endpoints.js";
import { PubtoolError } from "../errors.js";
import { encodeMultipart, type FormPart } from "../http/multipart.js";
import { describeResult, parseJson, request } from "../http/request.js";
import { readDistributionMetadata } from "./dist-metadata.js";
import { knownSecrets, maskText, secretForms } from "./secret-mask.js";

/** Default distribution globs of a pyreg package, relative to its `path`. */
export const DEFAULT_DIST_GLOBS = ["dist/*.whl", "dist/*.tar.gz"];

function globToRegExp(segment: string): RegExp {
  const source = segment
    .split("")
    .map((char) =>
      char === "*" ? "[^/]*" : char === "?" ? "[^/]" : char.replace(/[.+^${}()|[\]\\]/g, "\\$&"),
    )
    .join("");
  return new RegExp(`^${source}$`);
}

/** Files under `dir` matching `pattern` (`*` and `?` within one path segment). */
export function matchFiles(dir: string, pattern: string): string[] {
  let current = [dir];
  for (const segment of pattern.split("/").filter((part) => part !== "" && part !== ".")) {
    const next: string[] = [];
    for (const base of current) {
      if (!/[*?]/.test(segment)) {
        if (existsSync(join(base, segment))) next.push(join(base, segment));
        continue;
      }
      if (!existsSync(base)) continue;
      const regex = globToRegExp(segment);
      for (const name of readdirSync(base).sort())
        if (regex.test(name)) next.push(join(base, name));
    }
    current = next;
  }
  return current;
}

/** The built distributions of `name` `version` (wheel and sdist file names normalize the name). */
export function findDistributions(
  dir: string,
  globs: readonly string[],
  name: string,
  version: string,
): string[] {
  const lower = name.toLowerCase();
  const stems = new Set([lower, lower.replace(/[-_.]+/g, "_"), lower.replace(/[-_.]+/g, "-")]);
  const files = new Set(globs.flatMap((pattern) => matchFiles(dir, pattern)));
  return [...files].filter((file) => {
    const base = basename(file).toLowerCase();
    if (!base.endsWith(".whl") && !base.endsWith(".tar.gz")) return false;
    return [...stems].some((stem) => {
      const prefix = `${stem}-${version.toLowerCase()}`;
      return base.startsWith(prefix) && /^[-.]/.test(base.slice(prefix.length));
    });
  });
}

function oidcHeaders(env: NodeJS.ProcessEnv) {
  return {
    authorization: `bearer ${envValue(env, "ACTIONS_ID_TOKEN_REQUEST_TOKEN") ?? ""}`,
    accept: "application/json",
  };
}

/** The registry's own words, with every secret of this exchange masked. */
function registryMessage(text: string, secrets: readonly string[]): string {
  const body = parseJson(text) as
    { message?: string; errors?: { description?: string }[] } | undefined;
  const description = body?.errors
    ?.map((error) => error.description)
    .filter(Boolean)
    .join("; ");
  // Masked before shortening, so a cut cannot leave half a secret unmasked.
  const masked = maskText(description || body?.message || text, secrets);
  return masked.replace(/\s+/g, " ").slice(0, 300);
}

/**
 * Trusted publishing for pyreg: the audience from `/_/oidc/audience`, an OIDC JWT for it from
 * the workflow host, exchanged at `/_/oidc/mint-token` for a short-lived upload token.
 */
export async function mintPyregToken(env: NodeJS.ProcessEnv): Promise<string> {
  const base = endpointsFrom(env).pyreg;
  const audienceResult = await request(`${base}/_/oidc/audience`, {
    headers: { accept: "application/json" },
    env,
  });
  if (audienceResult.kind !== "response" || audienceResult.status !== 200) {
    throw new PubtoolError(
      "PUBLISH_FAILED",
      `pyreg audience endpoint: ${describeResult(audienceResult)}`,
    );
  }
  const audience = (parseJson(audienceResult.text) as { audience?: string } | undefined)?.audience;
  if (typeof audience !== "string")
    throw new PubtoolError("PUBLISH_FAILED", "pyreg audience endpoint: no audience");

  const requestUrl = new URL(envValue(env, "ACTIONS_ID_TOKEN_REQUEST_URL") ?? "");
  requestUrl.searchParams.set("audience", audience);
  const jwtResult = await request(requestUrl.toString(), { headers: oidcHeaders(env), env });
  if (jwtResult.kind !== "response" || jwtResult.status !== 200) {
    throw new PubtoolError(
      "PUBLISH_FAILED",
      `the workflow host did not issue an OIDC token (${describeResult(jwtResult)}); the job needs id-token: write`,
    );
  }
  const jwt = (parseJson(jwtResult.text) as { value?: string } | undefined)?.value;
  if (typeof jwt !== "string")
    throw new PubtoolError("PUBLISH_FAILED", "the workflow host returned no OIDC token");

  const mint = await request(`${base}/_/oidc/mint-token`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ token: jwt }),
    env,
    retries: 0,
  });
  if (mint.kind !== "response")
    throw new PubtoolError("PUBLISH_FAILED", `pyreg mint-token: ${mint.message}`);
  const token = (parseJson(mint.text) as { token?: string } | undefined)?.token;
  if (mint.status !== 200 || typeof token !== "string") {
    throw new PubtoolError(
      "PUBLISH_FAILED",
      `pyreg refused to mint a token (HTTP ${mint.status}): ${registryMessage(mint.text, [...secretForms(jwt), ...knownSecrets(env)])}. Check that the trusted publisher's repository, workflow file and environment match this run (pubtool doctor).`,
    );
  }
  return token;
}

/** Uploads one distribution with the legacy upload API. "exists" when the registry has it. */
export async function uploadDistribution(
  file: string,
  meta: { name: string; version: string },
  token: string,
  env: NodeJS.ProcessEnv,
): Promise<"uploaded" | "exists"> {
  const content = readFileSync(file);
  const name = basename(file);
  const wheel = name.endsWith(".whl");
  const fields = await readDistributionMetadata(file, meta);
  const parts: FormPart[] = [
    { name: ":action", value: "file_upload" },
    { name: "protocol_version", value: "1" },
  ];
  // Every core-metadata field the upload API takes, from the distribution itself (so the
  // release has its description, Requires-Python and dependencies); repeated fields repeat.
  for (const [field, value] of fields) parts.push({ name: field, value });
  parts.push({ name: "filetype", value: wheel ? "bdist_wheel" : "sdist" });
  parts.push({ name: "pyversion", value: wheel ? (name.split("-").at(-3) ?? "py3") : "source" });
  parts.push({
    name: "sha256_digest",
    value: createHash("sha256").update(content).digest("hex"),
  });
  parts.push({ name: "content", file: content, filename: name });
  const form = encodeMultipart(parts);
  const url = endpointsFrom(env).pyregUpload;
  const result = await request(url, {
    method: "POST",
    headers: {
      authorization: `Basic ${Buffer.from(`__token__:${token}`).toString("base64")}`,
      "content-type": form.contentType,
    },
    body: form.body,
    env,
    retries: 0,
  });
  if (result.kind !== "response")
    throw new PubtoolError("PUBLISH_FAILED", `upload of ${name}: ${result.message}`);
  if (result.status === 200) return "uploaded";
  if (result.status === 400 && /already exists/i.test(result.text)) return "exists";
  throw new PubtoolError(
    "PUBLISH_FAILED",
    `upload of ${name} failed (HTTP ${result.status}): ${registryMessage(result.text, [...secretForms(token), ...knownSecrets(env)])}`,
  );
}
