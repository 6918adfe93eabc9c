/**
 * A scriptable OpenAI-compatible server for the tests, run as its own process (a synchronous
 * call blocks the test's thread, so the server cannot live there). Prints `{"port": n}` on
 * stdout once it listens on 127.0.0.1.
 *
 * Behaviour is keyed by the `model` of each request: `POST /__control/script` with
 * `{ model, steps }` queues one step per request; when the queue is empty the server answers
 * with an echo completion. `GET /__control/requests?model=...` lists the requests received.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";

/** What the server does with one request. */
export interface Step {
  status?: number;
  headers?: Record<string, string>;
  /** A JSON body (default: an echo completion for status 200). */
  json?: unknown;
  /** A raw text body instead of JSON. */
  text?: string;
  /** Wait this long before answering. */
  delayMs?: number;
  /** Close the connection without answering. */
  destroy?: boolean;
  /** Send the headers and half the body, then wait this long before the rest (a stall). */
  stallMidBodyMs?: number;
  /** Send the headers and half the body, then reset the connection. */
  resetMidBody?: boolean;
  /** Pad the completion to about this many bytes (a field `padding`). */
  padTo?: number;
  /** Send the body chunked (no content-length). */
  chunked?: boolean;
}

/** A request as the server received it. */
export interface RecordedRequest {
  method: string;
  path: string;
  /** The query string, with its `?` (or ""). */
  search: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

const scripts = new Map<string, Step[]>();
const requests = new Map<string, RecordedRequest[]>();
let counter = 0;

function echoCompletion(body: unknown): unknown {
  const request = (body ?? {}) as { model?: unknown; messages?: unknown; n?: unknown };
  const messages = Array.isArray(request.messages) ? request.messages : [];
  const last = messages.filter((m: { role?: unknown }) => m?.role === "user").pop() as
    { content?: unknown } | undefined;
  const text = typeof last?.content === "string" ? last.content : JSON.stringify(last?.content);
  const n = typeof request.n === "number" ? request.n : 1;
  counter += 1;
  return {
    id: `chatcmpl-${counter}`,
    object: "chat.completion",
    created: 1_700_000_000,
    model: request.model,
    choices: Array.from({ length: n }, (_, index) => ({
      index,
      message: { role: "assistant", content: n > 1 ? `echo ${index}: ${text}` : `echo: ${text}` },
      finish_reason: "stop",
    })),
    usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
  };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}

const server = createServer((req, res) => {
  void handle(req, res).catch((error: unknown) => {
    if (!res.headersSent) sendJson(res, 599, { error: { message: String(error) } });
  });
});

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://127.0.0.1");
  const raw = await readBody(req);
  if (url.pathname === "/__control/script" && req.method === "POST") {
    const { model, steps } = JSON.parse(raw) as { model: string; steps: Step[] };
    scripts.set(model, [...steps]);
    sendJson(res, 200, { ok: true });
    return;
  }
  if (url.pathname === "/__control/requests") {
    sendJson(res, 200, requests.get(url.searchParams.get("model") ?? "") ?? []);
    return;
  }
  let body: unknown = raw;
  try {
    body = JSON.parse(raw) as unknown;
  } catch {
    // keep the raw text
  }
  const model = String((body as { model?: unknown } | null)?.model ?? "");
  const list = requests.get(model) ?? [];
  list.push({
    method: req.method ?? "",
    path: url.pathname,
    search: url.search,
    headers: req.headers,
    body,
  });
  requests.set(model, list);

  const step = scripts.get(model)?.shift() ?? {};
  if (step.delayMs) await new Promise((resolve) => setTimeout(resolve, step.delayMs));
  if (step.destroy) {
    req.socket.destroy();
    return;
  }
  if (res.destroyed) return;
  const status = step.status ?? 200;
  if (step.text !== undefined) {
    res.writeHead(status, { "content-type": "text/plain", ...step.headers });
    res.end(step.text);
    return;
  }
  let json = step.json;
  if (json === undefined) {
    if (status === 200 && url.pathname === "/v1/chat/completions" && req.method === "POST") {
      json = echoCompletion(body);
    } else if (status === 200) {
      json = { error: { message: `no route ${req.method} ${url.pathname}` } };
      res.writeHead(404, { "content-type": "application/json", ...step.headers });
      res.end(JSON.stringify(json));
      return;
    } else {
      json = { error: { message: `scripted ${status}` } };
    }
  }
  let text = JSON.stringify(json);
  if (step.padTo && step.padTo > text.length) {
    const padding = "x".repeat(step.padTo - text.length - 14);
    text = JSON.stringify({ ...(json as object), padding });
  }
  if (step.stallMidBodyMs !== undefined || step.resetMidBody || step.chunked) {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (!step.chunked) headers["content-length"] = String(Buffer.byteLength(text));
    res.writeHead(status, { ...headers, ...step.headers });
    if (step.chunked) {
      for (let i = 0; i < text.length; i += 65_536) res.write(text.slice(i, i + 65_536));
      res.end();
      return;
    }
    const half = Math.floor(text.length / 2);
    res.write(text.slice(0, half));
    if (step.resetMidBody) {
      setTimeout(() => req.socket.resetAndDestroy(), 50);
      return;
    }
    setTimeout(() => {
      if (!res.destroyed) res.end(text.slice(half));
    }, step.stallMidBodyMs);
    return;
  }
  res.writeHead(status, { "content-type": "application/json", ...step.headers });
  res.end(text);
}

server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ port })}\n`);
});

// Exit with the parent: stdin closes when the test process ends.
process.stdin.resume();
process.stdin.on("end", () => process.exit(0));
process.on("SIGTERM", () => process.exit(0));
