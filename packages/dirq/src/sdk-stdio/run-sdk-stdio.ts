import type { Readable, Writable } from "node:stream";
import {
  type Dirq,
  DirqError,
  isDirqError,
  open,
  type OpenOptions,
  type QueryParameters,
  type RowEventStream,
  type TableDefinition,
} from "../index.js";
import type { LiveSubscription } from "../live/live-queries.js";
import { exactJson } from "./exact-json.js";
import { type Frame, FrameError, FrameReader, frameHead } from "./frames.js";

/**
 * `dirq sdk-stdio`: the Python SDK's (or any other language's) way into the core. One index
 * per process, driven by frames on stdin and answered on stdout (docs/python.md, "The
 * protocol"). Every operation is the public TypeScript SDK's, as plain data: `open`, `query`,
 * `watch`, `live`, `ready`, `skipped`, `close`, and `tables`, a query of the index's schema. A table's
 * `extract` runs on the other side: the function the SDK is given forwards each file there and
 * hands the rows it gets back, as JSON text, to dirq's hook-output reader.
 *
 * The process ends with its peer: when stdin ends (the peer closed it, exited or was killed)
 * or `stop` resolves (a signal), the index is closed and the returned promise resolves, at
 * once if a statement in flight holds the close (see `CLOSE_GRACE_MS`).
 */
export interface SdkStdioOptions {
  stdin: Readable;
  stdout: Writable;
  /** Resolves when the process is asked to stop (SIGINT, SIGTERM). */
  stop: Promise<void>;
}

/** What the peer sends to open the index: `OpenOptions` as plain data. */
interface OpenRequest {
  root?: string;
  configs?: string[];
  tables?: TableRequest[];
  onFile?: string;
  hookTimeout?: number;
  noIgnore?: boolean;
  ignore?: string[];
  extensions?: string[];
  live?: boolean;
  persist?: string | true;
  /** `false`: no progress lines; otherwise as `DIRQ_PROGRESS` says. */
  progress?: boolean;
}

/** A table definition as plain data; `extract` names the peer's function (its digest). */
type TableRequest = Omit<TableDefinition, "extract"> & { extract?: string };

/** Every table and view a statement names by a plain name, with its visible columns. */
const TABLES_SQL = String.raw`SELECT name, type FROM sqlite_schema
WHERE type IN ('table', 'view') AND name NOT LIKE '\_dirq\_%' ESCAPE '\'
  AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND name <> '.' AND name NOT LIKE './%'
ORDER BY name`;
/** The visible columns of a table (the guard takes only a literal name in pragma_table_info). */
function columnsSql(table: string): string {
  const name = `'${table.replaceAll("'", "''")}'`;
  return String.raw`SELECT name, type FROM pragma_table_info(${name})
WHERE name NOT LIKE '\_dirq\_%' ESCAPE '\' ORDER BY cid`;
}

/**
 * Files handed to the peer's extract function at once: each call is a round trip to another
 * process, so enough are in flight for the peer to answer one after another without waiting
 * (and for its answers to leave in few writes).
 */
const EXTRACTS_IN_FLIGHT = 128;

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

function requestError(message: string): DirqError {
  return new DirqError("REQUEST_INVALID", `sdk-stdio: ${message}`);
}

/** An error as the peer gets it: dirq's code and message, `INTERNAL` for anything else. */
function errorData(error: unknown): { code: string; message: string } {
  if (isDirqError(error)) return { code: error.code, message: error.message };
  const message = error instanceof Error ? error.message : String(error);
  return { code: "INTERNAL", message: `internal error: ${message}. Please report this as a bug` };
}

function stringField(header: Record<string, unknown>, key: string): string {
  const value = header[key];
  if (typeof value !== "string") throw requestError(`'${key}' must be a string`);
  return value;
}

function numberField(header: Record<string, unknown>, key: string): number {
  const value = header[key];
  if (typeof value !== "number" || !Number.isSafeInteger(value)) {
    throw requestError(`'${key}' must be an integer`);
  }
  return value;
}

const NON_FINITE: Record<string, number> = {
  NaN: Number.NaN,
  Infinity: Number.POSITIVE_INFINITY,
  "-Infinity": Number.NEGATIVE_INFINITY,
};

/** A value JSON cannot hold: a BLOB as `{"$base64": "..."}`, NaN or ±Infinity as `{"$float": ...}`. */
function decodeParameter(item: unknown): unknown {
  if (item === null || typeof item !== "object" || Array.isArray(item)) return item;
  const tagged = item as Record<string, unknown>;
  if (typeof tagged.$base64 === "string") return Buffer.from(tagged.$base64, "base64");
  if (typeof tagged.$float === "string" && tagged.$float in NON_FINITE) {
    return NON_FINITE[tagged.$float];
  }
  return item;
}

/** Parameter values as the SDK binds them: JSON gives null, numbers, strings and bigints. */
function parameterValues(value: unknown): QueryParameters | undefined {
  if (value === null || value === undefined) return undefined;
  const decode = decodeParameter;
  if (Array.isArray(value)) return value.map(decode) as QueryParameters;
  if (typeof value === "object") {
    const entries = Object.entries(value).map(([key, item]) => [key, decode(item)]);
    return Object.fromEntries(entries) as QueryParameters;
  }
  throw requestError("'params' must be an array, an object or null");
}

/** The reply of a peer's extract function: rows as JSON text, or why the file is skipped. */
interface PendingExtract {
  resolve: (rows: Buffer) => void;
  reject: (error: Error) => void;
}

class SdkStdioSession {
  private db: Dirq | null = null;
  private readonly streams = new Map<number, RowEventStream>();
  private readonly lives = new Map<number, LiveSubscription>();
  private readonly extracts = new Map<number, PendingExtract>();
  private nextExtract = 1;
  /** Set when the peer is gone: an extract asked for now fails at once. */
  private peerGone = false;
  private corked = false;

  constructor(private readonly stdout: Writable) {}

  /** Frames written in one turn of the event loop leave in one write (and wake the peer once). */
  private send(header: object, payload?: Buffer | string): void {
    if (!this.corked) {
      this.corked = true;
      this.stdout.cork();
      process.nextTick(() => {
        this.corked = false;
        this.stdout.uncork();
      });
    }
    const bytes = typeof payload === "string" ? Buffer.from(payload, "utf8") : payload;
    this.stdout.write(frameHead(header, bytes?.length ?? 0));
    if (bytes !== undefined && bytes.length > 0) this.stdout.write(bytes);
  }

  private reply(id: number, payload: string | Buffer | null): void {
    this.send({ re: id }, payload ?? "null");
  }

  private fail(id: number, error: unknown): void {
    this.send({ re: id, error: errorData(error) });
  }

  handle(frame: Frame): void {
    const { header } = frame;
    if ("re" in header) {
      this.extractAnswered(header, frame.payload);
      return;
    }
    let id: number;
    try {
      id = numberField(header, "id");
    } catch (error) {
      // No id to answer to: say so on the peer's error channel, once, and read on.
      this.send({ re: 0, error: errorData(error) });
      return;
    }
    this.run(header).then(
      (payload) => this.reply(id, payload),
      (error: unknown) => this.fail(id, error),
    );
  }

  private async run(header: Record<string, unknown>): Promise<string | Buffer | null> {
    const op = stringField(header, "op");
    if (op === "open") return this.open(header.options as OpenRequest);
    const db = this.db;
    if (db === null) throw requestError(`'${op}' before 'open'`);
    switch (op) {
      case "query": {
        const settle = header.settle !== false;
        const params = parameterValues(header.params);
        // JSON text from the start: SQLite writes a long answer without a JS object per row,
        // REAL values too, as the peer's parser reads the same numbers from SQLite's text.
        return db.queryJson(stringField(header, "sql"), params, {
          settle,
          realText: "same-value",
        });
      }
      case "ready":
        await db.ready;
        return null;
      case "skipped":
        return exactJson(db.skipped);
      case "tables":
        return exactJson(await this.tables(db));
      case "watch":
        await this.watch(db, numberField(header, "stream"), header.buffer);
        return null;
      case "unwatch":
        await this.streams.get(numberField(header, "stream"))?.return();
        return null;
      case "close":
        await db.close();
        return null;
      case "live":
      case "live_next":
      case "unlive":
        return this.runLive(db, op, header);
      default:
        throw requestError(`unknown op '${op}'`);
    }
  }

  private open(request: OpenRequest): string {
    if (this.db !== null) throw requestError("the index is open already: one per process");
    if (request === null || typeof request !== "object") {
      throw requestError("'options' must be an object");
    }
    const { tables = [], progress, ...rest } = request;
    if (!Array.isArray(tables)) throw requestError("'tables' must be an array");
    const options: OpenOptions = {
      ...rest,
      tables: tables.map((table) => this.tableDefinition(table)),
      ...(progress === false ? { progress: false } : {}),
    };
    const db = open(options);
    this.db = db;
    return exactJson({ root: db.root, notices: db.notices });
  }

  private tableDefinition(table: TableRequest): TableDefinition {
    if (table === null || typeof table !== "object" || table.extract === undefined) {
      return table as TableDefinition;
    }
    const { extract: digest, ...rest } = table;
    const forward = (path: string, content: Buffer) => this.extract(rest.name, path, content);
    // The SDK names an extract function by its source (a persisted table is rebuilt when it
    // changes): here the source is the peer's function, told by its digest.
    forward.toString = () => `sdk-stdio extract ${String(digest)}`;
    return { ...rest, extract: forward, concurrency: EXTRACTS_IN_FLIGHT };
  }

  /** Asks the peer for one file's rows; they come back as JSON text. */
  private extract(table: string, path: string, content: Buffer): Promise<Buffer> {
    if (this.peerGone) return Promise.reject(new Error("the SDK's process is gone"));
    const id = this.nextExtract++;
    return new Promise((resolve, reject) => {
      this.extracts.set(id, { resolve, reject });
      this.send({ extract: id, table, path }, content);
    });
  }

  private extractAnswered(header: Record<string, unknown>, payload: Buffer): void {
    const id = header.re;
    const pending = typeof id === "number" ? this.extracts.get(id) : undefined;
    if (pending === undefined) return;
    this.extracts.delete(id as number);
    if (typeof header.error === "string") pending.reject(new Error(header.error));
    else pending.resolve(payload);
  }

  private async tables(db: Dirq): Promise<unknown[]> {
    const tables = await db.query(TABLES_SQL);
    const described = [];
    for (const { name, type } of tables) {
      const columns = await db.query(columnsSql(name as string), { settle: false });
      described.push({ name, type, columns });
    }
    return described;
  }

  /** Starts a stream; its events follow as frames of their own, then one `end` frame. */
  private async watch(db: Dirq, streamId: number, buffer: unknown): Promise<void> {
    if (this.streams.has(streamId)) throw requestError(`stream ${streamId} exists already`);
    const stream = db.watch(typeof buffer === "number" ? { buffer } : {});
    this.streams.set(streamId, stream);
    const forwarded = (async () => {
      for await (const event of stream) {
        // The Python SDK's events are row changes only: it does not know `reset` yet.
        if (event.action !== "reset") this.send({ event: streamId }, exactJson(event));
      }
    })();
    void forwarded
      .then(
        () => this.send({ end: streamId }),
        (error: unknown) => this.send({ end: streamId, error: errorData(error) }),
      )
      .finally(() => this.streams.delete(streamId));
    await stream.ready;
  }

  /**
   * A live query, pulled frame by frame: `live` opens it (rejecting as `query` would), each
   * `live_next` answers the next frame as it is (its JSON text untouched), `null` when `wait`
   * ms passed without one, or `{"end": true}`; `unlive` ends it. The peer asks when it is
   * ready for more, so one that reads slowly holds no frames here: it gets a new snapshot when
   * it fell behind the history, as an SSE client does (docs/live-queries.md).
   */
  private async runLive(
    db: Dirq,
    op: string,
    header: Record<string, unknown>,
  ): Promise<string | null> {
    const streamId = numberField(header, "stream");
    if (op === "unlive") {
      this.lives.get(streamId)?.close();
      this.lives.delete(streamId);
      return null;
    }
    if (op === "live") {
      if (this.lives.has(streamId)) throw requestError(`live query ${streamId} exists already`);
      const key = header.key;
      if (key !== undefined && key !== null && !isStringList(key)) {
        throw requestError("'key' must be a list of column names");
      }
      const params = parameterValues(header.params);
      const sql = stringField(header, "sql");
      const request = { sql, params, ...(isStringList(key) ? { key } : {}) };
      this.lives.set(streamId, await db.liveSubscription(request));
      return null;
    }
    const subscription = this.lives.get(streamId);
    const frame = await subscription?.next(numberField(header, "wait"));
    if (frame === null) return null;
    if (frame === undefined) {
      this.lives.delete(streamId);
      return '{"end":true}';
    }
    const head = JSON.stringify({ event: frame.event, id: frame.id });
    return `${head.slice(0, -1)},"data":${frame.data}}`;
  }

  /** The peer is gone or the process must stop: close the index, failing what waits on it. */
  async shutdown(): Promise<void> {
    this.peerGone = true;
    for (const subscription of this.lives.values()) subscription.close();
    this.lives.clear();
    for (const pending of this.extracts.values()) {
      pending.reject(new Error("the SDK's process is gone"));
    }
    this.extracts.clear();
    await this.db?.close();
  }
}

/**
 * How long the index may take to close once the peer is gone (or a signal came). A statement
 * waiting on a hung hook (with `timeout = 0`, for ever) would hold the close: past this the
 * caller ends the process, whose exit stops the hooks (docs/python.md, "Lifetime").
 */
const CLOSE_GRACE_MS = 500;

/** Waits for `work` to settle, at most `ms` milliseconds. */
async function settledWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([work.catch(() => undefined), late]);
  clearTimeout(timer);
}

/**
 * Runs the protocol until stdin ends or `stop` resolves, then closes the index (waiting at
 * most `CLOSE_GRACE_MS`); resolves to the exit code. The caller ends the process then: what
 * the index still runs (a hook that hangs) is wanted by nobody.
 */
export async function runSdkStdio(options: SdkStdioOptions): Promise<number> {
  const { stdin, stdout } = options;
  const session = new SdkStdioSession(stdout);
  const reader = new FrameReader();
  let broken: FrameError | null = null;
  const ended = new Promise<void>((resolve) => {
    stdin.on("data", (chunk: Buffer) => {
      if (broken !== null) return;
      try {
        for (const frame of reader.push(chunk)) session.handle(frame);
      } catch (error) {
        if (!(error instanceof FrameError)) throw error;
        broken = error;
        stdin.destroy();
        resolve();
      }
    });
    stdin.on("end", resolve);
    stdin.on("close", resolve);
    stdin.on("error", () => resolve());
  });
  await Promise.race([ended, options.stop]);
  await settledWithin(session.shutdown(), CLOSE_GRACE_MS);
  stdin.destroy();
  if (broken !== null) {
    throw new DirqError(
      "REQUEST_INVALID",
      `sdk-stdio: ${(broken as FrameError).message}: stdin is for the dirq SDKs' frames (docs/python.md)`,
    );
  }
  return 0;
}
