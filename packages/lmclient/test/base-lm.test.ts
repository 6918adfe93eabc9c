import assert from "node:assert/strict";
import { describe, it, mock } from "node:test";
import {
  BaseLM,
  type BaseLMOptions,
  type ChatMessage,
  type CompletionResponse,
  DEFAULT_HISTORY_SIZE,
  type RequestKwargs,
} from "lmclient";

/** A BaseLM whose forward answers locally: no network, for the base-class behaviour. */
class EchoLM extends BaseLM {
  calls: {
    prompt?: string | null;
    messages?: readonly ChatMessage[] | null;
    kwargs?: RequestKwargs;
  }[] = [];

  constructor(options: BaseLMOptions) {
    super(options);
  }

  forward(
    prompt?: string | null,
    messages?: readonly ChatMessage[] | null,
    kwargs?: RequestKwargs,
  ): CompletionResponse {
    this.calls.push({ prompt, messages, kwargs });
    const text = prompt ?? String(messages?.at(-1)?.content);
    const n = typeof kwargs?.n === "number" ? kwargs.n : 1;
    return {
      id: "x",
      model: `${this.model}-served`,
      choices: Array.from({ length: n }, (_, index) => ({
        index,
        message: { role: "assistant", content: `${text} #${index}` },
        finish_reason: "stop",
      })),
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
    };
  }

  async aforward(
    prompt?: string | null,
    messages?: readonly ChatMessage[] | null,
    kwargs?: RequestKwargs,
  ): Promise<CompletionResponse> {
    await new Promise((resolve) => setImmediate(resolve));
    return this.forward(prompt, messages, kwargs);
  }
}

function quietly<T>(fn: () => T): T {
  const log = mock.method(console, "log", () => undefined);
  try {
    return fn();
  } finally {
    log.mock.restore();
  }
}

describe("BaseLM", () => {
  it("keeps model, modelType and extra options as kwargs", () => {
    const lm = new EchoLM({ model: "m", temperature: 0.2, max_tokens: 10, stop: null });
    assert.equal(lm.model, "m");
    assert.equal(lm.modelType, "chat");
    assert.equal(lm.historySize, DEFAULT_HISTORY_SIZE);
    assert.deepEqual(lm.kwargs, { temperature: 0.2, max_tokens: 10 });
    assert.deepEqual(lm.history, []);
  });

  it("rejects bad options with a TypeError that names the option", () => {
    assert.throws(() => new EchoLM({} as BaseLMOptions), { name: "TypeError", message: /model/ });
    assert.throws(() => new EchoLM({ model: "m", modelType: "text" as "chat" }), /modelType/);
    assert.throws(() => new EchoLM({ model: "m", historySize: -1 }), /historySize/);
    assert.throws(
      () => new EchoLM({ model: "m", historySize: 2, history_size: 3 }),
      /historySize or history_size/,
    );
  });

  it("call returns the text of every choice and records one history entry", () => {
    const lm = new EchoLM({ model: "m", temperature: 0, api_key: "never-in-history" });
    assert.deepEqual(lm.call("hi", undefined, { n: 2 }), ["hi #0", "hi #1"]);
    assert.equal(lm.history.length, 1);
    const entry = lm.history[0]!;
    assert.equal(entry.prompt, "hi");
    // As DSPy: messages is the argument (none for a prompt call), kwargs the call's own.
    assert.equal(entry.messages, null);
    assert.deepEqual(entry.kwargs, { n: 2 });
    assert.deepEqual(entry.outputs, ["hi #0", "hi #1"]);
    assert.deepEqual(entry.usage, { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 });
    assert.equal(entry.model, "m");
    assert.equal(entry.response_model, "m-served");
    assert.equal(entry.model_type, "chat");
    assert.equal(entry.responseModel, "m-served");
    assert.equal(entry.modelType, "chat");
    assert.equal(entry.cost, null);
    assert.match(entry.uuid, /^[0-9a-f-]{36}$/);
    assert.ok(!Number.isNaN(Date.parse(entry.timestamp)));
    assert.equal(entry.response.id, "x");
  });

  it("acall records like call", async () => {
    const lm = new EchoLM({ model: "m" });
    const messages: ChatMessage[] = [
      { role: "system", content: "be brief" },
      { role: "user", content: "yo" },
    ];
    assert.deepEqual(await lm.acall(undefined, messages), ["yo #0"]);
    assert.equal(lm.history.length, 1);
    assert.equal(lm.history[0]!.prompt, null);
    assert.deepEqual(lm.history[0]!.messages, messages);
    assert.notEqual(lm.history[0]!.messages, messages, "history keeps its own copy");
  });

  it("drops secret-named kwargs from history, at any depth", () => {
    const lm = new EchoLM({ model: "m", api_base: "x" });
    lm.call("hi", undefined, {
      apiKey: "s",
      api_base: "y",
      temperature: 1,
      headers: { Authorization: "Bearer s" },
    });
    assert.deepEqual(lm.history[0]!.kwargs, { headers: {}, temperature: 1 });
  });

  it("keeps at most historySize entries, oldest dropped first", () => {
    const lm = new EchoLM({ model: "m", historySize: 3 });
    for (let i = 0; i < 5; i += 1) lm.call(`p${i}`);
    assert.deepEqual(
      lm.history.map((entry) => entry.prompt),
      ["p2", "p3", "p4"],
    );
    const off = new EchoLM({ model: "m", history_size: 0 });
    assert.deepEqual(off.call("x"), ["x #0"]);
    assert.equal(off.history.length, 0);
  });

  it("forward alone records nothing (like DSPy)", () => {
    const lm = new EchoLM({ model: "m" });
    lm.forward("hi");
    assert.equal(lm.history.length, 0);
  });

  it("inspectHistory prints the last n calls and returns the text", () => {
    const lm = new EchoLM({ model: "m" });
    lm.call(undefined, [
      { role: "system", content: "You are terse." },
      { role: "user", content: "first question" },
    ]);
    lm.call("second question", undefined, { temperature: 0 });
    const printed: unknown[] = [];
    const log = mock.method(console, "log", (...args: unknown[]) => printed.push(...args));
    let text: string;
    try {
      text = lm.inspectHistory(2);
    } finally {
      log.mock.restore();
    }
    assert.deepEqual(printed, [text]);
    assert.match(text, /\(call 1 of 2\)/);
    assert.match(text, /\(call 2 of 2\)/);
    assert.match(text, /System message:\nYou are terse\./);
    assert.match(text, /User message:\nfirst question/);
    assert.match(text, /Response:\nfirst question #0/);
    assert.match(text, /User message:\nsecond question/);
    assert.match(text, /kwargs: \{"temperature":0\}/);
    assert.match(text, /usage: 1 prompt, 2 completion, 3 total tokens/);
    assert.ok(text.indexOf("first question") < text.indexOf("second question"));

    const last = quietly(() => lm.inspectHistory());
    assert.doesNotMatch(last, /first question/);
    assert.match(last, /\(call 2 of 2\)/);
    assert.equal(
      quietly(() => lm.inspectHistory(99)),
      text,
    );
    assert.equal(
      quietly(() => new EchoLM({ model: "m" }).inspectHistory()),
      "No LM calls recorded yet.",
    );
  });

  it("inspectHistory refuses an n that is not a positive integer, naming it", () => {
    const lm = new EchoLM({ model: "m" });
    lm.call("hi");
    for (const [n, shown] of [
      [Number.NaN, "number NaN"],
      [1.5, "number 1.5"],
      [0, "number 0"],
      [-1, "number -1"],
      [Number.POSITIVE_INFINITY, "number Infinity"],
      ["2", "string 2"],
    ] as const) {
      assert.throws(
        () => quietly(() => lm.inspectHistory(n as number)),
        (error: unknown) =>
          error instanceof TypeError &&
          error.message.includes("n must be a positive integer") &&
          error.message.includes(`got ${shown}`),
        String(n),
      );
    }
  });

  it("inspectHistory shows reasoning, tool calls and several choices", () => {
    class ToolLM extends EchoLM {
      override forward(): CompletionResponse {
        return {
          choices: [
            {
              message: {
                role: "assistant",
                content: null,
                reasoning_content: "need the weather",
                tool_calls: [
                  {
                    id: "c1",
                    type: "function",
                    function: { name: "weather", arguments: '{"city":"Oslo"}' },
                  },
                ],
              },
              finish_reason: "tool_calls",
            },
            { message: { role: "assistant", content: "plain" } },
          ],
        };
      }
    }
    const lm = new ToolLM({ model: "m" });
    // DSPy: a choice with tool calls or reasoning makes every output an object; null stays null.
    assert.deepEqual(lm.call("weather?"), [
      {
        text: null,
        reasoning_content: "need the weather",
        tool_calls: [
          {
            id: "c1",
            type: "function",
            function: { name: "weather", arguments: '{"city":"Oslo"}' },
          },
        ],
      },
      { text: "plain" },
    ]);
    const text = quietly(() => lm.inspectHistory());
    assert.match(text, /Reasoning 1 of 2:\nneed the weather/);
    assert.match(text, /Response 1 of 2:\n\(no content\)\ntool call: weather\(\{"city":"Oslo"\}\)/);
    assert.match(text, /\(finish_reason: tool_calls\)/);
    assert.match(text, /Response 2 of 2:\nplain/);
  });

  it("copy: new instance, same class, empty history, attributes and kwargs updated", () => {
    const lm = new EchoLM({ model: "m", temperature: 0.1, max_tokens: 5, historySize: 7 });
    lm.call("hi");
    const copy = lm.copy({ model: "m2", temperature: 0.9, top_p: 0.5, max_tokens: null });
    assert.ok(copy instanceof EchoLM);
    assert.notEqual(copy, lm);
    assert.equal(copy.model, "m2");
    assert.equal(copy.historySize, 7);
    assert.deepEqual(copy.kwargs, { temperature: 0.9, top_p: 0.5 });
    assert.deepEqual(copy.history, []);
    // the original is untouched
    assert.equal(lm.model, "m");
    assert.deepEqual(lm.kwargs, { temperature: 0.1, max_tokens: 5 });
    assert.equal(lm.history.length, 1);
  });

  it("copy: an attribute set to null/undefined goes back to its default; aliases work", () => {
    const lm = new EchoLM({ model: "m", historySize: 7 });
    assert.equal(lm.copy({ historySize: undefined }).historySize, DEFAULT_HISTORY_SIZE);
    assert.equal(lm.copy({ history_size: 2 }).historySize, 2);
    assert.throws(() => lm.copy({ model: null }), /model must be a non-empty string/);
  });

  it("copy: kwargs are deep-copied", () => {
    const lm = new EchoLM({ model: "m", stop: ["a"] });
    const copy = lm.copy();
    (copy.kwargs.stop as string[]).push("b");
    assert.deepEqual(lm.kwargs.stop, ["a"]);
  });
});
