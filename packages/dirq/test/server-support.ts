import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { type Agent, request as httpRequestRaw } from "node:http";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { after } from "node:test";
import { seededRandom as seededRandomOf } from "./differential.js";
import { DIRQ_BIN, makeTree, removeTree, withoutCommit } from "./helpers.js";

/* ------------------------------------------------------------------------------------------ */
/* A `dirq server` process, started as a user would start it.                                  */
/* ------------------------------------------------------------------------------------------ */

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServerProcess {
  child: ChildProcess;
  pid: number;
  /** The host and port from the `Running at <host>:<port>` line. */
  host: string;
  port: number;
  /** Base URL from the printed address: `http://<host>:<port>`. */
  url: string;
  /** Everything the server wrote so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves when the process exits. */
  exited: Promise<Exit>;
  /** Sends `signal` and resolves with the exit. */
  stop(signal?: NodeJS.Signals): Promise<Exit>;
  /** Stops the server if it still runs (SIGTERM, then SIGKILL after a grace period). */
  kill(): Promise<void>;
}

export interface StartOptions {
  cwd: string;
  /** Give up waiting for the `Running at` line after this long. */
  timeoutMs?: number;
  /** Its own process group (as a shell job is), so a signal can reach the whole group. */
  detached?: boolean;
  /** A command that runs `node <dirq> server ...` for it (e.g. `unshare -Ur ...`). */
  prefix?: readonly string[];
  /** Extra environment variables (progress is off unless set here). */
  env?: Record<string, string>;
  /** Node's own options, given before dirq's file: `node <node> dirq.cjs server …`. */
  node?: readonly string[];
}

/** What happened to a process that never printed `Running at`. */
export interface FailedStart {
  exit: Exit;
  stdout: string;
  stderr: string;
}

/**
 * The statement time limit of the servers tests start, unless a test sets its own: a statement
 * that takes 2 s on an idle machine can pass the default 30 s on a loaded CI machine, and a test
 * about something else must not fail with a 408.
 */
const TEST_QUERY_TIMEOUT_MS = "600000";

function spawnServer(
  args: readonly string[],
  cwd: string,
  detached = false,
  env: Record<string, string> = {},
  prefix: readonly string[] = [],
  node: readonly string[] = [],
): ChildProcess {
  const [command, ...rest] = [
    ...prefix,
    process.execPath,
    ...node,
    DIRQ_BIN,
    "server",
    ...args,
  ] as [string, ...string[]];
  return spawn(command, rest, {
    cwd,
    detached,
    env: {
      ...process.env,
      DIRQ_PROGRESS: "never",
      DIRQ_QUERY_TIMEOUT_MS: TEST_QUERY_TIMEOUT_MS,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
}

function exitOf(child: ChildProcess): Promise<Exit> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve({ code: child.exitCode, signal: child.signalCode });
      return;
    }
    child.once("exit", (code, signal) => resolve({ code, signal }));
  });
}

const RUNNING = /^Running at (\S+):(\d+)\n/m;

/**
 * How long a wait for an event, a frame or a condition lasts before the test fails. Generous:
 * CI shares two cores among many suites, and a passing wait ends as soon as its condition
 * holds, so only a failure ever waits this long.
 */
const WAIT_MS = 60_000;

/**
 * Spawns `dirq server <args>` in `cwd` and waits for its `Running at` line. Rejects (with the
 * output) when the process exits first or takes too long.
 */
export async function startServer(
  args: readonly string[],
  options: StartOptions,
): Promise<ServerProcess> {
  const child = spawnServer(
    args,
    options.cwd,
    options.detached,
    options.env,
    options.prefix,
    options.node,
  );
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const exited = exitOf(child);
  const timeoutMs = options.timeoutMs ?? 120_000;
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    const check = () => {
      const found = RUNNING.exec(stdout);
      if (found) {
        done();
        resolve(found);
      }
    };
    const timer = setTimeout(() => {
      done();
      child.kill("SIGKILL");
      reject(new Error(`no 'Running at' line after ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      done();
      reject(
        new Error(
          `dirq server exited (${code ?? signal}) before 'Running at'; stdout: ${stdout}; stderr: ${stderr}`,
        ),
      );
    };
    const done = () => {
      clearTimeout(timer);
      child.stdout?.off("data", check);
      child.off("exit", onExit);
    };
    child.stdout?.on("data", check);
    child.once("exit", onExit);
    check();
  });
  const host = match[1] as string;
  const port = Number(match[2]);
  const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };
  return {
    child,
    pid: child.pid as number,
    host,
    port,
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    stop,
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Spawns `dirq server <args>` expecting it to exit on its own; collects its output. */
export async function runServerToExit(
  args: readonly string[],
  cwd: string,
  timeoutMs = 120_000,
): Promise<FailedStart> {
  const child = spawnServer(args, cwd);
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  // `exit` can come before the last output is read (a quick command on a loaded machine):
  // the output is complete once the pipes close. A process the server left holding them (it
  // was killed) gets a moment, not forever.
  const closed = new Promise((resolve) => child.once("close", resolve));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const exit = await exitOf(child);
  clearTimeout(timer);
  let grace: NodeJS.Timeout | undefined;
  await Promise.race([closed, new Promise((resolve) => (grace = setTimeout(resolve, 5_000)))]);
  clearTimeout(grace);
  return { exit, stdout, stderr };
}

/* ------------------------------------------------------------------------------------------ */
/* HTTP                                                                                         */
/* ------------------------------------------------------------------------------------------ */

export interface HttpAnswer {
  status: number;
  contentType: string;
  headers: Headers;
  text: string;
}

/**
 * Sends a request and reads the whole answer. A failure names the request and what undici
 * saw underneath: its own message is only "fetch failed".
 */
export async function request(url: string, init: RequestInit = {}): Promise<HttpAnswer> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, init);
    text = await response.text();
  } catch (error) {
    const cause = (error as Error & { cause?: Error & { code?: string } }).cause;
    const detail = cause === undefined ? "" : `: ${cause.code ?? cause.name} ${cause.message}`;
    throw new Error(`${init.method ?? "GET"} ${url}: ${(error as Error).message}${detail}`, {
      cause: error,
    });
  }
  return {
    status: response.status,
    contentType: response.headers.get("content-type") ?? "",
    headers: response.headers,
    text,
  };
}

/** `POST /query` with `{"sql": sql}`; aborting `signal` makes its client go away. */
export function postQuery(
  server: { url: string },
  sql: string,
  signal?: AbortSignal,
): Promise<HttpAnswer> {
  return postRaw(server, JSON.stringify({ sql }), signal);
}

/** `POST /query` with a raw body. */
export function postRaw(
  server: { url: string },
  body: string,
  signal?: AbortSignal,
): Promise<HttpAnswer> {
  return request(`${server.url}/query`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    signal,
  });
}

/** `POST /query` expecting 200; returns the parsed rows. */
export async function queryRows(
  server: { url: string },
  sql: string,
): Promise<Record<string, unknown>[]> {
  const answer = await postQuery(server, sql);
  assert.equal(answer.status, 200, `POST /query ${sql}: ${answer.status} ${answer.text}`);
  const rows = JSON.parse(answer.text) as unknown;
  assert.ok(Array.isArray(rows), `not an array: ${answer.text}`);
  return rows as Record<string, unknown>[];
}

/** Checks a JSON error answer and returns its message. */
export function assertJsonError(answer: HttpAnswer, status: number, pattern?: RegExp): string {
  assert.equal(answer.status, status, `expected ${status}, got ${answer.status}: ${answer.text}`);
  assert.match(answer.contentType, /^application\/json\b/, `content-type of ${answer.text}`);
  const body = JSON.parse(answer.text) as unknown;
  assert.equal(typeof body, "object");
  assert.deepEqual(Object.keys(body as object), ["error"], `error body: ${answer.text}`);
  const message = (body as { error: unknown }).error;
  assert.equal(typeof message, "string");
  assert.ok((message as string).length > 0, "the error message is not empty");
  if (pattern) assert.match(message as string, pattern);
  return message as string;
}

/* ------------------------------------------------------------------------------------------ */
/* Server-Sent Events, parsed from the raw bytes of a fetch body                                */
/* ------------------------------------------------------------------------------------------ */

export interface SseFrame {
  /** The `event:` field (`message` when absent, as EventSource does). */
  event: string;
  /** The `data:` lines joined by `\n`. */
  data: string;
  /** The raw lines of the frame, without the blank line that ends it. */
  lines: string[];
}

/** A `row` frame's data, parsed. */
export interface RowEvent {
  action: "insert" | "update" | "delete" | "error";
  table: string | null;
  file_path: string;
  row?: Record<string, unknown>;
  old_row?: Record<string, unknown> | null;
  error?: string;
}

export type StreamEnd = { how: "end" } | { how: "error"; error: unknown } | { how: "aborted" };

/**
 * Incremental SSE parser (the WHATWG rules that matter here: `\n`, `\r\n` or `\r` line ends,
 * `field: value` with one optional space, `:` comments, a blank line dispatches).
 */
export class SseParser {
  private buffer = "";
  private lines: string[] = [];
  private event = "";
  private data: string[] = [];
  private sawCr = false;

  constructor(
    private readonly onFrame: (frame: SseFrame) => void,
    private readonly onComment: (comment: string) => void = () => {},
  ) {}

  push(text: string): void {
    let start = 0;
    if (this.sawCr && text.startsWith("\n")) start = 1;
    this.sawCr = false;
    const breaks = /\r\n|\r|\n/g;
    breaks.lastIndex = start;
    for (let match = breaks.exec(text); match !== null; match = breaks.exec(text)) {
      // A lone `\r` at the very end may be the first half of a `\r\n` split across chunks.
      if (match[0] === "\r" && match.index === text.length - 1) this.sawCr = true;
      this.line(this.buffer + text.slice(start, match.index));
      this.buffer = "";
      start = match.index + match[0].length;
    }
    this.buffer += text.slice(start);
  }

  private line(line: string): void {
    if (line === "") {
      if (this.lines.length > 0 && this.data.length > 0) {
        this.onFrame({
          event: this.event || "message",
          data: this.data.join("\n"),
          lines: this.lines,
        });
      }
      this.lines = [];
      this.event = "";
      this.data = [];
      return;
    }
    if (line.startsWith(":")) {
      this.onComment(line);
      return;
    }
    this.lines.push(line);
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.event = value;
    else if (field === "data") this.data.push(value);
  }
}

export interface EventStream {
  status: number;
  contentType: string;
  /** Every frame so far, in arrival order. */
  frames: SseFrame[];
  /** Every comment line so far (keep-alives), with their leading `:`. */
  comments: string[];
  /** The parsed data of every `row` frame so far. */
  rows(): RowEvent[];
  /** How many `row` frames so far (cheap). */
  rowCount(): number;
  /** Resolves when the body ends, fails, or is aborted. */
  ended: Promise<StreamEnd>;
  /**
   * The first frame after the cursor that `match` accepts (`row` frames are matched on their
   * parsed data); moves the cursor past it. Rejects after `timeoutMs` listing what came.
   */
  next(match: (row: RowEvent, frame: SseFrame) => boolean, timeoutMs?: number): Promise<RowEvent>;
  /** Waits until `done()` holds (re-checked on every frame and comment). */
  until(done: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** Frames from `index` on, parsed (row frames only). */
  rowsFrom(index: number): RowEvent[];
  /** Async iteration over frames as they arrive (from the first); ends with the stream. */
  [Symbol.asyncIterator](): AsyncIterator<SseFrame>;
  /** Aborts the request. */
  close(): void;
  cursor: number;
}

let lastFrameAt = 0;

/** When any stream opened with `openEvents` last received a frame (`Date.now()`). */
export function lastFrameTime(): number {
  return lastFrameAt;
}

/** Opens `GET /events` with fetch and parses the body stream in the background. */
export async function openEvents(server: { url: string }): Promise<EventStream> {
  const controller = new AbortController();
  const response = await fetch(`${server.url}/events`, { signal: controller.signal });
  const frames: SseFrame[] = [];
  const comments: string[] = [];
  const parsed = new Map<SseFrame, RowEvent>();
  let waiters: (() => void)[] = [];
  let endState: StreamEnd | null = null;
  const notify = () => {
    const current = waiters;
    waiters = [];
    for (const wake of current) wake();
  };
  let rowFrames = 0;
  const parser = new SseParser(
    (frame) => {
      frames.push(frame);
      lastFrameAt = Date.now();
      if (frame.event === "row") rowFrames++;
      notify();
    },
    (comment) => {
      comments.push(comment);
      notify();
    },
  );
  const rowOf = (frame: SseFrame): RowEvent | null => {
    if (frame.event !== "row") return null;
    let row = parsed.get(frame);
    if (row === undefined) {
      row = withoutCommit(JSON.parse(frame.data) as RowEvent & { commit?: unknown });
      parsed.set(frame, row);
    }
    return row;
  };
  const ended = (async (): Promise<StreamEnd> => {
    if (!response.body) return { how: "end" };
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parser.push(decoder.decode(value, { stream: true }));
      }
      parser.push(decoder.decode());
      return { how: "end" };
    } catch (error) {
      if (controller.signal.aborted) return { how: "aborted" };
      return { how: "error", error };
    }
  })().then((end) => {
    endState = end;
    notify();
    return end;
  });
  const waitFor = (done: () => boolean, what: string, timeoutMs: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${what}; frames so far:\n${frames
              .slice(-40)
              .map((frame) => `  ${frame.event} ${frame.data}`)
              .join("\n")}`,
          ),
        );
      }, timeoutMs);
      const check = () => {
        if (done()) {
          clearTimeout(timer);
          resolve();
        } else if (endState !== null) {
          clearTimeout(timer);
          reject(new Error(`the stream ended (${endState.how}) while waiting for ${what}`));
        } else {
          waiters.push(check);
        }
      };
      check();
    });
  const stream: EventStream = {
    status: response.status,
    contentType: response.headers.get("content-type") ?? "",
    frames,
    comments,
    cursor: 0,
    rows: () => frames.map(rowOf).filter((row): row is RowEvent => row !== null),
    rowCount: () => rowFrames,
    rowsFrom: (index) =>
      frames
        .slice(index)
        .map(rowOf)
        .filter((row): row is RowEvent => row !== null),
    ended,
    async next(match, timeoutMs = WAIT_MS) {
      let found: RowEvent | null = null;
      // Each frame is tried once, as it comes: trying every frame since the cursor again at
      // each new one made a wait through a burst of frames cost the square of its length.
      let tried = stream.cursor;
      await waitFor(
        () => {
          for (; tried < frames.length; tried++) {
            const frame = frames[tried] as SseFrame;
            const row = rowOf(frame);
            if (row !== null && match(row, frame)) {
              stream.cursor = tried + 1;
              found = row;
              return true;
            }
          }
          return false;
        },
        `a matching row frame (from #${stream.cursor})`,
        timeoutMs,
      );
      return found as unknown as RowEvent;
    },
    until: (done, what, timeoutMs = WAIT_MS) => waitFor(done, what, timeoutMs),
    [Symbol.asyncIterator]() {
      let index = 0;
      return {
        async next(): Promise<IteratorResult<SseFrame>> {
          while (index >= frames.length && endState === null) {
            await new Promise<void>((resolve) => waiters.push(resolve));
          }
          if (index < frames.length) return { value: frames[index++] as SseFrame, done: false };
          return { value: undefined, done: true };
        },
      };
    },
    close() {
      controller.abort();
    },
  };
  return stream;
}

/** What `GET /live` asks for. */
export interface LiveAsk {
  sql: string;
  params?: unknown;
  key?: readonly string[];
}

/** A `/live` frame's data, parsed. */
export type LiveData = Record<string, unknown> & { commit: number };

/**
 * A `GET /live` stream and the answer its frames make: the last snapshot's rows with every diff
 * after it applied, by the steps docs/live-queries.md gives (this is their reference client).
 */
export interface LiveStream {
  status: number;
  /** The body of a refused request. */
  error: string;
  frames: (SseFrame & { id: string | undefined })[];
  comments: string[];
  rows: Record<string, unknown>[];
  /** The last snapshot's data (without its rows). */
  snapshot: LiveData | null;
  /** The SSE id of the last frame that had one. */
  lastId: string | undefined;
  /** The commit of the last frame. */
  commit: number;
  ended: Promise<void>;
  /** Waits until `done()` holds (checked at every frame and comment). */
  until(done: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  close(): void;
}

/** The documented steps: out at `removed[].at` and `updated[].from`, highest first; then in. */
export function applyLiveDiff(rows: Record<string, unknown>[], diff: LiveData): void {
  const removed = diff.removed as { at: number }[];
  const added = diff.added as { at: number; row: Record<string, unknown> }[];
  const updated = diff.updated as { from: number; at: number; row: Record<string, unknown> }[];
  const out = [...removed.map((r) => r.at), ...updated.map((u) => u.from)].sort((a, b) => b - a);
  for (const at of out) rows.splice(at, 1);
  for (const { at, row } of [...added, ...updated].sort((a, b) => a.at - b.at)) {
    rows.splice(at, 0, row);
  }
}

function liveUrl(server: { url: string }, ask: LiveAsk): string {
  const query = new URLSearchParams({ sql: ask.sql });
  if (ask.params !== undefined) query.set("params", JSON.stringify(ask.params));
  if (ask.key !== undefined) query.set("key", ask.key.join(","));
  return `${server.url}/live?${query}`;
}

/** Takes one `/live` frame into the stream's answer. */
function takeLiveFrame(stream: LiveStream, frame: SseFrame): void {
  const idLine = frame.lines.find((line) => line.startsWith("id:"));
  const id = idLine?.slice(3).trim();
  stream.frames.push({ ...frame, id });
  if (id !== undefined) stream.lastId = id;
  const data = JSON.parse(frame.data) as LiveData;
  stream.commit = data.commit;
  if (frame.event === "snapshot") {
    const { rows, ...rest } = data;
    stream.rows = rows as Record<string, unknown>[];
    stream.snapshot = rest as LiveData;
  } else if (frame.event === "diff") {
    applyLiveDiff(stream.rows, data);
  }
}

/** Where a `/live` client resumes: the id it read last, and the answer it held then. */
export interface LiveResume {
  lastId: string;
  rows?: Record<string, unknown>[];
  snapshot?: LiveData | null;
}

/** Opens `GET /live` (resuming when told where) and reads it in the background. */
export async function openLive(
  server: { url: string },
  ask: LiveAsk,
  resume?: LiveResume,
): Promise<LiveStream> {
  const controller = new AbortController();
  const headers: Record<string, string> = resume ? { "last-event-id": resume.lastId } : {};
  const response = await fetch(liveUrl(server, ask), { signal: controller.signal, headers });
  let waiters: (() => void)[] = [];
  let ended = false;
  const notify = () => {
    const current = waiters;
    waiters = [];
    for (const wake of current) wake();
  };
  const stream: LiveStream = {
    status: response.status,
    error: response.status === 200 ? "" : await response.text(),
    frames: [],
    comments: [],
    rows: resume?.rows?.map((row) => ({ ...row })) ?? [],
    snapshot: resume?.snapshot ?? null,
    lastId: undefined,
    commit: -1,
    ended: Promise.resolve(),
    until: (done, what, timeoutMs = WAIT_MS) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          const last = stream.frames.slice(-20).map((f) => `  ${f.event} ${f.data.slice(0, 300)}`);
          reject(new Error(`timed out waiting for ${what}; last frames:\n${last.join("\n")}`));
        }, timeoutMs);
        const check = () => {
          if (done()) {
            clearTimeout(timer);
            resolve();
          } else if (ended) {
            clearTimeout(timer);
            reject(new Error(`the /live stream ended while waiting for ${what}`));
          } else waiters.push(check);
        };
        check();
      }),
    close: () => controller.abort(),
  };
  if (response.status !== 200 || !response.body) return stream;
  const parser = new SseParser(
    (frame) => {
      takeLiveFrame(stream, frame);
      notify();
    },
    (comment) => {
      stream.comments.push(comment);
      notify();
    },
  );
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  stream.ended = (async () => {
    try {
      for (let read = await reader.read(); !read.done; read = await reader.read()) {
        parser.push(decoder.decode(read.value, { stream: true }));
      }
    } catch {
      // Aborted by `close()`, or the server went away: the stream ends either way.
    }
    ended = true;
    notify();
  })();
  return stream;
}

/** Rows sorted by their JSON: the answer of a statement without an order, as a multiset. */
export function multiset(rows: readonly unknown[]): string[] {
  return rows.map((row) => JSON.stringify(row)).sort();
}

/**
 * Waits until the stream's answer is a fresh `POST /query` answer: the same rows in the same
 * order when the snapshot says `ordered`, the same multiset of rows otherwise.
 */
export async function untilLiveCurrent(server: { url: string }, stream: LiveStream, sql: string) {
  let fresh: unknown[] = [];
  const same = () =>
    stream.snapshot?.ordered === true
      ? JSON.stringify(stream.rows) === JSON.stringify(fresh)
      : JSON.stringify(multiset(stream.rows)) === JSON.stringify(multiset(fresh));
  for (let tries = 0; ; tries++) {
    // The files may be between two states (a broken one being fixed): ask again then.
    const answer = await postQuery(server, sql);
    if (answer.status !== 200 && tries < 30) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      continue;
    }
    fresh = JSON.parse(answer.text) as unknown[];
    try {
      await stream.until(same, `the live answer of ${sql} to be ${JSON.stringify(fresh)}`, 2_000);
      return;
    } catch (error) {
      if (tries === 30) throw error;
    }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Live query storms (server-live-storm.test.ts at a test's size, bench/dirq-live-storm.mjs at  */
/* the issue's)                                                                                 */
/* ------------------------------------------------------------------------------------------ */

/** The tree a storm starts from (`makeTree`): two tables, one of them rewritten by the storm. */
export const LIVE_STORM_TREE: Record<string, string> = {
  ".dirq.toml": `[[table]]
name = "items"
glob = "data/**/*.json"
format = "json"
schema = { id = "INTEGER", grp = "TEXT", v = "INTEGER", name = "TEXT" }

[[table]]
name = "groups"
glob = "groups/*.json"
format = "json"
schema = { grp = "TEXT", label = "TEXT" }
`,
  "tmp/.keep": "",
  "groups/g.json": JSON.stringify([
    { grp: "g0", label: "zero" },
    { grp: "g1", label: "one" },
  ]),
};

/**
 * The eight shapes of statement: filter, projection with expressions, GROUP BY aggregate, join
 * of two tables, ORDER BY ... LIMIT, DISTINCT, window function, a path-table's stat columns.
 */
export const LIVE_STORM_STATEMENTS: readonly LiveAsk[] = [
  { sql: "SELECT id, name, v FROM items WHERE v > 50", key: ["id"] },
  { sql: "SELECT id, v * 2 + 1 AS w, upper(name) AS n FROM items" },
  { sql: "SELECT grp, count(*) AS n, sum(v) AS s FROM items GROUP BY grp", key: ["grp"] },
  {
    sql: "SELECT i.id, g.label FROM items i JOIN groups g ON g.grp = i.grp ORDER BY i.id, g.label",
  },
  { sql: "SELECT id, v FROM items ORDER BY v DESC, id LIMIT 10" },
  { sql: "SELECT DISTINCT grp FROM items" },
  {
    sql: "SELECT id, rank() OVER (PARTITION BY grp ORDER BY v DESC, id) AS r FROM items ORDER BY id",
  },
  { sql: "SELECT path, size FROM './data' ORDER BY path" },
];

const STORM_FOLDERS = ["d0", "d1", "d2", "d3"];

/** Seeded changes of a storm tree: create, edit, atomic rewrite, delete, folder rename. */
export class LiveStorm {
  private id = 0;
  private readonly pick = <T>(list: readonly T[]): T =>
    list[Math.floor(this.random() * list.length)] as T;

  constructor(
    readonly root: string,
    readonly random: () => number,
  ) {}

  private rows(): string {
    const count = 1 + Math.floor(this.random() * 3);
    return JSON.stringify(
      Array.from({ length: count }, () => ({
        id: ++this.id,
        grp: `g${Math.floor(this.random() * 5)}`,
        v: Math.floor(this.random() * 100),
        name: `n${Math.floor(this.random() * 50)}`,
      })),
    );
  }

  private files(): string[] {
    return STORM_FOLDERS.flatMap((folder) => {
      const dir = join(this.root, "data", folder);
      return existsSync(dir) ? readdirSync(dir).map((name) => `data/${folder}/${name}`) : [];
    });
  }

  /** One seeded change of the tree. */
  change(): void {
    const roll = this.random();
    const files = this.files();
    const existing = files.length > 0 ? this.pick(files) : null;
    const folder = this.pick(STORM_FOLDERS);
    if (roll < 0.3 || existing === null) {
      mkdirSync(join(this.root, "data", folder), { recursive: true });
      writeFileSync(join(this.root, "data", folder, `f${this.id}.json`), this.rows());
    } else if (roll < 0.55) {
      writeFileSync(join(this.root, existing), this.rows());
    } else if (roll < 0.75) {
      writeFileSync(join(this.root, "tmp/next.json"), this.rows());
      renameSync(join(this.root, "tmp/next.json"), join(this.root, existing));
    } else if (roll < 0.9) {
      rmSync(join(this.root, existing));
    } else if (roll < 0.95) {
      const target = join(this.root, "data", folder);
      const source = join(this.root, existing, "..");
      if (!existsSync(target)) renameSync(source, target);
    } else {
      const labels = Array.from({ length: 1 + Math.floor(this.random() * 3) }, (_, i) => ({
        grp: `g${Math.floor(this.random() * 5)}`,
        label: `L${i}${Math.floor(this.random() * 9)}`,
      }));
      writeFileSync(join(this.root, "groups/g.json"), JSON.stringify(labels));
    }
  }
}

/** One storm subscriber: its stream while connected, what it held when it left, when it is back. */
interface StormSubscriber {
  ask: LiveAsk;
  /** Diff frames of the connections it closed. */
  diffs: number;
  stream: LiveStream | null;
  held: LiveStream | null;
  backAt: number;
}

async function stormComeBack(server: { url: string }, subscriber: StormSubscriber) {
  const held = subscriber.held as LiveStream;
  subscriber.stream = await openLive(server, subscriber.ask, {
    lastId: held.lastId as string,
    rows: held.rows,
    snapshot: held.snapshot,
  });
}

/** Leaves or comes back, as the seed says; whether it came back. */
async function stormChurn(
  server: { url: string },
  subscriber: StormSubscriber,
  step: number,
  random: () => number,
): Promise<boolean> {
  if (subscriber.stream !== null && random() < 0.03) {
    subscriber.stream.close();
    await subscriber.stream.ended;
    subscriber.held = subscriber.stream;
    subscriber.diffs += subscriber.held.frames.filter((f) => f.event === "diff").length;
    subscriber.stream = null;
    subscriber.backAt = step + 1 + Math.floor(random() * 10);
  } else if (subscriber.stream === null && step >= subscriber.backAt) {
    await stormComeBack(server, subscriber);
    return true;
  }
  return false;
}

/** What a storm came to: the statements whose final answer was wrong, and how it went. */
export interface LiveStormResult {
  /** `<sql>: <why>` for each subscriber whose rows were not a fresh answer at the end. */
  wrong: string[];
  resumed: number;
  /** Diff frames the subscribers took, over all their connections. */
  diffs: number;
}

/**
 * `changes` seeded changes (after the tree's first 20, made before `start`) with one subscriber
 * per statement, each leaving and resuming as the seed says; at the end every subscriber is
 * back and its rows are compared with a fresh `POST /query`.
 */
export async function runLiveStorm(
  root: string,
  seed: number,
  changes: number,
  start: () => Promise<{ url: string }>,
): Promise<LiveStormResult> {
  const random = seededRandomOf(seed);
  const storm = new LiveStorm(root, random);
  for (let i = 0; i < 20; i++) storm.change();
  const server = await start();
  const subscribers: StormSubscriber[] = [];
  try {
    for (const ask of LIVE_STORM_STATEMENTS) {
      const stream = await openLive(server, ask);
      assert.equal(stream.status, 200, `${ask.sql}: ${stream.error}`);
      subscribers.push({ ask, diffs: 0, stream, held: null, backAt: 0 });
    }
    let resumed = 0;
    for (let step = 0; step < changes; step++) {
      storm.change();
      for (const subscriber of subscribers) {
        if (await stormChurn(server, subscriber, step, random)) resumed++;
      }
      if (random() < 0.3) await delay(random() * 20);
    }
    const wrong: string[] = [];
    for (const subscriber of subscribers) {
      if (subscriber.stream === null) await stormComeBack(server, subscriber);
      try {
        await untilLiveCurrent(server, subscriber.stream as LiveStream, subscriber.ask.sql);
      } catch (error) {
        wrong.push(`${subscriber.ask.sql}: ${(error as Error).message.split("\n")[0]}`);
      }
    }
    const last = subscribers.flatMap((s) => s.stream?.frames ?? []);
    const diffs =
      subscribers.reduce((total, s) => total + s.diffs, 0) +
      last.filter((f) => f.event === "diff").length;
    return { wrong, resumed, diffs };
  } finally {
    for (const subscriber of subscribers) subscriber.stream?.close();
  }
}

/** Opens `/events` and waits for its `ready` frame. */
export async function openReadyEvents(server: { url: string }): Promise<EventStream> {
  const stream = await openEvents(server);
  assert.equal(stream.status, 200, "GET /events status");
  await stream.until(() => stream.frames.length > 0, "the ready frame");
  const first = stream.frames[0] as SseFrame;
  assert.equal(first.event, "ready", `first frame: ${JSON.stringify(first)}`);
  stream.cursor = 1;
  return stream;
}

/**
 * A raw TCP client that sends `GET /events` and then reads nothing until `resume()`: a stuck
 * subscriber, as far as the server can tell.
 */
export interface RawSubscriber {
  socket: Socket;
  /** Starts reading; `received()` grows from then on. */
  resume(): void;
  /** The raw bytes received so far (status line, headers, chunked body). */
  received(): Buffer;
  /** Resolves once `text` (ASCII) has arrived after `resume()`; rejects after `timeoutMs`. */
  waitFor(text: string, timeoutMs: number): Promise<void>;
  close(): void;
}

export function openStuckSubscriber(host: string, port: number): Promise<RawSubscriber> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port }, () => {
      socket.write(
        `GET /events HTTP/1.1\r\nHost: ${host}:${port}\r\nAccept: text/event-stream\r\n\r\n`,
      );
      const chunks: Buffer[] = [];
      let tail = "";
      const watchers = new Set<(tail: string) => void>();
      resolve({
        socket,
        resume() {
          socket.on("data", (chunk: Buffer) => {
            chunks.push(chunk);
            tail = (tail + chunk.toString("latin1")).slice(-64 * 1024);
            for (const watcher of watchers) watcher(tail);
          });
        },
        received: () => Buffer.concat(chunks),
        waitFor: (text, timeoutMs) =>
          new Promise((done, fail) => {
            const watcher = (current: string) => {
              if (!current.includes(text)) return;
              watchers.delete(watcher);
              clearTimeout(timer);
              done();
            };
            const timer = setTimeout(() => {
              watchers.delete(watcher);
              fail(new Error(`the raw subscriber did not receive ${text} in ${timeoutMs} ms`));
            }, timeoutMs);
            watchers.add(watcher);
            watcher(tail);
          }),
        close: () => socket.destroy(),
      });
    });
    socket.once("error", reject);
  });
}

/**
 * Splits a raw HTTP/1.1 response into its head and its de-chunked body (complete chunks);
 * `chunks` counts them (one per write of the server's response).
 */
export function decodeChunkedResponse(raw: Buffer): { head: string; body: string; chunks: number } {
  const end = raw.indexOf("\r\n\r\n");
  if (end === -1) return { head: raw.toString("latin1"), body: "", chunks: 0 };
  const head = raw.subarray(0, end).toString("latin1");
  const parts: Buffer[] = [];
  let offset = end + 4;
  for (;;) {
    const lineEnd = raw.indexOf("\r\n", offset);
    if (lineEnd === -1) break;
    const size = parseInt(raw.subarray(offset, lineEnd).toString("latin1"), 16);
    if (!Number.isFinite(size) || size === 0) break;
    const start = lineEnd + 2;
    if (raw.length < start + size + 2) break;
    parts.push(raw.subarray(start, start + size));
    offset = start + size + 2;
  }
  return { head, body: Buffer.concat(parts).toString("utf8"), chunks: parts.length };
}

/* ------------------------------------------------------------------------------------------ */
/* /proc                                                                                        */
/* ------------------------------------------------------------------------------------------ */

/** Resident set size of a process in bytes (Linux). */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
  assert.ok(kb !== undefined, `no VmRSS for ${pid}`);
  return Number(kb) * 1024;
}

/** Clock ticks per second for /proc times. */
export function clockTicks(): number {
  const probe = spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" });
  const ticks = Number(probe.stdout.trim());
  return Number.isFinite(ticks) && ticks > 0 ? ticks : 100;
}

/** utime + stime of one process in clock ticks; `null` once it is gone. */
export function cpuTicks(pid: number): number | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // The command name may hold spaces and parentheses: fields start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 14 and 15 of stat(5), counted from `state` (field 3) here.
  return Number(fields[11]) + Number(fields[12]);
}

/** The process and all its descendants (via /proc/<pid>/task/<tid>/children). */
export function processTree(pid: number): number[] {
  const all: number[] = [];
  const visit = (current: number) => {
    all.push(current);
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${current}/task`);
    } catch {
      return;
    }
    for (const task of tasks) {
      let children = "";
      try {
        children = readFileSync(`/proc/${current}/task/${task}/children`, "utf8");
      } catch {
        continue;
      }
      for (const child of children.trim().split(/\s+/).filter(Boolean)) visit(Number(child));
    }
  };
  visit(pid);
  return all;
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "";
  }
}

/** The server's live query processes (an exited one not yet reaped has no command line). */
export function queryProcesses(server: ServerProcess): number[] {
  return processTree(server.pid).filter((pid) => commandLine(pid).includes("--dirq-query-process"));
}

/** CPU ticks of the process tree, by pid. */
export function treeCpu(pid: number): Map<number, number> {
  const ticks = new Map<number, number>();
  for (const member of processTree(pid)) {
    const value = cpuTicks(member);
    if (value !== null) ticks.set(member, value);
  }
  return ticks;
}

/** Waits `ms` (for sequencing only, never as an assertion). */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` until it returns true or `timeoutMs` passes. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = WAIT_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await delay(25);
  }
}

/** How long `untilServedAsFresh` keeps one fresh answer before it asks for another. */
const FRESH_KEPT_MS = 5_000;

/**
 * Waits until the server's answer equals a fresh one (a one-shot run of the same statement).
 * The server's is cheap to ask for and is asked often; the fresh run (a process, hooks and all)
 * is made again only every few seconds, in case the tree changed under it: asking for both at
 * every poll kept two cores busy with one-shot runs while the server caught up. Never throws:
 * the caller's final comparison reports both answers.
 */
export async function untilServedAsFresh(
  served: () => Promise<string>,
  fresh: () => Promise<string>,
  timeoutMs = WAIT_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let freshAnswer = await fresh();
  let freshAt = Date.now();
  while (Date.now() <= deadline) {
    if ((await served()) === freshAnswer) return;
    await delay(25);
    if (Date.now() - freshAt > FRESH_KEPT_MS) {
      freshAnswer = await fresh();
      freshAt = Date.now();
    }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* node:http, for control over the connection                                                  */
/* ------------------------------------------------------------------------------------------ */

/**
 * One request with node:http. `agent: false` (the default here) uses a fresh connection that
 * is closed afterwards; pass a keep-alive Agent to control connection reuse.
 */
export function httpRequest(
  server: { host: string; port: number },
  options: {
    method: string;
    path: string;
    body?: string | Buffer;
    chunked?: boolean;
    agent?: Agent | false;
  },
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (options.body !== undefined && !options.chunked) {
      headers["content-length"] = String(Buffer.byteLength(options.body));
    }
    if (options.agent === undefined || options.agent === false) headers.connection = "close";
    let answered = false;
    const req = httpRequestRaw(
      {
        host: "127.0.0.1",
        port: server.port,
        path: options.path,
        method: options.method,
        agent: options.agent ?? false,
        headers,
      },
      (res) => {
        answered = true;
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => {
          const fetchHeaders = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (typeof value === "string") fetchHeaders.set(name, value);
          }
          resolve({
            status: res.statusCode ?? 0,
            contentType: res.headers["content-type"] ?? "",
            headers: fetchHeaders,
            text,
          });
        });
        res.on("error", reject);
      },
    );
    // A server that answers early (413) may reset the rest of the upload: not an error here.
    req.on("error", (error) => {
      if (!answered) reject(error);
    });
    if (options.body !== undefined && options.chunked) {
      // Several writes without a length: chunked transfer encoding.
      const body = Buffer.from(options.body);
      const step = 64 * 1024;
      for (let offset = 0; offset < body.length; offset += step) {
        req.write(body.subarray(offset, offset + step));
      }
      req.end();
    } else {
      req.end(options.body);
    }
  });
}

/**
 * Temporary trees and loopback servers for one test file: `tree` makes a tree, `serve` starts
 * `dirq server` in it on 127.0.0.1 and a free port. After the file's tests every server is
 * stopped and every tree removed (`beforeRemove` first, e.g. to restore permissions).
 */
export function serverFixtures(options: { beforeRemove?: (root: string) => void } = {}) {
  const roots: string[] = [];
  const servers: ServerProcess[] = [];
  after(async () => {
    await Promise.all(servers.map((server) => server.kill()));
    for (const root of roots) {
      options.beforeRemove?.(root);
      removeTree(root);
    }
  });
  return {
    tree(spec: Record<string, string>): string {
      const root = makeTree(spec);
      roots.push(root);
      return root;
    },
    async serve(
      root: string,
      args: readonly string[] = [],
      env: Record<string, string> = {},
    ): Promise<ServerProcess> {
      const server = await startServer([...args, "--host", "127.0.0.1", "--port", "0"], {
        cwd: root,
        env,
      });
      servers.push(server);
      return server;
    },
  };
}
