/**
 * The HTTP layer of the worker thread: a `fetch` and a connection pool per proxy setting, with
 * undici's header, body and connect timers off (the per-attempt `Deadline` bounds everything,
 * for any timeout value; undici's defaults would cut every attempt at 300 s).
 *
 * Direct connections use Node's own `fetch`, the one the official `openai` client uses, so a
 * cold start compiles no second copy of undici. Its pool is an instance of the `Agent` class
 * Node's fetch itself uses, found through the key by which every copy of undici shares its
 * global dispatcher (`Symbol.for("undici.globalDispatcher.1")`), and built with undici's public
 * options. When that is not Node's plain `Agent` (an environment proxy agent, a runtime whose
 * fetch is not undici's), or building it fails, the undici bundled with lmclient serves
 * instead; it also serves every proxy (Node exposes no `ProxyAgent`). It arrives as a
 * compressed script in `workerData` and is evaluated only then.
 */
import { workerData } from "node:worker_threads";
import { inflateRawSync } from "node:zlib";
import type { Dispatcher } from "undici";

/** A `fetch` that takes undici's `dispatcher` option. */
export type StackFetch = (
  url: string,
  init: RequestInit & { dispatcher: Dispatcher },
) => Promise<Response>;

type DispatcherClass = new (options: Record<string, unknown>) => Dispatcher;

interface HttpStack {
  fetch: StackFetch;
  Agent: DispatcherClass;
  ProxyAgent?: DispatcherClass;
}

export interface Transport {
  fetch: StackFetch;
  dispatcher: Dispatcher;
}

const TIMERS_OFF = { headersTimeout: 0, bodyTimeout: 0, connect: { timeout: 0 } };

const GLOBAL_DISPATCHER = Symbol.for("undici.globalDispatcher.1");

let bundledStack: HttpStack | undefined;
const transports = new Map<string, Transport>();

/** The `fetch` and pool for requests through `proxy`, or direct connections. */
export function transportFor(proxy: string | undefined): Transport {
  const key = proxy ?? "";
  let transport = transports.get(key);
  if (!transport) {
    transport = proxy === undefined ? (nodeTransport() ?? bundledTransport()) : proxied(proxy);
    transports.set(key, transport);
  }
  return transport;
}

function nodeTransport(): Transport | undefined {
  // The documented way out should Node's fetch ever change under lmclient.
  if (process.env.LMCLIENT_BUNDLED_UNDICI === "1") return undefined;
  const Agent = nodeAgentClass();
  if (Agent === undefined) return undefined;
  try {
    const dispatcher = new Agent(TIMERS_OFF);
    if (typeof dispatcher.dispatch !== "function") return undefined;
    return { fetch: globalThis.fetch as unknown as StackFetch, dispatcher };
  } catch {
    return undefined;
  }
}

/**
 * The class of the default dispatcher of Node's fetch when it is undici's plain `Agent`, else
 * `undefined`. Node creates that dispatcher when its fetch first runs; a `data:` URL opens no
 * connection.
 */
function nodeAgentClass(): DispatcherClass | undefined {
  if (typeof globalThis.fetch !== "function") return undefined;
  const globals = globalThis as unknown as Record<symbol, unknown>;
  if (globals[GLOBAL_DISPATCHER] === undefined) {
    globalThis.fetch("data:,").then(
      (response) => response.body?.cancel(),
      () => undefined,
    );
  }
  const current = globals[GLOBAL_DISPATCHER] as { dispatch?: unknown } | undefined;
  const Agent = current?.constructor as DispatcherClass | undefined;
  if (typeof Agent !== "function" || Agent.name !== "Agent") return undefined;
  if (typeof current?.dispatch !== "function") return undefined;
  return Agent;
}

function bundledTransport(): Transport {
  const stack = bundledUndici();
  return { fetch: stack.fetch, dispatcher: new stack.Agent(TIMERS_OFF) };
}

function proxied(proxy: string): Transport {
  const stack = bundledUndici();
  const ProxyAgent = stack.ProxyAgent as DispatcherClass;
  return { fetch: stack.fetch, dispatcher: new ProxyAgent({ uri: proxy, ...TIMERS_OFF }) };
}

/** The undici bundled with lmclient, evaluated on first use. */
function bundledUndici(): HttpStack {
  if (bundledStack) return bundledStack;
  const { undiciSource } = workerData as { undiciSource: string };
  const source = inflateRawSync(Buffer.from(undiciSource, "base64")).toString("utf8");
  const module = { exports: {} as Record<string, unknown> };
  // A CommonJS bundle that requires only Node's built-in modules.
  new Function("module", "exports", "require", source)(module, module.exports, require);
  const { fetch, Agent, ProxyAgent } = module.exports as unknown as HttpStack;
  bundledStack = { fetch, Agent, ProxyAgent };
  return bundledStack;
}
