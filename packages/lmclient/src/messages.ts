import type { ChatMessage, CompletionResponse, ToolCall } from "./types.js";

/**
 * The messages a call sends: a string `prompt` becomes one user message, a `messages` list is
 * used as is. When both are given, `messages` wins (as in DSPy).
 */
export function toMessages(
  prompt: string | null | undefined,
  messages: readonly ChatMessage[] | null | undefined,
): ChatMessage[] {
  const hasPrompt = prompt !== undefined && prompt !== null;
  const hasMessages = messages !== undefined && messages !== null;
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
  messages.forEach((message, index) => {
    if (typeof message !== "object" || message === null || typeof message.role !== "string") {
      throw new TypeError(`messages[${index}] must be an object with a string role.`);
    }
  });
  return messages.map((message) => ({ ...message }));
}

/** One output of a choice carrying more than text (DSPy's output dict). */
export interface LMOutputObject {
  text: string | null;
  tool_calls?: ToolCall[];
  logprobs?: unknown;
  reasoning_content?: string;
}

/** One entry of what `call` / `acall` return. */
export type LMOutput = string | null | LMOutputObject;

/**
 * The outputs of a response, as DSPy's `BaseLM` builds them: per choice `text` (the message
 * content, `null` stays `null`), `logprobs` when they were requested, `tool_calls` and
 * `reasoning_content` when present. When no choice has more than its text, a list of texts.
 */
export function outputsOf(response: CompletionResponse, logprobsRequested = false): LMOutput[] {
  const objects = response.choices.map((choice) => {
    const message = choice.message ?? {};
    const content = message.content;
    const output: LMOutputObject = {
      text:
        typeof content === "string" ? content : content == null ? null : JSON.stringify(content),
    };
    if (logprobsRequested) output.logprobs = choice.logprobs ?? null;
    if (Array.isArray(message.tool_calls) && message.tool_calls.length > 0) {
      output.tool_calls = message.tool_calls;
    }
    if (typeof message.reasoning_content === "string" && message.reasoning_content) {
      output.reasoning_content = message.reasoning_content;
    }
    return output;
  });
  if (objects.every((output) => Object.keys(output).length === 1)) {
    return objects.map((output) => output.text);
  }
  return objects;
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (value === null) return "null";
  return typeof value;
}
