import { readVersion } from "../version.js";

/** The response of a request that reached the server. */
export interface HttpResponse {
  kind: "response";
  status: number;
  headers: Headers;
  text: string;
}

/** A request that never got a response. */
export interface HttpFailure {
  kind: "timeout" | "network";
  message: string;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | FormData | URLSearchParams | Uint8Array;
  /** Per-attempt timeout; default `PUBTOOL_HTTP_TIMEOUT_MS` or 10 seconds. */
  timeoutMs?: number;
  /** Retries after a timeout, a network error or a 5xx; default 1 (so at most 2 attempts). */
  retries?: number;
  env?: NodeJS.ProcessEnv;
}

/** Default per-attempt timeout in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 10_000;

/** The per-attempt timeout from `PUBTOOL_HTTP_TIMEOUT_MS`, else the default. */
export function timeoutFromEnv(env: NodeJS.ProcessEnv): number {
  const value = Number(env.PUBTOOL_HTTP_TIMEOUT_MS);
  return Number.isFinite(value) && value > 0 ? value : DEFAULT_TIMEOUT_MS;
}

function describeCause(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code) return cause.code;
  if (cause?.message) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

async function attempt(url: string, options: RequestOptions, timeoutMs: number) {
  try {
    const response = await fetch(url, {
      method: options.method ?? "GET",
      headers: { "user-agent": `pubtool/${readVersion()}`, ...options.headers },
      body: options.body,
      signal: AbortSignal.timeout(timeoutMs),
      redirect: "follow",
    });
    const text = await response.text();
    return { kind: "response", status: response.status, headers: response.headers, text } as const;
  } catch (error) {
    const name = (error as { name?: string }).name;
    if (name === "TimeoutError" || name === "AbortError") {
      return { kind: "timeout", message: `timed out after ${timeoutMs} ms` } as const;
    }
    return { kind: "network", message: `network error: ${describeCause(error)}` } as const;
  }
}

/**
 * One HTTP request with a bounded timeout and at most `retries` retries (default one) after a
 * timeout, a network error or a 5xx. Never throws for those: the caller decides what they mean.
 */
export async function request(
  url: string,
  options: RequestOptions = {},
): Promise<HttpResponse | HttpFailure> {
  const timeoutMs = options.timeoutMs ?? timeoutFromEnv(options.env ?? process.env);
  const retries = options.retries ?? 1;
  let result: HttpResponse | HttpFailure = await attempt(url, options, timeoutMs);
  for (let i = 0; i < retries; i++) {
    const retryable = result.kind !== "response" || result.status >= 500;
    if (!retryable) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
    result = await attempt(url, options, timeoutMs);
  }
  return result;
}

/** Parses a response body as JSON, `undefined` when it is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** "HTTP 503" or the failure message, for a one-line reason. */
export function describeResult(result: HttpResponse | HttpFailure): string {
  return result.kind === "response" ? `HTTP ${result.status}` : result.message;
}
