import { once } from "node:events";
import { fstatSync } from "node:fs";
import { constants as osConstants } from "node:os";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import type { ReplCommand } from "../cli/args.js";
import { EMPTY_CONFIG } from "../config/types.js";
import { DirqError, isDirqError } from "../errors.js";
import type { RowChange } from "../indexer/row-changes.js";
import { stopRunningHooks } from "../parse/run-hook.js";
import { emptyTableLine, skippedLines } from "../progress/build-notes.js";
import type { EmptyPathTable } from "../scan/empty-selection.js";
import type { SkippedPath } from "../scan/walk.js";
import type { AnswerFormat } from "../live/live-session.js";
import { readVersion } from "../version.js";
import { History, historyPath } from "./history.js";
import { parseExtensionArgument } from "../extensions/load-extensions.js";
import { habitAnswer, REPL_HELP } from "./habits.js";
import { checkHookCanStart } from "./hook-preflight.js";
import { LineEditor } from "./line-editor.js";
import { openReplIndex, type ReplIndex } from "./repl-index.js";
import { hasStatementContent, isCompleteStatement, splitStatements } from "./statement-complete.js";

export interface ReplIo {
  stdin: Readable & { isTTY?: boolean };
  stdout: Writable & { isTTY?: boolean };
  stderr: Writable;
  cwd: string;
}

export const PROMPT = "dirq> ";
export const CONTINUATION_PROMPT = "...> ";

/**
 * Node reads a directory given as stdin (`dirq < /`) as empty input, and a closed stdin
 * likewise: both are a failure to read, before the index is built.
 */
function checkStdinReadable(): void {
  let problem: string | null = null;
  try {
    if (fstatSync(0).isDirectory()) problem = "stdin is a directory";
  } catch (error) {
    problem = `stdin cannot be read: ${(error as Error).message}`;
  }
  if (problem !== null) {
    throw new DirqError("USAGE", `${problem}: give statements on a terminal, a pipe or a file`);
  }
}

/** `exit` or `quit`, any case, taken as typed (a `;` after it is allowed too). */
const LEAVE = /^\s*(exit|quit)\s*;?\s*$/i;

async function write(stream: Writable, text: string | Uint8Array): Promise<void> {
  if (!stream.write(text)) await once(stream, "drain");
}

/** `dirq: <diagnostic>`, one line each (a hook's stderr tail may span lines). */
function diagnostic(stderr: Writable, text: string): void {
  for (const line of text.split("\n")) stderr.write(`dirq: ${line}\n`);
}

/** What building tables told: the path-tables that list no file, the files skipped. */
function reportBuild(
  stderr: Writable,
  skipped: readonly SkippedPath[],
  emptyTables: readonly EmptyPathTable[] = [],
): void {
  for (const line of [...emptyTables.map(emptyTableLine), ...skippedLines(skipped)]) {
    stderr.write(`dirq: ${line.replaceAll("\n", "\n    ")}\n`);
  }
}

/** One session: runs statements one at a time; Ctrl-C stops the running one. */
class Session {
  private running: AbortController | null = null;
  private stopped = false;
  /** Files the watcher could not re-read since the last statement, told after the next. */
  private watchErrors: RowChange[] = [];

  constructor(
    private readonly live: ReplIndex,
    private readonly io: ReplIo,
    private readonly format: AnswerFormat,
  ) {}

  noteWatchErrors(changes: RowChange[]): void {
    this.watchErrors.push(...changes);
  }

  /** Stops the statement that is running, if one is. */
  interrupt(): void {
    this.running?.abort();
  }

  /**
   * Stops the running statement, and every later one before it starts; the session is ending,
   * so hooks still running (a build that a statement started) are stopped too, or closing the
   * index would wait for them.
   */
  stop(): void {
    this.stopped = true;
    this.interrupt();
    stopRunningHooks();
  }

  /** Runs one statement; a failure is told on stderr and the session goes on. */
  async run(sql: string): Promise<void> {
    if (this.stopped) return;
    const controller = new AbortController();
    this.running = controller;
    try {
      const answer = await this.live.run(sql, { format: this.format, signal: controller.signal });
      await write(this.io.stdout, answer.body);
      reportBuild(this.io.stderr, answer.skipped, answer.emptyTables);
    } catch (error) {
      if (isDirqError(error)) diagnostic(this.io.stderr, error.message);
      else {
        const detail = process.env.DIRQ_DEBUG ? (error as Error).stack : (error as Error).message;
        diagnostic(this.io.stderr, `internal error: ${detail}. Please report this as a bug`);
      }
    } finally {
      this.running = null;
    }
    const errors = this.watchErrors;
    this.watchErrors = [];
    for (const change of errors) {
      if (change.action === "error")
        diagnostic(this.io.stderr, `${change.file_path}: ${change.error}`);
    }
  }
}

/**
 * Calls `stop` on the first of `signals`; returns the exit code it implies (128 + its number),
 * or 0 when none came, and removes the handlers.
 */
function watchSignals(signals: readonly NodeJS.Signals[], stop: () => void) {
  let received: NodeJS.Signals | null = null;
  const handlers = signals.map((signal) => {
    const handler = () => {
      received ??= signal;
      stop();
    };
    process.on(signal, handler);
    return () => process.off(signal, handler);
  });
  return (): number => {
    for (const remove of handlers) remove();
    return received === null ? 0 : 128 + osConstants.signals[received];
  };
}

/**
 * A sqlite3/psql command or `help` as a statement's first line: the hint (on stderr) or the
 * usage (on `output`) at once. Returns whether the line was one.
 */
function answerHabit(line: string, io: ReplIo, output: Writable): boolean {
  const answer = habitAnswer(line);
  if (answer === null) return false;
  if (answer.kind === "help") output.write(REPL_HELP);
  else diagnostic(io.stderr, answer.text);
  return true;
}

/** Not a terminal: one statement per line, no banner, editor or history. */
async function runPiped(session: Session, io: ReplIo): Promise<number> {
  const lines = createInterface({ input: io.stdin, crlfDelay: Infinity, terminal: false });
  // Without a terminal, Ctrl-C is a signal: it stops the running statement and the script.
  const stopped = watchSignals(["SIGINT", "SIGTERM", "SIGHUP"], () => {
    session.stop();
    lines.close();
  });
  try {
    for await (const line of lines) {
      if (!hasStatementContent(line)) continue;
      if (LEAVE.test(line)) break;
      if (answerHabit(line, io, io.stdout)) continue;
      await session.run(line);
    }
  } catch (error) {
    diagnostic(io.stderr, `cannot read the input: ${(error as Error).message}`);
    stopped();
    return 1;
  } finally {
    lines.close();
  }
  return stopped();
}

function banner(root: string): string {
  return `dirq ${readVersion()}: read-only SQL over ${root}
End a statement with ';'. Files are tables: SELECT path, size FROM './' LIMIT 5;
Schema questions are SQL (sqlite_master); help for more. Leave with exit, quit or Ctrl-D.
`;
}

/** A terminal: banner, line editing, history; a statement may span lines. */
async function runInteractive(session: Session, io: ReplIo, root: string): Promise<number> {
  const history = History.load(historyPath());
  const output = io.stdout.isTTY ? io.stdout : io.stderr;
  await write(output, banner(root));
  const editor = new LineEditor(io.stdin, output, history.entries);
  editor.onBusyInterrupt = () => session.interrupt();
  // On a terminal Ctrl-C is a key (see LineEditor); the terminal going away, or a kill, ends
  // the session so that the index is cleaned up.
  const stopped = watchSignals(["SIGTERM", "SIGHUP"], () => {
    session.stop();
    editor.close();
  });
  let historyWarned = false;
  let pending: string[] = [];
  try {
    for (;;) {
      const input = await editor.read(pending.length === 0 ? PROMPT : CONTINUATION_PROMPT);
      if (input.kind === "end") break;
      if (input.kind === "interrupt") {
        pending = [];
        continue;
      }
      if (pending.length === 0) {
        if (!hasStatementContent(input.text)) continue;
        if (LEAVE.test(input.text)) break;
        if (answerHabit(input.text, io, output)) continue;
      }
      pending.push(input.text);
      const text = pending.join("\n");
      if (!isCompleteStatement(text)) continue;
      pending = [];
      const problem = history.add(text);
      if (problem !== null && !historyWarned) {
        historyWarned = true;
        diagnostic(io.stderr, `history is kept for this session only: ${problem}`);
      }
      for (const statement of splitStatements(text)) await session.run(statement);
    }
  } finally {
    editor.close();
  }
  const code = stopped();
  // Leave the shell's prompt on a line of its own (not when the terminal is gone).
  if (code === 0) await write(output, "\n");
  return code;
}

/**
 * Bare `dirq`: builds the index once (a config that cannot load or an `--on-file` that cannot
 * start is thrown before anything runs), then reads statements until `exit`, `quit`, Ctrl-D
 * or the end of input. Resolves to the exit code.
 */
export async function runRepl(command: ReplCommand, io: ReplIo): Promise<number> {
  if (io.stdin === process.stdin) checkStdinReadable();
  const config =
    command.configs.length === 0
      ? EMPTY_CONFIG
      : (await import("../config/load-config.js")).loadConfigs(command.configs, io.cwd);
  if (command.onFile !== null) checkHookCanStart(command.onFile, io.cwd);
  const format: AnswerFormat =
    command.format === "auto" ? (io.stdout.isTTY === true ? "table" : "json") : command.format;
  let session: Session | null = null;
  const live = await openReplIndex({
    root: io.cwd,
    config,
    noIgnore: command.noIgnore,
    onFile: command.onFile,
    hookTimeout: command.hookTimeout,
    parse: command.parse,
    extensions: command.extensions.map((argument) => parseExtensionArgument(argument, io.cwd)),
    persist: command.persist,
    onChangeErrors: (changes) => session?.noteWatchErrors(changes),
    onWatchError: (error) => diagnostic(io.stderr, `watcher: ${(error as Error).message}`),
  });
  try {
    for (const notice of live.notices) diagnostic(io.stderr, notice);
    reportBuild(io.stderr, live.skipped);
    session = new Session(live, io, format);
    return io.stdin.isTTY === true
      ? await runInteractive(session, io, live.root)
      : await runPiped(session, io);
  } finally {
    await live.close();
  }
}
