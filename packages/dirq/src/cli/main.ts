import { once } from "node:events";
import { relative, resolve } from "node:path";
import type { Readable, Writable } from "node:stream";
import { onChildStart } from "../child-start.js";
import type { Starter } from "../config/starter-config.js";
import { EMPTY_CONFIG } from "../config/types.js";
import type { QueryResult } from "../engine.js";
import { DirqError, isDirqError } from "../errors.js";
import { parseExtensionArgument } from "../extensions/load-extensions.js";
import { escapeControlCharacters } from "../output/escape.js";
import { DEFAULT_SPILL_THRESHOLD, HeldOutput } from "../output/held-output.js";
import { jsonAnswer } from "../output/json-answer.js";
import { flagTimeLimit } from "../parse/hook-timeout.js";
import { emptyTableLine, skippedLines } from "../progress/build-notes.js";
import { createProgressReporter } from "../progress/reporter.js";
import { readVersion } from "../version.js";
import {
  type Command,
  type InitCommand,
  parseCommandLine,
  type QueryCommand,
  type ServerCommand,
} from "./args.js";
import { HELP_TEXTS } from "./help-texts.js";
import { nativeNotice } from "./native-notice.js";

/** Where the CLI writes a one-shot command's output: a stream, or a plain file-descriptor writer. */
export interface OutputStream extends NodeJS.EventEmitter {
  /** `false` asks the caller to wait for `drain`. */
  write(chunk: string | Uint8Array): boolean;
  isTTY?: boolean;
}

/** Node's own streams, for commands that keep writing while they run. */
export interface ProcessStreams {
  stdout: Writable & { isTTY?: boolean };
  stderr: Writable;
}

/** The process's output and settings the CLI runs with. */
export interface CliIo {
  stdout: OutputStream;
  stderr: OutputStream;
  /**
   * The streams behind `stdout` and `stderr`, made when first asked for: the REPL's line
   * editor and the server need real streams, a one-shot command does not.
   */
  streams: () => ProcessStreams;
  cwd: string;
  /** What the REPL reads; default: the process's stdin. */
  stdin?: Readable & { isTTY?: boolean };
}

/**
 * The kinds of work a run did, told to whoever runs the CLI as they happen: `query` (a one-shot
 * statement ran), `table` (its answer was printed as a table) and `tables` (tables were filled
 * for it). The npm launcher keeps the code each kind needs in its V8 code cache (bin/dirq.cjs).
 */
export type RunKind = "query" | "table" | "tables";
export type RunKindListener = (kind: RunKind) => void;

/** Exit status of a query whose scan skipped files it could not read. */
export const EXIT_PARTIAL_SCAN = 23;

/** A write to stdout failed (`> /dev/full`, a closed pipe): one diagnostic, no stack. */
function outputError(error: unknown): DirqError {
  const message = (error as Error).message;
  return new DirqError("OUTPUT_FAILED", `cannot write the output: ${message}`, { cause: error });
}

async function write(stream: OutputStream, text: string | Buffer): Promise<void> {
  try {
    if (!stream.write(text)) await once(stream, "drain");
  } catch (error) {
    throw outputError(error);
  }
}

/**
 * Renders the result, holding it until the statement has finished (an error while rows are
 * read leaves stdout empty), then writes it out.
 */
async function printResult(
  command: QueryCommand,
  result: QueryResult,
  io: CliIo,
  onRunKind: RunKindListener,
): Promise<void> {
  const table = command.format === "table" || (command.format === "auto" && io.stdout.isTTY);
  const threshold = spillThreshold();
  const held = new HeldOutput(threshold);
  try {
    if (table) {
      onRunKind("table");
      // Loaded on demand: width measurement is only needed for tables, and start-up counts.
      const { tableChunks } = await import("../output/table.js");
      for await (const chunk of tableChunks(result.columns, result.rows)) held.add(chunk);
    } else if (command.format === "csv") {
      const { csvChunks } = await import("../output/csv.js");
      for (const chunk of csvChunks(result.columns, result.rows)) held.add(chunk);
    } else {
      // SQLite writes a long answer when it fits in what is held in memory anyway.
      const answer = jsonAnswer(result, threshold ?? DEFAULT_SPILL_THRESHOLD);
      if ("bytes" in answer) {
        await write(io.stdout, answer.bytes);
        await write(io.stdout, "\n");
        return;
      }
      for (const chunk of answer.chunks) held.add(chunk);
    }
  } catch (error) {
    held.discard();
    throw error;
  }
  await held.release((chunk) => write(io.stdout, chunk));
}

/** `DIRQ_SPILL_BYTES` lowers the spill threshold (tests use it to exercise the temp file). */
function spillThreshold(): number | undefined {
  const fromEnv = Number(process.env.DIRQ_SPILL_BYTES);
  return Number.isSafeInteger(fromEnv) && fromEnv >= 0 ? fromEnv : undefined;
}

/**
 * `DIRQ_DIRECT_READS`: `0` fills every table (tests compare the two ways), `only` fails a
 * statement that cannot be read directly (tests make sure it was); unset, direct reads are on.
 */
function directReadsSetting(): boolean | "only" {
  const set = process.env.DIRQ_DIRECT_READS;
  return set === "only" ? "only" : set !== "0";
}

let signalHandlersInstalled = false;

/**
 * Ctrl-C, a kill or a hang-up during a one-shot query: stop the hooks and the workers (each
 * with the processes it started: they sit in process groups of their own and so never see the
 * terminal's Ctrl-C, and a signal's death runs no exit handler), then end as that signal would
 * have ended dirq. Returns the function that removes the handlers; installed once per process
 * (the workers a query starts early install it first), later calls return a no-op.
 */
function stopChildrenOnSignal(): () => void {
  if (signalHandlersInstalled) return () => {};
  signalHandlersInstalled = true;
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
  const handler = (signal: NodeJS.Signals) => {
    remove();
    // Loaded on demand like the engine that runs them (one module instance either way: the
    // CLI bundle shares modules between its chunks).
    void Promise.all([
      import("../parse/run-hook.js"),
      import("../functions/worker-process.js"),
    ]).then(([{ stopRunningHooks }, { stopAllWorkers }]) => {
      stopRunningHooks();
      stopAllWorkers();
      process.kill(process.pid, signal);
    });
  };
  const remove = () => {
    signalHandlersInstalled = false;
    for (const signal of signals) process.off(signal, handler);
  };
  for (const signal of signals) process.on(signal, handler);
  return remove;
}

/**
 * For a one-shot query whose config files declare worker functions the SQL calls: starts those
 * workers now, before the launcher's plugin discovery, the files' validation and the engine's
 * load, so a worker's own start-up is over when the statement first calls it. Anything wrong
 * with the command line or the files is left for `run` to report.
 */
export async function startQueryWorkersEarly(argv: readonly string[], cwd: string): Promise<void> {
  let command: Command;
  try {
    command = parseCommandLine(argv);
  } catch {
    return;
  }
  if (command.kind !== "query" || command.configs.length === 0) return;
  // From now on a signal must not leave the workers started here behind.
  stopChildrenOnSignal();
  const [{ prestartWorkersFor }, { declaredFunctions }] = await Promise.all([
    import("../functions/prestart.js"),
    import("../config/load-config.js"),
  ]);
  prestartWorkersFor(command.sql, declaredFunctions(command.configs, cwd));
}

async function runQuery(
  command: QueryCommand,
  io: CliIo,
  onRunKind: RunKindListener,
): Promise<number> {
  // Armed before the statement's first hook or worker starts; one that starts none never
  // listens for signals (which costs start-up time) and ends on Ctrl-C as any program does.
  const signalHandlers: { remove?: () => void } = {};
  onChildStart(() => {
    signalHandlers.remove ??= stopChildrenOnSignal();
  });
  try {
    return await runQueryToEnd(command, io, onRunKind);
  } finally {
    onChildStart(null);
    signalHandlers.remove?.();
  }
}

async function runQueryToEnd(
  command: QueryCommand,
  io: CliIo,
  onRunKind: RunKindListener,
): Promise<number> {
  onRunKind("query");
  // The config loader (TOML, schema validation) is loaded only when a config is given.
  const config =
    command.configs.length === 0
      ? EMPTY_CONFIG
      : (await import("../config/load-config.js")).loadConfigs(command.configs, io.cwd);
  if (config.functions.length > 0) {
    // Workers the statement calls start now: their start-up overlaps dirq's own.
    (await import("../functions/prestart.js")).prestartWorkersFor(command.sql, config.functions);
  }
  const { openIndex } = await import("../engine.js");
  const progress = createProgressReporter(io.stderr);
  const index = openIndex({
    root: io.cwd,
    noIgnore: command.noIgnore,
    config,
    onFile: command.onFile ?? undefined,
    hookTimeLimit: flagTimeLimit(command.hookTimeout),
    parse: command.parse ?? undefined,
    extensions: command.extensions.map((argument) => parseExtensionArgument(argument, io.cwd)),
    persist: command.persist ?? undefined,
    // One statement reads this index: `count(*)` needs rows, not their paths, and with the
    // native extension not even rows (a view of as many blank rows as files).
    pathlessFills: true,
    countedFills: true,
    // ... and a table read by --parse needs only the columns that statement names.
    readNamedColumns: true,
    // ... and one that reads a JSON Lines path-table once, straight from its files if it can.
    directReads: directReadsSetting(),
    tellEmptyTables: true,
    // Every fill of a table reports its progress: the one place that says a table was filled.
    progress: {
      start: () => {
        onRunKind("tables");
        return progress.start();
      },
    },
  });
  try {
    for (const notice of index.notices) io.stderr.write(`dirq: ${notice}\n`);
    const result = await index.query(command.sql);
    await printResult(command, result, io, onRunKind);
    for (const line of [
      ...result.emptyTables.map(emptyTableLine),
      ...skippedLines(result.skipped),
    ]) {
      // One line each: a name or a hook's stderr never brings its own line breaks or terminal
      // escapes to the user's terminal.
      io.stderr.write(`dirq: ${escapeControlCharacters(line)}\n`);
    }
    return result.skipped.length > 0 ? EXIT_PARTIAL_SCAN : 0;
  } finally {
    index.close();
  }
}

async function runInit(command: InitCommand, io: CliIo): Promise<number> {
  const root = resolve(io.cwd, command.root ?? ".");
  // Loaded on demand: it pulls in the file walk, which a query loads only after its workers
  // have been started.
  const { writeStarter } = await import("../config/starter-config.js");
  const starter = writeStarter({
    root,
    output: command.output === null ? undefined : resolve(io.cwd, command.output),
    force: command.force,
    progress: createProgressReporter(io.stderr),
  });
  const shown = relative(io.cwd, starter.output) || starter.output;
  if (starter.firstUnreadable !== null) {
    await write(io.stderr, `dirq: ${unreadableNotice(starter, starter.firstUnreadable)}\n`);
  }
  // Globs are relative to the directory dirq runs in: the hint runs it in the root.
  const fromRoot = relative(root, starter.output) || starter.output;
  const query = `dirq query "SELECT * FROM ${starter.table} LIMIT 5" -c ${quoteForShell(fromRoot)}`;
  const hint = root === io.cwd ? query : `cd ${quoteForShell(root)} && ${query}`;
  await write(io.stdout, `wrote ${shown} (${starterSummary(starter)})\ntry: ${hint}\n`);
  return 0;
}

/** `table posts: posts/**\/*.md, 3 files read as markdown, a schema of 4 columns`. */
function starterSummary(starter: Starter): string {
  const glob = escapeControlCharacters(starter.glob);
  if (starter.format === null) {
    return `table ${starter.table}: an on-file hook over ${glob}, as no file a format reads was found`;
  }
  const files = `${starter.files} ${starter.files === 1 ? "file" : "files"}`;
  const columns =
    starter.schemaColumns === null
      ? "its columns inferred by each query"
      : `a schema of ${starter.schemaColumns} ${starter.schemaColumns === 1 ? "column" : "columns"}`;
  return `table ${starter.table}: ${glob}, ${files} read as ${starter.format}, ${columns}`;
}

/** The files the starter's format cannot read: the table will skip them too. */
function unreadableNotice(starter: Starter, first: { path: string; reason: string }): string {
  const which =
    starter.unreadable === 1
      ? `1 of the ${starter.files} files`
      : `${starter.unreadable} of the ${starter.files} files, the first`;
  const path = escapeControlCharacters(first.path);
  return (
    `${which} cannot be read as ${starter.format ?? "data"} (${path}: ${escapeControlCharacters(first.reason)}): ` +
    "the schema leaves out their keys, and the table will skip them; fix them, or narrow the glob"
  );
}

/** A path as one shell word. */
function quoteForShell(path: string): string {
  return /^[\w./-]+$/.test(path) ? path : `'${path.replaceAll("'", `'"'"'`)}'`;
}

/** Resolves on the first SIGINT or SIGTERM, or one of `more`. */
function stopSignal(more: readonly NodeJS.Signals[] = []): Promise<void> {
  return new Promise((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM", ...more] as const) {
      process.once(signal, () => resolve());
    }
  });
}

async function runServerCommand(command: ServerCommand, io: CliIo): Promise<number> {
  const { runServer } = await import("../server/run-server.js");
  const { stdout, stderr } = io.streams();
  return runServer({
    ...command,
    root: io.cwd,
    stdout,
    stderr,
    stopSignal: stopSignal(),
  });
}

async function runCommand(
  command: Command,
  io: CliIo,
  onRunKind: RunKindListener,
): Promise<number> {
  switch (command.kind) {
    case "help":
      await write(io.stdout, HELP_TEXTS[command.topic]);
      return 0;
    case "completion": {
      const { completionScript } = await import("./completion.js");
      await write(io.stdout, completionScript(command.shell));
      return 0;
    }
    case "version":
      await write(io.stdout, `${readVersion()}\n`);
      return 0;
    case "query":
      return runQuery(command, io, onRunKind);
    case "init":
      return runInit(command, io);
    case "server":
      return runServerCommand(command, io);
    case "sdk-stdio": {
      const { runSdkStdio } = await import("../sdk-stdio/run-sdk-stdio.js");
      const { stdout } = io.streams();
      const code = await runSdkStdio({
        stdin: io.stdin ?? process.stdin,
        stdout,
        stop: stopSignal(),
      });
      // Its peer gone, nothing this process still runs is wanted (a statement waiting on a
      // hung hook, with no time limit): it ends now, and its exit stops the hooks.
      return process.exit(code);
    }
    case "watch": {
      const { runWatch } = await import("../watch-command/run-watch.js");
      const code = await runWatch(command, {
        ...io.streams(),
        cwd: io.cwd,
        stop: stopSignal(["SIGHUP"]),
      });
      // Ended before its tables were built, a hook may still run: nothing is wanted of it,
      // and the process's exit stops it (the reaper).
      return process.exit(code);
    }
    case "repl": {
      const { runRepl } = await import("../repl/run-repl.js");
      return runRepl(command, { ...io, ...io.streams(), stdin: io.stdin ?? process.stdin });
    }
  }
}

/**
 * Runs the CLI and resolves to the exit code. The only place that turns errors into
 * `dirq: <diagnostic>` lines; `bin/dirq.cjs` is the only place that sets the exit code.
 * `onRunKind` hears what kinds of work the run did (see RunKind).
 */
export async function run(
  argv: readonly string[],
  io: CliIo,
  onRunKind: RunKindListener = () => {},
): Promise<number> {
  try {
    const command = parseCommandLine(argv);
    if (["query", "repl", "server", "watch"].includes(command.kind)) {
      const notice = nativeNotice(process.env);
      if (notice !== null) io.stderr.write(`dirq: ${notice}\n`);
    }
    return await runCommand(command, io, onRunKind);
  } catch (error) {
    if (isDirqError(error)) {
      // One diagnostic per line (a config may have several problems), each with the prefix.
      for (const line of error.message.split("\n")) {
        io.stderr.write(`dirq: ${escapeControlCharacters(line)}\n`);
      }
      return 1;
    }
    const detail = process.env.DIRQ_DEBUG ? (error as Error).stack : (error as Error).message;
    const shown = process.env.DIRQ_DEBUG ? detail : escapeControlCharacters(detail ?? "");
    io.stderr.write(`dirq: internal error: ${shown}. Please report this as a bug\n`);
    return 1;
  }
}
