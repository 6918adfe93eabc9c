import { randomUUID } from "node:crypto";
import { formatHistory } from "./format-history.js";
import { type LMOutput, outputsOf, toMessages } from "./messages.js";
import { isSecretKey, withoutSecrets } from "./redact.js";
import type {
  ChatMessage,
  CompletionResponse,
  CompletionUsage,
  ModelType,
  RequestKwargs,
} from "./types.js";

/** Fields every instance has; `copy` rebuilds them rather than copying them. */
const BASE_FIELDS = new Set([
  "model",
  "modelType",
  "historySize",
  "cache",
  "callbacks",
  "kwargs",
  "history",
]);

/** History entries kept per instance unless `historySize` says otherwise. */
export const DEFAULT_HISTORY_SIZE = 1000;

/** Options every `BaseLM` takes. Keys that are not options are default request arguments. */
export interface BaseLMOptions {
  /** Model name sent in every request. */
  model: string;
  /** Only `"chat"`. Also accepted as `model_type`. */
  modelType?: ModelType;
  model_type?: ModelType;
  /** Most history entries kept (oldest dropped first); `0` records nothing. Also `history_size`. */
  historySize?: number;
  history_size?: number;
  /**
   * DSPy's `cache` flag, kept as `lm.cache` for code that reads it (default `true`). lmclient has
   * no response cache, so it changes nothing; never sent to the server.
   */
  cache?: boolean;
  /**
   * DSPy's callback handlers, kept as `lm.callbacks` (a copy of the list) for code that reads
   * them; lmclient does not invoke them. Never sent to the server.
   */
  callbacks?: readonly unknown[];
  /** Anything else: default request arguments (`temperature`, `max_tokens`, ...). */
  [key: string]: unknown;
}

/** One recorded `call` / `acall`. */
export interface HistoryEntry {
  /** The prompt string, or `null` when a messages list was passed. */
  prompt: string | null;
  /** The messages actually sent (a prompt appears as one user message). */
  messages: ChatMessage[] | null;
  /** Request arguments of the call (defaults merged with per-call ones), without secrets. */
  kwargs: RequestKwargs;
  /** The server's response. */
  response: CompletionResponse;
  /** What `call` returned: the text of each choice, or objects (see `LMOutput`). */
  outputs: LMOutput[];
  usage: CompletionUsage | null;
  /** ISO 8601 time the response arrived. */
  timestamp: string;
  uuid: string;
  /** The model the request named. */
  model: string;
  /** The model the server said answered, when it said. */
  responseModel: string | null;
  modelType: ModelType;
}

/**
 * Base class of language-model clients, modelled on DSPy's `BaseLM`: a model name, default
 * request arguments, `forward` / `aforward` to implement, `call` / `acall` that record history,
 * `inspectHistory` and `copy`.
 */
export abstract class BaseLM {
  readonly model: string;
  readonly modelType: ModelType;
  readonly historySize: number;
  /** DSPy's `cache` flag (see `BaseLMOptions.cache`). */
  cache: boolean;
  /** DSPy's callback handlers (see `BaseLMOptions.callbacks`); `copy` gives the copy its own list. */
  callbacks: unknown[];
  /** Default request arguments, sent with every call (per-call arguments win). */
  kwargs: RequestKwargs;
  /** One entry per `call` / `acall`, oldest first, at most `historySize` long. */
  history: HistoryEntry[] = [];

  constructor(options: BaseLMOptions) {
    if (typeof options !== "object" || options === null || Array.isArray(options)) {
      throw new TypeError('options must be an object, e.g. { model: "llama3.2" }.');
    }
    const { model, modelType, model_type, historySize, history_size, cache, callbacks, ...kwargs } =
      options;
    if (typeof model !== "string" || model === "") {
      throw new TypeError('model must be a non-empty string, e.g. { model: "llama3.2" }.');
    }
    const type = pickAlias("modelType", modelType, "model_type", model_type) ?? "chat";
    if (type !== "chat") {
      throw new TypeError(`modelType must be "chat", got ${JSON.stringify(type)}.`);
    }
    const size = pickAlias("historySize", historySize, "history_size", history_size);
    if (size !== undefined && (typeof size !== "number" || !Number.isInteger(size) || size < 0)) {
      throw new TypeError(`historySize must be a non-negative integer, got ${String(size)}.`);
    }
    if (cache !== undefined && cache !== null && typeof cache !== "boolean") {
      throw new TypeError(`cache must be true or false, got ${String(cache as unknown)}.`);
    }
    if (callbacks !== undefined && callbacks !== null && !Array.isArray(callbacks)) {
      throw new TypeError("callbacks must be an array of callback handlers.");
    }
    this.model = model;
    this.modelType = type;
    this.historySize = size ?? DEFAULT_HISTORY_SIZE;
    this.cache = cache ?? true;
    this.callbacks = [...(callbacks ?? [])];
    this.kwargs = dropNullish(kwargs);
  }

  /** Sends one request and returns the server's response, synchronously. */
  abstract forward(
    prompt?: string | null,
    messages?: readonly ChatMessage[] | null,
    kwargs?: RequestKwargs,
  ): CompletionResponse;

  /** Asynchronous twin of `forward`. */
  abstract aforward(
    prompt?: string | null,
    messages?: readonly ChatMessage[] | null,
    kwargs?: RequestKwargs,
  ): Promise<CompletionResponse>;

  /**
   * Runs `forward`, records the call in `history`, and returns the outputs (as DSPy): the text
   * of each choice (`null` when the server sent `content: null`), or, when a choice carries
   * tool calls, requested logprobs or reasoning content, an object per choice.
   */
  call(
    prompt?: string | null,
    messages?: readonly ChatMessage[] | null,
    kwargs: RequestKwargs = {},
  ): LMOutput[] {
    const response = this.forward(prompt, messages, kwargs);
    return this.recordCall(prompt, messages, kwargs, response);
  }

  /** Runs `aforward`, records the call in `history`, and returns what `call` would. */
  async acall(
    prompt?: string | null,
    messages?: readonly ChatMessage[] | null,
    kwargs: RequestKwargs = {},
  ): Promise<LMOutput[]> {
    const response = await this.aforward(prompt, messages, kwargs);
    return this.recordCall(prompt, messages, kwargs, response);
  }

  /** Prints the last `n` recorded calls readably (to stdout) and returns the same text. */
  inspectHistory(n = 1): string {
    const text = formatHistory(this.history, n);
    console.log(text);
    return text;
  }

  /**
   * A new instance of the same class with an empty history. A key naming an option
   * (`model`, `base_url`, `timeout`, ...) sets that option; any other key sets a default request
   * argument. `null` or `undefined` removes the key (an option goes back to its default).
   *
   * Like DSPy's, the copy is shallow: attributes set on the instance after construction (a
   * client, a tracker, a dict) and the callbacks are the same objects, methods intact, in a new
   * `callbacks` list. `kwargs` is a new object whose arrays and plain objects are copied too
   * (`copy.kwargs.stop.push(...)` leaves the original alone); other values in it are shared.
   */
  copy(kwargs: Record<string, unknown> = {}): this {
    const aliases = this.optionAliases();
    const current = this.currentOptions();
    const options: Record<string, unknown> = { ...copyPlainData(this.kwargs), ...current };
    // Attributes set on the instance after construction (DSPy copies the whole object).
    const extra = Object.keys(this).filter(
      (key) => !BASE_FIELDS.has(key) && !(key in current) && !(key in aliases),
    );
    const attributes: Record<string, unknown> = {};
    for (const key of extra) attributes[key] = (this as Record<string, unknown>)[key];
    for (const [key, value] of Object.entries(kwargs)) {
      const name = aliases[key] ?? key;
      if (extra.includes(name) && !(name in this.kwargs)) {
        if (value === undefined || value === null) delete attributes[name];
        else attributes[name] = value;
      } else if (value === undefined || value === null) delete options[name];
      else options[name] = value;
    }
    const Class = this.constructor as new (options: Record<string, unknown>) => this;
    const copy = new Class(options);
    for (const [key, value] of Object.entries(attributes)) {
      if (Object.hasOwn(copy, key) && key !== "history") continue;
      (copy as Record<string, unknown>)[key] = value;
    }
    return copy;
  }

  /**
   * What `JSON.stringify(lm)` shows: the public fields, with secret-named request arguments
   * (`api_*`, `apiKey`, `authorization`, ...) left out. The API key is never a field.
   */
  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(this)) {
      if (!isSecretKey(key)) out[key] = key === "kwargs" ? withoutSecrets(value) : value;
    }
    return out;
  }

  /** What `console.log(lm)` / `util.inspect(lm)` show: the same as `toJSON`. */
  [Symbol.for("nodejs.util.inspect.custom")](
    _depth: number,
    options: object,
    inspect: (value: unknown, options: object) => string,
  ): string {
    return `${this.constructor.name} ${inspect(this.toJSON(), options)}`;
  }

  /**
   * The options (not request arguments) this instance was built with, under their canonical
   * names. Subclasses with options of their own extend it, and `optionAliases`.
   */
  protected currentOptions(): Record<string, unknown> {
    return {
      model: this.model,
      modelType: this.modelType,
      historySize: this.historySize,
      cache: this.cache,
      callbacks: this.callbacks,
    };
  }

  /** Alternative spellings of option names, mapped to the canonical name. */
  protected optionAliases(): Record<string, string> {
    return { model_type: "modelType", history_size: "historySize" };
  }

  /** Appends a history entry for one call and returns its outputs. */
  protected recordCall(
    prompt: string | null | undefined,
    messages: readonly ChatMessage[] | null | undefined,
    kwargs: RequestKwargs,
    response: CompletionResponse,
  ): LMOutput[] {
    const merged = dropNullish({ ...this.kwargs, ...kwargs });
    const outputs = outputsOf(response, Boolean(merged.logprobs));
    if (this.historySize === 0) return outputs;
    let sent: ChatMessage[] | null;
    try {
      sent = structuredClone(toMessages(prompt, messages));
    } catch {
      sent = null;
    }
    this.history.push({
      prompt: typeof prompt === "string" ? prompt : null,
      messages: sent,
      kwargs: withoutSecrets(merged),
      response,
      outputs,
      usage: response.usage ?? null,
      timestamp: new Date().toISOString(),
      uuid: randomUUID(),
      model: this.model,
      responseModel: typeof response.model === "string" ? response.model : null,
      modelType: this.modelType,
    });
    if (this.history.length > this.historySize) {
      this.history.splice(0, this.history.length - this.historySize);
    }
    return outputs;
  }
}

/** `value` with its arrays and plain objects copied, at any depth; anything else shared. */
function copyPlainData<T>(value: T, seen = new Map<object, unknown>()): T {
  if (typeof value !== "object" || value === null) return value;
  const proto = Object.getPrototypeOf(value) as unknown;
  const plain = Array.isArray(value) || proto === Object.prototype || proto === null;
  if (!plain) return value;
  // A cycle is copied as a cycle (it stays unsendable, which requestBody reports).
  if (seen.has(value)) return seen.get(value) as T;
  const out: Record<string, unknown> | unknown[] = Array.isArray(value) ? [] : {};
  seen.set(value, out);
  for (const [key, item] of Object.entries(value)) {
    (out as Record<string, unknown>)[key] = copyPlainData(item, seen);
  }
  return out as T;
}

/** A copy of `record` without the keys whose value is `null` or `undefined`. */
export function dropNullish(record: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) {
    if (value !== undefined && value !== null) out[key] = value;
  }
  return out;
}

/**
 * The value of an option with several spellings in `record`; two given with different values
 * is an error.
 */
export function pickAliases(record: Record<string, unknown>, spellings: string[]): unknown {
  let found: { name: string; value: unknown } | undefined;
  for (const name of spellings) {
    const value = record[name] ?? undefined;
    if (value === undefined) continue;
    if (found && found.value !== value) {
      throw new TypeError(`pass ${found.name} or ${name}, not both (they differ).`);
    }
    found ??= { name, value };
  }
  return found?.value;
}

/** The value of an option that has two spellings; both given and different is an error. */
export function pickAlias<T>(name: string, value: T, alias: string, aliasValue: T): T | undefined {
  const a = value ?? undefined;
  const b = aliasValue ?? undefined;
  if (a !== undefined && b !== undefined && a !== b) {
    throw new TypeError(`pass ${name} or ${alias}, not both (they differ).`);
  }
  return a ?? b;
}
