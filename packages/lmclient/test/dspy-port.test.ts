/**
 * Issue 53: the last mile of a DSPy port. Cases ported from DSPy's tests/clients/test_lm.py
 * (stanfordnlp/dspy; each names its source) assert DSPy's behaviour against the scripted server
 * over loopback, through `forward` / `call` and `aforward` / `acall`.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import {
  type ChatMessage,
  CompatLM,
  type CompatLMOptions,
  configureCache,
  ContextWindowExceededError,
  NotFoundError,
  ResponseError,
  responseCache,
} from "lmclient";
import { type FakeServer, type Step, startFakeServer, uniqueModel } from "./support.js";

let server: FakeServer;

before(async () => {
  server = await startFakeServer();
});

after(async () => {
  await server.close();
});

type Mode = "sync" | "async";
const MODES: Mode[] = ["sync", "async"];

function call(
  mode: Mode,
  lm: CompatLM,
  prompt: string | null,
  kwargs: Record<string, unknown> = {},
  messages?: Record<string, unknown>[],
) {
  const list = messages as Parameters<CompatLM["call"]>[1];
  return mode === "sync" ? lm.call(prompt, list, kwargs) : lm.acall(prompt, list, kwargs);
}

function forward(mode: Mode, lm: CompatLM, prompt: string, kwargs: Record<string, unknown> = {}) {
  return mode === "sync"
    ? Promise.resolve(lm.forward(prompt, undefined, kwargs))
    : lm.aforward(prompt, undefined, kwargs);
}

async function fresh(label: string, options: Partial<CompatLMOptions> = {}, steps: Step[] = []) {
  const model = uniqueModel(label);
  if (steps.length > 0) await server.script(model, steps);
  const lm = new CompatLM({ model, base_url: server.baseUrl, ...options });
  const sent = async () => (await server.requests(model)).length;
  return { model, lm, sent };
}

describe("cache (DSPy's dspy.cache)", () => {
  for (const mode of MODES) {
    it(`${mode}: two identical calls send one request (test_dspy_cache)`, async () => {
      const { lm, sent } = await fresh(`cache-${mode}`);
      const first = await call(mode, lm, "Query");
      const second = await call(mode, lm, "Query");
      assert.deepEqual(second, first);
      assert.equal(await sent(), 1);
      // A hit spends no tokens: DSPy empties usage and records no cost.
      assert.deepEqual(lm.history[0]?.usage, {
        prompt_tokens: 7,
        completion_tokens: 3,
        total_tokens: 10,
      });
      assert.deepEqual(lm.history[1]?.usage, {});
    });

    it(`${mode}: a hit has a fresh answer's shape, marked cache_hit`, async () => {
      const { lm } = await fresh(`cache-shape-${mode}`);
      const first = await forward(mode, lm, "shape");
      const second = await forward(mode, lm, "shape");
      assert.equal((first as { cache_hit?: boolean }).cache_hit, undefined);
      assert.equal((second as { cache_hit?: boolean }).cache_hit, true);
      assert.deepEqual(Object.keys(second), Object.keys(first));
      assert.deepEqual({ ...second, usage: first.usage }, { ...first });
    });

    it(`${mode}: rollout_id is part of the key and never sent (test_rollout_id_bypasses_cache)`, async () => {
      const { model, lm, sent } = await fresh(`rollout-${mode}`);
      const query = [{ role: "user", content: "Query" }];
      const noRid = [{ role: "user", content: "NoRID" }];
      const counts: number[] = [];
      for (const [messages, kwargs] of [
        [query, { rollout_id: 1 }],
        [query, { rollout_id: 1 }],
        [query, { rollout_id: 2 }],
        [noRid, {}],
        [noRid, { rollout_id: null }],
      ] as const) {
        const before = await sent();
        await call(mode, lm, null, kwargs, [...messages]);
        counts.push((await sent()) - before);
      }
      assert.deepEqual(counts, [1, 0, 1, 1, 0]);
      for (const request of await server.requests(model)) {
        assert.ok(!("rollout_id" in (request.body as object)));
      }
    });

    it(`${mode}: cache: false for the instance or the call sends every call`, async () => {
      const off = await fresh(`cache-off-${mode}`, { cache: false });
      await call(mode, off.lm, "q");
      await call(mode, off.lm, "q");
      assert.equal(await off.sent(), 2);
      const perCall = await fresh(`cache-off-call-${mode}`);
      await call(mode, perCall.lm, "q", { cache: false });
      await call(mode, perCall.lm, "q", { cache: false });
      // Nor is an answer fetched with cache: false stored.
      await call(mode, perCall.lm, "q");
      assert.equal(await perCall.sent(), 3);
      await call(mode, perCall.lm, "q");
      assert.equal(await perCall.sent(), 3);
      for (const request of await server.requests(perCall.model)) {
        assert.ok(!("cache" in (request.body as object)));
      }
    });

    it(`${mode}: a different prompt or argument asks again; argument order does not`, async () => {
      const { lm, sent } = await fresh(`cache-key-${mode}`);
      await call(mode, lm, "a", { temperature: 0.5, top_p: 0.9 });
      await call(mode, lm, "a", { top_p: 0.9, temperature: 0.5 });
      assert.equal(await sent(), 1);
      await call(mode, lm, "b", { temperature: 0.5, top_p: 0.9 });
      await call(mode, lm, "a", { temperature: 0.6, top_p: 0.9 });
      assert.equal(await sent(), 3);
    });

    it(`${mode}: a failed call is not cached`, async () => {
      const { lm, sent } = await fresh(`cache-error-${mode}`, { maxRetries: 0 }, [
        { status: 500, json: { error: { message: "boom" } } },
      ]);
      await assert.rejects(async () => call(mode, lm, "q"));
      await call(mode, lm, "q");
      await call(mode, lm, "q");
      assert.equal(await sent(), 2);
    });
  }

  it("forward and aforward share entries (they send the same bytes)", async () => {
    const { lm, sent } = await fresh("cache-both");
    lm.forward("shared");
    await lm.aforward("shared");
    await lm.acall("shared");
    assert.equal(await sent(), 1);
  });

  it("copy() shares the cache, as DSPy's global cache; a new rollout_id asks again", async () => {
    const { lm, sent } = await fresh("cache-copy");
    lm.call("copied");
    const copy = lm.copy({ historySize: 5 });
    assert.equal(copy.cache, true);
    copy.call("copied");
    await copy.acall("copied");
    assert.equal(await sent(), 1);
    lm.copy({ rollout_id: 7, temperature: 1 }).call("copied");
    assert.equal(await sent(), 2);
    const uncached = lm.copy({ cache: false });
    assert.equal(uncached.cache, false);
    uncached.call("copied");
    assert.equal(await sent(), 3);
    // Another client for the same model and request shares it too (base_url and api_key are
    // not part of DSPy's key).
    const other = new CompatLM({ model: lm.model, base_url: `${server.baseUrl}/`, api_key: "k2" });
    other.call("copied");
    assert.equal(await sent(), 3);
  });

  it("changing the answer a call returned leaves the cached one alone", async () => {
    const { lm } = await fresh("cache-mutate");
    const first = lm.forward("m");
    const message = first.choices[0]?.message;
    if (message) message.content = "changed";
    assert.equal(lm.forward("m").choices[0]?.message?.content, "echo: m");
  });

  it("lm.cache = new Map() fails where it is done; true/false are accepted", () => {
    const lm = new CompatLM({ model: "m", base_url: server.baseUrl });
    assert.throws(
      () => {
        (lm as unknown as { cache: unknown }).cache = new Map();
      },
      (error: Error) =>
        error instanceof TypeError &&
        /lm\.cache must be true or false/.test(error.message) &&
        /a Map/.test(error.message),
    );
    assert.equal(lm.cache, true);
    lm.cache = false;
    assert.equal(lm.copy().cache, false);
    assert.equal(JSON.parse(JSON.stringify(lm)).cache, false);
    assert.throws(
      () => lm.forward("x", undefined, { cache: "no" }),
      /kwargs\.cache must be true or false/,
    );
  });

  it("responseCache.clear() empties it", async () => {
    const { lm, sent } = await fresh("cache-clear");
    lm.call("c");
    assert.ok(responseCache.size > 0);
    responseCache.clear();
    assert.equal(responseCache.size, 0);
    lm.call("c");
    assert.equal(await sent(), 2);
  });
});

/** The warnings `fn` makes the process emit (they arrive on a later tick). */
async function warningsDuring(fn: () => unknown): Promise<Error[]> {
  const seen: Error[] = [];
  const listener = (warning: Error) => seen.push(warning);
  process.on("warning", listener);
  try {
    await fn();
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off("warning", listener);
  }
  return seen;
}

describe("rollout_id at temperature 0 (DSPy's warning)", () => {
  for (const mode of MODES) {
    it(`${mode}: warns once per instance (test_zero_temperature_rollout_warns_once)`, async () => {
      const { lm, sent } = await fresh(`rollout-zero-${mode}`, { temperature: 0 });
      const first = await warningsDuring(() => call(mode, lm, "Query", { rollout_id: 1 }));
      assert.equal(first.length, 1);
      assert.match(first[0]?.message ?? "", /rollout_id has no effect when temperature=0/);
      assert.equal((first[0] as { code?: string }).code, "LMCLIENT_ROLLOUT_AT_ZERO_TEMPERATURE");
      const second = await warningsDuring(() => call(mode, lm, "Query", { rollout_id: 2 }));
      assert.equal(second.length, 0);
      // The rollout is still part of the key, as in DSPy.
      assert.equal(await sent(), 2);
      const again = await warningsDuring(() => call(mode, lm.copy(), "Query", { rollout_id: 3 }));
      assert.equal(again.length, 1, "a copy warns again");
    });

    it(`${mode}: no warning at the default temperature (test_rollout_id_with_default_temperature_does_not_warn)`, async () => {
      const seen = await warningsDuring(async () => {
        const { lm } = await fresh(`rollout-default-${mode}`, { rollout_id: 1 });
        await call(mode, lm, "Query");
        await call(mode, lm, "Query", { temperature: 0.5, rollout_id: 2 });
      });
      assert.deepEqual(seen, []);
    });
  }

  it("a rollout_id and temperature 0 given to the constructor warn there", async () => {
    const seen = await warningsDuring(
      () => new CompatLM({ model: "m", temperature: 0, rollout_id: 1 }),
    );
    assert.equal(seen.length, 1);
  });
});

describe("disk cache (configureCache, DSPy's configure_cache)", () => {
  const folders: string[] = [];
  const folder = () => {
    const made = mkdtempSync(join(tmpdir(), "lmclient-disk-cache-"));
    folders.push(made);
    return made;
  };

  after(() => {
    configureCache({});
    for (const made of folders) rmSync(made, { recursive: true, force: true });
  });

  /** Runs `forward` in a new Node process with the disk cache in `dir`: was it a cache hit? */
  // Not spawnSync: a blocked event loop lets the test's keep-alive socket to the server expire.
  async function forwardInAnotherProcess(dir: string, model: string, prompt: string) {
    const script =
      'import { CompatLM, configureCache } from "lmclient";' +
      "const [dir, model, baseUrl, prompt] = process.argv.slice(1);" +
      "configureCache({ disk_cache_dir: dir });" +
      "const response = new CompatLM({ model, base_url: baseUrl }).forward(prompt);" +
      "console.log(JSON.stringify({ hit: response.cache_hit === true, text: response.choices[0].message.content }));";
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--input-type=module", "-e", script, dir, model, server.baseUrl, prompt],
      { encoding: "utf8", cwd: new URL(".", import.meta.url) },
    );
    const answer = JSON.parse(stdout) as { hit: boolean; text: string };
    assert.equal(answer.text, `echo: ${prompt}`);
    return answer.hit;
  }

  it("answers are kept in the folder and found by a later process (test_dspy_cache)", async () => {
    const dir = folder();
    const model = uniqueModel("disk");
    configureCache({ enable_disk_cache: true, disk_cache_dir: dir });
    assert.equal(responseCache.size, 0, "a configured cache starts empty, as DSPy's new Cache");
    const lm = new CompatLM({ model, base_url: server.baseUrl });
    lm.call("Query");
    assert.equal(responseCache.size, 1);
    const shards = readdirSync(dir);
    assert.equal(shards.length, 1);
    assert.equal(readdirSync(join(dir, shards[0] ?? "")).length, 1);
    lm.call("Query");
    assert.deepEqual(lm.history[1]?.usage, {});
    assert.equal((await server.requests(model)).length, 1);

    assert.equal(await forwardInAnotherProcess(dir, model, "Query"), true);
    assert.equal(await forwardInAnotherProcess(dir, model, "Other"), false);
    assert.equal(await forwardInAnotherProcess(dir, model, "Other"), true);
    assert.equal((await server.requests(model)).length, 2);

    // Memory emptied: the disk level answers, and fills memory again.
    responseCache.clear();
    await lm.acall("Query");
    assert.equal(responseCache.size, 1);
    assert.equal((await server.requests(model)).length, 2);
    responseCache.clear({ disk: true });
    lm.call("Query");
    assert.equal((await server.requests(model)).length, 3);
  });

  it("acall: memory and disk filled, the second call answered (test_async_lm_call_with_cache)", async () => {
    const dir = folder();
    const model = uniqueModel("disk-async");
    configureCache({ enable_disk_cache: true, enable_memory_cache: true, disk_cache_dir: dir });
    const lm = new CompatLM({ model, base_url: server.baseUrl });
    await lm.acall("Query");
    assert.equal(responseCache.size, 1);
    assert.equal(readdirSync(dir).length, 1);
    await lm.acall("Query");
    assert.equal((await server.requests(model)).length, 1);
    await lm.acall("New query");
    assert.equal(responseCache.size, 2);
    assert.equal((await server.requests(model)).length, 2);
  });

  it("both levels off: every call is sent (test_disabled_cache_skips_cache_key)", async () => {
    configureCache({ enable_disk_cache: false, enable_memory_cache: false });
    const model = uniqueModel("levels-off");
    const lm = new CompatLM({ model, base_url: server.baseUrl });
    lm.call(null, [{ role: "user", content: "Hello" }]);
    lm.call(null, [{ role: "user", content: "Hello" }]);
    assert.equal((await server.requests(model)).length, 2);
    assert.equal(responseCache.size, 0);
    configureCache({});
  });

  it("a damaged file is a miss, replaced by the next answer", async () => {
    const dir = folder();
    const model = uniqueModel("disk-damaged");
    configureCache({ disk_cache_dir: dir, enable_memory_cache: false });
    const lm = new CompatLM({ model, base_url: server.baseUrl });
    lm.forward("q");
    const [shard] = readdirSync(dir);
    const [file] = readdirSync(join(dir, shard ?? ""));
    writeFileSync(join(dir, shard ?? "", file ?? ""), '{"format":1,"response":{"choi');
    assert.equal(lm.forward("q").choices[0]?.message?.content, "echo: q");
    assert.equal(lm.forward("q").cache_hit, true);
    assert.equal((await server.requests(model)).length, 2);
    assert.equal(responseCache.size, 0, "memory level off");
  });

  it("a folder it cannot write fails in configureCache; a write failing later warns once", async () => {
    const dir = folder();
    const blocker = join(dir, "a-file");
    writeFileSync(blocker, "");
    assert.throws(
      () => configureCache({ disk_cache_dir: join(blocker, "cache") }),
      (error: Error) =>
        error.message.startsWith(`disk_cache_dir ${join(blocker, "cache")} cannot be used`),
    );
    assert.throws(
      () => configureCache({ disk_size_limit_bytes: 1 } as never),
      /unknown option "disk_size_limit_bytes"/,
    );
    assert.throws(
      () => configureCache({ disk_cache_dir: dir, diskCacheDir: `${dir}x` }),
      /pass disk_cache_dir or diskCacheDir, not both/,
    );
    // Every subfolder name taken by a file: no answer can be written.
    const full = folder();
    configureCache({ disk_cache_dir: full });
    for (let index = 0; index < 256; index += 1) {
      writeFileSync(join(full, index.toString(16).padStart(2, "0")), "");
    }
    const model = uniqueModel("disk-unwritable");
    const lm = new CompatLM({ model, base_url: server.baseUrl });
    const seen = await warningsDuring(() => {
      lm.forward("a");
      lm.forward("b");
    });
    assert.equal(seen.length, 1);
    assert.equal((seen[0] as { code?: string }).code, "LMCLIENT_DISK_CACHE_WRITE");
    assert.match(seen[0]?.message ?? "", /could not write to its disk cache/);
    assert.equal(lm.forward("a").cache_hit, true, "memory still caches");
  });
});

describe("OpenAI reasoning models (o1, o3, o4, gpt-5)", () => {
  it("max_tokens becomes max_completion_tokens by name (test_reasoning_model_token_parameter)", () => {
    const cases: [string, boolean][] = [
      ["openai/o1", true],
      ["openai/o1-mini", true],
      ["openai/o1-2023-01-01", true],
      ["openai/o3", true],
      ["openai/o3-mini-2023-01-01", true],
      ["o4-mini", true],
      ["openai/gpt-5", true],
      ["openai/gpt-5-mini", true],
      ["GPT-5-nano", true],
      ["azure/gpt-5-chat", false],
      ["openai/gpt-4", false],
      ["anthropic/claude-2", false],
      ["llama3.2", false],
      ["o1-preview-tuned", false],
    ];
    for (const [model, reasoning] of cases) {
      const lm = new CompatLM({
        model,
        temperature: reasoning ? 1 : 0.7,
        max_tokens: reasoning ? 16_000 : 1000,
      });
      if (reasoning) {
        assert.equal(lm.kwargs.max_completion_tokens, 16_000, model);
        assert.ok(!("max_tokens" in lm.kwargs), model);
      } else {
        assert.equal(lm.kwargs.max_tokens, 1000, model);
        assert.ok(!("max_completion_tokens" in lm.kwargs), model);
      }
    }
  });

  for (const model of ["openai/o1", "openai/gpt-5-nano", "openai/gpt-5-mini"]) {
    it(`${model}: temperature and token limits DSPy refuses are refused (test_reasoning_model_requirements)`, () => {
      for (const options of [
        { temperature: 0.7, max_tokens: 1000 },
        { temperature: 0.7 },
        { max_tokens: 1000 },
        { max_completion_tokens: 8000 },
        { temperature: 0 },
      ]) {
        assert.throws(
          () => new CompatLM({ model, ...options }),
          (error: Error) =>
            error instanceof TypeError &&
            /reasoning model: it requires temperature 1 or none and max_tokens >= 16000/.test(
              error.message,
            ),
          JSON.stringify(options),
        );
      }
      assert.equal(
        new CompatLM({ model, temperature: 1, max_tokens: 16_000 }).kwargs.max_completion_tokens,
        16_000,
      );
      const bare = new CompatLM({ model });
      assert.equal(bare.kwargs.temperature, undefined);
      assert.equal(bare.kwargs.max_completion_tokens, undefined);
    });
  }

  it("gpt-5-chat is not a reasoning model (test_gpt_5_chat_not_reasoning_model)", () => {
    const lm = new CompatLM({ model: "openai/gpt-5-chat", temperature: 0.7, max_tokens: 1000 });
    assert.deepEqual(lm.kwargs, { temperature: 0.7, max_tokens: 1000 });
  });

  for (const mode of MODES) {
    it(`${mode}: the request carries max_completion_tokens, never max_tokens`, async () => {
      const { model, lm } = await fresh(`o3-mini-${mode}`, { max_tokens: 20_000 });
      // uniqueModel suffixes the name, so build the real one by hand.
      const reasoning = new CompatLM({
        model: "o3-mini",
        base_url: server.baseUrl,
        max_tokens: 20_000,
        cache: false,
      });
      assert.deepEqual(reasoning.requestBody("q"), {
        model: "o3-mini",
        messages: [{ role: "user", content: "q" }],
        max_completion_tokens: 20_000,
      });
      const before = (await server.requests("o3-mini")).length;
      await forward(mode, reasoning, "q", { max_tokens: 32_000, temperature: 1 });
      const requests = await server.requests("o3-mini");
      assert.equal(requests.length, before + 1);
      const body = requests.at(-1)?.body as Record<string, unknown>;
      assert.equal(body.max_completion_tokens, 32_000);
      assert.ok(!("max_tokens" in body));
      // A non-reasoning model keeps max_tokens as given.
      await forward(mode, lm, "q");
      assert.equal(
        ((await server.requests(model))[0]?.body as Record<string, unknown>).max_tokens,
        20_000,
      );
    });

    it(`${mode}: a per-call temperature or limit DSPy refuses fails before any request`, async () => {
      const lm = new CompatLM({ model: "gpt-5", base_url: server.baseUrl, cache: false });
      const before = (await server.requests("gpt-5")).length;
      for (const kwargs of [{ temperature: 0.2 }, { max_tokens: 512 }]) {
        await assert.rejects(
          async () => forward(mode, lm, "q", kwargs),
          /gpt-5 is an OpenAI reasoning model/,
        );
      }
      assert.equal((await server.requests("gpt-5")).length, before);
    });
  }

  it("copy: a new max_tokens replaces the limit; max_tokens: null removes it", () => {
    const lm = new CompatLM({ model: "o1", max_tokens: 16_000 });
    assert.equal(lm.copy({ max_tokens: 40_000 }).kwargs.max_completion_tokens, 40_000);
    assert.ok(!("max_completion_tokens" in lm.copy({ max_tokens: null }).kwargs));
    assert.throws(() => lm.copy({ max_tokens: 100 }), /reasoning model/);
    assert.equal(
      lm.requestBody("q", undefined, { max_tokens: null }).max_completion_tokens,
      undefined,
    );
  });
});

/** A message class with `toJSON`, as chat libraries write them. */
class TextMessage {
  constructor(
    readonly role: string,
    readonly text: string,
  ) {}
  toJSON() {
    return { role: this.role, content: this.text };
  }
}

/** A class whose content is a getter on the prototype (JSON.stringify leaves it out). */
class GetterMessage {
  role = "user";
  #content: string;
  constructor(content: string) {
    this.#content = content;
  }
  get content() {
    return this.#content;
  }
}

describe("messages that are class instances", () => {
  for (const mode of MODES) {
    it(`${mode}: sent as the official openai client sends them (toJSON, own enumerable fields)`, async () => {
      const model = uniqueModel(`instances-${mode}`);
      const messages = () => [
        new TextMessage("system", "Be brief."),
        Object.assign(new GetterMessage("hidden"), { name: "ann" }),
        new TextMessage("user", "Hello"),
      ];
      const official = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
      await official.chat.completions.create({
        model,
        messages: messages() as unknown as OpenAI.ChatCompletionMessageParam[],
      });
      const lm = new CompatLM({ model, base_url: server.baseUrl, api_key: "k", cache: false });
      const sent = messages() as unknown as ChatMessage[];
      if (mode === "sync") lm.call(null, sent);
      else await lm.acall(null, sent);
      const [reference, ours] = await server.requests(model);
      assert.deepEqual(ours?.body, reference?.body);
      assert.deepEqual((ours?.body as { messages: unknown }).messages, [
        { role: "system", content: "Be brief." },
        { role: "user", name: "ann" },
        { role: "user", content: "Hello" },
      ]);
      assert.deepEqual(lm.history[0]?.messages?.[0], { role: "system", content: "Be brief." });
    });
  }

  it("messages=[] with a prompt falls back to the prompt (DSPy's messages or [prompt])", () => {
    const lm = new CompatLM({ model: "m", base_url: server.baseUrl });
    assert.deepEqual(lm.requestBody("hi", []).messages, [{ role: "user", content: "hi" }]);
    assert.throws(() => lm.requestBody(null, []), /messages must be a non-empty array/);
  });

  it("an instance whose JSON has no role, or that cannot be serialized, is a TypeError", () => {
    const lm = new CompatLM({ model: "m", base_url: server.baseUrl });
    const noRole = { toJSON: () => ({ content: "x" }) } as unknown as ChatMessage;
    assert.throws(
      () => lm.requestBody(null, [noRole]),
      /messages\[0\] must be an object with a string role/,
    );
    const big = new (class {
      role = "user";
      content = 1n;
    })() as unknown as ChatMessage;
    assert.throws(() => lm.requestBody(null, [big]), /messages\[0\] must be JSON-serializable/);
  });
});

describe("history entries and defaults as DSPy's", () => {
  const DSPY_KEYS = [
    "prompt",
    "messages",
    "kwargs",
    "response",
    "outputs",
    "usage",
    "cost",
    "timestamp",
    "uuid",
    "model",
    "response_model",
    "model_type",
  ];

  for (const mode of MODES) {
    it(`${mode}: an entry has DSPy's keys; the TypeScript spellings are aliases`, async () => {
      const { model, lm } = await fresh(`entry-${mode}`, { temperature: 0, cache: false }, [
        {
          json: {
            model: "served",
            choices: [{ message: { role: "assistant", content: "hi" } }],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, cost: 0.0004 },
          },
        },
      ]);
      await call(mode, lm, "q", { n: 1, api_version: "2024-10-21" });
      await call(mode, lm, null, {}, [{ role: "user", content: "m" }]);
      const [promptCall, messagesCall] = lm.history;
      assert.deepEqual(Object.keys(promptCall ?? {}), DSPY_KEYS);
      assert.equal(promptCall?.prompt, "q");
      assert.equal(promptCall?.messages, null);
      assert.deepEqual(promptCall?.kwargs, { n: 1 });
      assert.equal(promptCall?.cost, 0.0004);
      assert.equal(promptCall?.response_model, "served");
      assert.equal(promptCall?.responseModel, "served");
      assert.equal(promptCall?.model_type, "chat");
      assert.equal(promptCall?.modelType, "chat");
      assert.equal(promptCall?.model, model);
      assert.ok(!("responseModel" in JSON.parse(JSON.stringify(promptCall))));
      assert.equal(messagesCall?.prompt, null);
      assert.deepEqual(messagesCall?.messages, [{ role: "user", content: "m" }]);
      assert.deepEqual(messagesCall?.kwargs, {});
      assert.equal(messagesCall?.cost, null);
      assert.deepEqual(messagesCall?.usage, {
        prompt_tokens: 7,
        completion_tokens: 3,
        total_tokens: 10,
      });
    });

    it(`${mode}: per-call headers replace the constructor's; history shows the ones sent`, async () => {
      const { model, lm } = await fresh(`headers-${mode}`, {
        headers: { "X-Team": "evals", "X-Trace": "default" },
        cache: false,
      });
      await call(mode, lm, "a");
      await call(mode, lm, "b", { headers: { "X-Trace": "call" } });
      const [first, second] = await server.requests(model);
      assert.equal(first?.headers["x-team"], "evals");
      assert.equal(first?.headers["x-trace"], "default");
      assert.equal(second?.headers["x-team"], undefined);
      assert.equal(second?.headers["x-trace"], "call");
      assert.deepEqual(lm.history[1]?.kwargs, { headers: { "X-Trace": "call" } });
    });

    it(`${mode}: num_retries defaults to 3 (four attempts)`, async () => {
      const busy: Step = {
        status: 503,
        headers: { "retry-after-ms": "1" },
        json: { error: { message: "busy" } },
      };
      const { lm, sent } = await fresh(`retries-${mode}`, { cache: false }, [
        busy,
        busy,
        busy,
        busy,
      ]);
      assert.equal(lm.maxRetries, 3);
      await assert.rejects(async () => call(mode, lm, "q"), { name: "ServerError" });
      assert.equal(await sent(), 4);
    });
  }
});

describe("smaller items (issue 53 point 5)", () => {
  for (const mode of MODES) {
    it(`${mode}: an openai/ name is sent as written; its 404 says how DSPy's prefix differs`, async () => {
      const bare = uniqueModel(`prefixed-${mode}`);
      const model = `openai/${bare}`;
      await server.script(model, [
        { status: 404, json: { error: { message: `model "${model}" not found` } } },
      ]);
      const lm = new CompatLM({ model, base_url: server.baseUrl, cache: false });
      await assert.rejects(
        async () => call(mode, lm, "q"),
        (error: unknown) =>
          error instanceof NotFoundError &&
          error.message.includes(`strips the provider prefix "openai/"`) &&
          error.message.includes(`pass model: "${bare}"`),
      );
      const [request] = await server.requests(model);
      assert.equal((request?.body as { model?: unknown }).model, model);
      // A name without a provider prefix gets no such hint.
      const plain = uniqueModel(`Qwen/unprefixed-${mode}`);
      await server.script(plain, [{ status: 404, json: { error: { message: "no such model" } } }]);
      const other = new CompatLM({ model: plain, base_url: server.baseUrl, cache: false });
      await assert.rejects(
        async () => call(mode, other, "q"),
        (error: unknown) =>
          error instanceof NotFoundError && !/provider prefix/.test(error.message),
      );
    });

    it(`${mode}: a 200 whose body is {"error": ...} fills the error's server fields`, async () => {
      const { lm, sent } = await fresh(`error-200-${mode}`, { cache: false }, [
        {
          json: {
            error: {
              message: "upstream provider refused the key",
              type: "authentication_error",
              code: "invalid_api_key",
              param: null,
            },
          },
        },
        { json: { error: "plain text failure" } },
      ]);
      await assert.rejects(
        async () => call(mode, lm, "q"),
        (error: unknown) =>
          error instanceof ResponseError &&
          error.status === 200 &&
          error.serverMessage === "upstream provider refused the key" &&
          error.serverCode === "invalid_api_key" &&
          error.serverType === "authentication_error" &&
          /HTTP 200 with an error instead of a chat completion: upstream provider refused/.test(
            error.message,
          ),
      );
      await assert.rejects(
        async () => call(mode, lm, "q"),
        (error: unknown) =>
          error instanceof ResponseError && error.serverMessage === "plain text failure",
      );
      // Not retried: the server answered.
      assert.equal(await sent(), 2);
    });

    it(`${mode}: llama.cpp's context error is read from its type field`, async () => {
      const { lm } = await fresh(`llama-cpp-context-${mode}`, { cache: false }, [
        {
          status: 400,
          json: {
            error: { code: 400, message: "request too large", type: "exceed_context_size_error" },
          },
        },
      ]);
      await assert.rejects(
        async () => call(mode, lm, "q"),
        (error: unknown) =>
          error instanceof ContextWindowExceededError &&
          error.serverType === "exceed_context_size_error" &&
          error.serverCode === "400",
      );
    });
  }

  it("any option assigned a wrong value fails where it is assigned, not at copy() or a call", async () => {
    const wrong: Record<string, unknown> = {
      model: 5,
      modelType: "text",
      historySize: -1,
      callbacks: {},
      kwargs: [],
      history: "none",
      baseUrl: "ftp://example.com/v1",
      timeout: "10s",
      maxRetries: 1.5,
      maxResponseBytes: Number.NaN,
    };
    for (const [field, value] of Object.entries(wrong)) {
      const lm = new CompatLM({ model: "m", base_url: server.baseUrl });
      assert.throws(
        () => {
          (lm as unknown as Record<string, unknown>)[field] = value;
        },
        (error: unknown) =>
          error instanceof TypeError && error.message.startsWith(`Cannot set lm.${field}: `),
        field,
      );
      assert.doesNotThrow(() => lm.copy(), field);
    }
    // A right value takes effect, in calls and copies, as assigning does in DSPy.
    const { model, lm } = await fresh("assigned", { base_url: "http://127.0.0.1:9/v1" });
    const writable = lm as unknown as Record<string, unknown>;
    writable.baseUrl = server.baseUrl;
    writable.timeout = 5_000;
    lm.history = [];
    assert.equal(lm.call("q")[0], "echo: q");
    assert.equal((await server.requests(model)).length, 1);
    assert.equal(lm.copy().timeout, 5_000);
    assert.equal(lm.copy().baseUrl, server.baseUrl);
    assert.deepEqual(Object.keys(JSON.parse(JSON.stringify(lm))).slice(0, 3), [
      "model",
      "modelType",
      "historySize",
    ]);
  });

  it("headers that frame the request are refused where given, naming the header", () => {
    for (const name of ["Content-Length", "host", "Transfer-Encoding", "Connection"]) {
      assert.throws(
        () => new CompatLM({ model: "m", headers: { [name]: "1" } }),
        (error: unknown) =>
          error instanceof TypeError &&
          error.message.startsWith(`headers["${name}"] cannot be set`) &&
          /Remove it from the headers/.test(error.message),
        name,
      );
      const lm = new CompatLM({ model: "m", base_url: server.baseUrl });
      assert.throws(
        () => lm.forward("q", undefined, { headers: { [name]: "1" } }),
        (error: unknown) =>
          error instanceof TypeError &&
          error.message.startsWith(`kwargs.headers["${name}"] cannot be set`),
        name,
      );
    }
  });
});
