import { BaseLM, type BaseLMOptions, dropNullish, pickAlias } from "./base-lm.js";
import { toMessages } from "./messages.js";
import { sendChatCompletionSync } from "./sync-transport.js";
import { sendChatCompletion, type TransportRequest } from "./transport.js";
import type { ChatMessage, CompletionResponse, RequestKwargs } from "./types.js";

/** Base URL used when none is given: a local server on this machine (Ollama's port). */
export const DEFAULT_BASE_URL = "http://localhost:11434/v1";
/** API key sent when none is given. Not a secret: local servers ignore it. */
export const DEFAULT_API_KEY = "lmclient-no-key";
/** Per-attempt timeout in milliseconds when none is given: 10 minutes, for slow local models. */
export const DEFAULT_TIMEOUT_MS = 600_000;
/** Retries of a 408/409/429/5xx response, a refused connection or a timeout, when not given. */
export const DEFAULT_MAX_RETRIES = 2;

/** Constructor options of `CompatLM`. Unknown keys are default request arguments. */
export interface CompatLMOptions extends BaseLMOptions {
  /** Base URL of the API, e.g. `http://localhost:8000/v1`. A trailing slash is stripped. */
  base_url?: string;
  baseUrl?: string;
  /** Sent as `Authorization: Bearer <api_key>`. */
  api_key?: string;
  apiKey?: string;
  /** Per-attempt timeout in milliseconds (default 600000). */
  timeout?: number;
  /** Retries after the first attempt (default 2). Also `max_retries`. */
  maxRetries?: number;
  max_retries?: number;
}

/** Per-call keys that are not request arguments, with the hint for what to do instead. */
const RESERVED_KWARGS: Record<string, string> = {
  model: "use lm.copy({ model }) to call another model.",
  messages: "pass messages as the second argument.",
  ...Object.fromEntries(
    ["base_url", "baseUrl", "api_key", "apiKey", "timeout", "maxRetries", "max_retries"].map(
      (name) => [name, `it is an option, not a request argument; use lm.copy({ ${name} }).`],
    ),
  ),
};

/**
 * A language model behind any OpenAI-compatible `POST {base_url}/chat/completions` endpoint:
 * Ollama, vLLM, LM Studio, llama.cpp, hosted providers.
 */
export class CompatLM extends BaseLM {
  /** Base URL without a trailing slash. */
  readonly baseUrl: string;
  readonly timeout: number;
  readonly maxRetries: number;
  #apiKey: string;

  constructor(options: CompatLMOptions) {
    if (typeof options !== "object" || options === null || Array.isArray(options)) {
      throw new TypeError('options must be an object, e.g. { model: "llama3.2" }.');
    }
    const { base_url, baseUrl, api_key, apiKey, timeout, maxRetries, max_retries, ...rest } =
      options;
    super(rest as BaseLMOptions);
    this.baseUrl = checkBaseUrl(pickAlias("base_url", base_url, "baseUrl", baseUrl));
    this.#apiKey = checkApiKey(pickAlias("api_key", api_key, "apiKey", apiKey));
    this.timeout = checkTimeout(timeout ?? undefined);
    this.maxRetries = checkMaxRetries(
      pickAlias("maxRetries", maxRetries, "max_retries", max_retries),
    );
  }

  /** The API key (kept out of enumerable properties, history and error messages). */
  get apiKey(): string {
    return this.#apiKey;
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
    return sendChatCompletionSync(this.buildRequest(prompt, messages, kwargs));
  }

  /** Sends the request; resolves to the response. */
  async aforward(
    prompt?: string | null,
    messages?: readonly ChatMessage[] | null,
    kwargs: RequestKwargs = {},
  ): Promise<CompletionResponse> {
    return sendChatCompletion(this.buildRequest(prompt, messages, kwargs));
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
    if (typeof kwargs !== "object" || kwargs === null || Array.isArray(kwargs)) {
      throw new TypeError("kwargs must be an object of request arguments.");
    }
    for (const [key, hint] of Object.entries(RESERVED_KWARGS)) {
      if (key in kwargs && kwargs[key] !== undefined && kwargs[key] !== null) {
        throw new TypeError(`"${key}" cannot be a request argument: ${hint}`);
      }
    }
    const merged = dropNullish({ ...this.kwargs, ...kwargs });
    if (merged.stream !== undefined && merged.stream !== false) {
      throw new TypeError(
        "stream is not supported: forward and aforward return one complete response.",
      );
    }
    return { model: this.model, messages: toMessages(prompt, messages), ...merged };
  }

  protected override currentOptions(): Record<string, unknown> {
    return {
      ...super.currentOptions(),
      baseUrl: this.baseUrl,
      apiKey: this.#apiKey,
      timeout: this.timeout,
      maxRetries: this.maxRetries,
    };
  }

  protected override optionAliases(): Record<string, string> {
    return {
      ...super.optionAliases(),
      base_url: "baseUrl",
      api_key: "apiKey",
      max_retries: "maxRetries",
    };
  }

  private buildRequest(
    prompt: string | null | undefined,
    messages: readonly ChatMessage[] | null | undefined,
    kwargs: RequestKwargs,
  ): TransportRequest {
    return {
      baseUrl: this.baseUrl,
      apiKey: this.#apiKey,
      timeout: this.timeout,
      maxRetries: this.maxRetries,
      body: this.requestBody(prompt, messages, kwargs),
    };
  }
}

function checkBaseUrl(value: unknown): string {
  if (value === undefined) return DEFAULT_BASE_URL;
  if (typeof value !== "string") {
    throw new TypeError(`base_url must be a string, got ${typeof value}.`);
  }
  const trimmed = value.trim().replace(/\/+$/, "");
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    throw new TypeError(
      `base_url must be an absolute http(s) URL such as ${DEFAULT_BASE_URL}, got ${JSON.stringify(value)}.`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`base_url must use http or https, got ${JSON.stringify(url.protocol)}.`);
  }
  return trimmed;
}

function checkApiKey(value: unknown): string {
  if (value === undefined) return DEFAULT_API_KEY;
  if (typeof value !== "string" || value === "") {
    throw new TypeError("api_key must be a non-empty string.");
  }
  return value;
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
