import { EventEmitter } from "node:events";
import { fstatSync, writeSync } from "node:fs";
import type { Writable } from "node:stream";
import type { CliIo, OutputStream } from "../cli/main.js";
import { lazyModule } from "../lazy-module.js";

const tty = lazyModule<typeof import("node:tty")>("node:tty");

/** A process stream as Node makes it: `process.stdout` or `process.stderr`. */
type ProcessStream = Writable & { isTTY?: boolean };

/** What to do when the output cannot be written (`> /dev/full`, a reader that went away). */
export type OutputFailure = (error: NodeJS.ErrnoException) => void;

/** Linux's memory devices (`/dev/null`, `/dev/zero`, `/dev/full`): character devices, never terminals. */
const LINUX_MEMORY_DEVICES = 1;

/**
 * Whether `fd` is a terminal. Files, pipes and sockets are told by one `fstat`; only a
 * character device needs `isatty`, whose module loads `net` and the stream modules.
 */
function isTerminal(fd: number): boolean {
  let stats;
  try {
    stats = fstatSync(fd);
  } catch {
    return false;
  }
  if (!stats.isCharacterDevice()) return false;
  // Linux encodes the major number in bits 8-19 of the device number.
  if (process.platform === "linux" && ((stats.rdev >> 8) & 0xfff) === LINUX_MEMORY_DEVICES) {
    return false;
  }
  return tty().isatty(fd);
}

/**
 * stdout or stderr written by synchronous writes to its file descriptor, with Node's stream
 * made only if a write would block. Making `process.stdout` loads Node's stream modules (and
 * `net` for a pipe), time and memory for each of the two streams that are a noticeable part of
 * dirq's own start-up. A one-shot answer is held until the statement is done and then written
 * whole, so writing it synchronously costs nothing; a pipe another program left non-blocking
 * (`EAGAIN`) gets the stream from then on, which waits for the reader as before.
 */
export class FdOutput extends EventEmitter implements OutputStream {
  private terminal: boolean | undefined;
  private handedOver: ProcessStream | null = null;

  constructor(
    private readonly fd: number,
    private readonly makeStream: () => ProcessStream,
    private readonly onFailure: OutputFailure,
  ) {
    super();
  }

  get isTTY(): boolean {
    this.terminal ??= isTerminal(this.fd);
    return this.terminal;
  }

  write(chunk: string | Uint8Array): boolean {
    if (this.handedOver !== null) return this.handedOver.write(chunk);
    let rest = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    while (rest.length > 0) {
      try {
        rest = rest.subarray(writeSync(this.fd, rest));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EAGAIN") return this.handOver(rest);
        this.onFailure(error as NodeJS.ErrnoException);
        return true;
      }
    }
    return true;
  }

  /** The stream writes the rest and everything after it; its `drain` is this writer's. */
  private handOver(rest: Uint8Array): boolean {
    const stream = this.makeStream();
    this.handedOver = stream;
    stream.on("drain", () => this.emit("drain"));
    return stream.write(rest);
  }
}

/**
 * The CLI's view of this process: stdout and stderr as `FdOutput`s, Node's own streams made
 * when first asked for (the REPL's line editor needs them). `onStdoutFailure` decides what a
 * failed write to stdout means; a failed write to stderr is dropped, as nothing is left to
 * report it on.
 */
export function processIo(cwd: string, onStdoutFailure: OutputFailure): CliIo {
  const stdoutStream = madeWhenAsked(() => process.stdout, onStdoutFailure);
  const stderrStream = madeWhenAsked(
    () => process.stderr,
    () => {},
  );
  return {
    cwd,
    stdout: new FdOutput(1, stdoutStream, onStdoutFailure),
    stderr: new FdOutput(2, stderrStream, () => {}),
    streams: () => ({ stdout: stdoutStream(), stderr: stderrStream() }),
  };
}

/** A process stream, made on first use (Node makes it on first access) with its error handler. */
function madeWhenAsked(get: () => ProcessStream, onError: OutputFailure): () => ProcessStream {
  return () => {
    const stream = get();
    if (stream.listenerCount("error") === 0) stream.on("error", onError);
    return stream;
  };
}
