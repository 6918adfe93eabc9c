/**
 * Against what nobody here wrote: a third-party OpenAI-compatible server from npm
 * (`@dwmkerr/mock-llm`, on 127.0.0.1) and the official `openai` client as the reference for the
 * bytes sent and the answers read.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import { AuthenticationError, CompatLM, LMError, ServerError } from "lmclient";
import { closedPort, type FakeServer, startFakeServer, uniqueModel } from "./support.js";

const MOCK_LLM_MAIN = createRequire(import.meta.url).resolve("@dwmkerr/mock-llm/dist/main.js");

const completion = (content: string) =>
  JSON.stringify({
    id: "chatcmpl-mock",
    object: "chat.completion",
    model: "{{jmes request body.model}}",
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
  });

/** mock-llm rules (YAML is a superset of JSON); the last matching rule wins. */
const CONFIG = {
  rules: [
    {
      path: "/v1/chat/completions",
      method: "POST",
      match: "@",
      response: { status: 200, content: completion("{{jmes request body.messages[-1].content}}") },
    },
    {
      path: "/v1/chat/completions",
      match: "contains(body.messages[-1].content, 'error-401')",
      response: {
        status: 401,
        content: JSON.stringify({
          error: { message: "Incorrect API key provided.", type: "invalid_request_error" },
        }),
      },
    },
    {
      path: "/v1/chat/completions",
      match: "contains(body.messages[-1].content, 'error-500')",
      response: { status: 500, content: JSON.stringify({ error: { message: "mock outage" } }) },
    },
    {
      path: "/v1/chat/completions",
      match: "contains(body.messages[-1].content, 'use-tool')",
      response: {
        status: 200,
        content: JSON.stringify({
          choices: [
            {
              index: 0,
              message: {
                role: "assistant",
                content: null,
                tool_calls: [
                  {
                    id: "call_1",
                    type: "function",
                    function: { name: "get_weather", arguments: '{"city":"Oslo"}' },
                  },
                ],
              },
              finish_reason: "tool_calls",
            },
          ],
        }),
      },
    },
  ],
};

let mock: ChildProcess;
let mockUrl: string;
let dir: string;
let fake: FakeServer;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "lmclient-mock-llm-"));
  writeFileSync(join(dir, "mock-llm.yaml"), JSON.stringify(CONFIG));
  const port = await closedPort();
  mock = spawn(process.execPath, [MOCK_LLM_MAIN, "--config", join(dir, "mock-llm.yaml")], {
    cwd: dir,
    env: { ...process.env, HOST: "127.0.0.1", PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  await new Promise<void>((resolve, reject) => {
    let out = "";
    mock.stdout?.on("data", (chunk: Buffer) => {
      out += String(chunk);
      if (out.includes("server running")) resolve();
    });
    mock.once("exit", (code) => reject(new Error(`mock-llm exited with ${code}: ${out}`)));
  });
  mockUrl = `http://127.0.0.1:${port}/v1`;
  fake = await startFakeServer();
});

after(async () => {
  mock.kill();
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("against @dwmkerr/mock-llm", () => {
  it("forward and aforward read the same answer as the official client", async () => {
    const official = new OpenAI({ baseURL: mockUrl, apiKey: "sk-test-key-123456" });
    const expected = await official.chat.completions.create({
      model: "gpt-4",
      messages: [{ role: "user", content: "Hello there" }],
    });
    const lm = new CompatLM({ model: "gpt-4", base_url: mockUrl, api_key: "sk-test-key-123456" });
    const sync = lm.forward("Hello there");
    const async = await lm.aforward("Hello there");
    for (const response of [sync, async]) {
      assert.equal(response.model, "gpt-4");
      assert.deepEqual(response.choices, JSON.parse(JSON.stringify(expected.choices)));
    }
  });

  it("401 is an AuthenticationError with the server's message on both paths", async () => {
    const lm = new CompatLM({ model: "gpt-4", base_url: mockUrl });
    assert.throws(() => lm.forward("error-401"), AuthenticationError);
    await assert.rejects(lm.aforward("error-401"), (error: unknown) => {
      assert.ok(error instanceof AuthenticationError);
      assert.equal(error.status, 401);
      assert.equal(error.serverMessage, "Incorrect API key provided.");
      return true;
    });
  });

  it("500 is retried, then a ServerError, on both paths", async () => {
    const lm = new CompatLM({ model: "gpt-4", base_url: mockUrl, maxRetries: 1 });
    for (const attempt of [() => lm.forward("error-500"), () => lm.aforward("error-500")]) {
      await assert.rejects(
        async () => attempt(),
        (error: unknown) =>
          error instanceof ServerError &&
          error.attempts === 2 &&
          error.serverMessage === "mock outage",
      );
    }
  });

  it("call and acall return tool calls as DSPy does", async () => {
    const lm = new CompatLM({ model: "gpt-4", base_url: mockUrl });
    const expected = [
      {
        text: null,
        tool_calls: [
          {
            id: "call_1",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Oslo"}' },
          },
        ],
      },
    ];
    assert.deepEqual(lm.call("use-tool"), expected);
    assert.deepEqual(await lm.acall("use-tool"), expected);
  });

  it("200 concurrent aforward calls, with forward calls between them, all get their answer", async () => {
    const lm = new CompatLM({ model: "gpt-4", base_url: mockUrl });
    const pending = Array.from({ length: 200 }, (_, i) => lm.aforward(`concurrent ${i}`));
    for (let i = 0; i < 5; i += 1) {
      assert.equal(lm.forward(`sync ${i}`).choices[0]?.message?.content, `sync ${i}`);
    }
    const responses = await Promise.all(pending);
    responses.forEach((response, i) =>
      assert.equal(response.choices[0]?.message?.content, `concurrent ${i}`),
    );
  });

  it("a refused connection is an LMError on both paths", async () => {
    const lm = new CompatLM({
      model: "gpt-4",
      base_url: `http://127.0.0.1:${await closedPort()}/v1`,
      maxRetries: 0,
    });
    assert.throws(() => lm.forward("x"), LMError);
    await assert.rejects(lm.aforward("x"), LMError);
  });
});

describe("the bytes sent, against the official client", () => {
  it("forward and aforward send the official client's headers and body", async () => {
    const model = uniqueModel("bytes");
    const body = {
      model,
      messages: [{ role: "user" as const, content: "same bytes" }],
      temperature: 0.2,
      max_tokens: 16,
    };
    const official = new OpenAI({
      baseURL: fake.baseUrl,
      apiKey: "sk-bytes-123456789",
      maxRetries: 2,
    });
    await official.chat.completions.create(body);
    const lm = new CompatLM({
      model,
      base_url: fake.baseUrl,
      api_key: "sk-bytes-123456789",
      temperature: 0.2,
      max_tokens: 16,
      cache: false,
    });
    lm.forward("same bytes");
    await lm.aforward("same bytes");
    const [reference, sync, async] = await fake.requests(model);
    // `connection: keep-alive` is the pool's, not the request's.
    const comparable = (headers: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(headers).filter(([name]) => name !== "connection"));
    for (const request of [sync, async]) {
      assert.deepEqual(request?.body, reference?.body);
      assert.deepEqual(comparable(request?.headers ?? {}), comparable(reference?.headers ?? {}));
      assert.equal(request?.path, reference?.path);
    }
  });
});
