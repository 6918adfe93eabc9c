import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { inspect } from "node:util";
import {
  AuthenticationError,
  BadRequestError,
  CompatLM,
  type CompatLMOptions,
  ConnectionError,
  isLMError,
  LMError,
  type LMErrorCode,
  NotFoundError,
  RateLimitError,
  ResponseError,
  ServerError,
  TimeoutError,
} from "lmclient";
import {
  closedPort,
  type FakeServer,
  type Step,
  startFakeServer,
  timed,
  uniqueModel,
} from "./support.js";

const SECRET = "sk-live-do-not-leak-9f8e7d6c5b4a";

let server: FakeServer;

before(async () => {
  server = await startFakeServer();
});

after(async () => {
  await server.close();
});

type Mode = "sync" | "async";
const MODES: Mode[] = ["sync", "async"];

/** Calls `forward` (sync) or `aforward` (async) and returns what it threw. */
async function failure(mode: Mode, lm: CompatLM, prompt = "hi"): Promise<LMError> {
  try {
    if (mode === "sync") lm.forward(prompt);
    else await lm.aforward(prompt);
  } catch (error) {
    assert.ok(error instanceof LMError, `expected an LMError, got ${inspect(error)}`);
    return error;
  }
  assert.fail("the call should have failed");
}

async function scripted(label: string, steps: Step[], options: Partial<CompatLMOptions> = {}) {
  const model = uniqueModel(label);
  await server.script(model, steps);
  const lm = new CompatLM({ model, base_url: server.baseUrl, api_key: SECRET, ...options });
  return { model, lm };
}

function assertNoSecret(error: Error): void {
  for (const text of [
    error.message,
    error.stack ?? "",
    inspect(error, { depth: 5 }),
    JSON.stringify(error),
  ]) {
    assert.ok(!text.includes(SECRET), `the api key leaked into: ${text}`);
  }
}

interface StatusCase {
  status: number;
  body: Step;
  errorClass: new (...args: never[]) => LMError;
  code: LMErrorCode;
  serverMessage: string;
}

const STATUS_CASES: StatusCase[] = [
  {
    status: 401,
    body: { status: 401, json: { error: { message: `Incorrect API key provided: ${SECRET}` } } },
    errorClass: AuthenticationError,
    code: "LM_AUTH",
    serverMessage: "Incorrect API key provided: [redacted]",
  },
  {
    status: 403,
    body: { status: 403, json: { error: "forbidden for this project" } },
    errorClass: AuthenticationError,
    code: "LM_AUTH",
    serverMessage: "forbidden for this project",
  },
  {
    status: 404,
    body: {
      status: 404,
      json: { error: { message: "model 'nope' not found", type: "api_error" } },
    },
    errorClass: NotFoundError,
    code: "LM_NOT_FOUND",
    serverMessage: "model 'nope' not found",
  },
  {
    status: 400,
    body: { status: 400, json: { object: "error", message: "max_tokens is too large", code: 400 } },
    errorClass: BadRequestError,
    code: "LM_BAD_REQUEST",
    serverMessage: "max_tokens is too large",
  },
  {
    status: 422,
    body: { status: 422, json: { detail: "messages: field required" } },
    errorClass: BadRequestError,
    code: "LM_BAD_REQUEST",
    serverMessage: "messages: field required",
  },
];

describe("errors: statuses that are not retried", () => {
  for (const mode of MODES) {
    for (const c of STATUS_CASES) {
      it(`${mode}: HTTP ${c.status} is ${c.errorClass.name} with status and server message`, async () => {
        const { model, lm } = await scripted(`status-${c.status}-${mode}`, [
          { ...c.body, headers: { "x-request-id": "req-123" } },
        ]);
        const error = await failure(mode, lm);
        assert.ok(error instanceof c.errorClass);
        assert.ok(isLMError(error));
        assert.equal(error.name, c.errorClass.name);
        assert.equal(error.code, c.code);
        assert.equal(error.status, c.status);
        assert.equal(error.serverMessage, c.serverMessage);
        assert.equal(error.requestId, "req-123");
        assert.equal(error.attempts, 1);
        assert.ok(error.message.includes(`HTTP ${c.status}`), error.message);
        assert.ok(error.message.includes(c.serverMessage), error.message);
        assert.ok(error.message.includes(`${server.baseUrl}/chat/completions`), error.message);
        assertNoSecret(error);
        assert.equal((await server.requests(model)).length, 1, "not retried");
      });
    }

    it(`${mode}: a wrong base URL (missing /v1) is a NotFoundError with a hint`, async () => {
      const model = uniqueModel(`wrong-base-${mode}`);
      const lm = new CompatLM({ model, base_url: server.baseUrl.replace(/\/v1$/, "") });
      const error = await failure(mode, lm);
      assert.ok(error instanceof NotFoundError);
      assert.equal(error.status, 404);
      assert.equal(error.serverMessage, "no route POST /chat/completions");
      assert.match(error.message, /base_url \(it usually ends in \/v1\)/);
    });
  }
});

describe("errors: retries", () => {
  for (const mode of MODES) {
    it(`${mode}: 429 is retried after Retry-After seconds, then succeeds`, async () => {
      const { model, lm } = await scripted(`retry-after-${mode}`, [
        { status: 429, headers: { "retry-after": "1" }, json: { error: { message: "slow down" } } },
      ]);
      const { ms, value } = await timed(() =>
        mode === "sync" ? lm.forward("again") : lm.aforward("again"),
      );
      assert.equal(value.choices[0]?.message?.content, "echo: again");
      assert.ok(ms >= 950, `waited only ${ms} ms`);
      const requests = await server.requests(model);
      assert.equal(requests.length, 2);
      assert.equal(requests[1]?.headers["x-stainless-retry-count"], "1");
    });

    it(`${mode}: 429 on every attempt is a RateLimitError after maxRetries`, async () => {
      const step: Step = {
        status: 429,
        headers: { "retry-after-ms": "20" },
        json: { error: { message: "rate limit reached" } },
      };
      const { model, lm } = await scripted(`rate-limit-${mode}`, [step, step, step, step], {
        maxRetries: 2,
      });
      const error = await failure(mode, lm);
      assert.ok(error instanceof RateLimitError);
      assert.equal(error.status, 429);
      assert.equal(error.serverMessage, "rate limit reached");
      assert.equal(error.attempts, 3);
      assert.match(error.message, /\(3 attempts\)/);
      assert.equal((await server.requests(model)).length, 3);
    });

    it(`${mode}: a 5xx is retried with backoff, then succeeds`, async () => {
      const { model, lm } = await scripted(`server-retry-${mode}`, [
        { status: 503, json: { error: { message: "model is loading" } } },
      ]);
      const { ms, value } = await timed(() =>
        mode === "sync" ? lm.forward("later") : lm.aforward("later"),
      );
      assert.equal(value.choices[0]?.message?.content, "echo: later");
      assert.ok(ms >= 300, `backoff was only ${ms} ms`);
      assert.equal((await server.requests(model)).length, 2);
    });

    it(`${mode}: 5xx on every attempt is a ServerError with the text body`, async () => {
      const step: Step = {
        status: 500,
        headers: { "retry-after-ms": "10" },
        text: "boom: CUDA out of memory",
      };
      const { model, lm } = await scripted(`server-error-${mode}`, [step, step], { maxRetries: 1 });
      const error = await failure(mode, lm);
      assert.ok(error instanceof ServerError);
      assert.equal(error.code, "LM_SERVER");
      assert.equal(error.status, 500);
      assert.equal(error.serverMessage, "boom: CUDA out of memory");
      assert.equal(error.attempts, 2);
      assert.equal((await server.requests(model)).length, 2);
    });

    it(`${mode}: maxRetries 0 sends exactly one request`, async () => {
      const { model, lm } = await scripted(`no-retry-${mode}`, [{ status: 502 }], {
        maxRetries: 0,
      });
      const error = await failure(mode, lm);
      assert.ok(error instanceof ServerError);
      assert.equal(error.status, 502);
      assert.equal((await server.requests(model)).length, 1);
    });
  }
});

describe("errors: timeouts and connections", () => {
  for (const mode of MODES) {
    it(`${mode}: no answer within timeout is a TimeoutError`, async () => {
      const { lm } = await scripted(`timeout-${mode}`, [{ delayMs: 3000 }], {
        timeout: 300,
        maxRetries: 0,
      });
      const { ms, value: error } = await timed(() => failure(mode, lm));
      assert.ok(error instanceof TimeoutError);
      assert.equal(error.code, "LM_TIMEOUT");
      assert.equal(error.status, undefined);
      assert.match(error.message, /within 300 ms/);
      assert.ok(ms >= 280 && ms < 2500, `took ${ms} ms`);
    });

    it(`${mode}: a timeout is retried like a connection failure`, async () => {
      const { model, lm } = await scripted(
        `timeout-retry-${mode}`,
        [{ delayMs: 2000 }, { delayMs: 2000 }],
        {
          timeout: 200,
          maxRetries: 1,
        },
      );
      const error = await failure(mode, lm);
      assert.ok(error instanceof TimeoutError);
      assert.equal(error.attempts, 2);
      assert.equal((await server.requests(model)).length, 2);
    });

    it(`${mode}: a refused connection is a ConnectionError with the network cause`, async () => {
      const port = await closedPort();
      const lm = new CompatLM({
        model: "m",
        base_url: `http://127.0.0.1:${port}/v1`,
        api_key: SECRET,
        maxRetries: 1,
      });
      const error = await failure(mode, lm);
      assert.ok(error instanceof ConnectionError);
      assert.equal(error.code, "LM_CONNECTION");
      assert.equal(error.status, undefined);
      assert.equal(error.attempts, 2);
      assert.match(error.message, /ECONNREFUSED/);
      assert.match(error.message, /Is the server running/);
      assert.equal((error.cause as { code?: string }).code, "ECONNREFUSED");
      assertNoSecret(error);
    });

    it(`${mode}: a connection closed without a response is a ConnectionError`, async () => {
      const { lm } = await scripted(`destroy-${mode}`, [{ destroy: true }], { maxRetries: 0 });
      const error = await failure(mode, lm);
      assert.ok(error instanceof ConnectionError);
    });
  }
});

describe("errors: responses that are not chat completions", () => {
  for (const mode of MODES) {
    it(`${mode}: a non-JSON 200 body is a ResponseError`, async () => {
      const { lm } = await scripted(`not-json-${mode}`, [{ text: "<html>proxy login</html>" }]);
      const error = await failure(mode, lm);
      assert.ok(error instanceof ResponseError);
      assert.equal(error.code, "LM_BAD_RESPONSE");
      assert.match(error.message, /not JSON: <html>proxy login<\/html>/);
    });

    it(`${mode}: a JSON body without choices is a ResponseError`, async () => {
      const { lm } = await scripted(`no-choices-${mode}`, [{ json: { result: "hi" } }]);
      const error = await failure(mode, lm);
      assert.ok(error instanceof ResponseError);
      assert.match(error.message, /no "choices" array/);
    });
  }

  it("a JSON completion sent as text/plain is accepted", async () => {
    const { lm } = await scripted("text-json", [
      { text: JSON.stringify({ choices: [{ message: { content: "ok" } }] }) },
    ]);
    assert.equal(lm.forward("x").choices[0]?.message?.content, "ok");
  });
});
