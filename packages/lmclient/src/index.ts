export { BaseLM, DEFAULT_HISTORY_SIZE } from "./base-lm.js";
export type { BaseLMOptions, HistoryEntry } from "./base-lm.js";
export {
  configureCache,
  DEFAULT_CACHE_MAX_ENTRIES,
  ResponseCache,
  responseCache,
} from "./cache.js";
export type { CacheOptions } from "./cache.js";
export {
  CompatLM,
  DEFAULT_API_KEY,
  DEFAULT_BASE_URL,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_MAX_RETRIES,
  DEFAULT_TIMEOUT_MS,
} from "./compat-lm.js";
export type { CompatLMOptions } from "./compat-lm.js";
export type { LMOutput, LMOutputObject } from "./messages.js";
export {
  AuthenticationError,
  BadRequestError,
  ConnectionError,
  ContextWindowExceededError,
  isLMError,
  LMError,
  NotFoundError,
  RateLimitError,
  ResponseError,
  ResponseTooLargeError,
  ServerError,
  TimeoutError,
  WorkerError,
} from "./errors.js";
export type { LMErrorCode, LMErrorDetails } from "./errors.js";
export type {
  ChatMessage,
  CompletionChoice,
  CompletionMessage,
  CompletionResponse,
  CompletionUsage,
  ContentPart,
  ModelType,
  RequestKwargs,
  ToolCall,
} from "./types.js";
