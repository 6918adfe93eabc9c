import { PubtoolError } from "../errors.js";
import { describeResult, parseJson, request } from "../http/request.js";

/** A read-only client of the workflow host's REST API. */
export interface GithubClient {
  base: string;
  token: string;
  env: NodeJS.ProcessEnv;
}

/** The `rel="next"` URL of a `Link` header, `null` when there is none. */
export function nextLink(header: string | null): string | null {
  if (!header) return null;
  for (const part of header.split(",")) {
    const match = /<([^>]+)>\s*;\s*rel="?next"?/.exec(part);
    if (match) return match[1] ?? null;
  }
  return null;
}

/**
 * True when `link` is on the configured API base: same scheme, host and port, and under its path.
 * A next-page link elsewhere would receive the stored login, so it is never followed.
 */
export function isOnApiBase(link: string, base: string): boolean {
  let target: URL;
  let origin: URL;
  try {
    target = new URL(link);
    origin = new URL(base);
  } catch {
    return false;
  }
  const prefix = origin.pathname.replace(/\/+$/, "");
  return (
    target.protocol === origin.protocol &&
    target.host === origin.host &&
    (prefix === "" || target.pathname === prefix || target.pathname.startsWith(`${prefix}/`))
  );
}

/**
 * Why the workflow host refused a request, in its own words: GitHub's `message`, and for a 403
 * or 429 whether it is the rate limit (`x-ratelimit-remaining: 0`, or a secondary limit) or a
 * missing permission, which otherwise look the same.
 */
export function describeRefusal(
  path: string,
  result: { status: number; headers: Headers; text: string },
): string {
  const body = parseJson(result.text) as { message?: unknown } | undefined;
  const message =
    typeof body?.message === "string" ? body.message.replace(/\s+/g, " ").slice(0, 300) : "";
  const said = message === "" ? "" : `: ${message}`;
  const remaining = result.headers.get("x-ratelimit-remaining");
  const rateLimited =
    result.status === 429 ||
    (result.status === 403 && (remaining === "0" || /rate limit/i.test(message)));
  if (rateLimited) {
    const reset = Number(result.headers.get("x-ratelimit-reset"));
    const retryAfter = Number(result.headers.get("retry-after"));
    const when =
      Number.isFinite(retryAfter) && retryAfter > 0
        ? `retry in ${retryAfter} s`
        : Number.isFinite(reset) && reset > 0
          ? `the limit resets at ${new Date(reset * 1000).toISOString()}`
          : "try again later";
    return `${path}: the workflow host's rate limit is exhausted (HTTP ${result.status}${said}); ${when}`;
  }
  if (result.status === 403) {
    return `${path}: the workflow host refused access (HTTP 403${said}); the stored login needs read access to the repository's secrets and environments (an admin or the repository's owner must approve the app), or run pubtool auth login again`;
  }
  return `${path}: the workflow host answered HTTP ${result.status}${said}`;
}

/** The scheme, host and port of a URL, for messages (never its path or query). */
function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "an unreadable address";
  }
}

/** GETs every page of a list endpoint (following `Link: rel="next"`) and gathers `key`. */
export async function getAllPages<T>(
  client: GithubClient,
  path: string,
  key: string,
  options: { notFoundIsEmpty?: boolean } = {},
): Promise<T[]> {
  const items: T[] = [];
  let url: string | null = `${client.base}${path}${path.includes("?") ? "&" : "?"}per_page=100`;
  for (let page = 0; url !== null && page < 100; page++) {
    const result = await request(url, {
      headers: {
        accept: "application/vnd.github+json",
        authorization: `Bearer ${client.token}`,
        "x-github-api-version": "2022-11-28",
      },
      env: client.env,
    });
    if (result.kind !== "response") {
      throw new PubtoolError("HTTP_FAILED", `${path}: ${describeResult(result)}`);
    }
    if (result.status === 401) {
      throw new PubtoolError(
        "AUTH_FAILED",
        "the workflow host rejected the stored login (HTTP 401); run pubtool auth login again",
      );
    }
    if (result.status === 404 && options.notFoundIsEmpty) return items;
    if (result.status !== 200) throw new PubtoolError("HTTP_FAILED", describeRefusal(path, result));
    const body = parseJson(result.text) as Record<string, unknown> | undefined;
    const list = body?.[key];
    if (!Array.isArray(list)) {
      throw new PubtoolError("HTTP_FAILED", `${path}: unexpected answer (no ${key} list)`);
    }
    items.push(...(list as T[]));
    url = nextLink(result.headers.get("link"));
    if (url !== null && !isOnApiBase(url, client.base)) {
      throw new PubtoolError(
        "HTTP_FAILED",
        `${path}: the next-page link points to ${safeOrigin(url)}, not to the configured API base ${client.base}; stopped there without sending the stored login (set PUBTOOL_GITHUB_API_URL to the API that serves this repository)`,
      );
    }
  }
  return items;
}
