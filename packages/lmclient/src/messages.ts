import type { ChatMessage, CompletionResponse } from "./types.js";

/**
 * The messages a call sends: a string `prompt` becomes one user message, a `messages` list is
 * used as is. Exactly one of the two must be given.
 */
export function toMessages(
  prompt: string | null | undefined,
  messages: readonly ChatMessage[] | null | undefined,
): ChatMessage[] {
  const hasPrompt = prompt !== undefined && prompt !== null;
  const hasMessages = messages !== undefined && messages !== null;
  if (hasPrompt && hasMessages) {
    throw new TypeError(
      "pass either a prompt or a messages list, not both. " +
        "Put the prompt into the messages list as a user message instead.",
    );
  }
  if (!hasPrompt && !hasMessages) {
    throw new TypeError(
      'pass a prompt string or a messages list, e.g. lm.forward("Hello") or ' +
        'lm.forward(undefined, [{ role: "user", content: "Hello" }]).',
    );
  }
  if (hasPrompt) {
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

/** The text of every choice, in order. A choice without text content gives `""`. */
export function outputsOf(response: CompletionResponse): string[] {
  return response.choices.map((choice) => {
    const content = choice.message?.content;
    return typeof content === "string" ? content : "";
  });
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (value === null) return "null";
  return typeof value;
}
