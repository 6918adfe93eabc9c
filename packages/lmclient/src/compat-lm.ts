import { BaseLM, type BaseLMOptions, dropNullish, guardFields, pickAliases } from "./base-lm.js";
import { cacheKey, responseCache } from "./cache.js";
import { isReasoningModel, reasoningArguments } from "./reasoning-models.js";
import { toMessages } from "./messages.js";
import type { TransportRequest } from "./request.js";
import { sendChatCompletionAsync, sendChatCompletionSync } from "./worker-client.js";
import type { ChatMessage, CompletionResponse, RequestKwargs } from "./types.js";

/** Base URL used when none is given: a local server on this machine (Ollama's port). */
export const DEFAULT_BASE_URL = "http://localhost:11434/v1";
/** API key sent when none is given. Not a secret: local servers ignore it. */
export const DEFAULT_API_KEY = "lmclient-no-key";
/** Per-attempt timeout in milliseconds when none is given: 10 minutes, for slow local models. */
export const DEFAULT_TIMEOUT_MS = 600_000;
/** Retries of a 408/409/429/5xx response, a refused connection or a timeout, when not given. */
export const DEFAULT_MAX_RETRIES = 3;
/** Largest response body accepted when none is given: 64 MiB. */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/** Constructor options of `CompatLM`. Unknown keys are default request arguments. */
export interface CompatLMOptions extends BaseLMOptions {
  /**
   * Base URL of the API, e.g. `http://localhost:8000/v1`. A trailing slash is stripped. Also
   * `baseUrl`, `baseURL` (openai client) and `api_base` (LiteLLM, DSPy).
   */
  base_url?: string;
  baseUrl?: string;
  baseURL?: string;
  api_base?: string;
  /** Sent as `Authorization: Bearer <api_key>` (surrounding whitespace trimmed). */
  api_key?: string;
  apiKey?: string;
  /** Per-attempt timeout in milliseconds, headers and body (default 600000). */
  timeout?: number;
  /** Retries after the first attempt (default 3, DSPy's). Also `max_retries`, `num_retries`. */
  maxRetries?: number;
  max_retries?: number;
  num_retries?: number;
  /** Largest response body accepted, in bytes (default 64 MiB). Also `max_response_bytes`. */
  maxResponseBytes?: number;
  max_response_bytes?: number;
  /** An http(s) proxy for every request, on both paths. */
  proxy?: string;
}

/** Option names (canonical, as properties) and every spelling the constructor accepts. */
const OPTION_SPELLINGS: Record<string, string[]> = {
  baseUrl: ["base_url", "baseUrl", "baseURL", "api_base"],
  apiKey: ["api_key", "apiKey"],
  timeout: ["timeout"],
  maxRetries: ["maxRetries", "max_retries", "num_retries"],
  maxResponseBytes: ["maxResponseBytes", "max_response_bytes"],
  proxy: ["proxy"],
};

/**
 * Keys DSPy users pass with the request arguments that are options of the client, never body
 * fields (a strict server answers 422 "Unexpected fields"). `headers` are sent as HTTP headers;
 * `cache` and `rollout_id` steer the response cache (`rollout_id` is part of the key);
 * `callbacks` are kept, not invoked.
 */
const CLIENT_ONLY_KWARGS = new Set(["cache", "callbacks", "rollout_id", "headers"]);

/** Per-call keys that are not request arguments, with the hint for what to do instead. */
const RESERVED_KWARGS: Record<string, string> = {
  model: "use lm.copy({ model }) to call another model.",
  messages: "pass messages as the second argument.",
  ...Object.fromEntries(
    ["modelType", "model_type", "historySize", "history_size"].map((name) => [
      name,
      `it is an option, not a request argument; use lm.copy({ ${name} }) or pass it to the constructor.`,
    ]),
  ),
  ...Object.fromEntries(
    Object.values(OPTION_SPELLINGS)
      .flat()
      .map((name) => [
        name,
        `it is an option, not a request argument; use lm.copy({ ${name} }) or pass it to the constructor.`,
      ]),
  ),
};

/**
 * A language model behind any OpenAI-compatible `POST {base_url}/chat/completions` endpoint:
 * Ollama, vLLM, LM Studio, llama.cpp, hosted providers.
 */
export class CompatLM extends BaseLM {
  /** Base URL without a trailing slash (with its query string, if it has one). */
  readonly baseUrl: string;
  readonly timeout: number;
  readonly maxRetries: number;
  readonly maxResponseBytes: number;
  #apiKey: string;
  #proxy: string | undefined;
  #warnedMootRollout = false;

  constructor(options: CompatLMOptions) {
    if (typeof options !== "object" || options === null || Array.isArray(options)) {
      throw new TypeError('options must be an object, e.g. { model: "llama3.2" }.');
    }
    const rest: Record<string, unknown> = { ...options };
    const picked: Record<string, unknown> = {};
    for (const [name, spellings] of Object.entries(OPTION_SPELLINGS)) {
      picked[name] = pickAliases(rest, spellings);
      for (const spelling of spellings) delete rest[spelling];
    }
    super(rest as BaseLMOptions);
    this.baseUrl = checkBaseUrl(picked.baseUrl);
    this.#apiKey = checkApiKey(picked.apiKey);
    this.timeout = checkTimeout(picked.timeout);
    this.maxRetries = checkMaxRetries(picked.maxRetries);
    this.maxResponseBytes = checkMaxResponseBytes(picked.maxResponseBytes);
    this.#proxy = checkProxy(picked.proxy);
    guardFields(this, {
      baseUrl: checkBaseUrl,
      timeout: checkTimeout,
      maxRetries: checkMaxRetries,
      maxResponseBytes: checkMaxResponseBytes,
    });
    if (this.kwargs.headers !== undefined) checkHeaders(this.kwargs.headers, "headers");
    if (isReasoningModel(this.model)) {
      this.kwargs = dropNullish(reasoningArguments(this.model, {}, this.kwargs));
    }
    this.warnIfRolloutIsMoot({});
  }

  /**
   * See `BaseLM.copy`. For a reasoning model, a new `max_tokens` replaces the
   * `max_completion_tokens` it was turned into.
   */
  override copy(kwargs: Record<string, unknown> = {}): this {
    const model = typeof kwargs.model === "string" ? kwargs.model : this.model;
    if (
      isReasoningModel(model) &&
      kwargs.max_tokens !== undefined &&
      kwargs.max_completion_tokens === undefined
    ) {
      const { max_tokens: limit, ...rest } = kwargs;
      return super.copy({ ...rest, max_completion_tokens: limit });
    }
    return super.copy(kwargs);
  }

  /** The API key (kept out of enumerable properties, history and error messages). */
  get apiKey(): string {
    return this.#apiKey;
  }

  /** The proxy URL, if any (not enumerable: it may carry proxy credentials). */
  get proxy(): string | undefined {
    return this.#proxy;
  }

  /**
   * Sends the request and blocks until the response arrives; returns it (not a Promise).
   * The `openai` client runs in a worker thread meanwhile, with the same retries and errors as
   * `aforward`.
   */
  forward(
    prompt?: string | null,
    messages?: readonly ChatMessage[] | null,
    kwargs: RequestKwargs = {},
  ): CompletionResponse {
    const request = this.buildRequest(prompt, messages, kwargs);
    this.warnIfRolloutIsMoot(kwargs);
    const key = this.cacheKeyOf(request.bodyJson, kwargs);
    const cached = key === undefined ? undefined : responseCache.get(key);
    if (cached !== undefined) return cached;
    const response = sendChatCompletionSync(request);
    if (key !== undefined) responseCache.put(key, response);
    return response;
  }

  /** Sends the request; resolves to the response. */
  async aforward(
    prompt?: string | null,
    messages?: readonly ChatMessage[] | null,
    kwargs: RequestKwargs = {},
  ): Promise<CompletionResponse> {
    const request = this.buildRequest(prompt, messages, kwargs);
    this.warnIfRolloutIsMoot(kwargs);
    const key = this.cacheKeyOf(request.bodyJson, kwargs);
    const cached = key === undefined ? undefined : responseCache.get(key);
    if (cached !== undefined) return cached;
    const response = await sendChatCompletionAsync(request);
    if (key !== undefined) responseCache.put(key, response);
    return response;
  }

  /**
   * DSPy's rule: a `rollout_id` with temperature 0 asks the model for the same answer again, so
   * it warns (once per instance, a copy included) through `process.emitWarning`.
   */
  private warnIfRolloutIsMoot(kwargs: RequestKwargs): void {
    if (this.#warnedMootRollout) return;
    const merged = dropNullish({ ...this.kwargs, ...kwargs });
    if (merged.rollout_id === undefined || merged.temperature !== 0) return;
    this.#warnedMootRollout = true;
    process.emitWarning(
      "rollout_id has no effect when temperature=0 (the model gives the same answer, so a new " +
        "rollout_id only buys another request); set temperature>0 for different rollouts.",
      { type: "LMClientWarning", code: "LMCLIENT_ROLLOUT_AT_ZERO_TEMPERATURE" },
    );
  }

  /**
   * The key of a call in the shared response cache, or `undefined` when the call skips the cache
   * (`cache: false` for the call, or for the instance and not turned on for the call).
   */
  private cacheKeyOf(bodyJson: string, kwargs: RequestKwargs): string | undefined {
    const perCall = kwargs.cache ?? undefined;
    if (perCall !== undefined && typeof perCall !== "boolean") {
      throw new TypeError(`kwargs.cache must be true or false, got ${String(perCall)}.`);
    }
    if (!(perCall ?? this.cache)) return undefined;
    const rolloutId = kwargs.rollout_id ?? this.kwargs.rollout_id;
    try {
      return cacheKey(bodyJson, rolloutId);
    } catch (error) {
      throw new TypeError(
        `rollout_id must be JSON-serializable (an integer, as in DSPy): ${(error as Error).message}.`,
      );
    }
  }

  /**
   * The request body a call would send: `model`, `messages`, then the default request
   * arguments overridden by `kwargs`, without `null` / `undefined` values.
   */
  requestBody(
    prompt?: string | null,
    messages?: readonly ChatMessage[] | null,
    kwargs: RequestKwargs = {},
  ): Record<string, unknown> {
    return JSON.parse(this.requestBodyJson(prompt, messages, kwargs)) as Record<string, unknown>;
  }

  /** `requestBody` as the JSON text both paths hand to the worker thread. */
  private requestBodyJson(
    prompt: string | null | undefined,
    messages: readonly ChatMessage[] | null | undefined,
    kwargs: RequestKwargs,
  ): string {
    if (typeof kwargs !== "object" || kwargs === null || Array.isArray(kwargs)) {
      throw new TypeError("kwargs must be an object of request arguments.");
    }
    for (const [key, hint] of Object.entries(RESERVED_KWARGS)) {
      if (key in kwargs && kwargs[key] !== undefined && kwargs[key] !== null) {
        throw new TypeError(`"${key}" cannot be a request argument: ${hint}`);
      }
    }
    const merged = dropNullish(
      isReasoningModel(this.model)
        ? reasoningArguments(this.model, this.kwargs, kwargs)
        : { ...this.kwargs, ...kwargs },
    );
    for (const key of CLIENT_ONLY_KWARGS) delete merged[key];
    if (merged.stream !== undefined && merged.stream !== false) {
      throw new TypeError(
        "stream is not supported: forward and aforward return one complete response.",
      );
    }
    const body = { model: this.model, messages: toMessages(prompt, messages), ...merged };
    // The bytes the server gets: toJSON applied, functions and undefined dropped. Both paths
    // send this text to the worker thread (cheaper to copy across than the object).
    try {
      return JSON.stringify(body);
    } catch (error) {
      throw new TypeError(
        `request arguments must be JSON-serializable: ${(error as Error).message}.`,
      );
    }
  }

  protected override currentOptions(): Record<string, unknown> {
    return {
      ...super.currentOptions(),
      baseUrl: this.baseUrl,
      apiKey: this.#apiKey,
      timeout: this.timeout,
      maxRetries: this.maxRetries,
      maxResponseBytes: this.maxResponseBytes,
      proxy: this.#proxy,
    };
  }

  protected override optionAliases(): Record<string, string> {
    const aliases: Record<string, string> = { ...super.optionAliases() };
    for (const [name, spellings] of Object.entries(OPTION_SPELLINGS)) {
      for (const spelling of spellings) aliases[spelling] = name;
    }
    return aliases;
  }

  /**
   * The extra HTTP headers of a call: the call's `headers` when it gives some, else the
   * constructor's (the call's replace them whole, as DSPy merges its kwargs).
   */
  requestHeaders(kwargs: RequestKwargs = {}): Record<string, string> {
    const perCall = typeof kwargs === "object" && kwargs !== null ? kwargs.headers : undefined;
    if (perCall !== undefined && perCall !== null) return checkHeaders(perCall, "kwargs.headers");
    const defaults = this.kwargs.headers;
    return defaults === undefined || defaults === null ? {} : checkHeaders(defaults, "headers");
  }

  private buildRequest(
    prompt: string | null | undefined,
    messages: readonly ChatMessage[] | null | undefined,
    kwargs: RequestKwargs,
  ): TransportRequest {
    const bodyJson = this.requestBodyJson(prompt, messages, kwargs);
    // The query string goes to the server as written (not re-encoded through URLSearchParams,
    // which would turn `?a=1&a=2` into `?a=2` and `?flag` into `?flag=`).
    const queryStart = this.baseUrl.indexOf("?");
    return {
      baseUrl: queryStart < 0 ? this.baseUrl : this.baseUrl.slice(0, queryStart),
      search: queryStart < 0 ? "" : this.baseUrl.slice(queryStart),
      headers: this.requestHeaders(kwargs),
      apiKey: this.#apiKey,
      timeout: this.timeout,
      maxRetries: this.maxRetries,
      maxResponseBytes: this.maxResponseBytes,
      proxy: this.#proxy,
      bodyJson,
    };
  }
}

function checkBaseUrl(value: unknown): string {
  if (value === undefined) return DEFAULT_BASE_URL;
  if (typeof value !== "string") {
    throw new TypeError(`base_url must be a string, got ${typeof value}.`);
  }
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new TypeError(
      `base_url must be an absolute http(s) URL such as ${DEFAULT_BASE_URL}, got ${JSON.stringify(value)}.`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`base_url must use http or https, got ${JSON.stringify(url.protocol)}.`);
  }
  if (url.username || url.password) {
    // Never echoed: the value holds a credential.
    throw new TypeError(
      "base_url must not contain credentials (user:password@): pass the key as api_key " +
        "(sent as a Bearer token) instead.",
    );
  }
  if (url.hash) {
    throw new TypeError(`base_url must not contain a #fragment, got ${JSON.stringify(value)}.`);
  }
  // A trailing slash on the path is stripped; a query string (`?api-version=...`) is kept and
  // sent after /chat/completions.
  const search = url.search;
  url.search = "";
  const path = url.toString().replace(/\/+$/, "");
  return `${path}${search}`;
}

/** HTTP header names: RFC 9110 tokens. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Headers that frame the request on the connection. The HTTP client sets them from the body and
 * URL; a caller's value would contradict them (a wrong length hangs or truncates the request).
 */
const FRAMING_HEADERS = new Set([
  "content-length",
  "host",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "proxy-connection",
  "upgrade",
  "te",
  "trailer",
  "expect",
]);

/** Checks extra HTTP headers: an object of string values that HTTP can carry. */
function checkHeaders(value: unknown, label: string): Record<string, string> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError(
      `${label} must be an object of HTTP header names and string values, e.g. ` +
        '{ "X-Trace-Id": "run-7" }.',
    );
  }
  const headers: Record<string, string> = {};
  for (const [name, raw] of Object.entries(value as Record<string, unknown>)) {
    if (raw === undefined || raw === null) continue;
    if (!HEADER_NAME.test(name)) {
      throw new TypeError(`${label}: ${JSON.stringify(name)} is not a valid HTTP header name.`);
    }
    if (FRAMING_HEADERS.has(name.toLowerCase())) {
      throw new TypeError(
        `${label}["${name}"] cannot be set: the HTTP client sets it from the request's body ` +
          "and URL. Remove it from the headers.",
      );
    }
    if (typeof raw !== "string" && typeof raw !== "number" && typeof raw !== "boolean") {
      throw new TypeError(`${label}["${name}"] must be a string, got ${typeof raw}.`);
    }
    const text = String(raw);
    // Not echoed: a header may hold a credential.
    if (/[\r\n\0]/.test(text)) {
      throw new TypeError(`${label}["${name}"] must be one line: it contains a line break.`);
    }
    if (/[^\u0000-\u00ff]/.test(text)) {
      throw new TypeError(
        `${label}["${name}"] contains a character above U+00FF, which HTTP headers cannot ` +
          "carry; encode it (for example with encodeURIComponent) first.",
      );
    }
    headers[name] = text;
  }
  return headers;
}

function checkApiKey(value: unknown): string {
  const key = typeof value === "string" ? value.trim() : value;
  if (key === undefined) return DEFAULT_API_KEY;
  if (typeof key !== "string" || key === "") {
    throw new TypeError("api_key must be a non-empty string.");
  }
  if (/[\r\n]/.test(key)) {
    throw new TypeError("api_key must be one line: it contains a line break.");
  }
  // Sent in the Authorization header, which carries bytes (Latin-1) only. Not echoed.
  const wide = [...key].findIndex((char) => (char.codePointAt(0) ?? 0) > 0xff);
  if (wide >= 0) {
    throw new TypeError(
      `api_key contains a character above U+00FF (at position ${wide + 1}), which an HTTP ` +
        "header cannot carry: check that the key was copied correctly (a typographic quote " +
        "or dash, a zero-width space).",
    );
  }
  return key;
}

function checkMaxResponseBytes(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_RESPONSE_BYTES;
  if (typeof value !== "number" || !Number.isInteger(value) || value <= 0) {
    throw new TypeError(`maxResponseBytes must be a positive integer, got ${String(value)}.`);
  }
  return value;
}

function checkProxy(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = typeof value === "string" ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new TypeError("proxy must be an http(s) URL such as http://127.0.0.1:3128.");
  }
  return value as string;
}

function checkTimeout(value: unknown): number {
  if (value === undefined) return DEFAULT_TIMEOUT_MS;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(`timeout must be a positive number of milliseconds, got ${String(value)}.`);
  }
  return Math.ceil(value);
}

function checkMaxRetries(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_RETRIES;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    throw new TypeError(`maxRetries must be a non-negative integer, got ${String(value)}.`);
  }
  return value;
}
