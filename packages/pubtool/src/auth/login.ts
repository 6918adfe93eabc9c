import type { Writable } from "node:stream";
import { endpointsFrom, envValue } from "../endpoints.js";
import { PubtoolError } from "../errors.js";
import { describeResult, parseJson, request } from "../http/request.js";
import { authFile, loadAuth, removeAuth, saveAuth } from "./store.js";

/**
 * pubtool ships no registered app of its own: the device flow needs the client id of a GitHub App
 * (device flow enabled; repository permissions Secrets, Environments, Actions and Metadata:
 * read-only) given by `--client-id` or `PUBTOOL_GITHUB_CLIENT_ID`. A GitHub App needs no OAuth
 * scope parameter. See docs/commands.md.
 */
export const CLIENT_ID_HELP =
  "no device-flow client id: register a GitHub App with device flow enabled and read-only Secrets, Environments, Actions and Metadata permissions, then pass its client id with --client-id <id> or PUBTOOL_GITHUB_CLIENT_ID (see docs/commands.md)";

const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

interface DeviceCode {
  device_code: string;
  user_code: string;
  verification_uri: string;
  expires_in: number;
  interval: number;
}

async function postForm(url: string, form: Record<string, string>, env: NodeJS.ProcessEnv) {
  const result = await request(url, {
    method: "POST",
    headers: { accept: "application/json", "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form).toString(),
    env,
  });
  if (result.kind !== "response") {
    throw new PubtoolError("HTTP_FAILED", `${url}: ${describeResult(result)}`);
  }
  const body = parseJson(result.text) as Record<string, unknown> | undefined;
  return { status: result.status, body: body ?? {} };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `pubtool auth login`: OAuth device flow, then the token is stored (file 0600). */
export async function runLogin(options: {
  clientId?: string;
  env: NodeJS.ProcessEnv;
  out: Writable;
}): Promise<void> {
  const { env, out } = options;
  const host = endpointsFrom(env).github;
  const clientId = options.clientId || envValue(env, "PUBTOOL_GITHUB_CLIENT_ID");
  if (!clientId) throw new PubtoolError("USAGE", CLIENT_ID_HELP);
  const start = await postForm(`${host}/login/device/code`, { client_id: clientId }, env);
  const code = start.body as Partial<DeviceCode> & { error?: string; error_description?: string };
  if (
    start.status !== 200 ||
    typeof code.device_code !== "string" ||
    typeof code.user_code !== "string"
  ) {
    const why = code.error_description ?? code.error ?? `HTTP ${start.status}`;
    throw new PubtoolError("AUTH_FAILED", `could not start the device flow: ${why}`);
  }
  out.write(
    `open ${code.verification_uri ?? `${host}/login/device`} and enter the code ${code.user_code}\n`,
  );
  let interval = Math.max(0, Number(code.interval ?? 5));
  const expiresIn = Number(code.expires_in ?? 900);
  const deadline = Date.now() + expiresIn * 1000;
  for (;;) {
    await sleep(interval * 1000);
    const poll = await postForm(
      `${host}/login/oauth/access_token`,
      { client_id: clientId, device_code: code.device_code, grant_type: DEVICE_GRANT },
      env,
    );
    const body = poll.body as Record<string, unknown>;
    if (typeof body.access_token === "string" && body.access_token !== "") {
      const file = saveAuth(env, {
        host,
        api: endpointsFrom(env).githubApi,
        client_id: clientId,
        access_token: body.access_token,
        token_type: String(body.token_type ?? "bearer"),
        scope: String(body.scope ?? ""),
        created_at: new Date().toISOString(),
      });
      out.write(`logged in to ${host}; token stored in ${file}\n`);
      return;
    }
    switch (body.error) {
      case "authorization_pending":
        break;
      case "slow_down":
        interval = typeof body.interval === "number" ? body.interval : interval + 5;
        break;
      case "expired_token":
        throw new PubtoolError(
          "AUTH_FAILED",
          "the device code expired; run pubtool auth login again",
        );
      case "access_denied":
        throw new PubtoolError("AUTH_FAILED", "the sign-in was denied");
      default: {
        const why = body.error_description ?? body.error ?? `HTTP ${poll.status}`;
        throw new PubtoolError("AUTH_FAILED", `sign-in failed: ${String(why)}`);
      }
    }
    if (Date.now() > deadline) {
      throw new PubtoolError(
        "AUTH_FAILED",
        "the device code expired; run pubtool auth login again",
      );
    }
  }
}

/** `pubtool auth logout`. */
export function runLogout(env: NodeJS.ProcessEnv, out: Writable): void {
  out.write(removeAuth(env) ? `logged out; removed ${authFile(env)}\n` : "not logged in\n");
}

/** `pubtool auth status`: true when a login is stored. The token is never printed. */
export function runStatus(env: NodeJS.ProcessEnv, out: Writable): boolean {
  const auth = loadAuth(env);
  if (auth === null) {
    out.write("not logged in; run pubtool auth login\n");
    return false;
  }
  out.write(
    `logged in to ${auth.host} since ${auth.created_at} (client id ${auth.client_id}); token stored in ${authFile(env)}\n`,
  );
  return true;
}
