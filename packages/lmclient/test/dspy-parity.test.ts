/**
 * Issue 33: lmclient behaves as DSPy's `BaseLM` / `LM` do. The first group ports DSPy's own
 * tests (stanfordnlp/dspy, tests/clients/test_lm.py; each test names its source); the second
 * holds one test per defect of the issue. Every request goes to the scripted server over
 * loopback, through both `call` (synchronous) and `acall`.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { inspect } from "node:util";
import {
  BadRequestError,
  CompatLM,
  type CompatLMOptions,
  ContextWindowExceededError,
  LMError,
  RateLimitError,
} from "lmclient";
import { type FakeServer, type Step, startFakeServer, timed, uniqueModel } from "./support.js";

const SECRET = "sk-live-do-not-leak-9f8e7d6c5b4a";
const REPO_ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

let server: FakeServer;

before(async () => {
  server = await startFakeServer();
});

after(async () => {
  await server.close();
});

type Mode = "sync" | "async";
const MODES: Mode[] = ["sync", "async"];

function call(mode: Mode, lm: CompatLM, prompt: string, kwargs: Record<string, unknown> = {}) {
  return mode === "sync" ? lm.call(prompt, undefined, kwargs) : lm.acall(prompt, undefined, kwargs);
}

async function failure(mode: Mode, lm: CompatLM, kwargs: Record<string, unknown> = {}) {
  try {
    await call(mode, lm, "q", kwargs);
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

function completion(message: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    id: "chatcmpl-parity",
    object: "chat.completion",
    created: 1_700_000_000,
    model: "parity-model",
    choices: [
      { index: 0, message: { role: "assistant", ...message }, finish_reason: "stop", ...extra },
    ],
    usage: { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 },
  };
}

/** Fields an OpenAI-compatible server accepts in this suite's requests; anything else is a 422. */
const BODY_FIELDS = new Set(["model", "messages", "temperature", "max_tokens", "logprobs"]);

describe("ported from DSPy (tests/clients/test_lm.py)", () => {
  for (const mode of MODES) {
    it(`${mode}: test_chat_lms_can_be_queried: a chat LM at api_base answers a prompt`, async () => {
      const { lm } = await scripted("dspy-queried", [{ json: completion({ content: "Hi!" }) }], {
        api_base: server.baseUrl,
        model_type: "chat",
      });
      assert.deepEqual(await call(mode, lm, "openai query"), ["Hi!"]);
    });

    it(`${mode}: test_call_reasoning_model_with_chat_api: reasoning comes back as reasoning_content`, async () => {
      const reasoning =
        "Step 1: I need to add 2 + 2\nStep 2: 2 + 2 = 4\nTherefore, the answer is 4";
      // DSPy's test sets message.reasoning_content; Ollama's /v1, vLLM >= 0.17 and OpenRouter
      // send message.reasoning, which LiteLLM hands DSPy as reasoning_content too.
      for (const field of ["reasoning_content", "reasoning"]) {
        const json = completion({ content: "The answer is 4", [field]: reasoning });
        const { model, lm } = await scripted(`dspy-reasoning-${field}`, [{ json }], {
          temperature: 1.0,
          max_tokens: 16000,
          reasoning_effort: "low",
        });
        const result = await call(mode, lm, "What is 2 + 2?");
        assert.ok(Array.isArray(result));
        assert.equal(result.length, 1);
        assert.deepEqual(result[0], { text: "The answer is 4", reasoning_content: reasoning });
        const [request] = await server.requests(model);
        const body = request?.body as Record<string, unknown>;
        assert.equal(body.model, model);
        assert.equal(body.reasoning_effort, "low");
      }
    });

    it(`${mode}: test_logprobs_included_when_requested`, async () => {
      const logprobs = {
        content: [
          { token: "test", logprob: 0.1, top_logprobs: [{ token: "test", logprob: 0.1 }] },
          { token: "answer", logprob: 0.2, top_logprobs: [{ token: "answer", logprob: 0.2 }] },
        ],
      };
      const json = completion({ content: "test answer" }, { logprobs });
      const { model, lm } = await scripted("dspy-logprobs", [{ json }], {
        logprobs: true,
        cache: false,
      });
      const result = await call(mode, lm, "question");
      assert.deepEqual(result, [{ text: "test answer", logprobs }]);
      const [request] = await server.requests(model);
      assert.equal((request?.body as Record<string, unknown>).logprobs, true);
    });

    it(`${mode}: test_lm_history_size_limit: at most the configured number of entries`, async () => {
      const steps = Array.from({ length: 10 }, () => ({
        json: completion({ content: "test answer" }),
      }));
      const { lm } = await scripted("dspy-history", steps, { historySize: 5 });
      for (let i = 0; i < 10; i += 1) await call(mode, lm, "query");
      assert.equal(lm.history.length, 5);
    });

    it(`${mode}: test_rollout_id_bypasses_cache: rollout_id never reaches the request`, async () => {
      const { model, lm } = await scripted("dspy-rollout", []);
      await call(mode, lm, "Query", { rollout_id: 1 });
      await call(mode, lm.copy({ rollout_id: 2 }), "Query");
      for (const request of await server.requests(model)) {
        assert.ok(!("rollout_id" in (request.body as object)), JSON.stringify(request.body));
      }
    });

    it(`${mode}: test_streaming_passes_headers_correctly: headers go out as HTTP headers`, async () => {
      const { model, lm } = await scripted("dspy-headers", []);
      await call(mode, lm, "test", { headers: { "X-Custom-Token": "my-custom-token" } });
      const [request] = await server.requests(model);
      assert.equal(request?.headers["x-custom-token"], "my-custom-token");
      assert.ok(!("headers" in (request?.body as object)));
    });

    it(`${mode}: test_lm_wraps_litellm_errors_with_metadata: status and request id on the error`, async () => {
      const step: Step = {
        status: 429,
        headers: { "x-request-id": "req-123" },
        json: {
          error: {
            message: "too many requests",
            type: "rate_limit_error",
            code: "rate_limit_exceeded",
          },
        },
      };
      const { lm } = await scripted("dspy-metadata", [step], { maxRetries: 0 });
      const error = await failure(mode, lm);
      assert.ok(error instanceof RateLimitError);
      assert.equal(error.status, 429);
      assert.equal(error.requestId, "req-123");
      assert.equal(error.serverCode, "rate_limit_exceeded");
      assert.equal(error.serverType, "rate_limit_error");
    });

    it(`${mode}: test_lm_wraps_litellm_context_window_error`, async () => {
      const step: Step = {
        status: 400,
        json: { error: { message: "too long", code: "context_length_exceeded" } },
      };
      const { lm } = await scripted("dspy-context", [step]);
      const error = await failure(mode, lm);
      assert.ok(error instanceof ContextWindowExceededError);
      assert.ok(error instanceof BadRequestError);
      assert.ok(error instanceof LMError);
      assert.equal(error.name, "ContextWindowExceededError");
      assert.equal(error.status, 400);
    });
  }

  it("test_async_lm_call: acall resolves to the list of texts", async () => {
    const { lm } = await scripted("dspy-async", [{ json: completion({ content: "answer" }) }], {
      cache: false,
    });
    assert.deepEqual(await lm.acall("question"), ["answer"]);
  });

  it("test_base_lm_copy_is_shallow_runtime_copy_with_isolated_dspy_state", () => {
    const callback = {};
    const client = { record: () => "recorded" };
    const lm = new CompatLM({ model: "custom-model", callbacks: [callback], temperature: 0.1 });
    const extended = lm as CompatLM & { client?: unknown; extra_state?: { mutable: unknown[] } };
    extended.client = client;
    extended.extra_state = { mutable: [] };
    lm.history = [{ prompt: "original" } as never];

    const copied = lm.copy({ temperature: 0.2, rollout_id: 1 }) as typeof extended;

    assert.notEqual(copied, lm);
    assert.equal(copied.client, client);
    assert.equal(copied.extra_state, extended.extra_state);
    assert.deepEqual(copied.history, []);
    assert.notEqual(copied.history, lm.history);
    assert.deepEqual(copied.callbacks, [callback]);
    assert.notEqual(copied.callbacks, lm.callbacks);
    // DSPy keeps None-valued defaults (`max_tokens: None`); lmclient drops null/undefined ones.
    assert.deepEqual(copied.kwargs, { temperature: 0.2, rollout_id: 1 });
    assert.deepEqual(lm.kwargs, { temperature: 0.1 });
  });

  it("test_base_lm_init_uses_lm_defaults_and_isolates_callback_list", () => {
    const callbacks = [{}];
    const lm = new CompatLM({ model: "custom-model", callbacks });
    assert.deepEqual(lm.kwargs, {});
    assert.deepEqual(lm.callbacks, callbacks);
    assert.notEqual(lm.callbacks, callbacks);
    assert.equal(lm.cache, true);
  });

  it("test_api_key_not_saved_in_json: the key is not in the serialized LM", () => {
    const lm = new CompatLM({
      model: "openai/gpt-4o-mini",
      model_type: "chat",
      temperature: 1.0,
      max_tokens: 100,
      api_key: "sk-test-api-key-12345",
    });
    const saved = JSON.parse(JSON.stringify(lm)) as Record<string, unknown>;
    assert.ok(!JSON.stringify(saved).includes("sk-test-api-key-12345"));
    assert.ok(!("api_key" in saved) && !("apiKey" in saved));
    assert.equal(saved.model, "openai/gpt-4o-mini");
    assert.deepEqual(saved.kwargs, { temperature: 1.0, max_tokens: 100 });
  });
});

describe("issue 33 defects", () => {
  for (const mode of MODES) {
    it(`${mode}: 1. message.reasoning is kept as reasoning_content, in outputs and history`, async () => {
      const json = completion({ content: "4", reasoning: "2 + 2 is 4" });
      const { lm } = await scripted("reasoning-field", [{ json }]);
      assert.deepEqual(await call(mode, lm, "2 + 2?"), [
        { text: "4", reasoning_content: "2 + 2 is 4" },
      ]);
      assert.deepEqual(lm.history[0]?.outputs, [{ text: "4", reasoning_content: "2 + 2 is 4" }]);
    });

    it(`${mode}: 3. cache, callbacks, rollout_id and headers are never body fields`, async () => {
      const { model, lm } = await scripted("client-options", [], {
        cache: false,
        callbacks: [{}],
        rollout_id: 7,
        headers: { "X-Team": "evals", "X-Trace": "default" },
        temperature: 0,
      });
      await call(mode, lm, "q", {
        cache: false,
        callbacks: [],
        rollout_id: 8,
        headers: { "x-trace": "per-call" },
        max_tokens: 5,
      });
      const [request] = await server.requests(model);
      const body = request?.body as Record<string, unknown>;
      const unexpected = Object.keys(body).filter((key) => !BODY_FIELDS.has(key));
      assert.deepEqual(unexpected, [], `a strict server answers 422 for ${unexpected.join(", ")}`);
      assert.equal(body.temperature, 0);
      assert.equal(body.max_tokens, 5);
      // The call's headers replace the constructor's whole, as DSPy merges its kwargs (issue 53).
      assert.equal(request?.headers["x-team"], undefined);
      assert.equal(request?.headers["x-trace"], "per-call");
      assert.equal(request?.headers.authorization, `Bearer ${SECRET}`);
    });

    it(`${mode}: 4. the server's error code, type and param are kept`, async () => {
      const json = {
        error: {
          message: "This model's maximum context length is 8192 tokens.",
          type: "invalid_request_error",
          param: "messages",
          code: "context_length_exceeded",
        },
      };
      const { lm } = await scripted("error-fields", [{ status: 400, json }]);
      const error = await failure(mode, lm);
      assert.ok(error instanceof ContextWindowExceededError, inspect(error));
      assert.equal(error.code, "LM_BAD_REQUEST");
      assert.equal(error.serverCode, "context_length_exceeded");
      assert.equal(error.serverType, "invalid_request_error");
      assert.equal(error.serverParam, "messages");
      assert.match(error.message, /context window exceeded: HTTP 400.*maximum context length/);
    });

    it(`${mode}: 4. vLLM's and llama.cpp's context-length errors are ContextWindowExceededError`, async () => {
      const vllm = {
        object: "error",
        message:
          "This model's maximum context length is 2048 tokens. However, you requested 4096 tokens.",
        type: "BadRequestError",
        param: null,
        code: 400,
      };
      const llamaCpp = {
        error: {
          code: 400,
          message: "the request exceeds the available context size, try increasing it",
          type: "exceed_context_size_error",
        },
      };
      const plain = {
        error: { message: "max_tokens must be at least 1", type: "invalid_request_error" },
      };
      const { lm } = await scripted("context-servers", [
        { status: 400, json: vllm },
        { status: 400, json: llamaCpp },
        { status: 400, json: plain },
      ]);
      const first = await failure(mode, lm);
      assert.ok(first instanceof ContextWindowExceededError);
      assert.equal(first.serverCode, "400");
      assert.ok((await failure(mode, lm)) instanceof ContextWindowExceededError);
      const third = await failure(mode, lm);
      assert.ok(third instanceof BadRequestError && !(third instanceof ContextWindowExceededError));
    });

    it(`${mode}: 5. a negative, unreadable or past Retry-After falls back to the backoff`, async () => {
      for (const retryAfter of ["-5", "soon", "Wed, 21 Oct 2015 07:28:00 GMT", "0"]) {
        const step: Step = { status: 429, headers: { "retry-after": retryAfter } };
        const { lm } = await scripted("bad-retry-after", [step, step], { maxRetries: 1 });
        const { ms, value } = await timed(() => failure(mode, lm));
        assert.ok(value instanceof RateLimitError);
        assert.equal(value.attempts, 2);
        // The documented backoff waits at least 0.375 s before the first retry (0.5 s, jitter
        // 25 %); a lower bound only, which load cannot break.
        assert.ok(
          ms >= 350,
          `Retry-After ${retryAfter}: 2 attempts took only ${Math.round(ms)} ms`,
        );
      }
    });

    it(`${mode}: 6. base_url's query string is sent byte for byte`, async () => {
      const search = "?a=1&a=2&flag&b=x%2Fy";
      const model = uniqueModel("query-bytes");
      const lm = new CompatLM({ model, base_url: `${server.baseUrl}/${search}` });
      await call(mode, lm, "q");
      const [request] = await server.requests(model);
      assert.equal(request?.path, "/v1/chat/completions");
      assert.equal(request?.search, search);
    });

    it(`${mode}: 7. array content: text parts joined, thinking as reasoning, the rest kept`, async () => {
      const magistral = completion({
        content: [
          { type: "thinking", thinking: [{ type: "text", text: "The user greets." }] },
          { type: "text", text: "Hello" },
          { type: "reference", reference_ids: [1] },
          { type: "text", text: " there!" },
        ],
      });
      const textOnly = completion({
        content: [
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ],
      });
      const { lm } = await scripted("array-content", [{ json: magistral }, { json: textOnly }], {
        cache: false,
      });
      assert.deepEqual(await call(mode, lm, "hi"), [
        {
          text: "Hello there!",
          reasoning_content: "The user greets.",
          content_parts: [{ type: "reference", reference_ids: [1] }],
        },
      ]);
      assert.deepEqual(await call(mode, lm, "hi"), ["ab"]);
    });

    it(`${mode}: 8. a proxy that is down is named as the proxy, not the LM server`, async () => {
      const { closedPort } = await import("./support.js");
      const proxy = `http://127.0.0.1:${await closedPort()}`;
      const { lm } = await scripted("proxy-down", [], { proxy, maxRetries: 0 });
      const error = await failure(mode, lm);
      assert.equal(error.code, "LM_CONNECTION");
      assert.match(error.message, new RegExp(`connection to the proxy failed: ${proxy}`));
      assert.doesNotMatch(error.message, /Is the server running at base_url/);
    });
  }

  it("8. under Node's permission model without --allow-worker, both methods say to allow it", () => {
    const flag = process.allowedNodeEnvironmentFlags.has("--permission")
      ? "--permission"
      : "--experimental-permission";
    const source =
      'import { CompatLM, WorkerError } from "lmclient";\n' +
      "const lm = new CompatLM({ model: 'm', base_url: process.env.BASE_URL, maxRetries: 0 });\n" +
      "const out = {};\n" +
      "try { lm.forward('x'); } catch (e) { out.sync = [e instanceof WorkerError, e.message]; }\n" +
      "try { await lm.aforward('x'); } catch (e) { out.async = [e instanceof WorkerError, e.message]; }\n" +
      "console.log(JSON.stringify(out));\n";
    const result = spawnSync(
      process.execPath,
      [flag, "--allow-fs-read=*", "--input-type=module", "-e", source],
      {
        cwd: REPO_ROOT,
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, NODE_OPTIONS: "", BASE_URL: server.baseUrl },
      },
    );
    assert.equal(result.status, 0, result.stderr);
    const out = JSON.parse(result.stdout) as Record<string, [boolean, string]>;
    for (const mode of ["sync", "async"]) {
      const [isWorkerError, message] = out[mode] ?? [false, "no error"];
      assert.ok(isWorkerError, `${mode}: ${message}`);
      assert.match(message, /run node with --allow-worker/);
    }
  });

  it("2. copy shares class instances (methods intact) and plain objects, as DSPy's shallow copy", () => {
    class Tracker {
      calls = 0;
      record() {
        this.calls += 1;
        return this.calls;
      }
    }
    const lm = new CompatLM({ model: "m", temperature: 0 }) as CompatLM & { tracker?: Tracker };
    lm.tracker = new Tracker();
    const copied = lm.copy({ temperature: 1 }) as typeof lm;
    assert.equal(copied.tracker?.record(), 1);
    assert.equal(copied.tracker, lm.tracker);
    lm.kwargs.max_tokens = 3;
    assert.deepEqual(copied.kwargs, { temperature: 1 });
  });

  it("3. per-call historySize and modelType are refused, not sent", () => {
    const lm = new CompatLM({ model: "m" });
    for (const key of ["historySize", "history_size", "modelType", "model_type"]) {
      assert.throws(
        () => lm.requestBody("q", undefined, { [key]: 1 }),
        (error: Error) =>
          error instanceof TypeError &&
          error.message.includes(`"${key}" cannot be a request argument`),
      );
    }
  });

  it("3. bad headers are a TypeError naming the header, in the constructor and per call", () => {
    assert.throws(
      () => new CompatLM({ model: "m", headers: { "X-Ok": "a\r\nInjected: 1" } }),
      /headers\["X-Ok"\] must be one line/,
    );
    assert.throws(
      () => new CompatLM({ model: "m", headers: "X-A: 1" }),
      /headers must be an object/,
    );
    const lm = new CompatLM({ model: "m" });
    assert.throws(
      () => lm.requestHeaders({ headers: { "bad name": "1" } }),
      /not a valid HTTP header name/,
    );
    assert.throws(() => lm.requestHeaders({ headers: { "X-Name": "Zoë ✓" } }), /above U\+00FF/);
  });

  it("8. a key with characters above U+00FF fails in the constructor, without echoing it", () => {
    const key = "sk-abc\u201cdef\u201d-0123456789";
    assert.throws(
      () => new CompatLM({ model: "m", api_key: key }),
      (error: Error) =>
        error instanceof TypeError &&
        /api_key contains a character above U\+00FF \(at position 7\)/.test(error.message) &&
        !error.message.includes(key),
    );
    // Latin-1 is fine: HTTP headers carry it.
    assert.equal(
      new CompatLM({ model: "m", api_key: "sk-caf\u00e9-key" }).apiKey,
      "sk-caf\u00e9-key",
    );
  });
});
