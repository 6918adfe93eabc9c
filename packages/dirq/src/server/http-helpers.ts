import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";

/** A request body over the limit. */
export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`request body is larger than ${limit} bytes`);
  }
}

/**
 * Reads a request body as text, refusing more than `limit` bytes (declared or streamed).
 * node:http streams directly; going through web `Request` objects costs throughput here.
 */
export function readBody(request: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(request.headers["content-length"] ?? 0);
  if (declared > limit) return Promise.reject(new BodyTooLargeError(limit));
  // Listeners, not `for await`: the async iterator's machinery is a noticeable part of the
  // server's own time per request for uncached statements.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      chunks.push(chunk);
      if (size > limit) finish(new BodyTooLargeError(limit));
    };
    const onEnd = () => finish(null);
    const onClose = () => finish(new Error("the client closed the connection mid-body"));
    const finish = (error: Error | null) => {
      request.off("data", onData);
      request.off("end", onEnd);
      request.off("error", finish);
      request.off("close", onClose);
      if (error !== null) {
        // Flowing stops with the last listener; a later `resume()` drops the rest.
        request.pause();
        reject(error);
      } else {
        resolve(
          chunks.length === 1
            ? (chunks[0] as Buffer).toString("utf8")
            : Buffer.concat(chunks).toString("utf8"),
        );
      }
    };
    request.on("data", onData);
    request.on("end", onEnd);
    request.on("error", finish);
    request.on("close", onClose);
  });
}

export function sendJson(
  response: ServerResponse,
  status: number,
  body: string | Uint8Array,
): void {
  writeJsonHead(response, status, body);
  response.end(body);
}

function writeJsonHead(response: ServerResponse, status: number, body: string | Uint8Array): void {
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  });
}

/** How long the rest of a refused request's body is read and dropped before the answer ends. */
const DRAIN_REFUSED_BODY_MS = 5_000;

/**
 * Answers a request whose body the server will not use (too large, wrong type). The answer is
 * written at once, so a client that reads while it uploads sees it early; it ends, and a closing
 * connection closes, only once the rest of the body has been read and dropped (or after
 * DRAIN_REFUSED_BODY_MS). Closing a socket with bytes still unread makes the kernel reset the
 * connection, and a client still uploading then sees a broken pipe instead of the answer.
 */
export function refuseBody(
  request: IncomingMessage,
  response: ServerResponse,
  status: number,
  body: string,
): void {
  if (request.complete || request.destroyed) return sendJson(response, status, body);
  writeJsonHead(response, status, body);
  response.write(body);
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    response.end();
  };
  const timer = setTimeout(end, DRAIN_REFUSED_BODY_MS);
  request.once("end", end);
  request.once("close", end);
  request.resume();
}

export function sendText(
  response: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, { "content-type": "text/plain; charset=utf-8", ...headers });
  response.end(text);
}

/** A frame's data up to this size is joined with its header and sent in one write. */
const JOIN_FRAME_BYTES = 64 * 1024;

/**
 * Bytes of frames a stream gathers in one turn of the event loop before it writes them: a
 * burst's frames then go out in writes of this size, not of the socket's high-water mark
 * (16 KiB), each a system call and a chunk of the chunked encoding.
 */
const TURN_BYTES = 128 * 1024;
const FRAME_END = Buffer.from("\n\n");

/**
 * The chunks with each run of buffers that follow each other in one block of memory (frames
 * the event history copied one after another) made one view of that block: no copy.
 */
function mergeAdjacent(chunks: readonly (string | Buffer)[]): (string | Buffer)[] {
  const merged: (string | Buffer)[] = [];
  // The run's first buffer and the bytes it has grown to: one view made per run, not per frame.
  let first: Buffer | null = null;
  let length = 0;
  const endRun = () => {
    if (first === null) return;
    merged.push(
      length === first.length ? first : Buffer.from(first.buffer, first.byteOffset, length),
    );
    first = null;
  };
  for (const chunk of chunks) {
    if (
      first !== null &&
      typeof chunk !== "string" &&
      chunk.buffer === first.buffer &&
      chunk.byteOffset === first.byteOffset + length
    ) {
      length += chunk.length;
      continue;
    }
    endRun();
    if (typeof chunk === "string") merged.push(chunk);
    else {
      first = chunk;
      length = chunk.length;
    }
  }
  endRun();
  return merged;
}

/**
 * The chunks in order, with runs of pieces under `JOIN_FRAME_BYTES` joined into one: strings
 * into a string, a run with bytes in it into one buffer. A larger piece is written as it is.
 */
function joinSmall(chunks: readonly (string | Buffer)[]): (string | Buffer)[] {
  const joined: (string | Buffer)[] = [];
  let run: (string | Buffer)[] = [];
  const endRun = () => {
    if (run.length === 1) joined.push(run[0] as string | Buffer);
    else if (run.every((piece) => typeof piece === "string")) joined.push(run.join(""));
    else if (run.length > 0) {
      joined.push(
        Buffer.concat(run.map((piece) => (typeof piece === "string" ? Buffer.from(piece) : piece))),
      );
    }
    run = [];
  };
  for (const chunk of mergeAdjacent(chunks)) {
    if (chunk.length > JOIN_FRAME_BYTES) {
      endRun();
      joined.push(chunk);
    } else run.push(chunk);
  }
  endRun();
  return joined;
}

const CRLF = Buffer.from("\r\n");

/** `piece` as one chunk of the chunked encoding: `head` (its size line), its bytes, CRLF. */
function chunkOf(head: string, piece: Buffer): Buffer {
  const chunk = Buffer.allocUnsafe(head.length + piece.length + 2);
  chunk.write(head, 0, "latin1");
  piece.copy(chunk, head.length);
  chunk[chunk.length - 2] = 0x0d;
  chunk[chunk.length - 1] = 0x0a;
  return chunk;
}

/**
 * Writes body pieces straight to a response's socket, each as one chunk of the chunked
 * encoding when the response uses it (as `response.write` frames them): the same bytes on the
 * wire, without the response's own path per write (a cork, an uncork on the next tick and a
 * vector write of three pieces), which cost the server's main thread more per frame than the
 * system call. Pieces of one flush go out in one write. False when the socket is full.
 */
function writeBody(
  socket: Socket,
  pieces: readonly (string | Buffer)[],
  chunked: boolean,
): boolean {
  const framed: (string | Buffer)[] = [];
  for (const piece of pieces) {
    if (piece.length === 0) continue;
    if (!chunked) framed.push(piece);
    else if (typeof piece === "string") {
      framed.push(`${Buffer.byteLength(piece).toString(16)}\r\n${piece}\r\n`);
    } else {
      const head = `${piece.length.toString(16)}\r\n`;
      // A small frame's bytes are copied once more to go out in one write, not three.
      if (piece.length <= JOIN_FRAME_BYTES) framed.push(chunkOf(head, piece));
      else framed.push(head, piece, CRLF);
    }
  }
  if (framed.length === 1) return socket.write(framed[0] as string | Buffer);
  socket.cork();
  let flowing = true;
  for (const piece of framed) flowing = socket.write(piece) && flowing;
  socket.uncork();
  return flowing;
}

/**
 * A Server-Sent Events response. Frames follow the SSE format: each line of `data` gets its
 * own `data:` field, a blank line ends the frame. `write` waits while the client's socket is
 * full, so a slow client slows only its own loop.
 */
export class EventStreamResponse {
  /** Chunks written in this turn of the event loop, not yet handed to the response. */
  private waiting: (string | Buffer)[] = [];
  private waitingLength = 0;
  private flushAtTurnEnd: NodeJS.Immediate | null = null;

  /**
   * `held`: what is written waits until the caller's `flushHeld` (or until it is more than a
   * turn's worth), not for the end of the event loop's turn. A caller that knows when no
   * frame is ready (a live query's stream, which takes every frame ready before it waits for
   * the next) writes them all in one write then, without a callback scheduled per frame.
   * `/events` keeps the turn's end: it joins frames of several I/O callbacks of one turn.
   */
  constructor(
    private readonly response: ServerResponse,
    private readonly held = false,
  ) {
    response.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      // An event stream holds its connection to the end; closing it then lets shutdown finish.
      connection: "close",
    });
    response.flushHeaders();
  }

  get closed(): boolean {
    return this.response.destroyed || this.response.writableEnded;
  }

  /**
   * One frame; with `id`, the SSE id a reconnecting client sends back as `Last-Event-ID`.
   * `data` as UTF-8 bytes is sent as it is (a large row's bytes are shared by every
   * subscriber, never copied or encoded again per socket).
   */
  async send(event: string, data: string | readonly Buffer[], id?: string): Promise<void> {
    const idLine = id === undefined ? "" : `id: ${id}\n`;
    if (typeof data !== "string") {
      // Row JSON holds no raw line break (JSON escapes them): one data line.
      if (data.some((piece) => piece.includes(0x0a) || piece.includes(0x0d))) {
        return this.send(event, Buffer.concat(data).toString(), id);
      }
      const head = Buffer.from(`${idLine}event: ${event}\ndata: `);
      const bytes = data.reduce((sum, piece) => sum + piece.length, 0);
      // A small frame goes out as one write; a large one's bytes are written as they are.
      return this.writeAll(
        bytes <= JOIN_FRAME_BYTES
          ? [Buffer.concat([head, ...data, FRAME_END])]
          : [head, ...data, FRAME_END],
      );
    }
    // Row JSON holds no raw line break (JSON escapes them): one data line, without splitting
    // a row of tens of megabytes.
    const lines =
      data.includes("\n") || data.includes("\r")
        ? data
            .split(/\r\n|\r|\n/)
            .map((line) => `data: ${line}\n`)
            .join("")
        : `data: ${data}\n`;
    await this.writeAll([`${idLine}event: ${event}\n${lines}\n`]);
  }

  /**
   * A whole frame, already in the SSE format, as its bytes; a promise only when the client's
   * socket is full (to wait on).
   */
  sendEncoded(frame: Buffer): Promise<void> | undefined {
    return this.writeAll([frame]);
  }

  /**
   * Writes what a `held` stream holds; a promise only when the client's socket is full.
   * Nothing for a stream that is not `held` (it writes at the turn's end).
   */
  flushHeld(): Promise<void> | undefined {
    if (!this.held || this.waiting.length === 0 || this.flush()) return undefined;
    return this.drained();
  }

  /** A comment line, which clients ignore: keeps proxies from closing an idle stream. */
  async comment(text: string): Promise<void> {
    await this.writeAll([`: ${text}\n\n`]);
  }

  /**
   * Takes the chunks to write; a promise to wait on while the client's socket is full. The
   * frames of one turn of the event loop go out in one write, at its end (a `held` stream's at
   * its `flushHeld`; a burst of row events otherwise cost a
   * `writev` and a chunk of the chunked encoding each: most of the main thread's time while a
   * large change was delivered). Frames wait only while what waits stays under `TURN_BYTES`
   * and what the socket holds under the response's high-water mark; past either they are
   * written at once, and a full socket is waited for as before. Not corked: a corked response's `write` reports its own
   * buffer, not the socket's, on newer Node versions, and a slow client would then be written
   * to without end.
   */
  private writeAll(chunks: readonly (string | Buffer)[]): Promise<void> | undefined {
    if (this.closed) return undefined;
    for (const chunk of chunks) {
      this.waiting.push(chunk);
      this.waitingLength += chunk.length;
    }
    if (
      this.waitingLength < TURN_BYTES &&
      this.response.writableLength < this.response.writableHighWaterMark
    ) {
      if (!this.held) this.flushAtTurnEnd ??= setImmediate(() => this.flush());
      return undefined;
    }
    return this.flush() ? undefined : this.drained();
  }

  /**
   * Resolves when the socket drains or the response closes. Both listeners are removed either
   * way: one left behind per frame that met back-pressure would pile up on a long-lived stream.
   */
  private drained(): Promise<void> {
    return new Promise<void>((resolve) => {
      // Frames written to the socket itself are drained there: the response then says nothing.
      const socket = this.response.socket;
      const done = () => {
        this.response.off("drain", done);
        this.response.off("close", done);
        socket?.off("drain", done);
        resolve();
      };
      this.response.on("drain", done);
      this.response.on("close", done);
      socket?.on("drain", done);
    });
  }

  /** Writes what waits, small pieces joined; false when the socket is full. */
  private flush(): boolean {
    if (this.flushAtTurnEnd !== null) clearImmediate(this.flushAtTurnEnd);
    this.flushAtTurnEnd = null;
    const chunks = this.waiting;
    this.waiting = [];
    this.waitingLength = 0;
    if (this.closed) return true;
    const pieces = joinSmall(chunks);
    const socket = this.ownSocket();
    if (socket === null) {
      let flowing = true;
      for (const piece of pieces) flowing = this.response.write(piece) && flowing;
      return flowing;
    }
    return writeBody(socket, pieces, this.response.chunkedEncoding);
  }

  /**
   * The response's socket when the response may write its body to it itself: the response
   * holds the socket and has nothing of its own waiting (a response to a pipelined request
   * waits for the one before it, and writes through `response.write`).
   */
  private ownSocket(): Socket | null {
    const socket = this.response.socket;
    if (socket === null || socket.destroyed || !socket.writable) return null;
    return this.response.writableLength === socket.writableLength ? socket : null;
  }

  end(): void {
    if (this.closed) return;
    this.flush();
    this.response.end();
  }
}
