import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The built CLI, run exactly as a user's shell would run it. */
export const PUBTOOL_BIN = fileURLToPath(new URL("../../bin/pubtool.js", import.meta.url));

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Variables a test run starts from: none of the developer's tokens or CI variables leak in. */
export function baseEnv(home: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "",
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    PUBTOOL_HTTP_TIMEOUT_MS: "5000",
    // Nothing may reach the public services by accident.
    PUBTOOL_GITHUB_API_URL: "http://127.0.0.1:9",
    PUBTOOL_GITHUB_URL: "http://127.0.0.1:9",
    PUBTOOL_RUSTREG_URL: "http://127.0.0.1:9",
    PUBTOOL_PYREG_URL: "http://127.0.0.1:9",
    PUBTOOL_JSREG_URL: "http://127.0.0.1:9",
    ...(process.env.CARGO_HOME ? { CARGO_HOME: process.env.CARGO_HOME } : {}),
    ...(process.env.RUSTUP_HOME ? { RUSTUP_HOME: process.env.RUSTUP_HOME } : {}),
  };
}

/** Spawns `pubtool` with `args` in `cwd`; `env` is added to a clean base environment. */
export function runPubtool(
  args: readonly string[],
  options: { cwd: string; env?: Record<string, string | undefined>; home?: string },
): Promise<RunResult> {
  const env: Record<string, string> = baseEnv(options.home ?? options.cwd);
  for (const [key, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PUBTOOL_BIN, ...args], {
      cwd: options.cwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Creates a temp directory holding `files` (path → contents). */
export function makeTree(files: Record<string, string | Uint8Array>): string {
  const root = mkdtempSync(join(tmpdir(), "pubtool-test-"));
  writeTree(root, files);
  return root;
}

/** Writes `files` under `root`. */
export function writeTree(root: string, files: Record<string, string | Uint8Array>): void {
  for (const [path, contents] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), contents);
  }
}

export function removeTree(root: string): void {
  rmSync(root, { recursive: true, force: true });
}

/** A request the fake server saw. */
export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: Buffer;
}

export interface FakeServer {
  url: string;
  requests: SeenRequest[];
  close(): Promise<void>;
}

export type Handler = (request: SeenRequest, response: ServerResponse, url: string) => void;

/** A real HTTP server on 127.0.0.1 with a free port; every request is recorded. */
export async function startServer(handler: Handler): Promise<FakeServer> {
  const requests: SeenRequest[] = [];
  let base = "";
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const seen = {
        method: req.method ?? "GET",
        url: req.url ?? "/",
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      requests.push(seen);
      handler(seen, res, base);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Sends a JSON response. */
export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  response.writeHead(status, { "content-type": "application/json", ...headers });
  response.end(JSON.stringify(body));
}

/** A port on 127.0.0.1 that refuses connections (bound, then closed). */
export async function refusedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
