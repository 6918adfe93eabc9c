import { isIP } from "node:net";
import OfficialClient, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from "openai";
import type { ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";
import {
  ContextWindowExceededError,
  createLMError,
  isLMError,
  type LMError,
  type LMErrorCode,
  type LMErrorDetails,
} from "./errors.js";
import { attemptFetch, type AttemptState, newAttemptState } from "./http-attempt.js";
import { completionsUrl, RETRY_AFTER_CAP_MS, type TransportRequest } from "./request.js";
import { displayUrl, redactSecret } from "./redact.js";
import type { CompletionResponse } from "./types.js";

type Send = (url: string, init: RequestInit) => Promise<Response>;

/**
 * The attempt function of each call in flight, keyed by the abort signal the call passes to the
 * client (which hands it to `fetchWithTimeout` unchanged). This lets calls share one client.
 */
const sendBySignal = new WeakMap<AbortSignal, Send>();

/**
 * The official client, minus its own per-attempt timer: `setTimeout` misfires for 2^31 ms or
 * more and after a blocked event loop, and it stops at the headers. `attemptFetch` enforces the
 * deadline instead, over headers and body.
 */
// Named OpenAI: the client derives its User-Agent (`OpenAI/JS <version>`) from the class name.
class OpenAI extends OfficialClient {
  readonly #search: string;

  constructor(
    options: ConstructorParameters<typeof OfficialClient>[0] & {
      /** base_url's query string, appended as written (the client would re-encode it). */
      search: string;
    },
  ) {
    const { search, ...rest } = options;
    super(rest);
    this.#search = search;
  }

  override fetchWithTimeout(
    ...[url, init, , controller]: Parameters<OfficialClient["fetchWithTimeout"]>
  ): Promise<Response> {
    const { signal, method, ...rest } = init ?? {};
    const send = signal ? sendBySignal.get(signal) : undefined;
    if (!signal || !send) {
      return Promise.reject(new Error("lmclient: a request was made outside sendChatCompletion"));
    }
    signal.addEventListener("abort", () => controller.abort(), { once: true });
    let target = String(url);
    if (this.#search) {
      target += target.includes("?") ? `&${this.#search.slice(1)}` : this.#search;
    }
    return send(target, {
      ...rest,
      signal: controller.signal,
      method: method ? method.toUpperCase() : "GET",
    });
  }
}

/** Clients by configuration: building one per call costs more than the call's own work. */
const clients = new Map<string, OpenAI>();
/** Distinct configurations kept; past this the cache starts over (each client is small). */
const MAX_CLIENTS = 32;

function clientFor(request: TransportRequest): OpenAI {
  const key = JSON.stringify([
    request.baseUrl,
    request.search,
    request.apiKey,
    request.timeout,
    request.maxRetries,
  ]);
  let client = clients.get(key);
  if (!client) {
    if (clients.size >= MAX_CLIENTS) clients.clear();
    client = new OpenAI({
      apiKey: request.apiKey,
      // Never pick up OPENAI_* credentials or headers from the environment for a custom server.
      adminAPIKey: null,
      organization: null,
      project: null,
      webhookSecret: null,
      baseURL: request.baseUrl,
      search: request.search,
      timeout: request.timeout,
      maxRetries: request.maxRetries,
      logLevel: "off",
    });
    clients.set(key, client);
  }
  return client;
}

/**
 * Sends one chat completion through the official `openai` client (which owns retries, backoff
 * and `Retry-After`), and turns every failure into an `LMError`. Both `aforward` and the
 * synchronous worker run exactly this function.
 */
export async function sendChatCompletion(request: TransportRequest): Promise<CompletionResponse> {
  const state = newAttemptState();
  const stop = new AbortController();
  const client = clientFor(request);
  sendBySignal.set(
    stop.signal,
    attemptFetch({
      timeout: request.timeout,
      maxResponseBytes: request.maxResponseBytes,
      proxy: request.proxy,
      state,
      stop,
      tooLarge: (bytes, declared) => tooLargeError(request, bytes, declared, state.count),
    }),
  );
  let result: unknown;
  try {
    result = await client.chat.completions.create(
      JSON.parse(request.bodyJson) as ChatCompletionCreateParamsNonStreaming,
      { signal: stop.signal, headers: request.headers },
    );
  } catch (error) {
    throw toLMError(error, request, state);
  }
  return checkCompletion(result, request, state.count);
}

function whereOf(request: TransportRequest): string {
  return `POST ${displayUrl(completionsUrl(request.baseUrl, request.search))}`;
}

function tooLargeError(
  request: TransportRequest,
  bytes: number,
  declared: boolean,
  attempts: number,
): LMError {
  const size = declared ? `declares ${bytes} bytes` : `passed ${request.maxResponseBytes} bytes`;
  return createLMError(
    "LM_TOO_LARGE",
    redactSecret(
      `response too large: the body from ${whereOf(request)} ${size}, more than ` +
        `maxResponseBytes (${request.maxResponseBytes}). Raise maxResponseBytes if this is expected.`,
      request.apiKey,
    ),
    { status: 200, attempts },
  );
}

const STATUS_TEXT: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  408: "Request Timeout",
  409: "Conflict",
  413: "Payload Too Large",
  422: "Unprocessable Entity",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

function classify(status: number): { code: LMErrorCode; label: string; hint: string } {
  if (status === 401 || status === 403) {
    return { code: "LM_AUTH", label: "authentication failed", hint: " Check api_key." };
  }
  if (status === 404) {
    return {
      code: "LM_NOT_FOUND",
      label: "not found",
      hint: " Check the model name and base_url (it usually ends in /v1).",
    };
  }
  if (status === 408) return { code: "LM_TIMEOUT", label: "request timed out", hint: "" };
  if (status === 429) return { code: "LM_RATE_LIMIT", label: "rate limited", hint: "" };
  if (status >= 400 && status < 500) {
    return { code: "LM_BAD_REQUEST", label: "bad request", hint: "" };
  }
  if (status >= 500) return { code: "LM_SERVER", label: "server error", hint: "" };
  return { code: "LM_BAD_RESPONSE", label: "unexpected response", hint: "" };
}

/**
 * LiteLLM's provider prefixes that DSPy model names carry (`openai/llama3.2`). DSPy strips the
 * prefix before sending; lmclient sends the name as written (a server may really name a model
 * `openai/gpt-oss-20b`), so a 404 for such a name says so.
 */
const PROVIDER_PREFIXES = new Set([
  "openai",
  "azure",
  "ollama",
  "ollama_chat",
  "hosted_vllm",
  "vllm",
  "lm_studio",
  "llamafile",
  "openrouter",
  "together_ai",
  "groq",
  "deepseek",
  "mistral",
  "fireworks_ai",
  "deepinfra",
  "anthropic",
  "gemini",
  "xai",
  "huggingface",
  "text-completion-openai",
]);

function providerPrefixHint(request: TransportRequest): string {
  let model: unknown;
  try {
    model = (JSON.parse(request.bodyJson) as { model?: unknown }).model;
  } catch {
    return "";
  }
  if (typeof model !== "string") return "";
  const slash = model.indexOf("/");
  const prefix = slash > 0 ? model.slice(0, slash) : "";
  if (!PROVIDER_PREFIXES.has(prefix.toLowerCase())) return "";
  const bare = model.slice(slash + 1);
  return (
    ` The model name ${JSON.stringify(model)} was sent as written: DSPy (through LiteLLM) ` +
    `strips the provider prefix "${prefix}/" and sends ${JSON.stringify(bare)}, lmclient does ` +
    `not. If the server calls the model ${JSON.stringify(bare)}, pass model: ${JSON.stringify(bare)}.`
  );
}

function attemptsText(attempts: number): string {
  return attempts > 1 ? ` (${attempts} attempts)` : "";
}

/**
 * The `LMError` for a failed call. Order matters: the client's timeout and abort errors are
 * connection errors, and its connection errors are `APIError`s.
 */
function toLMError(error: unknown, request: TransportRequest, state: AttemptState): LMError {
  // Already the error the call ends in: `attemptFetch` aborted the call to stop the retries.
  if (state.fatal && isLMError(state.fatal)) return state.fatal;
  if (error instanceof APIConnectionTimeoutError) return timedOut(request, state);
  if (error instanceof APIUserAbortError) {
    return createLMError(
      "LM_CONNECTION",
      redactSecret(`request aborted: ${whereOf(request)}`, request.apiKey),
      { attempts: state.count },
    );
  }
  if (error instanceof APIConnectionError) return connectionFailed(error, request, state);
  if (error instanceof APIError && typeof error.status === "number") {
    return statusFailed(error, error.status, request, state);
  }
  if (error instanceof SyntaxError) return notJson(error, request, state.count);
  return requestFailed(error, request, state.count);
}

function timedOut(request: TransportRequest, state: AttemptState): LMError {
  const what = state.headersReceived ? "no complete response" : "no response";
  return createLMError(
    "LM_TIMEOUT",
    redactSecret(
      `request timed out: ${what} from ${whereOf(request)} within ${request.timeout} ms` +
        `${attemptsText(state.count)}. Raise the timeout option for slow models.`,
      request.apiKey,
    ),
    { attempts: state.count },
  );
}

function connectionFailed(
  error: APIConnectionError,
  request: TransportRequest,
  state: AttemptState,
): LMError {
  const cause = rootCause(error);
  if (!state.headersReceived && request.proxy && cause && isProxyFailure(cause, request.proxy)) {
    return proxyFailed(cause, request.proxy, request, state.count);
  }
  const where = whereOf(request);
  const reason = cause ? `: ${cause.message}` : "";
  const [what, hint] = state.headersReceived
    ? [
        `connection broke while reading the response from ${where}`,
        "The server or a proxy closed the connection mid-response.",
      ]
    : [`connection failed: ${where}`, "Is the server running at base_url?"];
  return createLMError(
    "LM_CONNECTION",
    redactSecret(`${what}${attemptsText(state.count)}${reason}. ${hint}`, request.apiKey),
    { attempts: state.count, cause: cause ? sanitizeCause(cause, request.apiKey) : undefined },
  );
}

function proxyFailed(
  cause: Error,
  proxy: string,
  request: TransportRequest,
  attempts: number,
): LMError {
  return createLMError(
    "LM_CONNECTION",
    redactSecret(
      `connection to the proxy failed: ${displayUrl(proxy)} (for ${whereOf(request)})` +
        `${attemptsText(attempts)}: ${cause.message}. ` +
        "Is the proxy running at the proxy option's address?",
      request.apiKey,
    ),
    { attempts, cause: sanitizeCause(cause, request.apiKey) },
  );
}

/** An HTTP error status the client did not (or no longer) retry: the class its status maps to. */
function statusFailed(
  error: APIError,
  status: number,
  request: TransportRequest,
  state: AttemptState,
): LMError {
  const serverMessage = serverMessageOf(state.errorBody, error);
  const fields = serverFieldsOf(state.errorBody, error);
  const details: LMErrorDetails = {
    status,
    ...serverDetails(serverMessage, fields, request.apiKey),
    requestId: error.requestID ?? undefined,
    attempts: state.count,
  };
  const { code, label, hint } = classify(status);
  const statusText = STATUS_TEXT[status] ? ` ${STATUS_TEXT[status]}` : "";
  const from = `HTTP ${status}${statusText} from ${whereOf(request)}`;
  const said = saidOf(serverMessage);
  if (code === "LM_BAD_REQUEST" && exceedsContext(fields, serverMessage)) {
    return new ContextWindowExceededError(
      redactSecret(
        `context window exceeded: ${from}: ${said}. ` +
          "Shorten the prompt or messages, or lower max_tokens.",
        request.apiKey,
      ),
      details,
    );
  }
  const modelHint = status === 404 ? providerPrefixHint(request) : "";
  return createLMError(
    code,
    redactSecret(
      `${label}: ${from}${attemptsText(state.count)}: ${said}.${hint}${modelHint}` +
        notRetriedText(state.retryAfterMs),
      request.apiKey,
    ),
    details,
  );
}

/** Why a status the client retries was not: the server asked for a wait over the cap. */
function notRetriedText(retryAfterMs: number | undefined): string {
  if (retryAfterMs === undefined) return "";
  return (
    ` The server asked to wait ${Math.ceil(retryAfterMs / 1000)} s before a retry ` +
    `(Retry-After), more than the ${RETRY_AFTER_CAP_MS / 1000} s lmclient waits, so it ` +
    "did not retry."
  );
}

function notJson(error: SyntaxError, request: TransportRequest, attempts: number): LMError {
  return createLMError(
    "LM_BAD_RESPONSE",
    redactSecret(
      `invalid response from ${whereOf(request)}: the body is not valid JSON (${error.message})`,
      request.apiKey,
    ),
    { attempts },
  );
}

/** Anything else the client can end in is still a failure of the request. */
function requestFailed(error: unknown, request: TransportRequest, attempts: number): LMError {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return createLMError(
    "LM_CONNECTION",
    redactSecret(`request failed: ${whereOf(request)}: ${text}`, request.apiKey),
    { attempts, cause: error instanceof Error ? sanitizeCause(error, request.apiKey) : undefined },
  );
}

function checkCompletion(
  result: unknown,
  request: TransportRequest,
  attempts: number,
): CompletionResponse {
  let value = result;
  if (typeof result === "string") {
    try {
      value = JSON.parse(result) as unknown;
    } catch {
      throw badResponse(request, attempts, `the body is not JSON: ${truncate(result)}`);
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw badResponse(request, attempts, "the body is not a JSON object");
  }
  const choices = (value as { choices?: unknown }).choices;
  const error = (value as { error?: unknown }).error;
  if (!Array.isArray(choices) && error !== undefined && error !== null) {
    throw errorIn200(value, request, attempts);
  }
  if (!Array.isArray(choices)) {
    throw badResponse(
      request,
      attempts,
      `not a chat completion (no "choices" array): ${truncate(JSON.stringify(value))}`,
    );
  }
  return value as CompletionResponse;
}

/**
 * A 2xx answer whose body is an error (`{"error": ...}`, as some proxies and LiteLLM send for a
 * failure upstream): a `ResponseError` carrying the server's message, code, type and param.
 */
function errorIn200(body: object, request: TransportRequest, attempts: number): LMError {
  const json = JSON.stringify(body);
  const serverMessage = serverMessageOf(json);
  const fields = serverFieldsOf(json);
  return createLMError(
    "LM_BAD_RESPONSE",
    redactSecret(
      `invalid response from ${whereOf(request)}: HTTP 200 with an error instead of a chat ` +
        `completion: ${saidOf(serverMessage)}.`,
      request.apiKey,
    ),
    { status: 200, attempts, ...serverDetails(serverMessage, fields, request.apiKey) },
  );
}

/** The server's message, to end a sentence of ours. */
function saidOf(serverMessage: string | undefined): string {
  return serverMessage === undefined ? "(no message)" : serverMessage.replace(/[\s.]+$/, "");
}

/** What the server said, for `LMErrorDetails`: servers echo the API key back. */
function serverDetails(
  serverMessage: string | undefined,
  fields: ServerFields,
  secret: string,
): Pick<LMErrorDetails, "serverMessage" | "serverCode" | "serverType" | "serverParam"> {
  const clean = (text: string | undefined) =>
    text === undefined ? undefined : redactSecret(text, secret);
  return {
    serverMessage: clean(serverMessage),
    serverCode: clean(fields.code),
    serverType: clean(fields.type),
    serverParam: clean(fields.param),
  };
}

function badResponse(request: TransportRequest, attempts: number, what: string): LMError {
  const where = whereOf(request);
  return createLMError(
    "LM_BAD_RESPONSE",
    redactSecret(`invalid response from ${where}: ${what}`, request.apiKey),
    { status: 200, attempts },
  );
}

/**
 * The server's own message, from the body of its error response. Understands the OpenAI shape
 * `{"error": {"message": ...}}`, `{"error": "..."}`, vLLM's `{"message": ...}`,
 * FastAPI's `{"detail": ...}`, and plain text.
 */
export function serverMessageOf(body: string | undefined, error?: APIError): string | undefined {
  const text = body?.trim();
  if (text) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text) as unknown;
    } catch {
      return truncate(text);
    }
    const found = messageIn(parsed);
    return truncate(found ?? text);
  }
  const fallback = error ? messageIn({ error: error.error }) : undefined;
  return fallback === undefined ? undefined : truncate(fallback);
}

/** The `code`, `type` and `param` of a server's error body. */
export interface ServerFields {
  code?: string;
  type?: string;
  param?: string;
}

/** The `code`, `type` and `param` of the server's error body (OpenAI's and vLLM's shapes). */
export function serverFieldsOf(body: string | undefined, error?: APIError): ServerFields {
  let parsed: unknown;
  try {
    parsed = body?.trim() ? (JSON.parse(body) as unknown) : { error: error?.error };
  } catch {
    return {};
  }
  if (typeof parsed !== "object" || parsed === null) return {};
  const record = parsed as Record<string, unknown>;
  const inner =
    typeof record.error === "object" && record.error !== null
      ? (record.error as Record<string, unknown>)
      : record;
  const text = (value: unknown) =>
    typeof value === "string" && value
      ? truncate(value, 200)
      : typeof value === "number"
        ? String(value)
        : undefined;
  const fields: ServerFields = {};
  const code = text(inner.code);
  const type = text(inner.type);
  const param = text(inner.param);
  if (code !== undefined) fields.code = code;
  if (type !== undefined) fields.type = type;
  if (param !== undefined) fields.param = param;
  return fields;
}

/**
 * Error codes or types by which servers say the input does not fit the context window: OpenAI's
 * `code`, llama.cpp's `type` (its `code` is the HTTP status).
 */
const CONTEXT_CODES = new Set(["context_length_exceeded", "exceed_context_size_error"]);
const CONTEXT_MESSAGE =
  /context[ _-]?(?:length|window|size)|maximum context|prompt is too long|input is too long|too many (?:input )?tokens/i;

function exceedsContext(fields: ServerFields, message: string | undefined): boolean {
  if (fields.code !== undefined && CONTEXT_CODES.has(fields.code)) return true;
  if (fields.type !== undefined && CONTEXT_CODES.has(fields.type)) return true;
  return message !== undefined && CONTEXT_MESSAGE.test(message);
}

function messageIn(parsed: unknown): string | undefined {
  if (typeof parsed === "string") return parsed || undefined;
  if (typeof parsed !== "object" || parsed === null) return undefined;
  const record = parsed as Record<string, unknown>;
  for (const key of ["error", "message", "detail", "error_description", "msg"]) {
    const value = record[key];
    if (typeof value === "string" && value) return value;
    if (typeof value === "object" && value !== null) {
      const nested = messageIn(value);
      if (nested) return nested;
      return JSON.stringify(value);
    }
  }
  return undefined;
}

/**
 * Whether a network error happened reaching the proxy rather than the server behind it: undici
 * tunnels through the proxy, so a failure to connect names the proxy's own host and port.
 */
function isProxyFailure(cause: Error, proxy: string): boolean {
  let url: URL;
  try {
    url = new URL(proxy);
  } catch {
    return false;
  }
  const { port, address, hostname } = cause as {
    port?: unknown;
    address?: unknown;
    hostname?: unknown;
  };
  const proxyPort = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  const proxyHost = url.hostname.replace(/^\[|\]$/g, "");
  if (typeof hostname === "string") return hostname === proxyHost;
  if (Number(port) !== proxyPort) return false;
  // A proxy named by host name: the port is all there is to compare with.
  if (typeof address !== "string" || isIP(proxyHost) === 0) return true;
  return address === proxyHost || isLoopbackPair(address, proxyHost);
}

function isLoopbackPair(address: string, host: string): boolean {
  const loopback = (name: string) =>
    name === "localhost" || name === "::1" || name.startsWith("127.");
  return loopback(address) && loopback(host);
}

function rootCause(error: Error): Error | undefined {
  let current: unknown = error.cause;
  let deepest: Error | undefined;
  for (let depth = 0; depth < 8 && current instanceof Error; depth += 1) {
    deepest = current;
    current = current.cause;
  }
  return deepest;
}

function sanitizeCause(cause: Error, secret: string): Error {
  const copy = new Error(redactSecret(cause.message, secret));
  copy.name = cause.name;
  const code = (cause as { code?: unknown }).code;
  if (typeof code === "string") Object.assign(copy, { code });
  return copy;
}

function truncate(text: string, limit = 500): string {
  return text.length > limit ? `${text.slice(0, limit)}...` : text;
}
