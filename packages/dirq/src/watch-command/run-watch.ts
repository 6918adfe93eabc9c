import { once } from "node:events";
import { resolve } from "node:path";
import type { Writable } from "node:stream";
import type { WatchCommand } from "../cli/args.js";
import { EMPTY_CONFIG } from "../config/types.js";
import { DirqError } from "../errors.js";
import { parseExtensionArgument } from "../extensions/load-extensions.js";
import { LiveQueries, type LiveFrame, type LiveSubscription } from "../live/live-queries.js";
import { LiveSession } from "../live/live-session.js";
import { escapeControlCharacters } from "../output/escape.js";
import { flagTimeLimit } from "../parse/hook-timeout.js";
import { skippedLines } from "../progress/build-notes.js";
import { createProgressReporter } from "../progress/reporter.js";
import type { QueryParameters } from "../query/parameters.js";
import { WatchScreen } from "./watch-screen.js";

export interface WatchIo {
  stdout: Writable & { isTTY?: boolean };
  stderr: Writable;
  cwd: string;
  /** Resolves when the user ends it (Ctrl-C, SIGTERM, a hang-up). */
  stop: Promise<void>;
}

/** How long one wait for a frame lasts (the loop looks whether it was stopped between). */
const IDLE_WAIT_MS = 60_000;
/** Clear the screen and go home: each redraw is the whole answer, as `watch` shows it. */
const CLEAR = "\x1b[H\x1b[2J";

async function write(stream: Writable, text: string): Promise<void> {
  if (!stream.write(text)) await once(stream, "drain");
}

/**
 * The session `dirq watch` holds: the REPL's (a live index, its reaper, a query process
 * with no time limit), its named tables built, the watcher running.
 */
async function openSession(command: WatchCommand, io: WatchIo): Promise<LiveSession> {
  const config =
    command.configs.length === 0
      ? EMPTY_CONFIG
      : (await import("../config/load-config.js")).loadConfigs(command.configs, io.cwd);
  const stderr = (line: string) => io.stderr.write(`dirq: ${escapeControlCharacters(line)}\n`);
  const session = new LiveSession({
    index: {
      root: resolve(io.cwd, command.root ?? "."),
      noIgnore: command.noIgnore,
      config,
      onFile: command.onFile ?? undefined,
      hookTimeLimit: flagTimeLimit(command.hookTimeout),
      parse: command.parse ?? undefined,
      extensions: command.extensions.map((argument) => parseExtensionArgument(argument, io.cwd)),
      persist: command.persist ?? undefined,
      tellEmptyTables: true,
      progress: createProgressReporter(io.stderr),
    },
    folderPrefix: "dirq-watch-",
    reaper: true,
    collectAfterBursts: true,
    runner: {
      timeoutMs: Number.POSITIVE_INFINITY,
      maxAnswerBytes: Number.MAX_SAFE_INTEGER,
      maxProcesses: 1,
    },
    onWatchError: (error) => stderr((error as Error).message),
  });
  try {
    for (const notice of session.notices) stderr(notice);
    for (const line of skippedLines(await session.build())) stderr(line);
    session.warm();
    await session.watch();
    return session;
  } catch (error) {
    await session.close();
    throw error;
  }
}

/** Writes each frame: one JSON line (`{"event": ..., ...data}`), or a redrawn screen. */
function frameWriter(command: WatchCommand, io: WatchIo): (frame: LiveFrame) => Promise<void> {
  const table = command.format === "table" || (command.format === "auto" && io.stdout.isTTY);
  if (!table) {
    return (frame) => {
      const data = frame.data === "{}" ? "" : `,${frame.data.slice(1)}`;
      const head = JSON.stringify({ event: frame.event, id: frame.id });
      return write(io.stdout, `${head.slice(0, -1)}${data}\n`);
    };
  }
  const screen = new WatchScreen(command.sql);
  return async (frame) => {
    if (screen.take(frame)) await write(io.stdout, `${CLEAR}${await screen.render(new Date())}\n`);
  };
}

interface OpenWatch {
  session: LiveSession;
  queries: LiveQueries;
  subscription: LiveSubscription;
}

/** The session and the live query on it; a statement that cannot run closes the session. */
async function openWatch(command: WatchCommand, io: WatchIo): Promise<OpenWatch> {
  const session = await openSession(command, io);
  const queries = new LiveQueries(session, { timeoutMs: Number.POSITIVE_INFINITY, lingerMs: 0 });
  try {
    const subscription = await queries.open({
      sql: command.sql,
      params: (command.params ?? undefined) as QueryParameters | undefined,
      key: command.key ?? undefined,
      settle: true,
    });
    return { session, queries, subscription };
  } catch (error) {
    queries.close();
    await session.close();
    throw error;
  }
}

/** Shows the frames until the subscription ends (Ctrl-C, or a reader gone); the exit code. */
async function follow(command: WatchCommand, io: WatchIo, subscription: LiveSubscription) {
  let outputError: NodeJS.ErrnoException | null = null;
  void io.stop.then(() => subscription.close());
  // A reader that went away (`| head -1`) ends the watch as Ctrl-C does.
  io.stdout.on("error", (error: NodeJS.ErrnoException) => {
    outputError = error;
    subscription.close();
  });
  const show = frameWriter(command, io);
  for (;;) {
    const frame = await subscription.next(IDLE_WAIT_MS);
    if (frame === undefined) break;
    if (frame !== null) await Promise.race([show(frame), io.stop]);
  }
  const failed = outputError as NodeJS.ErrnoException | null;
  if (failed !== null && failed.code !== "EPIPE") {
    throw new DirqError("OUTPUT_FAILED", `cannot write the output: ${failed.message}`);
  }
}

/**
 * `dirq watch "<sql>"`: a live query of the core (`LiveQueries`), its frames shown as they
 * come until the user ends it; the session then closes, and its hooks and query process end.
 * A statement that cannot run is the usual error (exit 1) before anything is shown. Ended
 * while the tables are still being built (a slow hook), it returns at once: the caller ends
 * the process, and the reaper stops what it started.
 */
export async function runWatch(command: WatchCommand, io: WatchIo): Promise<number> {
  const opening = openWatch(command, io);
  const opened = await Promise.race([opening, io.stop.then(() => null)]);
  if (opened === null) {
    opening.catch(() => undefined);
    return 0;
  }
  try {
    await follow(command, io, opened.subscription);
    return 0;
  } finally {
    opened.queries.close();
    await opened.session.close();
  }
}
