import type { ChatMessage, CompletionResponse, ContentPart, ToolCall } from "./types.js";

/**
 * The messages a call sends: a string `prompt` becomes one user message, a `messages` list is
 * used as is. When both are given, `messages` wins (as in DSPy), unless it is empty: then the
 * prompt is sent (DSPy's `messages or [prompt]`). A message that is not a plain object (a class
 * instance, an object with `toJSON`) is taken as `JSON.stringify` makes it, as the official
 * `openai` client sends it.
 */
export function toMessages(
  prompt: string | null | undefined,
  messages: readonly ChatMessage[] | null | undefined,
): ChatMessage[] {
  const hasPrompt = prompt !== undefined && prompt !== null;
  const hasMessages =
    messages !== undefined &&
    messages !== null &&
    !(hasPrompt && Array.isArray(messages) && messages.length === 0);
  if (!hasPrompt && !hasMessages) {
    throw new TypeError(
      'pass a prompt string or a messages list, e.g. lm.forward("Hello") or ' +
        'lm.forward(undefined, [{ role: "user", content: "Hello" }]).',
    );
  }
  if (hasPrompt && !hasMessages) {
    if (typeof prompt !== "string") {
      throw new TypeError(
        `prompt must be a string, got ${describe(prompt)}. ` +
          "Pass a messages list as the second argument instead.",
      );
    }
    return [{ role: "user", content: prompt }];
  }
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new TypeError(
      `messages must be a non-empty array of messages, got ${describe(messages)}.`,
    );
  }
  return messages.map((message: unknown, index) => {
    const sent = asSent(message, index);
    if (typeof sent !== "object" || sent === null || typeof sent.role !== "string") {
      throw new TypeError(`messages[${index}] must be an object with a string role.`);
    }
    return sent;
  });
}

/** A message as the server gets it: a plain object copied, anything else through JSON. */
function asSent(message: unknown, index: number): ChatMessage | undefined {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return undefined;
  const proto = Object.getPrototypeOf(message) as unknown;
  const plain = proto === Object.prototype || proto === null;
  if (plain && typeof (message as { toJSON?: unknown }).toJSON !== "function") {
    return { ...(message as ChatMessage) };
  }
  let text: string | undefined;
  try {
    text = JSON.stringify(message);
  } catch (error) {
    throw new TypeError(
      `messages[${index}] must be JSON-serializable: ${(error as Error).message}.`,
    );
  }
  return text === undefined ? undefined : (JSON.parse(text) as ChatMessage);
}

/** One output of a choice carrying more than text (DSPy's output dict). */
export interface LMOutputObject {
  text: string | null;
  tool_calls?: ToolCall[];
  logprobs?: unknown;
  reasoning_content?: string;
  /** Parts of an array `content` that are neither text nor thinking (kept as sent). */
  content_parts?: ContentPart[];
}

/** One entry of what `call` / `acall` return. */
export type LMOutput = string | null | LMOutputObject;

/**
 * The outputs of a response, as DSPy's `BaseLM` builds them: per choice `text` (the message
 * content, `null` stays `null`), `logprobs` when they were requested, `tool_calls` and
 * `reasoning_content` when present. When no choice has more than its text, a list of texts.
 *
 * Reasoning comes as `message.reasoning_content` (vLLM before 0.17, DeepSeek) or
 * `message.reasoning` (Ollama's /v1, vLLM 0.17 and later, OpenRouter); LiteLLM maps both to
 * `reasoning_content`, so DSPy users see one key whatever the server.
 */
export function outputsOf(response: CompletionResponse, logprobsRequested = false): LMOutput[] {
  const objects = response.choices.map((choice) => {
    const message = choice.message ?? {};
    const content = splitContent(message.content);
    const output: LMOutputObject = { text: content.text };
    if (logprobsRequested) output.logprobs = choice.logprobs ?? null;
    if (Array.isArray(message.tool_calls) && message.tool_calls.length > 0) {
      output.tool_calls = message.tool_calls;
    }
    const reasoning = firstText(message.reasoning_content, message.reasoning, content.reasoning);
    if (reasoning !== undefined) output.reasoning_content = reasoning;
    if (content.rest.length > 0) output.content_parts = content.rest;
    return output;
  });
  if (objects.every((output) => Object.keys(output).length === 1)) {
    return objects.map((output) => output.text);
  }
  return objects;
}

function firstText(...candidates: unknown[]): string | undefined {
  for (const candidate of candidates) {
    if (typeof candidate === "string" && candidate) return candidate;
  }
  return undefined;
}

/**
 * The text of a message's content. An array of parts (Mistral's magistral, some gateways) is
 * read as LiteLLM reads it: the `text` parts joined, the `thinking` parts' text joined with
 * newlines as reasoning; any other part is kept as it came.
 */
function splitContent(content: unknown): {
  text: string | null;
  reasoning: string | undefined;
  rest: ContentPart[];
} {
  if (typeof content === "string" || content === null || content === undefined) {
    return { text: content ?? null, reasoning: undefined, rest: [] };
  }
  if (!Array.isArray(content)) {
    return { text: JSON.stringify(content), reasoning: undefined, rest: [] };
  }
  const texts: string[] = [];
  const thoughts: string[] = [];
  const rest: ContentPart[] = [];
  for (const part of content as unknown[]) {
    const record = (typeof part === "object" && part !== null ? part : {}) as ContentPart;
    if (record.type === "text" && typeof record.text === "string") {
      texts.push(record.text);
    } else if (record.type === "thinking" && thinkingText(record.thinking) !== undefined) {
      thoughts.push(thinkingText(record.thinking) as string);
    } else {
      rest.push(part as ContentPart);
    }
  }
  return {
    text: texts.length > 0 || rest.length === 0 ? texts.join("") : null,
    reasoning: thoughts.length > 0 ? thoughts.join("\n") : undefined,
    rest,
  };
}

/** The text of a thinking part: a string, or a list of `{ type: "text", text }` blocks. */
function thinkingText(thinking: unknown): string | undefined {
  if (typeof thinking === "string") return thinking;
  if (!Array.isArray(thinking)) return undefined;
  return thinking
    .map((block: unknown) =>
      typeof block === "object" && block !== null && typeof (block as ContentPart).text === "string"
        ? (block as ContentPart).text
        : "",
    )
    .join("\n");
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (value === null) return "null";
  return typeof value;
}
