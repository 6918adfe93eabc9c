/**
 * Request and response shapes in the OpenAI chat-completion format. Every object type is open
 * (`[key: string]: unknown`) because OpenAI-compatible servers add fields (for example
 * `reasoning` or `reasoning_content`) and leave others out.
 */

/** The kind of model a client talks to. Only chat models are supported. */
export type ModelType = "chat";

/** One part of a multi-part message content (text, image, audio, ...). */
export interface ContentPart {
  type: string;
  text?: string;
  [key: string]: unknown;
}

/** A tool call requested by the model. */
export interface ToolCall {
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** One chat message, sent to or received from the server (OpenAI style). */
export interface ChatMessage {
  role: "system" | "developer" | "user" | "assistant" | "tool" | (string & {});
  content?: string | ContentPart[] | null;
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  [key: string]: unknown;
}

/** The assistant message inside a completion choice. */
export interface CompletionMessage {
  role?: string;
  content?: string | ContentPart[] | null;
  tool_calls?: ToolCall[] | null;
  refusal?: string | null;
  /** Chain-of-thought text some servers return (for example Ollama, LM Studio). */
  reasoning?: string | null;
  /** Chain-of-thought text some servers return (for example vLLM, DeepSeek). */
  reasoning_content?: string | null;
  [key: string]: unknown;
}

/** One completion choice. */
export interface CompletionChoice {
  index?: number;
  message?: CompletionMessage;
  finish_reason?: "stop" | "length" | "tool_calls" | "content_filter" | (string & {}) | null;
  logprobs?: unknown;
  [key: string]: unknown;
}

/** Token counts reported by the server. */
export interface CompletionUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  [key: string]: unknown;
}

/**
 * A chat completion as returned by `POST {base_url}/chat/completions`. Only `choices` is
 * guaranteed (a response without it is a `ResponseError`); the rest is whatever the server sent.
 */
export interface CompletionResponse {
  id?: string;
  object?: string;
  created?: number;
  model?: string;
  choices: CompletionChoice[];
  usage?: CompletionUsage | null;
  system_fingerprint?: string | null;
  [key: string]: unknown;
}

/** Extra request-body arguments (`temperature`, `max_tokens`, `tools`, ...). */
export type RequestKwargs = Record<string, unknown>;
