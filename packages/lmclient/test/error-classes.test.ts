import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  AuthenticationError,
  BadRequestError,
  ConnectionError,
  ContextWindowExceededError,
  isLMError,
  LMError,
  type LMErrorCode,
  type LMErrorDetails,
  NotFoundError,
  RateLimitError,
  ResponseError,
  ResponseTooLargeError,
  ServerError,
  TimeoutError,
  WorkerError,
} from "lmclient";
import { createLMError, fromErrorPayload, toErrorPayload } from "../src/errors.js";

type ErrorClass = new (message: string, details?: LMErrorDetails) => LMError;

/** Each class with the name and code it must carry, and the class it extends. */
const CLASSES: [ErrorClass, string, LMErrorCode, ErrorClass | typeof LMError][] = [
  [AuthenticationError, "AuthenticationError", "LM_AUTH", LMError],
  [NotFoundError, "NotFoundError", "LM_NOT_FOUND", LMError],
  [RateLimitError, "RateLimitError", "LM_RATE_LIMIT", LMError],
  [BadRequestError, "BadRequestError", "LM_BAD_REQUEST", LMError],
  [ContextWindowExceededError, "ContextWindowExceededError", "LM_BAD_REQUEST", BadRequestError],
  [ServerError, "ServerError", "LM_SERVER", LMError],
  [TimeoutError, "TimeoutError", "LM_TIMEOUT", LMError],
  [ConnectionError, "ConnectionError", "LM_CONNECTION", LMError],
  [ResponseError, "ResponseError", "LM_BAD_RESPONSE", LMError],
  [ResponseTooLargeError, "ResponseTooLargeError", "LM_TOO_LARGE", LMError],
  [WorkerError, "WorkerError", "LM_WORKER", LMError],
];

const DETAILS: LMErrorDetails = {
  status: 400,
  serverMessage: "said",
  serverCode: "some_code",
  serverType: "some_type",
  serverParam: "messages",
  requestId: "req-1",
  attempts: 2,
};

describe("error classes", () => {
  for (const [ErrorClass, name, code, Parent] of CLASSES) {
    it(`${name}: its name, code, details and instanceof chain`, () => {
      const cause = new Error("underneath");
      const error = new ErrorClass("went wrong", { ...DETAILS, cause });
      assert.equal(error.name, name);
      assert.equal(error.code, code);
      assert.equal(error.message, "went wrong");
      assert.equal(error.cause, cause);
      for (const [key, value] of Object.entries(DETAILS)) {
        assert.equal(error[key as keyof LMErrorDetails], value, key);
      }
      assert.ok(error instanceof ErrorClass);
      assert.ok(error instanceof Parent);
      assert.ok(error instanceof LMError);
      assert.ok(error instanceof Error);
      assert.ok(isLMError(error));
      assert.equal(String(error), `${name}: went wrong`);
      assert.ok(error.stack?.startsWith(`${name}: went wrong\n`), error.stack);
    });

    it(`${name}: details are optional, and "cause" is left out when not given`, () => {
      const error = new ErrorClass("went wrong");
      assert.equal(error.code, code);
      assert.equal(error.status, undefined);
      assert.equal(error.attempts, undefined);
      assert.ok(!("cause" in error));
    });

    it(`${name}: survives the worker-thread boundary as itself`, () => {
      const copy = fromErrorPayload(toErrorPayload(new ErrorClass("went wrong", DETAILS)));
      assert.ok(copy instanceof ErrorClass);
      assert.equal(copy.name, name);
      assert.equal((copy as LMError).code, code);
      assert.equal((copy as LMError).requestId, DETAILS.requestId);
    });
  }

  it("only ContextWindowExceededError is a BadRequestError among the others", () => {
    const others = CLASSES.filter(([cls]) => cls !== ContextWindowExceededError);
    for (const [ErrorClass, name] of others) {
      assert.ok(!(new ErrorClass("x") instanceof ContextWindowExceededError), name);
    }
  });

  it("createLMError builds each code's class (BadRequestError for LM_BAD_REQUEST)", () => {
    for (const [ErrorClass, name, code] of CLASSES) {
      if (ErrorClass === ContextWindowExceededError) continue;
      const error = createLMError(code, "went wrong", { attempts: 1 });
      assert.equal(Object.getPrototypeOf(error), ErrorClass.prototype, name);
      assert.equal(error.name, name);
      assert.equal(error.code, code);
      assert.equal(error.attempts, 1);
    }
  });

  it("LMError itself takes its code and is named LMError", () => {
    const error = new LMError("LM_SERVER", "went wrong", { status: 500 });
    assert.equal(error.name, "LMError");
    assert.equal(error.code, "LM_SERVER");
    assert.equal(error.status, 500);
    assert.ok(isLMError(error));
  });

  it("an application's subclass keeps its parent's name and code", () => {
    class AppTimeout extends TimeoutError {}
    const error = new AppTimeout("slow");
    assert.ok(error instanceof AppTimeout);
    assert.ok(error instanceof TimeoutError);
    assert.equal(error.name, "TimeoutError");
    assert.equal(error.code, "LM_TIMEOUT");
  });
});
