import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import type { RecordedRequest, Step } from "./fake-server.js";

export type { RecordedRequest, Step };

const SERVER_PATH = fileURLToPath(new URL("./fake-server.js", import.meta.url));

/** A fake OpenAI-compatible server running in a child process. */
export interface FakeServer {
  port: number;
  /** `http://127.0.0.1:<port>/v1` */
  baseUrl: string;
  /** Queues the behaviour of the next requests for `model`. */
  script(model: string, steps: Step[]): Promise<void>;
  /** The requests received for `model`, oldest first. */
  requests(model: string): Promise<RecordedRequest[]>;
  close(): Promise<void>;
}

/** Starts `fake-server.js` with plain `node` and waits for its port. */
export async function startFakeServer(): Promise<FakeServer> {
  const child: ChildProcess = spawn(process.execPath, [SERVER_PATH], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let buffered = "";
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => {
      buffered += chunk;
      const newline = buffered.indexOf("\n");
      if (newline >= 0) resolve((JSON.parse(buffered.slice(0, newline)) as { port: number }).port);
    });
    child.once("exit", (code) => reject(new Error(`fake server exited with ${code}`)));
    child.once("error", reject);
  });
  const origin = `http://127.0.0.1:${port}`;
  return {
    port,
    baseUrl: `${origin}/v1`,
    async script(model, steps) {
      const response = await fetch(`${origin}/__control/script`, {
        method: "POST",
        body: JSON.stringify({ model, steps }),
      });
      if (!response.ok) throw new Error(`script failed: ${response.status}`);
    },
    async requests(model) {
      const response = await fetch(
        `${origin}/__control/requests?model=${encodeURIComponent(model)}`,
      );
      return (await response.json()) as RecordedRequest[];
    },
    close() {
      return new Promise((resolve) => {
        if (child.exitCode !== null) {
          resolve();
          return;
        }
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      });
    },
  };
}

/** A port on 127.0.0.1 that nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

let modelCounter = 0;

/** A model name unused by any other test in this process (the server keys scripts by it). */
export function uniqueModel(label: string): string {
  modelCounter += 1;
  return `${label}-${process.pid}-${modelCounter}`;
}

/** Milliseconds `fn` took, and its result. */
export async function timed<T>(fn: () => T | Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
}
