import { type ParseArgsConfig, parseArgs } from "node:util";
import { DirqError } from "../errors.js";
import { FORMAT_LIST, type FormatName, isFormatName } from "../parse/formats/format-names.js";
import { hookTimeoutProblem } from "../parse/hook-timeout.js";
import { parseJsonExact } from "../parse/hook-rows.js";

export type OutputFormat = "auto" | "table" | "json" | "csv";

export interface QueryCommand {
  kind: "query";
  sql: string;
  noIgnore: boolean;
  format: OutputFormat;
  /** `-c` files in argument order. */
  configs: string[];
  onFile: string | null;
  /** `--hook-timeout <seconds>`: the `--on-file` hook's time limit (0: none); `null`: default. */
  hookTimeout: number | null;
  /** `--parse <format>`: a built-in format every path-table's files are read with. */
  parse: FormatName | null;
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

/** `dirq watch "<sql>"`: a live query in the terminal, or JSON Lines of its frames. */
export interface WatchCommand extends Omit<QueryCommand, "kind" | "format"> {
  kind: "watch";
  /** `table`: redrawn on a terminal; `json`: one line per frame; `auto`: as stdout is. */
  format: "auto" | "table" | "json";
  /** `--params '<JSON>'`: an array for `?`, an object for named parameters. */
  params: unknown[] | Record<string, unknown> | null;
  /** `--key <column>[,<column>]`: rows with the same key change in place. */
  key: string[] | null;
  /** `--root <dir>`: the directory to index (default: the current one). */
  root: string | null;
}

export type HelpTopic = "dirq" | "query" | "repl" | "init" | "server" | "completion" | "watch";

export const COMPLETION_SHELLS = ["bash", "zsh", "fish"] as const;
export type CompletionShell = (typeof COMPLETION_SHELLS)[number];

export type HelpCommand = { kind: "help"; topic: HelpTopic };

export type Command =
  | HelpCommand
  | { kind: "version" }
  | { kind: "completion"; shell: CompletionShell }
  /** `dirq sdk-stdio`: the SDKs' framed protocol on stdin/stdout (not in `--help`). */
  | { kind: "sdk-stdio" }
  | QueryCommand
  | ReplCommand
  | WatchCommand
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

const FORMATS: readonly OutputFormat[] = ["auto", "table", "json", "csv"];

/**
 * Flags that belong to a mode: alone they configure the REPL, before the SQL the one-shot
 * query (as sqlite3, duckdb and psql take options first); before a subcommand they would be
 * lost, so that is an error.
 */
const MODE_FLAGS = new Set([
  "-c",
  "--config",
  "--persist",
  "--no-ignore",
  "--extension",
  "--on-file",
  "--hook-timeout",
  "--parse",
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
  throw usageError(`invalid --format '${value}': expected auto, table, json or csv`);
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
export function parseFlags<T extends FlagOptions>(
  args: string[],
  options: T,
): { values: ParsedFlags<T>; positionals: string[] } {
  // Arguments none of which starts with `-` are all positionals, and no flag has a default:
  // parseArgs would say the same. Its modules load on first use, a cost every `dirq "<sql>"`
  // would pay for nothing.
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
const QUERY_VALUE_OPTIONS = new Set([
  "--params",
  "--key",
  "--root",
  "-c",
  "--config",
  "--format",
  "--on-file",
  "--hook-timeout",
  "--parse",
  "--extension",
]);
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
  "hook-timeout": { type: "string", multiple: true },
  parse: { type: "string", multiple: true },
  extension: { type: "string", multiple: true },
  help: { type: "boolean", short: "h" },
} as const;

/** `--parse <format>`: at most once, a built-in format, never beside `--on-file`. */
function parseFormatFlag(values: string[], onFile: readonly string[]): FormatName | null {
  if (values.length > 1) throw usageError("--parse was given more than once: give one format");
  const [format] = values;
  if (format === undefined) return null;
  if (!isFormatName(format)) {
    throw usageError(`invalid --parse '${format}': expected one of ${FORMAT_LIST}`);
  }
  if (onFile.length > 0) {
    throw usageError(
      "--parse and --on-file were both given: give --parse (dirq reads the files) or --on-file (a program does)",
    );
  }
  return format;
}

/** `--hook-timeout <seconds>`: at most once, a number of seconds, only with `--on-file`. */
function parseHookTimeoutFlag(values: string[], onFile: readonly string[]): number | null {
  if (values.length > 1) {
    throw usageError("--hook-timeout was given more than once: give one time limit");
  }
  const [text] = values;
  if (text === undefined) return null;
  if (onFile.length === 0) {
    throw usageError(
      "--hook-timeout applies to the --on-file hook: give --on-file too (a config table takes its own timeout key)",
    );
  }
  const seconds = /^\d+(\.\d+)?$/.test(text) ? Number(text) : Number.NaN;
  const problem = hookTimeoutProblem(seconds);
  if (problem !== null) throw usageError(`invalid --hook-timeout '${text}': ${problem}`);
  return seconds;
}

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
    hookTimeout: parseHookTimeoutFlag(values["hook-timeout"] ?? [], onFile),
    parse: parseFormatFlag(values.parse ?? [], onFile),
    extensions: values.extension ?? [],
  };
}

/** The subcommands: after options that belong to a mode, one is an error, never SQL. */
const SUBCOMMANDS = new Set([
  "query",
  "repl",
  "watch",
  "server",
  "init",
  "completion",
  "sdk-stdio",
  "help",
]);

function optionBeforeSubcommand(argv: readonly string[], subcommand: string): DirqError {
  const flag = flagName(argv[0] as string);
  return usageError(
    `${flag} must come after the subcommand, as in dirq ${subcommand} ${flag} ... (or leave out '${subcommand}' before the SQL: dirq ${flag} ... "<sql>")`,
  );
}

/**
 * Options first, as sqlite3, duckdb and psql take them: followed by SQL, a one-shot query
 * (`dirq -c x.toml "<sql>"`, read exactly as `dirq "<sql>" -c x.toml`); alone, the REPL. A
 * subcommand after them is an error (the spec: a flag before `query` is never dropped). `argv`
 * starts with an option. A bare `--persist` takes the next argument as its path unless it has
 * whitespace (then it is the SQL): `dirq --persist "<sql>"`, `dirq --persist x.db`.
 */
function parseOptionsFirst(argv: string[]): QueryCommand | ReplCommand | HelpCommand {
  if (argv.includes("--help") || argv.includes("-h")) return { kind: "help", topic: "dirq" };
  // The first word that is no option's value (`--persist query`: a bare --persist), or the
  // SQL once a --persist path is taken.
  const [firstWord] = [...positionalIndexes(argv)].map((at) => argv[at] as string);
  const { persist, rest } = takePersist(argv, false);
  const parsed = parseFlags(sqlAfterDoubleDash(rest), QUERY_FLAGS);
  const [sql, ...extra] = parsed.positionals;
  for (const word of [firstWord, sql]) {
    if (word !== undefined && SUBCOMMANDS.has(word)) throw optionBeforeSubcommand(argv, word);
  }
  if (sql === undefined) return { kind: "repl", ...queryOptions(parsed.values), persist };
  if (extra.length > 0) {
    throw usageError(`unexpected argument '${extra[0]}' after the SQL: quote the whole statement`);
  }
  return { kind: "query", sql, ...queryOptions(parsed.values), persist };
}

/** `dirq repl [options]`: bare `dirq` spelled out, with a usage of its own. */
function parseRepl(args: string[]): ReplCommand | HelpCommand {
  const { persist, rest } = takePersist(args, false);
  const parsed = parseFlags(rest, QUERY_FLAGS);
  if (parsed.values.help) return { kind: "help", topic: "repl" };
  const [extra] = parsed.positionals;
  if (extra !== undefined) {
    throw usageError(
      `unexpected argument '${extra}' for dirq repl: it reads statements from its input (or run dirq "<sql>")`,
    );
  }
  return { kind: "repl", ...queryOptions(parsed.values), persist };
}

function parseQuery(args: string[], usage: string): QueryCommand | HelpCommand {
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

const WATCH_FLAGS = {
  ...QUERY_FLAGS,
  params: { type: "string" },
  key: { type: "string" },
  root: { type: "string" },
} as const;

/** `--params '<JSON>'`: the statement's parameter values, as `GET /live` takes them. */
function parseParams(text: string | undefined): WatchCommand["params"] {
  if (text === undefined) return null;
  let value: unknown;
  try {
    value = parseJsonExact(text);
  } catch (error) {
    throw usageError(`invalid --params: ${(error as Error).message}; give a JSON array or object`);
  }
  if (value === null || typeof value !== "object") {
    throw usageError("invalid --params: give a JSON array (for ?) or object (for :name)");
  }
  return value as WatchCommand["params"];
}

function parseWatch(args: string[]): WatchCommand | HelpCommand {
  const { persist, rest } = takePersist(args, true);
  const parsed = parseFlags(sqlAfterDoubleDash(rest), WATCH_FLAGS);
  if (parsed.values.help) return { kind: "help", topic: "watch" };
  const [sql, ...extra] = parsed.positionals;
  if (sql === undefined) throw usageError(`missing SQL: dirq watch "<sql>"`);
  if (extra.length > 0) {
    throw usageError(`unexpected argument '${extra[0]}' after the SQL: quote the whole statement`);
  }
  const { format, ...options } = queryOptions(parsed.values);
  if (format === "csv")
    throw usageError("invalid --format 'csv' for dirq watch: expected auto, table or json");
  const key = parsed.values.key?.split(",").map((name) => name.trim());
  if (key?.some((name) => name === ""))
    throw usageError("invalid --key: give column names, comma-separated");
  return {
    kind: "watch",
    sql,
    ...options,
    format,
    persist,
    params: parseParams(parsed.values.params),
    key: key ?? null,
    root: parsed.values.root ?? null,
  };
}

function parseInit(args: string[]): InitCommand | HelpCommand {
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

/**
 * `dirq sdk-stdio` takes no arguments: everything, the index's options too, comes in frames
 * (docs/python.md, "The protocol").
 */
function parseSdkStdio(args: string[]): Command {
  const [extra] = args;
  if (extra !== undefined) {
    throw usageError(
      `unexpected argument '${extra}' for dirq sdk-stdio: it takes its options as frames on stdin`,
    );
  }
  return { kind: "sdk-stdio" };
}

/** Reads the command line (without `node` and the script). Throws a `USAGE` DirqError. */
export function parseCommandLine(argv: readonly string[]): Command {
  const [first, ...rest] = argv;
  if (first === undefined) return parseOptionsFirst([]);
  if (first === "--help" || first === "-h" || first === "help")
    return { kind: "help", topic: "dirq" };
  if (first === "--version" || first === "-V") return { kind: "version" };
  if (first === "query") return parseQuery(rest, `dirq query "<sql>"`);
  if (first === "init") return parseInit(rest);
  if (first === "server") return parseServer(rest);
  if (first === "completion") return parseCompletion(rest);
  if (first === "sdk-stdio") return parseSdkStdio(rest);
  if (first === "repl") return parseRepl(rest);
  if (first === "watch") return parseWatch(rest);
  // SQL may start with a comment (`-- note`); no option contains whitespace.
  if (first.startsWith("-") && first !== "-" && first !== "--" && !/\s/.test(first)) {
    const flag = flagName(first);
    if (MODE_FLAGS.has(flag)) return parseOptionsFirst([...argv]);
    throw usageError(`unknown option '${flag}'`);
  }
  return parseQuery([...argv], `dirq "<sql>"`);
}

/** The options a one-shot query and the REPL share: where rows come from. */
const SOURCE_OPTIONS_HELP = `  -c, --config <path>      load a .dirq.toml (repeatable, merged in order; never automatic)
  --parse <json|jsonl|csv|tsv|yaml|toml|markdown|auto>
                           read every path-table's files in a built-in format (auto: by
                           each file's extension) instead of a hook
  --on-file <command>      parse every path-table's files with this command
  --hook-timeout <seconds>
                           stop an --on-file hook that runs longer than this, and skip
                           its file (default 60; 0 = no limit)
  --no-ignore              also scan files that .gitignore hides`;

/** `--format`, as a one-shot query and the REPL take it. */
const FORMAT_OPTION_HELP = `  --format <auto|table|json|csv>
                           auto (default): a table on a terminal, JSON otherwise;
                           csv: a header record, then the rows, as sqlite3 -csv -header`;

export const QUERY_HELP_TEXT = `Usage: dirq query "<sql>" [options]   (or: dirq [options] "<sql>" [options])

Runs one read-only SQL statement over the current directory and prints the rows.
Options may come before the SQL (dirq -c x.toml "<sql>") or after it, not before 'query'.
SQL that starts with a -- comment is taken as SQL; after a bare -- nothing is an option.

Options:
${SOURCE_OPTIONS_HELP}
  --persist[=<path>]       keep the index in a cache file (default .dirq/cache.db) so the
                           next run re-parses only changed files; bare, it never takes the
                           SQL (text with a space) as its path
${FORMAT_OPTION_HELP}
  -h, --help               print this help
`;

export const REPL_HELP_TEXT = `Usage: dirq repl [options]   (or: dirq [options])

An interactive SQL session over the current directory: end each statement with ';'.
Statements run as with dirq query; a failed one is reported and the session goes on.
With piped input it runs the statements it reads, then exits. Leave with exit, quit or
Ctrl-D; Ctrl-C abandons the line. History, line editing and meta-commands: docs/repl.md.

Options:
${SOURCE_OPTIONS_HELP}
  --persist[=<path>]       keep the index in a cache file (default .dirq/cache.db), so the
                           next session starts from it
  --extension <path>[::<entrypoint>]
                           load a SQLite extension (repeatable); when given, the
                           config's [[dirq.extension]] entries are not loaded
${FORMAT_OPTION_HELP}
  -h, --help               print this help
`;

export const WATCH_HELP_TEXT = `Usage: dirq watch "<sql>" [options]

Runs one read-only statement as a live query and follows its answer as files change: on a
terminal, the answer as a table, redrawn at each change under a line that says what changed
(+ rows that joined, - rows that left, ~ rows changed in place); otherwise JSON Lines, one
per frame: a snapshot, then a diff per change (docs/live-queries.md). Ctrl-C ends it.

Options:
${SOURCE_OPTIONS_HELP}
  --root <dir>             the directory to index (default: the current one)
  --params <json>          parameter values: a JSON array for ?, an object for :name
  --key <column>[,<column>]
                           columns that identify a row: a row changed in place is one
                           update (~), not a row that left and one that joined
  --persist[=<path>]       keep the index in a cache file (default .dirq/cache.db)
  --extension <path>[::<entrypoint>]
                           load a SQLite extension (repeatable)
  --format <auto|table|json>
                           auto (default): a table on a terminal, JSON Lines otherwise
  -h, --help               print this help
`;

export const INIT_HELP_TEXT = `Usage: dirq init [--root <dir>] [--output <path>] [--force]

Writes a starter .dirq.toml with one [[table]] for the data files it finds: a glob, a format,
and a schema of every key of every one of those files (read in this process), typed to hold
all their values; a commented on-file hook for what no format reads. With no file a format
reads, the table runs an on-file hook over **/*.jsonl, with an example schema. Prints the
table's name (the files' folder, or records) and a first query. It is never loaded
automatically: pass it with -c.

Options:
  --root <dir>       directory the default output path resolves against (default: .)
  --output <path>    where to write (default: <root>/.dirq.toml)
  --force            overwrite an existing file
  -h, --help         print this help
`;

export const SERVER_HELP_TEXT = `Usage: dirq server [-c <config>]... [--host <addr>] [--port <n>] [--no-ignore]
                   [--persist[=<path>]] [--extension <path>[::<entrypoint>]]...

Serves the current directory over HTTP: POST /query runs one read-only statement, GET /events
streams changes (Server-Sent Events), GET /live streams a statement's answer as it changes
(docs/live-queries.md), GET / is a web console. Prints "Running at
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
  dirq repl [options]            the same, explicitly
  dirq [options] "<sql>" [options]
                                 run one statement and print the rows
  dirq query "<sql>" [options]   the same, explicitly
  dirq watch "<sql>" [options]   follow one statement's answer as files change (a live
                                 query): a table redrawn, or JSON Lines when piped
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

Options (before or after the SQL, after 'query'; alone for the REPL):
  -c, --config <path>      load a .dirq.toml (repeatable, merged in order; never automatic)
  --parse <json|jsonl|csv|tsv|yaml|toml|markdown|auto>
                           read every path-table's files in a built-in format (auto: by
                           each file's extension): dirq "SELECT * FROM './a.csv'" --parse csv
  --on-file <command>      parse every path-table's files with this command: it gets
                           {path} and {root} and prints a JSON array of row objects
  --hook-timeout <seconds>
                           stop an --on-file hook that runs longer than this, and skip
                           its file (default 60; 0 = no limit)
  --no-ignore              also scan files that .gitignore hides
  --persist[=<path>]       keep the index in a cache file (default .dirq/cache.db), so a
                           restart re-parses only the files that changed; a bare --persist
                           never takes the SQL (text with a space) as its path
  --extension <path>[::<entrypoint>]
                           load a SQLite extension (repeatable); when given, the
                           config's [[dirq.extension]] entries are not loaded
${FORMAT_OPTION_HELP}

Plugins (the dirq launchers, docs/plugins.md):
  --no-plugin              do not load installed plugins' config fragments
                           (also DIRQ_NO_PLUGIN=1); taken by the launcher, never passed on

Environment:
  DIRQ_PROGRESS=auto|always|never   progress lines on stderr (default auto)
  DIRQ_NO_PLUGIN=1                  the same as --no-plugin
  DIRQ_DEBUG=1                      a stack trace with an internal error (for bug reports)
  DIRQ_CACHE_DIR=<dir>              dirq's cache folder (default $XDG_CACHE_HOME/dirq,
                                    else ~/.cache/dirq)
  DIRQ_CODE_CACHE=0                 do not keep compiled code in the cache folder
  DIRQ_NATIVE_FS=0                  scan with Node's fs and read CSV with csv-parse, not natively
  DIRQ_JSONL_THREADS=<n>            helper threads that parse JSON Lines natively (default:
                                    one per core but one, at most 3; 0 for none)
  DIRQ_DIRECT_READS=0               one-shot queries: always fill a JSON Lines table, never
                                    read the files straight (docs/formats.md)
  DIRQ_PLUGIN_CACHE=0               do not cache what plugin discovery found
  DIRQ_KEEP_ALIVE_MS=<ms>           dirq server: the quiet time before a keep-alive line
                                    on /events (default 15000)
  DIRQ_QUERY_TIMEOUT_MS=<ms>        dirq server: a statement's time limit (default 30000)
  DIRQ_EVENT_HISTORY_FRAMES=<n>     dirq server: the row frames /events keeps for clients
                                    that resume (default 65536)
  DIRQ_EVENT_HISTORY_BYTES=<n>      dirq server: the bytes of them it keeps (default 32 MiB)
  DIRQ_EVENT_HISTORY_MS=<ms>        dirq server: how long it keeps a frame (default 120000)
  DIRQ_EVENT_STALL_MS=<ms>          dirq server: how long an /events client that far behind
                                    may read nothing before it is cut off (default 5000)
  DIRQ_LIVE_LINGER_MS=<ms>          dirq server: how long a /live query nobody follows goes
                                    on, for clients that resume (default 30000)
  DIRQ_LIVE_DIFF_THREAD_BYTES=<n>   dirq server: from what answer size a /live query is
                                    diffed on a thread of its own (default 65536)
  DIRQ_LIVE_HISTORY_BYTES=<n>       dirq server: the bytes of frames all /live queries keep
                                    together for clients that resume (default 32 MiB)
  DIRQ_LIVE_HISTORY_MS=<ms>         dirq server: how long a /live query keeps a frame
                                    (default 120000)
  DIRQ_LIVE_STATS=1                 dirq server: GET /live/stats lists the live queries, their
                                    subscribers, runs and CPU time, memory and the /events
                                    history's size (for benchmarks; it also times each run)
  DIRQ_LIVE_STATS_CPU=0             dirq server: with DIRQ_LIVE_STATS=1, do not time the
                                    file-by-file runs (byFileCpuMs stays 0)
  DIRQ_MAX_WATCHES=<n>              the most folder watches a live index takes (default:
                                    what the system allows); folders past it are checked by
                                    listing them (docs/http.md, "What is watched")
The launchers (Python, Rust; docs/install.md):
  DIRQ_BIN=<file>                   the dirq CLI to run instead of the npm release
  DIRQ_NODE=<file>                  the Node.js that runs it (default: node on PATH)
  DIRQ_NPM=<file>                   the npm that installs it on the first run
  DIRQ_NPM_PACKAGE=<spec>           what the first run installs (default dirq@<version>)
Set by dirq for the programs it starts, not by you: DIRQ_SERVER_MARK (hooks),
DIRQ_PLUGIN_PYTHON and DIRQ_PLUGIN_PYTHON_DIRS (Python plugins' commands).

Exit codes: 0 success, 1 any failure, 23 partial scan (some files could not be read
or parsed; the other rows were printed).
`;
