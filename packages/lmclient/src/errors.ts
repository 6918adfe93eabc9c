/** Codes of every error the upstream call can end in. Branch on `code` or on the class. */
export type LMErrorCode =
  | "LM_AUTH"
  | "LM_NOT_FOUND"
  | "LM_RATE_LIMIT"
  | "LM_BAD_REQUEST"
  | "LM_SERVER"
  | "LM_TIMEOUT"
  | "LM_CONNECTION"
  | "LM_BAD_RESPONSE"
  | "LM_TOO_LARGE"
  | "LM_WORKER";

/** What an `LMError` carries besides its message. */
export interface LMErrorDetails {
  /** HTTP status of the last response, when there was one. */
  status?: number;
  /** The server's own error message (from its JSON error body, or its text body). */
  serverMessage?: string;
  /** The server's `error.code` (e.g. `context_length_exceeded`), when its body had one. */
  serverCode?: string;
  /** The server's `error.type` (e.g. `invalid_request_error`), when its body had one. */
  serverType?: string;
  /** The server's `error.param` (the request field it objects to), when its body had one. */
  serverParam?: string;
  /** The server's `x-request-id` header, when it sent one. */
  requestId?: string;
  /** HTTP attempts made, retries included. */
  attempts?: number;
  /** The underlying failure (for connection errors: the network error). */
  cause?: unknown;
}

/**
 * Base class of every failure of the upstream call. Misuse of the API (a bad option, neither
 * prompt nor messages) is a `TypeError` instead.
 */
export class LMError extends Error {
  readonly code: LMErrorCode;
  readonly status: number | undefined;
  readonly serverMessage: string | undefined;
  readonly serverCode: string | undefined;
  readonly serverType: string | undefined;
  readonly serverParam: string | undefined;
  readonly requestId: string | undefined;
  readonly attempts: number | undefined;

  constructor(code: LMErrorCode, message: string, details: LMErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    // A literal, as are the subclasses' names: minifiers rename classes, so `new.target.name`
    // would not do.
    this.name = "LMError";
    this.code = code;
    this.status = details.status;
    this.serverMessage = details.serverMessage;
    this.serverCode = details.serverCode;
    this.serverType = details.serverType;
    this.serverParam = details.serverParam;
    this.requestId = details.requestId;
    this.attempts = details.attempts;
  }
}

/**
 * Gives the classes below their constructor, `(message, details?)`, with the code and name that
 * errors.ts lists for each class in `KIND_BY_CLASS`. Exported only because declaration files
 * need the classes' base; the package does not export it.
 */
export abstract class CodedLMError extends LMError {
  constructor(message: string, details?: LMErrorDetails) {
    const kind = kindOf(new.target);
    super(kind.code, message, details);
    this.name = kind.name;
  }
}

/** 401 or 403: the server rejected the API key. Not retried. */
export class AuthenticationError extends CodedLMError {}

/** 404: wrong base URL or unknown model. Not retried. */
export class NotFoundError extends CodedLMError {}

/** 429 after every retry was spent. */
export class RateLimitError extends CodedLMError {}

/** Any other 4xx (400, 409, 413, 422, ...): the server refused the request. Not retried (409 is). */
export class BadRequestError extends CodedLMError {}

/**
 * The prompt (with `max_tokens`) does not fit the model's context window: a 4xx whose body says
 * so (`error.code` `context_length_exceeded`, or a message about the context length). A
 * `BadRequestError` (same `code`, `LM_BAD_REQUEST`), as DSPy's error of the same name is an
 * `LMError`: shorten the input or lower `max_tokens`.
 */
export class ContextWindowExceededError extends BadRequestError {}

/** 5xx after every retry was spent. */
export class ServerError extends CodedLMError {}

/** No response within `timeout` (on the last attempt), or a 408 from the server. */
export class TimeoutError extends CodedLMError {}

/** The server could not be reached (refused, reset, DNS) after every retry was spent. */
export class ConnectionError extends CodedLMError {}

/** A 2xx response that is not a chat completion (not JSON, no `choices` array), or an odd status. */
export class ResponseError extends CodedLMError {}

/** A response body larger than `maxResponseBytes`. Not retried. */
export class ResponseTooLargeError extends CodedLMError {}

/**
 * The worker thread that makes every request (for `forward` and `aforward` alike) could not
 * start or stopped answering. Under Node's permission model, run with `--allow-worker`.
 */
export class WorkerError extends CodedLMError {}

interface ErrorKind {
  code: LMErrorCode;
  name: string;
}

/** Each class's `code` and `name`; the names are literals for the reason given in `LMError`. */
const KIND_BY_CLASS = new Map<unknown, ErrorKind>([
  [AuthenticationError, { code: "LM_AUTH", name: "AuthenticationError" }],
  [NotFoundError, { code: "LM_NOT_FOUND", name: "NotFoundError" }],
  [RateLimitError, { code: "LM_RATE_LIMIT", name: "RateLimitError" }],
  [BadRequestError, { code: "LM_BAD_REQUEST", name: "BadRequestError" }],
  [ContextWindowExceededError, { code: "LM_BAD_REQUEST", name: "ContextWindowExceededError" }],
  [ServerError, { code: "LM_SERVER", name: "ServerError" }],
  [TimeoutError, { code: "LM_TIMEOUT", name: "TimeoutError" }],
  [ConnectionError, { code: "LM_CONNECTION", name: "ConnectionError" }],
  [ResponseError, { code: "LM_BAD_RESPONSE", name: "ResponseError" }],
  [ResponseTooLargeError, { code: "LM_TOO_LARGE", name: "ResponseTooLargeError" }],
  [WorkerError, { code: "LM_WORKER", name: "WorkerError" }],
]);

/**
 * The kind of the nearest listed class `target` is or extends: an application's subclass of one
 * of these classes keeps that class's code and name.
 */
function kindOf(target: unknown): ErrorKind {
  for (let cls = target; typeof cls === "function"; cls = Object.getPrototypeOf(cls)) {
    const kind = KIND_BY_CLASS.get(cls);
    if (kind) return kind;
  }
  throw new TypeError("lmclient: an LMError class without an entry in KIND_BY_CLASS");
}

type LMErrorClass = new (message: string, details?: LMErrorDetails) => LMError;

const CLASS_BY_CODE: Record<LMErrorCode, LMErrorClass> = {
  LM_AUTH: AuthenticationError,
  LM_NOT_FOUND: NotFoundError,
  LM_RATE_LIMIT: RateLimitError,
  LM_BAD_REQUEST: BadRequestError,
  LM_SERVER: ServerError,
  LM_TIMEOUT: TimeoutError,
  LM_CONNECTION: ConnectionError,
  LM_BAD_RESPONSE: ResponseError,
  LM_TOO_LARGE: ResponseTooLargeError,
  LM_WORKER: WorkerError,
};

/** Builds the error class for `code`. */
export function createLMError(
  code: LMErrorCode,
  message: string,
  details?: LMErrorDetails,
): LMError {
  return new CLASS_BY_CODE[code](message, details);
}

/** True for an `LMError`, also across duplicated module copies (branching on `code`). */
export function isLMError(error: unknown): error is LMError {
  return (
    error instanceof LMError ||
    (error instanceof Error &&
      "code" in error &&
      typeof error.code === "string" &&
      error.code in CLASS_BY_CODE)
  );
}

/** An error as plain data, to cross the worker-thread boundary of the synchronous path. */
export interface ErrorPayload extends Omit<LMErrorDetails, "cause"> {
  name: string;
  message: string;
  code?: string;
  cause?: { name: string; message: string; code?: string };
}

/** Serializes an error thrown in the worker. */
export function toErrorPayload(error: unknown): ErrorPayload {
  if (!(error instanceof Error)) {
    return { name: "Error", message: String(error) };
  }
  const payload: ErrorPayload = { name: error.name, message: error.message };
  if (isLMError(error)) {
    payload.code = error.code;
    if (error.status !== undefined) payload.status = error.status;
    if (error.serverMessage !== undefined) payload.serverMessage = error.serverMessage;
    if (error.serverCode !== undefined) payload.serverCode = error.serverCode;
    if (error.serverType !== undefined) payload.serverType = error.serverType;
    if (error.serverParam !== undefined) payload.serverParam = error.serverParam;
    if (error.requestId !== undefined) payload.requestId = error.requestId;
    if (error.attempts !== undefined) payload.attempts = error.attempts;
  }
  if (error.cause instanceof Error) {
    const cause: ErrorPayload["cause"] = { name: error.cause.name, message: error.cause.message };
    const code = (error.cause as { code?: unknown }).code;
    if (typeof code === "string") cause.code = code;
    payload.cause = cause;
  }
  return payload;
}

/** Rebuilds an error serialized by `toErrorPayload`, with the caller's stack. */
export function fromErrorPayload(payload: ErrorPayload): Error {
  let cause: Error | undefined;
  if (payload.cause) {
    cause = Object.assign(new Error(payload.cause.message), { name: payload.cause.name });
    if (payload.cause.code !== undefined) Object.assign(cause, { code: payload.cause.code });
  }
  if (payload.code !== undefined && payload.code in CLASS_BY_CODE) {
    const details: LMErrorDetails = {
      status: payload.status,
      serverMessage: payload.serverMessage,
      serverCode: payload.serverCode,
      serverType: payload.serverType,
      serverParam: payload.serverParam,
      requestId: payload.requestId,
      attempts: payload.attempts,
      cause,
    };
    if (payload.name === "ContextWindowExceededError") {
      return new ContextWindowExceededError(payload.message, details);
    }
    return createLMError(payload.code as LMErrorCode, payload.message, details);
  }
  const error =
    payload.name === "TypeError" ? new TypeError(payload.message) : new Error(payload.message);
  if (payload.name !== error.name) error.name = payload.name;
  if (cause) Object.assign(error, { cause });
  return error;
}
