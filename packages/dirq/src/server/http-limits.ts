import { type Server, STATUS_CODES } from "node:http";
import { networkInterfaces } from "node:os";
import type { Socket } from "node:net";

/**
 * Open connections at once (event streams included); more are answered 503 and closed. Room
 * for a thousand `/events` subscribers and their queries; each costs one file descriptor.
 */
export const MAX_CONNECTIONS = 2048;
/** Time for a client to send the request line and headers. */
export const HEADERS_TIMEOUT_MS = 10_000;
/** Time for a client to send its whole request, body included. */
export const REQUEST_TIMEOUT_MS = 30_000;
/** Request line and headers together; past it, 431. */
export const MAX_HEADER_BYTES = 16 * 1024;
/**
 * How long an idle keep-alive connection stays open (Node's default is 5 s). Node checks it
 * before it reads what arrived, so when the server's thread was held up longer than this (a
 * burst of large files on a loaded machine), a request the client had already sent on the
 * connection was dropped with it: the client saw the connection reset. Clients learn the time
 * from the `Keep-Alive` header; each idle connection holds one descriptor, within
 * MAX_CONNECTIONS.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 60_000;

/** Options for `createServer` that set the limits above. */
export const SERVER_LIMIT_OPTIONS = {
  headersTimeout: HEADERS_TIMEOUT_MS,
  requestTimeout: REQUEST_TIMEOUT_MS,
  maxHeaderSize: MAX_HEADER_BYTES,
  keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
  // How often Node checks those timeouts (its default, 30 s, would let them run late).
  connectionsCheckingInterval: 1_000,
  // A missing Host is answered by our own check, with a JSON body.
  requireHostHeader: false,
} as const;

function rawJsonResponse(status: number, message: string): string {
  const body = JSON.stringify({ error: message });
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\n` +
    "Content-Type: application/json\r\n" +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    "Connection: close\r\n\r\n" +
    body
  );
}

/** What to tell a client whose request node:http refused before any handler saw it. */
function clientErrorAnswer(code: string | undefined): [number, string] {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return [431, `request line and headers are larger than ${MAX_HEADER_BYTES} bytes`];
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return [
        408,
        `the request was not received in time (headers within ${HEADERS_TIMEOUT_MS / 1000} s, the whole request within ${REQUEST_TIMEOUT_MS / 1000} s)`,
      ];
    default:
      return [400, `malformed HTTP request (${code ?? "bad framing"})`];
  }
}

/**
 * Bounds what a client can hold: connections beyond MAX_CONNECTIONS get a 503 and are closed;
 * errors node:http answers itself (bad framing, oversized headers or URL, timeouts) get a JSON
 * error body like every other error.
 */
export function applyHttpLimits(server: Server): void {
  let open = 0;
  server.on("connection", (socket: Socket) => {
    open++;
    socket.once("close", () => open--);
    if (open > MAX_CONNECTIONS) {
      const message = `too many open connections (the limit is ${MAX_CONNECTIONS}); try again later`;
      socket.end(rawJsonResponse(503, message));
      socket.destroySoon();
    }
  });
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
    const response = (socket as Socket & { _httpMessage?: { headersSent: boolean } })._httpMessage;
    if (error.code === "ECONNRESET" || !socket.writable || response?.headersSent) {
      socket.destroy();
      return;
    }
    const [status, message] = clientErrorAnswer(error.code);
    socket.end(rawJsonResponse(status, message));
  });
}

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "::1", "[::1]"]);

/** The host part of a Host header, lower-cased, without port (IPv6 keeps its brackets). */
function hostName(header: string): string {
  const value = header.trim().toLowerCase();
  if (value.startsWith("[")) return value.slice(0, value.indexOf("]") + 1);
  const colon = value.lastIndexOf(":");
  return colon === -1 ? value : value.slice(0, colon);
}

function bracketed(address: string): string {
  return address.includes(":") ? `[${address}]` : address;
}

/**
 * Which Host headers name this server: loopback names and addresses, the bound host, and
 * when bound to every interface, each interface's address. Anything else is a page on some
 * other origin reaching the server through a name of its own (DNS rebinding).
 */
export function hostChecker(boundHost: string): (header: string | undefined) => boolean {
  const allowed = new Set([boundHost.toLowerCase(), bracketed(boundHost.toLowerCase())]);
  if (boundHost === "0.0.0.0" || boundHost === "::" || boundHost === "[::]") {
    for (const list of Object.values(networkInterfaces())) {
      for (const entry of list ?? []) allowed.add(bracketed(entry.address.toLowerCase()));
    }
  }
  return (header) => {
    if (header === undefined || header === "") return false;
    const name = hostName(header);
    if (LOOPBACK_NAMES.has(name) || allowed.has(name)) return true;
    return /^127\.\d+\.\d+\.\d+$/.test(name) || name.endsWith(".localhost");
  };
}
