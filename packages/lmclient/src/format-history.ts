import type { HistoryEntry } from "./base-lm.js";
import type { ChatMessage, CompletionChoice, ContentPart, ToolCall } from "./types.js";

/** The last `n` history entries as readable text: messages, responses, usage. */
export function formatHistory(history: readonly HistoryEntry[], n: number): string {
  if (history.length === 0) return "No LM calls recorded yet.";
  const count = Math.min(n, history.length);
  const start = history.length - count;
  return history
    .slice(start)
    .map((entry, offset) => formatEntry(entry, start + offset + 1, history.length))
    .join("\n\n");
}

function formatEntry(entry: HistoryEntry, position: number, total: number): string {
  const lines: string[] = [`[${entry.timestamp}] ${entry.model} (call ${position} of ${total})`];
  if (Object.keys(entry.kwargs).length > 0) lines.push(`kwargs: ${JSON.stringify(entry.kwargs)}`);
  const messages =
    entry.messages ?? (entry.prompt === null ? [] : [{ role: "user", content: entry.prompt }]);
  for (const message of messages) {
    lines.push("", `${roleLabel(message)}:`, formatContent(message.content));
    for (const call of message.tool_calls ?? []) lines.push(formatToolCall(call));
  }
  const choices = entry.response.choices;
  if (choices.length === 0) lines.push("", "Response:", "(no choices)");
  choices.forEach((choice, index) => {
    const suffix = choices.length > 1 ? ` ${index + 1} of ${choices.length}` : "";
    lines.push(...formatChoice(choice, suffix));
  });
  const usage = entry.usage;
  if (usage) {
    const parts = [
      usage.prompt_tokens === undefined ? undefined : `${usage.prompt_tokens} prompt`,
      usage.completion_tokens === undefined ? undefined : `${usage.completion_tokens} completion`,
      usage.total_tokens === undefined ? undefined : `${usage.total_tokens} total`,
    ].filter((part) => part !== undefined);
    if (parts.length > 0) lines.push("", `usage: ${parts.join(", ")} tokens`);
  }
  return lines.join("\n");
}

function formatChoice(choice: CompletionChoice, suffix: string): string[] {
  const lines: string[] = [];
  const message = choice.message ?? {};
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (typeof reasoning === "string" && reasoning) {
    lines.push("", `Reasoning${suffix}:`, reasoning);
  }
  lines.push("", `Response${suffix}:`, formatContent(message.content));
  for (const call of message.tool_calls ?? []) lines.push(formatToolCall(call));
  if (choice.finish_reason && choice.finish_reason !== "stop") {
    lines.push(`(finish_reason: ${choice.finish_reason})`);
  }
  return lines;
}

function roleLabel(message: ChatMessage): string {
  const role = message.role ? message.role[0]?.toUpperCase() + message.role.slice(1) : "Unknown";
  const id = message.tool_call_id ? ` (${message.tool_call_id})` : "";
  return `${role} message${id}`;
}

function formatContent(content: ChatMessage["content"]): string {
  if (content === undefined || content === null) return "(no content)";
  if (typeof content === "string") return content;
  return content.map(formatPart).join("\n");
}

function formatPart(part: ContentPart): string {
  if (part.type === "text" && typeof part.text === "string") return part.text;
  if (part.type === "image_url") {
    const image = part.image_url as { url?: unknown } | undefined;
    const url = typeof image?.url === "string" ? image.url : "";
    return `<image_url: ${url.length > 60 ? `${url.slice(0, 60)}...` : url}>`;
  }
  return `<${part.type}>`;
}

function formatToolCall(call: ToolCall): string {
  const name = call.function?.name ?? "(unnamed)";
  return `tool call: ${name}(${call.function?.arguments ?? ""})`;
}
