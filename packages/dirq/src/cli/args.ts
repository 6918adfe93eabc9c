import { type ParseArgsConfig, parseArgs } from "node:util";
import { DirqError } from "../errors.js";

export type OutputFormat = "auto" | "table" | "json";

export interface QueryCommand {
  kind: "query";
  sql: string;
  noIgnore: boolean;
  format: OutputFormat;
  /** `-c` files in argument order. */
  configs: string[];
  onFile: string | null;
  /** `--extension` arguments in order (`<path>` or `<path>::<entrypoint>`). */
  extensions: string[];
}

export interface InitCommand {
  kind: "init";
  root: string | null;
  output: string | null;
  force: boolean;
}

export interface ServerCommand {
  kind: "server";
  configs: string[];
  host: string;
  port: number;
  noIgnore: boolean;
  /** `--extension` arguments in order (`<path>` or `<path>::<entrypoint>`). */
  extensions: string[];
}

export type Command =
  { kind: "help" } | { kind: "version" } | QueryCommand | InitCommand | ServerCommand;

/** Flags the spec names that arrive with later features: refused clearly, not as unknown. */
const NOT_YET_SUPPORTED = ["--persist"];

function rejectNotYetSupported(args: readonly string[]): void {
  for (const arg of args) {
    const flag = flagName(arg);
    if (NOT_YET_SUPPORTED.includes(flag)) {
      throw usageError(`${flag} is not supported yet by this version of dirq`);
    }
  }
}

function parsePort(value: string | undefined): number {
  if (value === undefined) return 7117;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535) {
    throw usageError(`invalid --port '${value}': expected a number from 0 to 65535`);
  }
  return port;
}

function parseServer(args: string[]): ServerCommand | { kind: "help" } | { kind: "version" } {
  rejectNotYetSupported(args);
  const parsed = parseFlags(args, {
    config: { type: "string", short: "c", multiple: true },
    host: { type: "string" },
    port: { type: "string" },
    "no-ignore": { type: "boolean" },
    extension: { type: "string", multiple: true },
    help: { type: "boolean" },
    version: { type: "boolean" },
  });
  if (parsed.values.help) return { kind: "help" };
  if (parsed.values.version) return { kind: "version" };
  const [extra] = parsed.positionals;
  if (extra !== undefined) throw usageError(`unexpected argument '${extra}' for dirq server`);
  return {
    kind: "server",
    configs: parsed.values.config ?? [],
    host: parsed.values.host ?? "localhost",
    port: parsePort(parsed.values.port),
    noIgnore: parsed.values["no-ignore"] === true,
    extensions: parsed.values.extension ?? [],
  };
}

const FORMATS: readonly OutputFormat[] = ["auto", "table", "json"];

/** Flags that belong to a mode; before the subcommand (or the SQL) they would be lost. */
const MODE_FLAGS = new Set([
  "-c",
  "--config",
  "--persist",
  "--no-ignore",
  "--extension",
  "--on-file",
  "--format",
]);

function usageError(message: string): DirqError {
  return new DirqError("USAGE", `${message}. Run dirq --help for usage`);
}

function flagName(argument: string): string {
  return argument.split("=")[0] as string;
}

function parseFormat(value: string | undefined): OutputFormat {
  if (value === undefined) return "auto";
  if ((FORMATS as readonly string[]).includes(value)) return value as OutputFormat;
  throw usageError(`invalid --format '${value}': expected auto, table or json`);
}

type FlagOptions = NonNullable<ParseArgsConfig["options"]>;

/** parseArgs in strict mode with positionals; its errors become ours, naming the flag. */
function parseFlags<T extends FlagOptions>(args: string[], options: T) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    rethrowParseError(error);
  }
}

/** Turns node's parseArgs errors into ours, naming the flag. */
function rethrowParseError(error: unknown): never {
  const code = (error as { code?: string }).code;
  const message = (error as Error).message;
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    const flag = /'([^']+)'/.exec(message)?.[1] ?? "";
    throw usageError(`unknown option '${flag}'`);
  }
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    throw usageError(message.replace(/^Option '([^']+)'.*$/, "option '$1' needs a value"));
  }
  throw error;
}

function parseQuery(args: string[], usage: string): QueryCommand {
  rejectNotYetSupported(args);
  const parsed = parseFlags(args, {
    "no-ignore": { type: "boolean" },
    format: { type: "string" },
    config: { type: "string", short: "c", multiple: true },
    "on-file": { type: "string", multiple: true },
    extension: { type: "string", multiple: true },
  });
  const [sql, ...extra] = parsed.positionals;
  if (sql === undefined) throw usageError(`missing SQL: ${usage}`);
  if (extra.length > 0) {
    throw usageError(`unexpected argument '${extra[0]}' after the SQL: quote the whole statement`);
  }
  const onFile = parsed.values["on-file"] ?? [];
  if (onFile.length > 1) {
    throw usageError("--on-file was given more than once: give one parser command");
  }
  return {
    kind: "query",
    sql,
    noIgnore: parsed.values["no-ignore"] === true,
    format: parseFormat(parsed.values.format),
    configs: parsed.values.config ?? [],
    onFile: onFile[0] ?? null,
    extensions: parsed.values.extension ?? [],
  };
}

function parseInit(args: string[]): InitCommand {
  const parsed = parseFlags(args, {
    root: { type: "string" },
    output: { type: "string" },
    force: { type: "boolean" },
  });
  const [extra] = parsed.positionals;
  if (extra !== undefined) throw usageError(`unexpected argument '${extra}' for dirq init`);
  return {
    kind: "init",
    root: parsed.values.root ?? null,
    output: parsed.values.output ?? null,
    force: parsed.values.force === true,
  };
}

/** Reads the command line (without `node` and the script). Throws a `USAGE` DirqError. */
export function parseCommandLine(argv: readonly string[]): Command {
  const [first, ...rest] = argv;
  if (first === undefined) {
    throw usageError(
      `no SQL given: run dirq "<sql>", for example dirq "SELECT path, size FROM './'", or dirq server for the HTTP API (this version has no interactive REPL)`,
    );
  }
  if (first === "--help" || first === "-h" || first === "help") return { kind: "help" };
  if (first === "--version" || first === "-V") return { kind: "version" };
  if (first === "query") return parseQuery(rest, `dirq query "<sql>"`);
  if (first === "init") return parseInit(rest);
  if (first === "server") return parseServer(rest);
  if (first === "repl") {
    throw usageError(`'dirq ${first}' is not available in this version yet`);
  }
  // SQL may start with a comment (`-- note`); no option contains whitespace.
  if (first.startsWith("-") && first !== "-" && first !== "--" && !/\s/.test(first)) {
    const flag = flagName(first);
    if (MODE_FLAGS.has(flag)) {
      throw usageError(
        `${flag} must come after the subcommand or the SQL, as in dirq query "<sql>" ${flag}`,
      );
    }
    throw usageError(`unknown option '${flag}'`);
  }
  return parseQuery([...argv], `dirq "<sql>"`);
}

export const HELP_TEXT = `dirq: query a directory tree as a read-only SQLite database

Usage:
  dirq "<sql>" [options]         run one statement and print the rows
  dirq query "<sql>" [options]   the same, explicitly
  dirq init [--root <dir>] [--output <path>] [--force]
                                 write a starter .dirq.toml
  dirq server [-c <config>]... [--host <addr>] [--port <n>] [--no-ignore]
              [--extension <path>[::<entrypoint>]]...
                                 serve POST /query and GET /events (default localhost:7117)
  dirq --version                 print the version
  dirq --help                    print this help

A quoted path or glob in FROM is a table of files (a path-table):
  dirq "SELECT path, size FROM './' ORDER BY size DESC LIMIT 5"
  dirq "SELECT count(*) FROM './src/**/*.ts'"
Columns: path, basename, dir, ext, size, mtime, ctime.

Options (after the SQL or after 'query'):
  -c, --config <path>      load a .dirq.toml (repeatable, merged in order; never automatic)
  --on-file <command>      parse every path-table's files with this command: it gets
                           {path} and {root} and prints a JSON array of row objects
  --no-ignore              also scan files that .gitignore hides
  --extension <path>[::<entrypoint>]
                           load a SQLite extension (repeatable); when given, the
                           config's [[dirq.extension]] entries are not loaded
  --format <auto|table|json>
                           auto (default): a table on a terminal, JSON otherwise

Environment:
  DIRQ_PROGRESS=auto|always|never   progress lines on stderr (default auto)

Exit codes: 0 success, 1 any failure, 23 partial scan (some files could not be read
or parsed; the other rows were printed).
`;
