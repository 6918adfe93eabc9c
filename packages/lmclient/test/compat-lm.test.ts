import assert from "node:assert/strict";
import { after, before, describe, it, mock } from "node:test";
import { inspect } from "node:util";
import {
  CompatLM,
  type CompletionResponse,
  DEFAULT_API_KEY,
  DEFAULT_BASE_URL,
  DEFAULT_MAX_RETRIES,
  DEFAULT_TIMEOUT_MS,
} from "lmclient";
import { type FakeServer, startFakeServer, timed, uniqueModel } from "./support.js";

const SECRET = "sk-test-secret-0123456789abcdef";

let server: FakeServer;

before(async () => {
  server = await startFakeServer();
});

after(async () => {
  await server.close();
});

function quietly<T>(fn: () => T): T {
  const log = mock.method(console, "log", () => undefined);
  try {
    return fn();
  } finally {
    log.mock.restore();
  }
}

/** Both ways to call: the synchronous `forward` and the asynchronous `aforward`. */
const MODES = {
  sync: (lm: CompatLM, ...args: Parameters<CompatLM["forward"]>) => lm.forward(...args),
  async: (lm: CompatLM, ...args: Parameters<CompatLM["aforward"]>) => lm.aforward(...args),
} as const;

describe("CompatLM options", () => {
  it("defaults to the local server, a placeholder key, 10 minutes and 2 retries", () => {
    const lm = new CompatLM({ model: "llama3.2" });
    assert.equal(lm.baseUrl, DEFAULT_BASE_URL);
    assert.equal(DEFAULT_BASE_URL, "http://localhost:11434/v1");
    assert.equal(lm.apiKey, DEFAULT_API_KEY);
    assert.equal(lm.timeout, DEFAULT_TIMEOUT_MS);
    assert.equal(DEFAULT_TIMEOUT_MS, 600_000);
    assert.equal(lm.maxRetries, DEFAULT_MAX_RETRIES);
    assert.equal(lm.modelType, "chat");
    assert.deepEqual(lm.kwargs, {});
  });

  it("strips trailing slashes and accepts snake_case and camelCase", () => {
    assert.equal(new CompatLM({ model: "m", base_url: "http://h:1/v1/" }).baseUrl, "http://h:1/v1");
    assert.equal(new CompatLM({ model: "m", baseUrl: "http://h:1/v1//" }).baseUrl, "http://h:1/v1");
    assert.equal(new CompatLM({ model: "m", apiKey: "k1" }).apiKey, "k1");
    assert.equal(new CompatLM({ model: "m", api_key: "k2" }).apiKey, "k2");
    assert.equal(new CompatLM({ model: "m", max_retries: 0 }).maxRetries, 0);
  });

  it("keeps extra keys as default request arguments", () => {
    const lm = new CompatLM({ model: "m", temperature: 0.3, max_tokens: 64, seed: undefined });
    assert.deepEqual(lm.kwargs, { temperature: 0.3, max_tokens: 64 });
  });

  it("rejects bad options with TypeErrors naming the option", () => {
    assert.throws(() => new CompatLM({ model: "m", base_url: "localhost:11434" }), /base_url/);
    assert.throws(() => new CompatLM({ model: "m", base_url: "ftp://h/v1" }), /http or https/);
    assert.throws(
      () => new CompatLM({ model: "m", base_url: "http://a/v1", baseUrl: "http://b/v1" }),
      /base_url or baseUrl/,
    );
    assert.throws(() => new CompatLM({ model: "m", api_key: "" }), /api_key/);
    assert.throws(() => new CompatLM({ model: "m", timeout: 0 }), /timeout/);
    assert.throws(() => new CompatLM({ model: "m", maxRetries: 1.5 }), /maxRetries/);
    assert.throws(() => new CompatLM({ model: "" }), /model/);
  });

  it("never shows the api key when the instance is printed or serialized", () => {
    const lm = new CompatLM({ model: "m", api_key: SECRET });
    assert.ok(!inspect(lm, { depth: 5, showHidden: true }).includes(SECRET));
    assert.ok(!JSON.stringify(lm).includes(SECRET));
    assert.ok(!Object.keys(lm).includes("apiKey"));
  });
});

describe("CompatLM requests", () => {
  for (const [mode, send] of Object.entries(MODES)) {
    it(`${mode}: POSTs {base_url}/chat/completions with the bearer key and the body`, async () => {
      const model = uniqueModel(`request-${mode}`);
      const lm = new CompatLM({ model, base_url: `${server.baseUrl}/`, api_key: SECRET });
      const response = await send(lm, "Hello there");
      assert.equal(response.choices[0]?.message?.content, "echo: Hello there");
      const [request, ...rest] = await server.requests(model);
      assert.equal(rest.length, 0);
      assert.equal(request?.method, "POST");
      assert.equal(request?.path, "/v1/chat/completions");
      assert.equal(request?.headers.authorization, `Bearer ${SECRET}`);
      assert.match(String(request?.headers["content-type"]), /^application\/json/);
      assert.deepEqual(request?.body, {
        model,
        messages: [{ role: "user", content: "Hello there" }],
      });
    });

    it(`${mode}: merges kwargs, per-call over constructor, null/undefined dropped`, async () => {
      const model = uniqueModel(`merge-${mode}`);
      const lm = new CompatLM({
        model,
        base_url: server.baseUrl,
        temperature: 0.1,
        max_tokens: 50,
        top_p: 0.9,
        stop: ["\n"],
      });
      await send(lm, "x", undefined, { temperature: 0.7, top_p: null, seed: 42, user: undefined });
      const [request] = await server.requests(model);
      assert.deepEqual(request?.body, {
        model,
        messages: [{ role: "user", content: "x" }],
        temperature: 0.7,
        max_tokens: 50,
        stop: ["\n"],
        seed: 42,
      });
    });

    it(`${mode}: sends a messages list as is`, async () => {
      const model = uniqueModel(`messages-${mode}`);
      const lm = new CompatLM({ model, base_url: server.baseUrl });
      const messages = [
        { role: "system", content: "Be brief." },
        { role: "user", content: [{ type: "text", text: "Hi" }] },
        { role: "assistant", content: "Hello." },
        { role: "user", content: "Again" },
      ];
      const response = await send(lm, undefined, messages);
      assert.equal(response.choices[0]?.message?.content, "echo: Again");
      const [request] = await server.requests(model);
      assert.deepEqual((request?.body as { messages: unknown }).messages, messages);
    });
  }

  it("forward is synchronous: it returns the response itself, not a Promise", async () => {
    const model = uniqueModel("sync");
    const lm = new CompatLM({ model, base_url: server.baseUrl });
    const response = lm.forward("now");
    assert.ok(!(response instanceof Promise));
    assert.equal(typeof (response as { then?: unknown }).then, "undefined");
    assert.equal(response.choices[0]?.message?.content, "echo: now");
    const pending = lm.aforward("later");
    assert.ok(pending instanceof Promise);
    assert.equal((await pending).choices[0]?.message?.content, "echo: later");
  });

  it("forward blocks the calling thread through a slow response; aforward does not", async () => {
    const model = uniqueModel("slow");
    await server.script(model, [{ delayMs: 800 }, { delayMs: 800 }]);
    const lm = new CompatLM({ model, base_url: server.baseUrl });
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 50);
    try {
      const { ms, value } = await timed(() => lm.forward("slow one"));
      assert.ok(ms >= 750, `took ${ms} ms`);
      assert.equal(ticks, 0, "no timer ran while forward blocked");
      assert.equal(value.choices[0]?.message?.content, "echo: slow one");
      const asyncRun = await timed(() => lm.aforward("slow two"));
      assert.ok(asyncRun.ms >= 750);
      assert.ok(ticks >= 5, `timers ran during aforward (${ticks})`);
    } finally {
      clearInterval(timer);
    }
  });

  it("rejects neither prompt nor messages, and non-string prompts", () => {
    const lm = new CompatLM({ model: "m", base_url: server.baseUrl });
    assert.throws(() => lm.forward(), {
      name: "TypeError",
      message: /prompt string or a messages list/,
    });
    assert.throws(() => lm.forward(undefined, []), /non-empty array/);
    assert.throws(
      () => lm.forward([{ role: "user", content: "x" }] as unknown as string),
      /prompt must be a string/,
    );
    assert.throws(() => lm.forward(null, null), /prompt string or a messages list/);
  });

  it("aforward rejects misuse too (before any request)", async () => {
    const model = uniqueModel("misuse");
    const lm = new CompatLM({ model, base_url: server.baseUrl });
    await assert.rejects(() => lm.aforward(), TypeError);
    await assert.rejects(
      () => lm.aforward("x", undefined, { model: "other" }),
      /copy\(\{ model \}\)/,
    );
    await assert.rejects(
      () => lm.aforward("x", undefined, { stream: true }),
      /stream is not supported/,
    );
    await assert.rejects(
      () => lm.aforward("x", undefined, { timeout: 5 }),
      /"timeout" cannot be a request argument: it is an option.*lm\.copy\(\{ timeout \}\)/,
    );
    assert.throws(() => lm.forward("x", undefined, { api_key: "k" }), /lm\.copy\(\{ api_key \}\)/);
    assert.deepEqual(await server.requests(model), []);
  });

  it("returns fields the server adds (reasoning_content) and tolerates missing ones", async () => {
    const model = uniqueModel("tolerant");
    await server.script(model, [
      {
        json: {
          choices: [
            {
              message: { content: "42", reasoning_content: "thinking...", reasoning: "alt" },
              finish_reason: "stop",
            },
          ],
          timings: { predicted_ms: 12 },
        },
      },
    ]);
    const lm = new CompatLM({ model, base_url: server.baseUrl });
    const response: CompletionResponse = lm.forward("q");
    assert.equal(response.id, undefined);
    assert.equal(response.usage, undefined);
    assert.equal(response.choices[0]?.message?.reasoning_content, "thinking...");
    assert.equal(response.choices[0]?.message?.reasoning, "alt");
    assert.deepEqual(response.timings, { predicted_ms: 12 });
  });

  it("returns tool calls in OpenAI format", async () => {
    const model = uniqueModel("tools");
    const toolCall = {
      id: "call_1",
      type: "function",
      function: { name: "lookup", arguments: '{"q":"x"}' },
    };
    await server.script(model, [
      {
        json: {
          id: "c",
          object: "chat.completion",
          created: 1,
          model,
          choices: [
            {
              index: 0,
              message: { role: "assistant", content: null, tool_calls: [toolCall] },
              finish_reason: "tool_calls",
            },
          ],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        },
      },
    ]);
    const lm = new CompatLM({ model, base_url: server.baseUrl });
    const tools = [{ type: "function", function: { name: "lookup", parameters: {} } }];
    const response = await lm.aforward("q", undefined, { tools });
    assert.deepEqual(response.choices[0]?.message?.tool_calls, [toolCall]);
    assert.equal(response.choices[0]?.finish_reason, "tool_calls");
    const [request] = await server.requests(model);
    assert.deepEqual((request?.body as { tools: unknown }).tools, tools);
  });
});

describe("CompatLM copy, call and history", () => {
  it("copy returns a new CompatLM: options set attributes, other keys set kwargs", async () => {
    const model = uniqueModel("copy");
    const lm = new CompatLM({ model, base_url: server.baseUrl, api_key: SECRET, temperature: 0 });
    lm.call("before copy");
    const other = uniqueModel("copy-other");
    const copy = lm.copy({ model: other, temperature: 1, max_tokens: 9, timeout: 30_000 });
    assert.ok(copy instanceof CompatLM);
    assert.equal(copy.model, other);
    assert.equal(copy.baseUrl, server.baseUrl);
    assert.equal(copy.apiKey, SECRET);
    assert.equal(copy.timeout, 30_000);
    assert.deepEqual(copy.kwargs, { temperature: 1, max_tokens: 9 });
    assert.deepEqual(copy.history, []);
    assert.equal(lm.history.length, 1);
    assert.equal(lm.model, model);
    assert.deepEqual(lm.kwargs, { temperature: 0 });

    copy.forward("after copy");
    const [request] = await server.requests(other);
    assert.equal(request?.headers.authorization, `Bearer ${SECRET}`);
    assert.deepEqual(request?.body, {
      model: other,
      messages: [{ role: "user", content: "after copy" }],
      temperature: 1,
      max_tokens: 9,
    });
  });

  it("copy: snake_case options, null removes a kwarg or resets an option to its default", () => {
    const lm = new CompatLM({
      model: "m",
      base_url: "http://h:1/v1",
      api_key: "k",
      temperature: 0,
    });
    const copy = lm.copy({ base_url: "http://other:2/v1/", api_key: "k2", temperature: null });
    assert.equal(copy.baseUrl, "http://other:2/v1");
    assert.equal(copy.apiKey, "k2");
    assert.deepEqual(copy.kwargs, {});
    const reset = lm.copy({ baseUrl: null, apiKey: undefined, max_retries: 5 });
    assert.equal(reset.baseUrl, DEFAULT_BASE_URL);
    assert.equal(reset.apiKey, DEFAULT_API_KEY);
    assert.equal(reset.maxRetries, 5);
  });

  it("call / acall return the output texts and record history without the api key", async () => {
    const model = uniqueModel("history");
    const lm = new CompatLM({ model, base_url: server.baseUrl, api_key: SECRET, temperature: 0 });
    assert.deepEqual(lm.call("one"), ["echo: one"]);
    assert.deepEqual(await lm.acall("two", undefined, { n: 2 }), ["echo 0: two", "echo 1: two"]);
    assert.equal(lm.history.length, 2);
    const [first, second] = lm.history;
    assert.equal(first?.prompt, "one");
    assert.equal(first?.messages, null);
    assert.deepEqual(first?.kwargs, {});
    assert.deepEqual(first?.outputs, ["echo: one"]);
    assert.deepEqual(first?.usage, { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });
    assert.equal(first?.model, model);
    assert.equal(first?.responseModel, model);
    assert.equal(first?.response.object, "chat.completion");
    assert.notEqual(first?.uuid, second?.uuid);
    assert.deepEqual(second?.kwargs, { n: 2 });

    const text = quietly(() => lm.inspectHistory(2));
    assert.match(text, /User message:\none/);
    assert.match(text, /Response 2 of 2:\necho 1: two/);
    assert.ok(!text.includes(SECRET));
    assert.ok(!JSON.stringify(lm.history).includes(SECRET));
    assert.ok(!inspect(lm.history, { depth: 10 }).includes(SECRET));
  });

  it("a failed call records no history", async () => {
    const model = uniqueModel("failed");
    await server.script(model, [{ status: 400 }]);
    const lm = new CompatLM({ model, base_url: server.baseUrl });
    assert.throws(() => lm.call("x"), { name: "BadRequestError" });
    assert.equal(lm.history.length, 0);
  });
});
