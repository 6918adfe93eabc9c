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
    if (result.status !== 200) {
      throw new PubtoolError(
        "HTTP_FAILED",
        `${path}: the workflow host answered HTTP ${result.status}`,
      );
    }
    const body = parseJson(result.text) as Record<string, unknown> | undefined;
    const list = body?.[key];
    if (!Array.isArray(list)) {
      throw new PubtoolError("HTTP_FAILED", `${path}: unexpected answer (no ${key} list)`);
    }
    items.push(...(list as T[]));
    url = nextLink(result.headers.get("link"));
  }
  return items;
}
