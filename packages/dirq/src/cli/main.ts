import { once } from "node:events";
import { relative, resolve } from "node:path";
import type { Writable } from "node:stream";
import { EMPTY_CONFIG } from "../config/types.js";
import { STARTER_TABLE, writeStarterConfig } from "../config/starter-config.js";
import { openIndex, type QueryResult } from "../engine.js";
import { isDirqError } from "../errors.js";
import { parseExtensionArgument } from "../extensions/load-extensions.js";
import { jsonChunks } from "../output/json.js";
import { readVersion } from "../version.js";
import {
  type Command,
  HELP_TEXT,
  type InitCommand,
  parseCommandLine,
  type QueryCommand,
  type ServerCommand,
} from "./args.js";

/** The process streams and settings the CLI runs with (tests may pass their own). */
export interface CliIo {
  stdout: Writable & { isTTY?: boolean };
  stderr: Writable;
  cwd: string;
}

/** Exit status of a query whose scan skipped files it could not read. */
export const EXIT_PARTIAL_SCAN = 23;

async function write(stream: Writable, text: string): Promise<void> {
  if (!stream.write(text)) await once(stream, "drain");
}

async function printResult(command: QueryCommand, result: QueryResult, io: CliIo): Promise<void> {
  const table = command.format === "table" || (command.format === "auto" && io.stdout.isTTY);
  if (table) {
    // Loaded on demand: width measurement is only needed for tables, and start-up counts.
    const { renderTable } = await import("../output/table.js");
    await write(io.stdout, renderTable(result.columns, result.rows));
    return;
  }
  for (const chunk of jsonChunks(result.columns, result.rows)) await write(io.stdout, chunk);
}

async function runQuery(command: QueryCommand, io: CliIo): Promise<number> {
  // The config loader (TOML, schema validation) is loaded only when a config is given.
  const config =
    command.configs.length === 0
      ? EMPTY_CONFIG
      : (await import("../config/load-config.js")).loadConfigs(command.configs, io.cwd);
  const index = openIndex({
    root: io.cwd,
    noIgnore: command.noIgnore,
    config,
    onFile: command.onFile ?? undefined,
    extensions: command.extensions.map((argument) => parseExtensionArgument(argument, io.cwd)),
  });
  try {
    const result = await index.query(command.sql);
    await printResult(command, result, io);
    for (const skipped of result.skipped) {
      // A hook's stderr tail may span lines: indent them under the file they belong to.
      const reason = skipped.reason.replaceAll("\n", "\n    ");
      io.stderr.write(`dirq: skipped ${skipped.path}: ${reason}\n`);
    }
    return result.skipped.length > 0 ? EXIT_PARTIAL_SCAN : 0;
  } finally {
    index.close();
  }
}

async function runInit(command: InitCommand, io: CliIo): Promise<number> {
  const output = writeStarterConfig({
    root: resolve(io.cwd, command.root ?? "."),
    output: command.output === null ? undefined : resolve(io.cwd, command.output),
    force: command.force,
  });
  const shown = relative(io.cwd, output) || output;
  await write(
    io.stdout,
    `wrote ${shown}\ntry: dirq query "SELECT * FROM ${STARTER_TABLE} LIMIT 5" -c ${shown}\n`,
  );
  return 0;
}

/** Resolves on the first SIGINT or SIGTERM. */
function stopSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
}

async function runServerCommand(command: ServerCommand, io: CliIo): Promise<number> {
  const { runServer } = await import("../server/run-server.js");
  return runServer({
    ...command,
    root: io.cwd,
    stdout: io.stdout,
    stderr: io.stderr,
    stopSignal: stopSignal(),
  });
}

async function runCommand(command: Command, io: CliIo): Promise<number> {
  switch (command.kind) {
    case "help":
      await write(io.stdout, HELP_TEXT);
      return 0;
    case "version":
      await write(io.stdout, `${readVersion()}\n`);
      return 0;
    case "query":
      return runQuery(command, io);
    case "init":
      return runInit(command, io);
    case "server":
      return runServerCommand(command, io);
  }
}

/**
 * Runs the CLI and resolves to the exit code. The only place that turns errors into
 * `dirq: <diagnostic>` lines; `bin/dirq.js` is the only place that sets the exit code.
 */
export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    return await runCommand(parseCommandLine(argv), io);
  } catch (error) {
    if (isDirqError(error)) {
      // One diagnostic per line (a config may have several problems), each with the prefix.
      for (const line of error.message.split("\n")) io.stderr.write(`dirq: ${line}\n`);
      return 1;
    }
    const detail = process.env.DIRQ_DEBUG ? (error as Error).stack : (error as Error).message;
    io.stderr.write(`dirq: internal error: ${detail}. Please report this as a bug\n`);
    return 1;
  }
}
