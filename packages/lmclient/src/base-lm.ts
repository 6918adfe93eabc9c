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

/** History entries kept per instance unless `historySize` says otherwise (DSPy's `max_history_size`). */
export const DEFAULT_HISTORY_SIZE = 10_000;

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
   * DSPy's `cache` flag (default `true`): calls read and fill the process-wide `responseCache`;
   * `false` sends every call. Never sent to the server.
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

/** One recorded `call` / `acall`, with DSPy's keys. */
export interface HistoryEntry {
  /** The prompt argument (`null` when none was passed). */
  prompt: string | null;
  /** The messages argument as sent (`null` for a prompt call, as in DSPy). */
  messages: ChatMessage[] | null;
  /** The call's own request arguments (not the constructor's), without secret-named keys. */
  kwargs: RequestKwargs;
  /** The server's response. */
  response: CompletionResponse;
  /** What `call` returned: the text of each choice, or objects (see `LMOutput`). */
  outputs: LMOutput[];
  /** `response.usage`, `{}` when the server sent none or the answer came from the cache. */
  usage: CompletionUsage;
  /** `usage.cost` when the server reports one (OpenRouter, LiteLLM's proxy), else `null`. */
  cost: number | null;
  /** ISO 8601 time the response arrived. */
  timestamp: string;
  uuid: string;
  /** The model the request named. */
  model: string;
  /** The model the server said answered, when it said. */
  response_model: string | null;
  model_type: ModelType;
  /** Alias of `response_model` (not enumerable). */
  readonly responseModel: string | null;
  /** Alias of `model_type` (not enumerable). */
  readonly modelType: ModelType;
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
  #cache = true;
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
    this.model = checkModel(model);
    this.modelType = checkModelType(pickAlias("modelType", modelType, "model_type", model_type));
    this.historySize = checkHistorySize(
      pickAlias("historySize", historySize, "history_size", history_size),
    );
    if (cache !== undefined && cache !== null && typeof cache !== "boolean") {
      throw new TypeError(`cache must be true or false, got ${String(cache as unknown)}.`);
    }
    this.#cache = cache ?? true;
    this.callbacks = [...checkCallbacks(callbacks)];
    this.kwargs = dropNullish(kwargs);
    guardFields(this, {
      model: checkModel,
      modelType: checkModelType,
      historySize: checkHistorySize,
      callbacks: checkCallbacks,
      kwargs: checkKwargs,
      history: checkHistory,
    });
  }

  /**
   * Whether calls read and fill the shared response cache (DSPy's flag; default `true`). Only
   * `true` or `false` can be assigned: the cache itself is `responseCache`.
   */
  get cache(): boolean {
    return this.#cache;
  }

  set cache(value: boolean) {
    if (typeof value !== "boolean") {
      throw new TypeError(
        `lm.cache must be true or false (whether calls use the shared cache), got ${describeValue(value)}; ` +
          "to empty the cache call responseCache.clear().",
      );
    }
    this.#cache = value;
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
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1) {
      throw new TypeError(
        `inspectHistory(n): n must be a positive integer (how many recent calls to show), got ${describeValue(n)}.`,
      );
    }
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
      if (key === "historySize") out.cache = this.#cache;
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
    const usage = (response.usage ?? {}) as CompletionUsage;
    const entry = {
      prompt: typeof prompt === "string" ? prompt : null,
      messages: recordedMessages(messages),
      kwargs: withoutSecrets({ ...kwargs }),
      response,
      outputs,
      usage,
      cost: typeof usage.cost === "number" ? usage.cost : null,
      timestamp: new Date().toISOString(),
      uuid: randomUUID(),
      model: this.model,
      response_model: typeof response.model === "string" ? response.model : null,
      model_type: this.modelType,
    };
    Object.defineProperties(entry, {
      responseModel: { get: () => entry.response_model },
      modelType: { get: () => entry.model_type },
    });
    this.history.push(entry as HistoryEntry);
    if (this.history.length > this.historySize) {
      this.history.splice(0, this.history.length - this.historySize);
    }
    return outputs;
  }
}

/** The messages argument of a call as sent, or `null` when none was passed (DSPy records it so). */
function recordedMessages(
  messages: readonly ChatMessage[] | null | undefined,
): ChatMessage[] | null {
  if (messages === undefined || messages === null) return null;
  if (Array.isArray(messages) && messages.length === 0) return [];
  try {
    return structuredClone(toMessages(null, messages));
  } catch {
    return null;
  }
}

/**
 * Turns each named field of `target` into an own, enumerable accessor whose assignments go
 * through its check (with `null` meaning the default, as in `copy`), so a wrong value fails
 * where it is assigned, naming the field, rather than at the next call or `copy()`.
 */
export function guardFields(
  target: object,
  checks: Record<string, (value: unknown) => unknown>,
): void {
  for (const [key, check] of Object.entries(checks)) {
    let current = (target as Record<string, unknown>)[key];
    Object.defineProperty(target, key, {
      enumerable: true,
      configurable: true,
      get: () => current,
      set: (value: unknown) => {
        try {
          current = check(value ?? undefined);
        } catch (error) {
          throw new TypeError(`Cannot set lm.${key}: ${(error as Error).message}`);
        }
      },
    });
  }
}

function checkModel(value: unknown): string {
  if (typeof value !== "string" || value === "") {
    throw new TypeError('model must be a non-empty string, e.g. { model: "llama3.2" }.');
  }
  return value;
}

function checkModelType(value: unknown): ModelType {
  const type = value ?? "chat";
  if (type !== "chat") {
    throw new TypeError(`modelType must be "chat", got ${JSON.stringify(type)}.`);
  }
  return type;
}

function checkHistorySize(value: unknown): number {
  if (value === undefined || value === null) return DEFAULT_HISTORY_SIZE;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    throw new TypeError(`historySize must be a non-negative integer, got ${String(value)}.`);
  }
  return value;
}

function checkCallbacks(value: unknown): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    throw new TypeError("callbacks must be an array of callback handlers.");
  }
  return value as unknown[];
}

function checkKwargs(value: unknown): RequestKwargs {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError(
      `kwargs must be an object of default request arguments, got ${describeValue(value)}.`,
    );
  }
  return value as RequestKwargs;
}

function checkHistory(value: unknown): HistoryEntry[] {
  if (!Array.isArray(value)) {
    throw new TypeError(
      `history must be an array of entries (lm.history = [] empties it), got ${describeValue(value)}.`,
    );
  }
  return value as HistoryEntry[];
}

function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "object") return `a ${value.constructor?.name ?? "object"}`;
  return `${typeof value} ${String(value)}`;
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
