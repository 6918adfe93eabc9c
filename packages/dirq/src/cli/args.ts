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
  /** `--persist`: off (`null`), bare (`true`: the default cache) or a path as given. */
  persist: Persist;
}

export type Persist = string | true | null;

/** Bare `dirq` (options only): the interactive session. */
export interface ReplCommand extends Omit<QueryCommand, "kind" | "sql"> {
  kind: "repl";
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
  persist: Persist;
}

export type HelpTopic = "dirq" | "query" | "init" | "server" | "completion";

export const COMPLETION_SHELLS = ["bash", "zsh", "fish"] as const;
export type CompletionShell = (typeof COMPLETION_SHELLS)[number];

export type Command =
  | { kind: "help"; topic: HelpTopic }
  | { kind: "version" }
  | { kind: "completion"; shell: CompletionShell }
  | QueryCommand
  | ReplCommand
  | InitCommand
  | ServerCommand;

/**
 * Takes `--persist` out of `args`: `--persist=<path>`, or `--persist <path>` where the next
 * argument cannot be anything else. With `sqlFollows`, the command needs one positional (the
 * SQL): the next argument is the path only when another positional is left to be the SQL, so
 * `dirq query --persist "SELECT 1"` keeps its SQL. Text with whitespace is never a path.
 */
function takePersist(
  args: readonly string[],
  sqlFollows: boolean,
): { persist: Persist; rest: string[] } {
  let persist: Persist = null;
  const rest: string[] = [];
  const positionals = sqlFollows ? positionalIndexes(args) : new Set<number>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === "--") {
      rest.push(...args.slice(i));
      break;
    }
    if (flagName(arg) !== "--persist") {
      rest.push(arg);
      continue;
    }
    if (persist !== null) throw usageError("--persist was given more than once: give one cache");
    if (arg.includes("=")) {
      persist = arg.slice(arg.indexOf("=") + 1);
      if (persist === "") throw usageError("--persist= needs a path, or use a bare --persist");
      continue;
    }
    const next = args[i + 1];
    const others = [...positionals].filter((at) => at !== i + 1).length;
    const isPath =
      next !== undefined &&
      !next.startsWith("-") &&
      !/\s/.test(next) &&
      (!sqlFollows || others > 0);
    persist = isPath ? next : true;
    if (isPath) i++;
  }
  return { persist, rest };
}

/** Where positionals stand in query arguments (an option's value is not one). */
function positionalIndexes(args: readonly string[]): Set<number> {
  const found = new Set<number>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === "--") {
      for (let j = i + 1; j < args.length; j++) found.add(j);
      break;
    }
    if (QUERY_VALUE_OPTIONS.has(arg)) i++;
    else if (!arg.startsWith("-") || arg === "-" || /\s/.test(arg)) found.add(i);
  }
  return found;
}

function parsePort(value: string | undefined): number {
  if (value === undefined) return 7117;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535) {
    throw usageError(`invalid --port '${value}': expected a number from 0 to 65535`);
  }
  return port;
}

function parseServer(argv: string[]): Command {
  const { persist, rest: args } = takePersist(argv, false);
  const parsed = parseFlags(args, {
    config: { type: "string", short: "c", multiple: true },
    host: { type: "string" },
    port: { type: "string" },
    "no-ignore": { type: "boolean" },
    extension: { type: "string", multiple: true },
    help: { type: "boolean", short: "h" },
    version: { type: "boolean" },
  });
  if (parsed.values.help) return { kind: "help", topic: "server" };
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
    persist,
  };
}

const FORMATS: readonly OutputFormat[] = ["auto", "table", "json"];

/**
 * Flags that belong to a mode: alone they configure the REPL; before the subcommand (or the
 * SQL) they would be lost, so that is an error.
 */
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
/** What parseArgs makes of flags declared by `T` (strict, with positionals). */
type ParsedFlags<T extends FlagOptions> = ReturnType<
  typeof parseArgs<{ args: string[]; options: T; allowPositionals: true; strict: true }>
>["values"];

/**
 * parseArgs in strict mode with positionals; its errors become ours, naming the flag. Exported
 * for the test that holds its shortcut to parseArgs' answers.
 */
export function parseFlags<T extends FlagOptions>(args: string[], options: T) {
  // Arguments none of which starts with `-` are all positionals, and no flag has a default:
  // parseArgs would say the same. Its modules load on first use (half a millisecond of every
  // `dirq "<sql>"`).
  const noDefaults = Object.values(options).every((option) => option.default === undefined);
  if (noDefaults && args.every((arg) => !arg.startsWith("-"))) {
    return { values: Object.create(null) as ParsedFlags<T>, positionals: [...args] };
  }
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

/** Options of `query` that take a value (the next argument, unless written `--x=value`). */
const QUERY_VALUE_OPTIONS = new Set(["-c", "--config", "--format", "--on-file", "--extension"]);
/** Every option of `query`, also in the `--x=value` form. */
const QUERY_OPTION_NAMES = new Set([...QUERY_VALUE_OPTIONS, "--no-ignore", "--help", "-h"]);

/**
 * SQL may start with a `--` comment: an argument that starts with `-`, contains whitespace and
 * is not an option's value is the SQL. It is moved behind a `--`, where no option is read.
 */
function sqlAfterDoubleDash(args: readonly string[]): string[] {
  if (args.includes("--")) return [...args];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (QUERY_VALUE_OPTIONS.has(arg)) {
      i++;
      continue;
    }
    if (arg.startsWith("-") && /\s/.test(arg) && !QUERY_OPTION_NAMES.has(flagName(arg))) {
      return [...args.slice(0, i), ...args.slice(i + 1), "--", arg];
    }
  }
  return [...args];
}

export const QUERY_FLAGS = {
  "no-ignore": { type: "boolean" },
  format: { type: "string" },
  config: { type: "string", short: "c", multiple: true },
  "on-file": { type: "string", multiple: true },
  extension: { type: "string", multiple: true },
  help: { type: "boolean", short: "h" },
} as const;

/** The flags `query` and the REPL share. */
function queryOptions(values: ReturnType<typeof parseFlags<typeof QUERY_FLAGS>>["values"]) {
  const onFile = values["on-file"] ?? [];
  if (onFile.length > 1) {
    throw usageError("--on-file was given more than once: give one parser command");
  }
  return {
    noIgnore: values["no-ignore"] === true,
    format: parseFormat(values.format),
    configs: values.config ?? [],
    onFile: onFile[0] ?? null,
    extensions: values.extension ?? [],
  };
}

/**
 * Bare `dirq`, with options only, opens the REPL; options before SQL stay an error. `argv`
 * starts with an option (or is empty).
 */
function parseBare(argv: string[]): ReplCommand | { kind: "help"; topic: HelpTopic } {
  if (argv.includes("--help") || argv.includes("-h")) return { kind: "help", topic: "dirq" };
  const { persist, rest } = takePersist(argv, false);
  const parsed = parseFlags(rest, QUERY_FLAGS);
  if (parsed.positionals.length > 0) {
    const flag = flagName(argv[0] as string);
    throw usageError(
      `${flag} must come after the subcommand or the SQL, as in dirq query "<sql>" ${flag}`,
    );
  }
  return { kind: "repl", ...queryOptions(parsed.values), persist };
}

function parseQuery(
  args: string[],
  usage: string,
): QueryCommand | { kind: "help"; topic: HelpTopic } {
  const { persist, rest } = takePersist(args, true);
  const parsed = parseFlags(sqlAfterDoubleDash(rest), QUERY_FLAGS);
  if (parsed.values.help) return { kind: "help", topic: "query" };
  const [sql, ...extra] = parsed.positionals;
  if (sql === undefined) throw usageError(`missing SQL: ${usage}`);
  if (extra.length > 0) {
    throw usageError(`unexpected argument '${extra[0]}' after the SQL: quote the whole statement`);
  }
  return { kind: "query", sql, ...queryOptions(parsed.values), persist };
}

function parseInit(args: string[]): InitCommand | { kind: "help"; topic: HelpTopic } {
  const parsed = parseFlags(args, {
    root: { type: "string" },
    output: { type: "string" },
    force: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (parsed.values.help) return { kind: "help", topic: "init" };
  const [extra] = parsed.positionals;
  if (extra !== undefined) throw usageError(`unexpected argument '${extra}' for dirq init`);
  return {
    kind: "init",
    root: parsed.values.root ?? null,
    output: parsed.values.output ?? null,
    force: parsed.values.force === true,
  };
}

function parseCompletion(args: string[]): Command {
  const parsed = parseFlags(args, { help: { type: "boolean", short: "h" } });
  if (parsed.values.help) return { kind: "help", topic: "completion" };
  const [shell, extra] = parsed.positionals;
  if (shell === undefined) throw usageError("dirq completion needs a shell: bash, zsh or fish");
  if (!(COMPLETION_SHELLS as readonly string[]).includes(shell)) {
    throw usageError(`no completion for shell '${shell}': expected bash, zsh or fish`);
  }
  if (extra !== undefined) throw usageError(`unexpected argument '${extra}' for dirq completion`);
  return { kind: "completion", shell: shell as CompletionShell };
}

/** Reads the command line (without `node` and the script). Throws a `USAGE` DirqError. */
export function parseCommandLine(argv: readonly string[]): Command {
  const [first, ...rest] = argv;
  if (first === undefined) return parseBare([]);
  if (first === "--help" || first === "-h" || first === "help")
    return { kind: "help", topic: "dirq" };
  if (first === "--version" || first === "-V") return { kind: "version" };
  if (first === "query") return parseQuery(rest, `dirq query "<sql>"`);
  if (first === "init") return parseInit(rest);
  if (first === "server") return parseServer(rest);
  if (first === "completion") return parseCompletion(rest);
  if (first === "repl") return parseBare(rest);
  // SQL may start with a comment (`-- note`); no option contains whitespace.
  if (first.startsWith("-") && first !== "-" && first !== "--" && !/\s/.test(first)) {
    const flag = flagName(first);
    if (MODE_FLAGS.has(flag)) return parseBare([...argv]);
    throw usageError(`unknown option '${flag}'`);
  }
  return parseQuery([...argv], `dirq "<sql>"`);
}

export const QUERY_HELP_TEXT = `Usage: dirq query "<sql>" [options]   (or: dirq "<sql>" [options])

Runs one read-only SQL statement over the current directory and prints the rows.
SQL that starts with a -- comment is taken as SQL; after a bare -- nothing is an option.

Options:
  -c, --config <path>      load a .dirq.toml (repeatable, merged in order; never automatic)
  --on-file <command>      parse every path-table's files with this command
  --no-ignore              also scan files that .gitignore hides
  --persist[=<path>]       keep the index in a cache file (default .dirq/cache.db) so the
                           next run re-parses only changed files; bare, put it after the SQL
  --format <auto|table|json>
                           auto (default): a table on a terminal, JSON otherwise
  -h, --help               print this help
`;

export const INIT_HELP_TEXT = `Usage: dirq init [--root <dir>] [--output <path>] [--force]

Writes a starter .dirq.toml with one [[table]] (a glob, a schema and an on-file hook).
It is never loaded automatically: pass it with -c.

Options:
  --root <dir>       directory the default output path resolves against (default: .)
  --output <path>    where to write (default: <root>/.dirq.toml)
  --force            overwrite an existing file
  -h, --help         print this help
`;

export const SERVER_HELP_TEXT = `Usage: dirq server [-c <config>]... [--host <addr>] [--port <n>] [--no-ignore]
                   [--persist[=<path>]] [--extension <path>[::<entrypoint>]]...

Serves the current directory over HTTP: POST /query runs one read-only statement, GET /events
streams changes (Server-Sent Events), GET / is a web console. Prints "Running at
<host>:<port>" when it listens; Ctrl-C stops it. See docs/http.md.

Options:
  -c, --config <path>      load a .dirq.toml (repeatable, merged in order; never automatic)
  --host <addr>            address to listen on (default: localhost)
  --port <n>               TCP port (default: 7117; 0 picks a free one)
  --no-ignore              also index files that .gitignore hides
  --persist[=<path>]       keep the index in a cache file (default .dirq/cache.db), so a
                           restart re-parses only the files that changed
  --extension <path>[::<entrypoint>]
                           load a SQLite extension (repeatable); when given, the
                           config's [[dirq.extension]] entries are not loaded
  -h, --help               print this help
`;

export const COMPLETION_HELP_TEXT = `Usage: dirq completion bash|zsh|fish

Prints a completion script for the shell (subcommands, options, --format values, files).

  bash:  source <(dirq completion bash)        (in ~/.bashrc)
  zsh:   source <(dirq completion zsh)         (in ~/.zshrc)
  fish:  dirq completion fish > ~/.config/fish/completions/dirq.fish

Options:
  -h, --help               print this help
`;

export const HELP_TEXT = `dirq: query a directory tree as a read-only SQLite database

Usage:
  dirq [options]                 an interactive SQL session (REPL); with piped input,
                                 one statement per line
  dirq "<sql>" [options]         run one statement and print the rows
  dirq query "<sql>" [options]   the same, explicitly
  dirq init [--root <dir>] [--output <path>] [--force]
                                 write a starter .dirq.toml
  dirq server [-c <config>]... [--host <addr>] [--port <n>] [--no-ignore]
              [--persist[=<path>]] [--extension <path>[::<entrypoint>]]...
                                 serve POST /query and GET /events (default localhost:7117)
  dirq completion bash|zsh|fish  print a shell completion script
  dirq --version                 print the version
  dirq --help                    print this help (dirq <command> --help: that command's)

A quoted path or glob in FROM is a table of files (a path-table):
  dirq "SELECT path, size FROM './' ORDER BY size DESC LIMIT 5"
  dirq "SELECT count(*) FROM './src/**/*.ts'"
Columns: path, basename, dir, ext, size, mtime, ctime.

Options (after the SQL or after 'query'; alone for the REPL):
  -c, --config <path>      load a .dirq.toml (repeatable, merged in order; never automatic)
  --on-file <command>      parse every path-table's files with this command: it gets
                           {path} and {root} and prints a JSON array of row objects
  --no-ignore              also scan files that .gitignore hides
  --persist[=<path>]       keep the index in a cache file (default .dirq/cache.db), so a
                           restart re-parses only the files that changed; a bare --persist
                           goes after the SQL
  --extension <path>[::<entrypoint>]
                           load a SQLite extension (repeatable); when given, the
                           config's [[dirq.extension]] entries are not loaded
  --format <auto|table|json>
                           auto (default): a table on a terminal, JSON otherwise

Plugins (the dirq launchers, docs/plugins.md):
  --no-plugin              do not load installed plugins' config fragments
                           (also DIRQ_NO_PLUGIN=1); taken by the launcher, never passed on

Environment:
  DIRQ_PROGRESS=auto|always|never   progress lines on stderr (default auto)
  DIRQ_NO_PLUGIN=1                  the same as --no-plugin

Exit codes: 0 success, 1 any failure, 23 partial scan (some files could not be read
or parsed; the other rows were printed).
`;
