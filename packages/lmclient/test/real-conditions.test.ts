/**
 * Issue 12: slow models, broken connections, Retry-After, mixed sync/async use, secrets,
 * sync-path fidelity, limits and option spellings, against the scripted server over loopback.
 */
import assert from "node:assert/strict";
import { execFile, spawn, spawnSync } from "node:child_process";
import { readFile } from "node:fs";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { inspect, promisify } from "node:util";
import {
  AuthenticationError,
  CompatLM,
  type CompatLMOptions,
  ConnectionError,
  DEFAULT_MAX_RESPONSE_BYTES,
  LMError,
  RateLimitError,
  ResponseTooLargeError,
  TimeoutError,
} from "lmclient";
import { getGlobalDispatcher, MockAgent, setGlobalDispatcher } from "undici";
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

async function call(mode: Mode, lm: CompatLM, prompt = "hi") {
  return mode === "sync" ? lm.forward(prompt) : await lm.aforward(prompt);
}

async function failure(mode: Mode, lm: CompatLM, prompt = "hi"): Promise<LMError> {
  try {
    await call(mode, lm, prompt);
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

/** Runs an ES module (or, with `cjs`, a CommonJS) snippet in a fresh node process. */
function runNode(source: string, env: Record<string, string> = {}, args: string[] = []) {
  const result = spawnSync(
    process.execPath,
    [
      ...args,
      ...(args.includes("--input-type=commonjs") ? [] : ["--input-type=module"]),
      "-e",
      source,
    ],
    {
      cwd: REPO_ROOT,
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, NODE_OPTIONS: "", ...env },
    },
  );
  assert.equal(result.error, undefined);
  assert.equal(result.status, 0, `node failed: ${result.stderr}`);
  return result.stdout;
}

describe("timeout covers headers and body, for every value", () => {
  for (const mode of MODES) {
    it(`${mode}: a body that stalls after the headers is a TimeoutError within timeout`, async () => {
      const { model, lm } = await scripted("stall", [{ stallMidBodyMs: 8_000 }], {
        timeout: 500,
        maxRetries: 0,
      });
      const { ms, value: error } = await timed(() => failure(mode, lm));
      assert.ok(error instanceof TimeoutError);
      assert.match(error.message, /no complete response .* within 500 ms/);
      assert.ok(ms < 5_000, `took ${ms} ms`);
      assert.equal((await server.requests(model)).length, 1);
    });

    it(`${mode}: a stall mid-body is retried, and the retry succeeds`, async () => {
      const { model, lm } = await scripted("stall-retry", [{ stallMidBodyMs: 8_000 }, {}], {
        timeout: 500,
        maxRetries: 1,
      });
      const response = await call(mode, lm, "again");
      assert.equal(response.choices[0]?.message?.content, "echo: again");
      assert.equal((await server.requests(model)).length, 2);
    });

    it(`${mode}: a timeout of 2^31 ms or more works (no immediate failure)`, async () => {
      for (const timeout of [2 ** 31, 2 ** 31 + 12_345, 2 ** 40]) {
        const { lm } = await scripted("huge-timeout", [{ delayMs: 50 }], { timeout });
        const response = await call(mode, lm, "patient");
        assert.equal(response.choices[0]?.message?.content, "echo: patient");
      }
    });

    it(`${mode}: a slow complete answer inside the timeout is not cut`, async () => {
      const { lm } = await scripted("slow-ok", [{ delayMs: 400, stallMidBodyMs: 400 }], {
        timeout: 3_000,
        maxRetries: 0,
      });
      assert.equal((await call(mode, lm, "slow")).choices[0]?.message?.content, "echo: slow");
    });
  }
});

describe("broken connections are typed and retried", () => {
  for (const mode of MODES) {
    it(`${mode}: a reset after the headers is a ConnectionError after every retry`, async () => {
      const steps = [{ resetMidBody: true }, { resetMidBody: true }, { resetMidBody: true }];
      const { model, lm } = await scripted("reset", steps, { maxRetries: 2 });
      const error = await failure(mode, lm);
      assert.ok(error instanceof ConnectionError, inspect(error));
      assert.match(error.message, /connection broke while reading the response .*\(3 attempts\)/);
      assert.equal(error.attempts, 3);
      assert.equal((await server.requests(model)).length, 3);
      assert.ok(!error.message.includes(SECRET));
    });

    it(`${mode}: a reset mid-body, then a good answer, succeeds`, async () => {
      const { model, lm } = await scripted("reset-ok", [{ resetMidBody: true }, {}]);
      assert.equal((await call(mode, lm, "ok")).choices[0]?.message?.content, "echo: ok");
      assert.equal((await server.requests(model)).length, 2);
    });
  }
});

describe("Retry-After is honoured up to 60 s", () => {
  for (const mode of MODES) {
    it(`${mode}: Retry-After 120 fails at once, naming the wait, with one request`, async () => {
      const step = { status: 429, headers: { "retry-after": "120" } };
      const { model, lm } = await scripted("retry-after-long", [step, step, step]);
      const { ms, value: error } = await timed(() => failure(mode, lm));
      assert.ok(error instanceof RateLimitError);
      assert.match(error.message, /asked to wait 120 s .*more than the 60 s/);
      assert.ok(ms < 5_000, `took ${ms} ms`);
      assert.equal((await server.requests(model)).length, 1);
    });

    it(`${mode}: retry-after-ms above 60 s fails at once too; 1 s is waited`, async () => {
      const long = { status: 503, headers: { "retry-after-ms": "90000" } };
      const { lm } = await scripted("retry-after-ms", [long]);
      assert.match((await failure(mode, lm)).message, /asked to wait 90 s/);
      const short = { status: 429, headers: { "retry-after": "1" } };
      const { model, lm: lm2 } = await scripted("retry-after-short", [short]);
      const { ms } = await timed(() => call(mode, lm2));
      assert.ok(ms >= 900, `retried after ${ms} ms`);
      assert.equal((await server.requests(model)).length, 2);
    });
  }
});

describe("forward and aforward together", () => {
  async function inFlightThenBlock(schedule: (fn: () => void) => void) {
    // Answers in 300 ms; timeout 1 s. The thread is then blocked for 2.5 s by a forward.
    const model = uniqueModel("mixed-async");
    await server.script(
      model,
      Array.from({ length: 5 }, () => ({ delayMs: 300 })),
    );
    const lm = new CompatLM({ model, base_url: server.baseUrl, timeout: 1_000 });
    const pending = Array.from({ length: 5 }, (_, i) => lm.aforward(`a${i}`));
    const blocker = await scripted("mixed-sync", [{ delayMs: 2_500 }]);
    await new Promise<void>((resolve) =>
      schedule(() => {
        blocker.lm.forward("block");
        resolve();
      }),
    );
    const results = await Promise.allSettled(pending);
    for (const result of results) assert.equal(result.status, "fulfilled", inspect(result));
    // No false timeout, so no duplicate (retried) request.
    assert.equal((await server.requests(model)).length, 5);
  }

  it("a forward from setImmediate causes no false timeouts of in-flight aforward calls", async () => {
    await inFlightThenBlock((fn) => setTimeout(() => setImmediate(fn), 50));
  });

  it("a forward from an I/O callback causes no false timeouts either", async () => {
    await inFlightThenBlock((fn) =>
      setTimeout(() => readFile(import.meta.filename, () => fn()), 50),
    );
  });
});

describe("secrets", () => {
  it("a key with a trailing newline is trimmed: sent clean and redacted when echoed", async () => {
    const model = uniqueModel("newline-key");
    await server.script(model, [
      { status: 401, json: { error: { message: `Incorrect API key provided: ${SECRET}` } } },
    ]);
    const lm = new CompatLM({ model, base_url: server.baseUrl, api_key: `${SECRET}\n` });
    assert.equal(lm.apiKey, SECRET);
    const error = await failure("async", lm);
    assert.ok(error instanceof AuthenticationError);
    assert.ok(!error.message.includes(SECRET) && !(error.serverMessage ?? "").includes(SECRET));
    assert.match(error.message, /\[redacted\]/);
    const [request] = await server.requests(model);
    assert.equal(request?.headers.authorization, `Bearer ${SECRET}`);
  });

  it("credentials inside base_url are refused without echoing them", () => {
    for (const url of ["http://user:hunter2pass@127.0.0.1/v1", "http://hunter2pass@h/v1"]) {
      assert.throws(
        () => new CompatLM({ model: "m", base_url: url }),
        (error: Error) =>
          error instanceof TypeError &&
          /must not contain credentials.*api_key/.test(error.message) &&
          !error.message.includes("hunter2pass"),
      );
    }
  });

  it("JSON.stringify(lm) and inspect show no key and no secret-named arguments", async () => {
    const lm = new CompatLM({
      model: "m",
      api_key: SECRET,
      api_token: SECRET,
      extra_headers: { Authorization: `Bearer ${SECRET}` },
      proxy: "http://proxyuser:proxy-secret-1234@127.0.0.1:9/",
    });
    const json = JSON.stringify(lm);
    assert.ok(!json.includes(SECRET) && !json.includes("proxy-secret"), json);
    assert.ok(!inspect(lm, { depth: 5 }).includes(SECRET));
    assert.ok(JSON.parse(json).model === "m");
  });
});

describe("sync path fidelity", () => {
  class Money {
    constructor(readonly cents: number) {}
    toJSON() {
      return `${this.cents / 100} EUR`;
    }
  }

  it("toJSON and function values are sent identically by forward and aforward", async () => {
    const model = uniqueModel("tojson");
    const lm = new CompatLM({ model, base_url: server.baseUrl, cache: false });
    const kwargs = {
      metadata: { budget: new Money(250), when: new Date(0), skip: () => 1, gone: undefined },
      user: new Money(5),
      callback: () => "not sent",
    };
    lm.forward("x", undefined, kwargs);
    await lm.aforward("x", undefined, kwargs);
    const [sync, async] = await server.requests(model);
    assert.deepEqual(sync?.body, async?.body);
    assert.deepEqual((sync?.body as Record<string, unknown>).metadata, {
      budget: "2.5 EUR",
      when: "1970-01-01T00:00:00.000Z",
    });
    assert.equal((sync?.body as Record<string, unknown>).user, "0.05 EUR");
    assert.ok(!("callback" in (sync?.body as object)));
  });

  it("a BigInt argument is a TypeError on both paths, before any request", async () => {
    const lm = new CompatLM({ model: "m", base_url: server.baseUrl });
    assert.throws(() => lm.forward("x", undefined, { seed: 1n }), /JSON-serializable/);
    await assert.rejects(lm.aforward("x", undefined, { seed: 1n }), /JSON-serializable/);
  });

  it("SYNCKIT_TIMEOUT in the environment does not cap forward", () => {
    const out = runNode(
      'import { CompatLM } from "lmclient";' +
        "const lm = new CompatLM({ model: 'synckit-env', base_url: process.env.BASE_URL });" +
        "console.log(lm.forward('slow').choices[0].message.content);",
      { BASE_URL: server.baseUrl, SYNCKIT_TIMEOUT: "1" },
    );
    assert.equal(out.trim(), "echo: slow");
  });

  it("undici's global dispatcher and HTTP_PROXY affect neither path", async () => {
    const model = uniqueModel("global-dispatcher");
    const lm = new CompatLM({ model, base_url: server.baseUrl, maxRetries: 0, cache: false });
    const previous = getGlobalDispatcher();
    const mockAgent = new MockAgent();
    mockAgent.disableNetConnect();
    const proxyEnv = process.env.HTTP_PROXY;
    setGlobalDispatcher(mockAgent);
    process.env.HTTP_PROXY = "http://127.0.0.1:9";
    let texts: unknown[];
    try {
      texts = [
        lm.forward("direct").choices[0]?.message?.content,
        (await lm.aforward("direct")).choices[0]?.message?.content,
      ];
    } finally {
      setGlobalDispatcher(previous);
      if (proxyEnv === undefined) delete process.env.HTTP_PROXY;
      else process.env.HTTP_PROXY = proxyEnv;
      await mockAgent.close();
    }
    assert.deepEqual(texts, ["echo: direct", "echo: direct"]);
    assert.equal((await server.requests(model)).length, 2);
  });

  it("Node's environment proxy (NODE_USE_ENV_PROXY, HTTP_PROXY) affects neither path", () => {
    // Where Node honours it (22.21+, 24), the worker's default dispatcher is then a proxy agent:
    // lmclient does not take its class for Node's Agent and uses the bundled undici instead.
    const out = runNode(
      'import { CompatLM } from "lmclient";' +
        "const lm = new CompatLM({ model: 'env-proxy', base_url: process.env.BASE_URL, maxRetries: 0, cache: false });" +
        "const sync = lm.forward('direct').choices[0].message.content;" +
        "const async = (await lm.aforward('direct')).choices[0].message.content;" +
        "console.log(JSON.stringify([sync, async]));",
      {
        BASE_URL: server.baseUrl,
        NODE_USE_ENV_PROXY: "1",
        HTTP_PROXY: "http://127.0.0.1:9",
        http_proxy: "http://127.0.0.1:9",
      },
    );
    assert.deepEqual(JSON.parse(out), ["echo: direct", "echo: direct"]);
  });

  it("the bundled undici (LMCLIENT_BUNDLED_UNDICI=1) sends what Node's own fetch sends", async () => {
    const sent = async (label: string, env: Record<string, string>) => {
      const model = uniqueModel(label);
      // Not spawnSync: a blocked event loop would leave this process's pooled connection to the
      // server's control endpoint stale.
      const { stdout: out } = await promisify(execFile)(
        process.execPath,
        [
          "--input-type=module",
          "-e",
          'import { CompatLM } from "lmclient";' +
            "const lm = new CompatLM({ model: process.env.MODEL, base_url: process.env.BASE_URL, cache: false });" +
            "const sync = lm.forward('same').choices[0].message.content;" +
            "const async = (await lm.aforward('same')).choices[0].message.content;" +
            "console.log(JSON.stringify([sync, async]));",
        ],
        {
          cwd: REPO_ROOT,
          timeout: 60_000,
          env: { ...process.env, NODE_OPTIONS: "", BASE_URL: server.baseUrl, MODEL: model, ...env },
        },
      );
      assert.deepEqual(JSON.parse(out), ["echo: same", "echo: same"]);
      // The model names differ, and with them the bodies' lengths.
      return (await server.requests(model)).map(({ headers, body }) => ({
        headers: { ...headers, "content-length": undefined },
        body: { ...(body as object), model: "m" },
      }));
    };
    const node = await sent("node-fetch", {});
    const bundled = await sent("bundled-undici", { LMCLIENT_BUNDLED_UNDICI: "1" });
    assert.equal(node.length, 2);
    assert.deepEqual(bundled, node);
  });

  it("the proxy option is honoured by both paths", async () => {
    // In its own process: a synchronous forward blocks this one.
    const proxy = spawn(process.execPath, ["-e", PROXY_SOURCE], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    const port = await new Promise<number>((resolve, reject) => {
      proxy.stdout.once("data", (chunk: Buffer) => resolve(Number(String(chunk).trim())));
      proxy.once("error", reject);
    });
    try {
      const model = uniqueModel("proxied");
      const lm = new CompatLM({
        model,
        base_url: server.baseUrl,
        proxy: `http://127.0.0.1:${port}`,
      });
      assert.equal(lm.forward("p1").choices[0]?.message?.content, "echo: p1");
      assert.equal((await lm.aforward("p2")).choices[0]?.message?.content, "echo: p2");
      assert.equal((await server.requests(model)).length, 2);
      proxy.stdin.end("report\n");
      const tunnels = await new Promise<string>((resolve) =>
        proxy.stdout.once("data", (chunk: Buffer) => resolve(String(chunk).trim())),
      );
      assert.ok(JSON.parse(tunnels).length >= 1, tunnels);
      for (const target of JSON.parse(tunnels)) assert.equal(target, `127.0.0.1:${server.port}`);
    } finally {
      proxy.kill();
    }
  });
});

/** A CONNECT proxy that prints its port, and on stdin end prints the tunnels it opened. */
const PROXY_SOURCE = `
const http = require("node:http"), net = require("node:net");
const tunnels = [];
const proxy = http.createServer();
proxy.on("connect", (req, socket, head) => {
  tunnels.push(req.url);
  const [host, port] = req.url.split(":");
  const upstream = net.connect(Number(port), host, () => {
    socket.write("HTTP/1.1 200 Connection Established\\r\\n\\r\\n");
    upstream.write(head);
    upstream.pipe(socket).pipe(upstream);
  });
  upstream.on("error", () => socket.destroy());
  socket.on("error", () => upstream.destroy());
});
proxy.listen(0, "127.0.0.1", () => console.log(proxy.address().port));
process.stdin.resume();
process.stdin.on("end", () => console.log(JSON.stringify(tunnels)));
`;

describe("response-size limit", () => {
  it("defaults to 64 MiB", () => {
    assert.equal(new CompatLM({ model: "m" }).maxResponseBytes, DEFAULT_MAX_RESPONSE_BYTES);
    assert.equal(DEFAULT_MAX_RESPONSE_BYTES, 64 * 1024 * 1024);
  });

  for (const mode of MODES) {
    for (const chunked of [false, true]) {
      it(`${mode}: a body over maxResponseBytes is a ResponseTooLargeError, not retried${chunked ? " (chunked)" : ""}`, async () => {
        const { model, lm } = await scripted("too-large", [{ padTo: 300_000, chunked }], {
          maxResponseBytes: 100_000,
        });
        const error = await failure(mode, lm);
        assert.ok(error instanceof ResponseTooLargeError, inspect(error));
        assert.equal(error.code, "LM_TOO_LARGE");
        assert.match(error.message, /maxResponseBytes \(100000\)/);
        assert.equal((await server.requests(model)).length, 1);
      });
    }
  }

  it("a body under the cap passes", async () => {
    const { lm } = await scripted("large-ok", [{ padTo: 300_000 }], { maxResponseBytes: 400_000 });
    assert.equal(lm.forward("big").choices[0]?.message?.content, "echo: big");
  });
});

describe("option spellings and base_url", () => {
  it("baseURL, api_base and num_retries are aliases, never sent in the body", async () => {
    for (const spelling of ["baseURL", "api_base", "base_url", "baseUrl"]) {
      const model = uniqueModel(`alias-${spelling}`);
      await server.script(model, [{ status: 503 }, {}]);
      const lm = new CompatLM({ model, [spelling]: server.baseUrl, num_retries: 1 });
      assert.equal(lm.baseUrl, server.baseUrl);
      assert.equal(lm.maxRetries, 1);
      lm.forward("x");
      const requests = await server.requests(model);
      assert.equal(requests.length, 2);
      assert.deepEqual(Object.keys(requests[0]?.body as object), ["model", "messages"]);
    }
    const copy = new CompatLM({ model: "m" }).copy({ baseURL: server.baseUrl, num_retries: 0 });
    assert.equal(copy.baseUrl, server.baseUrl);
    assert.equal(copy.maxRetries, 0);
  });

  it("option spellings as per-call arguments are refused with a hint", () => {
    const lm = new CompatLM({ model: "m", base_url: server.baseUrl });
    for (const key of ["baseURL", "api_base", "num_retries", "max_retries", "api_key"]) {
      assert.throws(
        () => lm.forward("x", undefined, { [key]: 1 }),
        new RegExp(`"${key}" cannot be a request argument: .*lm\\.copy`),
      );
    }
  });

  it("a base_url with a query string keeps the query after /chat/completions", async () => {
    const model = uniqueModel("query");
    const lm = new CompatLM({ model, base_url: `${server.baseUrl}/?api-version=2024-10-21` });
    assert.equal(lm.baseUrl, `${server.baseUrl}?api-version=2024-10-21`);
    lm.forward("q");
    await lm.aforward("q");
    for (const request of await server.requests(model)) {
      assert.equal(request.path, "/v1/chat/completions");
      assert.equal(request.search, "?api-version=2024-10-21");
    }
  });
});

describe("calls sharing the worker's client", () => {
  it("each call keeps its own key, headers, retries and errors", async () => {
    const model = uniqueModel("shared-client");
    await server.script(model, [{ status: 500 }, {}, {}]);
    const lm = new CompatLM({ model, base_url: server.baseUrl, api_key: SECRET, maxRetries: 1 });
    const other = lm.copy({ api_key: "sk-other-key-0123456789" });
    const [first, second] = await Promise.all([
      lm.acall("one", undefined, { headers: { "x-call": "one" } }),
      other.acall("two", undefined, { headers: { "x-call": "two" } }),
    ]);
    assert.deepEqual([first, second], [["echo: one"], ["echo: two"]]);
    const sent = (await server.requests(model)).map((request) => [
      (request.body as { messages: { content: string }[] }).messages[0]?.content,
      request.headers.authorization,
      request.headers["x-call"],
    ]);
    // Whichever came first was answered 500 and retried, with its own key and headers; the
    // other went out once.
    const keyOf: Record<string, string> = {
      one: `Bearer ${SECRET}`,
      two: "Bearer sk-other-key-0123456789",
    };
    assert.equal(sent.length, 3);
    for (const [content, authorization, header] of sent) {
      assert.equal(authorization, keyOf[content as string]);
      assert.equal(header, content);
    }
    const contents = JSON.stringify(sent.map(([content]) => content).sort());
    assert.ok(contents === '["one","one","two"]' || contents === '["one","two","two"]', contents);
    const failed = await failure(
      "sync",
      lm.copy({ maxRetries: 0, base_url: `${server.baseUrl}/nope` }),
    );
    assert.equal(failed.attempts, 1);
  });
});

describe("DSPy parity of call and acall", () => {
  const toolCall = {
    id: "call_1",
    type: "function",
    function: { name: "weather", arguments: '{"city":"Oslo"}' },
  };
  const logprobs = { content: [{ token: "Hi", logprob: -0.1, top_logprobs: [] }] };

  for (const mode of MODES) {
    const run = (lm: CompatLM, kwargs: Record<string, unknown> = {}) =>
      mode === "sync" ? lm.call("q", undefined, kwargs) : lm.acall("q", undefined, kwargs);

    it(`${mode}: tool calls, requested logprobs and reasoning_content come back as objects`, async () => {
      const json = {
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: null, tool_calls: [toolCall] },
            logprobs,
            finish_reason: "tool_calls",
          },
          {
            index: 1,
            message: { role: "assistant", content: "Hi", reasoning_content: "thinking" },
            logprobs,
            finish_reason: "stop",
          },
        ],
      };
      const { lm } = await scripted("dspy-objects", [{ json }, { json }]);
      assert.deepEqual(await run(lm, { logprobs: true }), [
        { text: null, logprobs, tool_calls: [toolCall] },
        { text: "Hi", logprobs, reasoning_content: "thinking" },
      ]);
      // logprobs not requested: not returned; tool calls and reasoning still are.
      assert.deepEqual(await run(lm), [
        { text: null, tool_calls: [toolCall] },
        { text: "Hi", reasoning_content: "thinking" },
      ]);
      assert.equal(lm.history.length, 2);
    });

    it(`${mode}: content null stays null; plain answers are a list of strings`, async () => {
      const json = { choices: [{ message: { content: null } }, { message: { content: "b" } }] };
      const { lm } = await scripted("dspy-null", [{ json }]);
      assert.deepEqual(await run(lm), [null, "b"]);
    });
  }

  it("messages win over prompt, with no error (sync and async)", async () => {
    const model = uniqueModel("messages-win");
    const lm = new CompatLM({ model, base_url: server.baseUrl });
    const messages = [{ role: "user", content: "from messages" }];
    assert.deepEqual(lm.call("from prompt", messages), ["echo: from messages"]);
    assert.deepEqual(await lm.acall("from prompt", messages), ["echo: from messages"]);
    for (const request of await server.requests(model)) {
      assert.deepEqual((request.body as { messages: unknown }).messages, messages);
    }
  });

  it("copy keeps attributes set after construction", () => {
    const lm = new CompatLM({ model: "m", temperature: 0 });
    const extended = lm as CompatLM & { tag?: string; cache?: boolean };
    extended.tag = "eval-run-7";
    extended.cache = false;
    lm.kwargs.max_tokens = 9;
    const copy = lm.copy({ temperature: 0.5 }) as typeof extended;
    assert.equal(copy.tag, "eval-run-7");
    assert.equal(copy.cache, false);
    assert.deepEqual(copy.kwargs, { temperature: 0.5, max_tokens: 9 });
    const retagged = lm.copy({ tag: "other" }) as typeof extended;
    assert.equal(retagged.tag, "other");
    assert.ok(!("tag" in retagged.kwargs));
  });
});
