import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The web console (docs/console.md): `GET /` is its page, `GET /_console/<asset>` its bundles,
 * built from web/ into dist/web by scripts/build-web.mjs. The page is only a client of
 * `POST /query` and `GET /events`; nothing here touches the JSON API.
 */

/** The one path prefix of the console's assets. */
export const CONSOLE_PREFIX = "/_console/";

/** dist/web, beside dist/src (this module is dist/src/server/console.js). */
const WEB_DIR = fileURLToPath(new URL("../../web/", import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".woff2": "font/woff2",
};

/**
 * The page may load its own scripts and styles and talk to its own origin, nothing else.
 * Inline styles are allowed because CodeMirror writes its theme into style elements.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ");

const COMMON_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

interface Asset {
  body: Buffer;
  headers: Record<string, string>;
}

interface Files {
  page: Asset;
  assets: Map<string, Asset>;
}

let loaded: Files | null = null;

function etagOf(body: Buffer): string {
  return `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`;
}

/** Reads dist/web once; `null` when this build has no console (web/ was not built). */
function files(): Files | null {
  if (loaded !== null) return loaded;
  let pageBody: Buffer;
  let names: string[];
  try {
    pageBody = readFileSync(`${WEB_DIR}index.html`);
    names = readdirSync(`${WEB_DIR}assets`);
  } catch {
    return null;
  }
  const assets = new Map<string, Asset>();
  for (const name of names) {
    const body = readFileSync(`${WEB_DIR}assets/${name}`);
    assets.set(name, {
      body,
      headers: {
        "content-type": CONTENT_TYPES[extname(name)] ?? "application/octet-stream",
        // Asset names carry a hash of their content: a new build has new names.
        "cache-control": "public, max-age=31536000, immutable",
        etag: etagOf(body),
        ...COMMON_HEADERS,
      },
    });
  }
  const page: Asset = {
    body: pageBody,
    headers: {
      "content-type": CONTENT_TYPES[".html"] as string,
      // The page names the current assets, so it is revalidated on every load.
      "cache-control": "no-cache",
      etag: etagOf(pageBody),
      "content-security-policy": CONTENT_SECURITY_POLICY,
      "x-frame-options": "DENY",
      ...COMMON_HEADERS,
    },
  };
  loaded = { page, assets };
  return loaded;
}

/** Whether `path` (without the query string) belongs to the console. */
export function isConsolePath(path: string): boolean {
  return path === "/" || path.startsWith(CONSOLE_PREFIX);
}

function sendError(response: ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ error: message });
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  });
  response.end(body);
}

/** Answers a console path: the page, an asset, 404 (JSON) or 405 (plain text). */
export function serveConsole(
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
): void {
  if (request.method !== "GET" && request.method !== "HEAD") {
    response.writeHead(405, { "content-type": "text/plain; charset=utf-8", allow: "GET, HEAD" });
    response.end(`Method Not Allowed: use GET ${path}\n`);
    return;
  }
  const built = files();
  if (built === null) {
    sendError(response, 404, "the web console is not part of this build: run `npm run build`");
    return;
  }
  const asset = path === "/" ? built.page : built.assets.get(path.slice(CONSOLE_PREFIX.length));
  if (asset === undefined) {
    sendError(response, 404, `no such console asset: ${path}. The console is at GET /`);
    return;
  }
  if (request.headers["if-none-match"] === asset.headers.etag) {
    response.writeHead(304, asset.headers);
    response.end();
    return;
  }
  response.writeHead(200, { ...asset.headers, "content-length": String(asset.body.length) });
  response.end(request.method === "HEAD" ? undefined : asset.body);
}
