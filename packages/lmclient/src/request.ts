/**
 * What one upstream call needs, as plain data (it crosses the worker-thread boundary), and the
 * constants both threads share. No dependencies: the application thread loads only this.
 */

/** The longest `Retry-After` wait honoured; a longer one ends the call at once. */
export const RETRY_AFTER_CAP_MS = 60_000;

/** Everything one upstream call needs. Plain data: it crosses the worker-thread boundary. */
export interface TransportRequest {
  /** Base URL without a trailing slash and without a query string. */
  baseUrl: string;
  /** The query string of `base_url` with its `?` (or ""), sent as written with every request. */
  search: string;
  /** Extra HTTP headers (the `headers` option and per-call argument). */
  headers: Record<string, string>;
  apiKey: string;
  /** Per-attempt timeout in milliseconds, from sending the request to the last body byte. */
  timeout: number;
  maxRetries: number;
  /** Largest response body accepted, in bytes. */
  maxResponseBytes: number;
  /** An http(s) proxy URL, or undefined. */
  proxy: string | undefined;
  /** The full request body as JSON text: `model`, `messages` and the extra arguments. */
  bodyJson: string;
}

/** The chat-completion endpoint under a base URL, with the base URL's query string. */
export function completionsUrl(baseUrl: string, search = ""): string {
  return `${baseUrl}/chat/completions${search}`;
}
