import { Deadline, DeadlineError } from "./deadline.js";
import { transportFor } from "./http-stack.js";
import { RETRY_AFTER_CAP_MS } from "./request.js";

/** What the attempts of one call observed, read when the call fails. */
export interface AttemptState {
  /** HTTP attempts started. */
  count: number;
  /** The body of the last non-2xx response. */
  errorBody: string | undefined;
  /** Whether the last attempt received its response headers. */
  headersReceived: boolean;
  /** A requested wait above the cap that stopped the retries, in milliseconds. */
  retryAfterMs: number | undefined;
  /** A failure that must not be retried (it aborted `stop`). */
  fatal: Error | undefined;
}

export interface AttemptOptions {
  /** Per-attempt deadline in milliseconds, headers and body alike. */
  timeout: number;
  /** Largest response body accepted, in bytes. */
  maxResponseBytes: number;
  /** An http(s) proxy URL, or undefined for direct connections. */
  proxy: string | undefined;
  state: AttemptState;
  /** Aborted (after setting `state.fatal`) to stop the `openai` client from retrying. */
  stop: AbortController;
  /** The error for a body over `maxResponseBytes`. */
  tooLarge: (bytes: number, declared: boolean) => Error;
}

export function newAttemptState(): AttemptState {
  return {
    count: 0,
    errorBody: undefined,
    headersReceived: false,
    retryAfterMs: undefined,
    fatal: undefined,
  };
}

const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);

/**
 * The `fetch` the `openai` client calls for each attempt: it reads the whole body inside the
 * attempt, so the deadline, the size cap, resets and stalls mid-body all count as a failure of
 * the attempt (typed and retried by the client), and it caps `Retry-After`.
 */
export function attemptFetch(options: AttemptOptions) {
  const { state } = options;
  return async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    state.count += 1;
    state.errorBody = undefined;
    state.headersReceived = false;
    // Linked by hand: signals from AbortSignal.any can be collected early on Node 20.
    const controller = new AbortController();
    const abort = () => controller.abort();
    const deadline = new Deadline(options.timeout, abort);
    init.signal?.addEventListener("abort", abort, { once: true });
    if (init.signal?.aborted) controller.abort();
    const signal = controller.signal;
    try {
      const { fetch, dispatcher } = transportFor(options.proxy);
      const response = await fetch(String(input instanceof Request ? input.url : input), {
        ...init,
        signal,
        dispatcher,
      });
      state.headersReceived = true;
      const declared = Number(response.headers.get("content-length") ?? NaN);
      if (declared > options.maxResponseBytes) {
        await response.body?.cancel().catch(() => undefined);
        throw fatal(options, options.tooLarge(declared, true));
      }
      const body = await readCapped(response, options);
      const headers = new Headers([...response.headers]);
      if (!response.ok) {
        state.errorBody = new TextDecoder().decode(body);
        const wait = requestedWaitMs(headers);
        if (wait !== undefined && !(wait > 0)) {
          // Zero, negative (a date in the past), or unreadable: the `openai` client would sleep
          // that long, i.e. not at all, and fire every retry at once. Without the headers it
          // falls back to its exponential backoff.
          headers.delete("retry-after");
          headers.delete("retry-after-ms");
        } else if (
          wait !== undefined &&
          wait > RETRY_AFTER_CAP_MS &&
          retryable(response.status, headers)
        ) {
          state.retryAfterMs = wait;
          headers.set("x-should-retry", "false");
        }
      }
      return new Response(NULL_BODY_STATUS.has(response.status) ? null : body, {
        status: response.status,
        statusText: response.statusText,
        headers,
      });
    } catch (error) {
      if (deadline.expired) throw new DeadlineError();
      throw error;
    } finally {
      deadline.clear();
      init.signal?.removeEventListener("abort", abort);
    }
  };
}

function fatal(options: AttemptOptions, error: Error): Error {
  options.state.fatal = error;
  options.stop.abort();
  return error;
}

async function readCapped(response: Response, options: AttemptOptions): Promise<Uint8Array> {
  if (!response.body) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > options.maxResponseBytes) {
      await reader.cancel().catch(() => undefined);
      throw fatal(options, options.tooLarge(size, false));
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/**
 * The wait a response asks for, read the way the `openai` client reads it (`retry-after-ms`
 * first, then `Retry-After` as seconds or an HTTP date); `NaN` when a header is there but
 * unreadable, `undefined` when there is none.
 */
function requestedWaitMs(headers: Headers): number | undefined {
  const msHeader = headers.get("retry-after-ms");
  const ms = parseFloat(msHeader ?? "");
  // The client takes any number here, and moves on to Retry-After only when it is 0 or NaN.
  if (!Number.isNaN(ms) && ms) return ms;
  const value = headers.get("retry-after");
  if (!value) return msHeader ? NaN : undefined;
  const seconds = parseFloat(value);
  if (!Number.isNaN(seconds)) return seconds * 1000;
  return Date.parse(value) - Date.now();
}

/** Whether the `openai` client would retry this status. */
function retryable(status: number, headers: Headers): boolean {
  const header = headers.get("x-should-retry");
  if (header === "true") return true;
  if (header === "false") return false;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}
