import { type ParseArgsConfig, parseArgs } from "node:util";
import { PubtoolError } from "../errors.js";

/** A parsed command line. */
export type Command =
  | { name: "help"; topic: HelpTopic }
  | { name: "version" }
  | { name: "doctor"; json: boolean; config?: string }
  | { name: "preflight"; json: boolean; config?: string; packages: string[] }
  | { name: "publish"; dryRun: boolean; config?: string; packages: string[] }
  | { name: "status"; json: boolean; config?: string; packages: string[] }
  | { name: "verify"; json: boolean; config?: string; packages: string[] }
  | { name: "token-list"; secrets: boolean; config?: string }
  | { name: "auth-login"; clientId?: string }
  | { name: "auth-logout" }
  | { name: "auth-status" };

/** What `help` prints: the overview, a command's usage, or a group's (`token`, `auth`). */
export type HelpTopic = "pubtool" | CommandWords | CommandGroup;

export type CommandWords =
  | "doctor"
  | "preflight"
  | "publish"
  | "status"
  | "verify"
  | "token list"
  | "auth login"
  | "auth logout"
  | "auth status"
  | "help";

type CommandGroup = "token" | "auth";

type OptionName = "json" | "secrets" | "dry-run" | "config" | "client-id" | "package";

/** Every option any command takes, as parseArgs reads them; `--help` and `--version` too. */
const OPTIONS = {
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" },
  json: { type: "boolean" },
  secrets: { type: "boolean" },
  "dry-run": { type: "boolean" },
  config: { type: "string", short: "c" },
  "client-id": { type: "string" },
  package: { type: "string", multiple: true },
} as const satisfies NonNullable<ParseArgsConfig["options"]>;

const CONFIG_OPTION = `  -c, --config <file>  config file (default: the nearest pubtool.toml from the working
                       directory up to the repository root)`;
const PACKAGE_OPTION = `  --package <name>     only this package of the config (repeatable; <kind>:<name> when
                       two kinds share a name)`;
const HELP_OPTION = `  -h, --help           show this help`;

interface CommandSpec {
  options: readonly OptionName[];
  help: string;
}

/** Each command's options and its `--help`: the one source of both. */
export const COMMANDS: Readonly<Record<CommandWords, CommandSpec>> = {
  doctor: {
    options: ["config", "json"],
    help: `usage: pubtool doctor [-c <file>] [--json]

Checks the trust-policy prerequisites: (1) the workflows under .github/workflows,
(2) the trust_policy blocks of pubtool.toml against them, (3) with RUSTREG_DOCTOR_TOKEN set,
rustreg's trusted-publishing configs. Works without a pubtool.toml. See docs/doctor.md.

options:
${CONFIG_OPTION}
  --json               print the report as JSON
${HELP_OPTION}

exit codes: 0 every check passed (neutral skips do not fail), 1 a check failed, 2 usage or
config error
`,
  },
  preflight: {
    options: ["config", "package", "json"],
    help: `usage: pubtool preflight [-c <file>] [--package <name>]... [--json]

Checks that every package of the config can be published, in dependency order, without side
effects: its manifest, whether the version is already published, and that auth is available
(OIDC, else the fallback token). See docs/commands.md.

options:
${CONFIG_OPTION}
${PACKAGE_OPTION}
  --json               print the report as JSON
${HELP_OPTION}

exit codes: 0 every package is ready, 1 a package is not, 2 usage or config error
`,
  },
  publish: {
    options: ["config", "package", "dry-run"],
    help: `usage: pubtool publish [-c <file>] [--package <name>]... [--dry-run]

Publishes every package of the config (or only the named ones) in dependency order, by OIDC
trusted publishing where the workflow allows it, else with the fallback tokens. Stops at the
first failure; a version the registry already has is skipped. See docs/commands.md.

options:
${CONFIG_OPTION}
${PACKAGE_OPTION}
  --dry-run            every step but the upload: the registries' dry runs (cargo publish
                       --dry-run, npm publish --dry-run), pyreg's files listed
${HELP_OPTION}

exit codes: 0 published (or skipped), 1 a publish failed, 2 usage or config error
`,
  },
  status: {
    options: ["config", "package", "json"],
    help: `usage: pubtool status [-c <file>] [--package <name>]... [--json]

The registries against the tags, read-only and without secrets: for each package, the
version each git tag releases (its manifest at that tag), and whether its registry has it.
A tagged version the registry lacks is a half-made release. See docs/commands.md.

options:
${CONFIG_OPTION}
${PACKAGE_OPTION}
  --json               print the report as JSON
${HELP_OPTION}

exit codes: 0 every tagged version is out (an unreachable registry is reported, not failed),
1 a tagged version is missing from its registry, 2 usage or config error
`,
  },
  verify: {
    options: ["config", "package", "json"],
    help: `usage: pubtool verify [-c <file>] [--package <name>]... [--json]

Was each package's last release published by OIDC trusted publishing? Read from the
registries' public provenance, without secrets: rustreg's trusted-publishing record on the
version, jsreg's provenance attestation, pyreg's PEP 740 provenance. See docs/commands.md.

options:
${CONFIG_OPTION}
${PACKAGE_OPTION}
  --json               print the report as JSON
${HELP_OPTION}

exit codes: 0 no last release shows a token publish (unknown and unreachable are reported,
not failed), 1 one does, 2 usage or config error
`,
  },
  "token list": {
    options: ["config", "secrets"],
    help: `usage: pubtool token list [-c <file>] [--secrets]

Lists registry credentials in a table (REGISTRY, SOURCE, ENV/NAME, DETAILS): the variables of
this process's environment, and with --secrets the names (never values) of the repository's
and its environments' secrets that look like registry credentials (needs auth login).

options:
  -c, --config <file>  config file; the repository is the one of its folder (its origin
                       remote)
  --secrets            also list the repository's secrets (names only)
${HELP_OPTION}

exit codes: 0 listed, 1 the secrets could not be listed, 2 usage or config error
`,
  },
  "auth login": {
    options: ["client-id"],
    help: `usage: pubtool auth login [--client-id <id>]

Signs in to the workflow host by OAuth device flow (read-only access to secrets, environments
and actions metadata) for token list --secrets. The token is stored in
$XDG_CONFIG_HOME/pubtool/auth.json (else ~/.config/pubtool/auth.json), mode 0600.

options:
  --client-id <id>     the OAuth app's client id (default: PUBTOOL_GITHUB_CLIENT_ID)
${HELP_OPTION}

exit codes: 0 signed in, 1 denied or expired, 2 usage error
`,
  },
  "auth logout": {
    options: [],
    help: `usage: pubtool auth logout

Forgets the stored login (deletes auth.json).

options:
${HELP_OPTION}
`,
  },
  "auth status": {
    options: [],
    help: `usage: pubtool auth status

Says whether a login is stored: the host, since when, the client id and the file; never the
token.

options:
${HELP_OPTION}

exit codes: 0 a login is stored, 1 none is
`,
  },
  help: {
    options: [],
    help: `usage: pubtool help [<command>]

Prints the overview, or a command's usage (the same as pubtool <command> --help).
`,
  },
};

export const HELP_TEXT = `usage: pubtool <command> [options]

commands:
  doctor [-c <file>] [--json]        check the trust policy: workflows, declarations, rustreg
  preflight [-c <file>] [--package <name>]... [--json]
                                     check every package can be published, without side effects
  publish [-c <file>] [--package <name>]... [--dry-run]
                                     publish every package (or only the named ones) in
                                     dependency order
  status [-c <file>] [--package <name>]... [--json]
                                     the registries against the tags: what is out, what
                                     is missing
  verify [-c <file>] [--package <name>]... [--json]
                                     was each last release published by OIDC (public
                                     provenance)
  token list [-c <file>] [--secrets] list registry credentials (names only, never values)
  auth login [--client-id <id>]      sign in to the workflow host (OAuth device flow)
  auth logout                        forget the stored login
  auth status                        show whether a login is stored
  help [<command>]                   this overview, or a command's usage

options:
  -c, --config <file>  config file (default: the nearest pubtool.toml from the working
                       directory up to the repository root); token list looks for the
                       repository's origin remote in its folder
  --package <name>     preflight, publish, status, verify: only this package of the config (repeatable;
                       <kind>:<name> when two kinds share a name)
  -h, --help           show this help; pubtool <command> --help shows the command's
  -V, --version        show the version

environment (docs/environment.md):
  RUST_REGISTRY_TOKEN, CARGO_REGISTRY_TOKEN   rustreg token for publish (OIDC or fallback)
  PYREG_API_TOKEN                             pyreg fallback token
  JSREG_AUTH_TOKEN, JSREG_TOKEN               jsreg fallback token
  RUSTREG_DOCTOR_TOKEN                        rustreg read token for doctor's phase 3
  PUBTOOL_GITHUB_API_URL, PUBTOOL_GITHUB_URL, PUBTOOL_GITHUB_CLIENT_ID, PUBTOOL_RUSTREG_URL,
  PUBTOOL_RUSTREG_INDEX, PUBTOOL_PYREG_URL, PUBTOOL_PYREG_UPLOAD_URL, PUBTOOL_JSREG_URL,
  PUBTOOL_HTTP_TIMEOUT_MS                     endpoints and timeouts (tests, private mirrors)

exit codes: 0 ok, 1 a check or step failed, 2 usage or config error
`;

/** The `--help` of a topic: the overview, a command's, or a group's subcommands. */
export function helpText(topic: HelpTopic): string {
  if (topic === "pubtool") return HELP_TEXT;
  if (topic === "token" || topic === "auth") {
    const lines = groupMembers(topic).map(
      (words) => `  ${usageLine(words).replace(/^pubtool /, "")}`,
    );
    return `usage: pubtool ${topic} <command> [options]

commands:
${lines.join("\n")}

pubtool ${topic} <command> --help shows a command's options.
`;
  }
  return COMMANDS[topic].help;
}

/** The commands of a group: `token list`; `auth login`, `auth logout`, `auth status`. */
function groupMembers(group: CommandGroup): CommandWords[] {
  return (Object.keys(COMMANDS) as CommandWords[]).filter((words) => words.startsWith(`${group} `));
}

function usageLine(words: CommandWords): string {
  return (COMMANDS[words].help.split("\n")[0] as string).replace(/^usage: /, "");
}

/**
 * A usage error said as pubtool's, naming the command and where its usage is:
 * `pubtool publish: unknown option --foo; see pubtool publish --help`.
 */
function usage(command: HelpTopic, problem: string): PubtoolError {
  const name = command === "pubtool" ? "pubtool" : `pubtool ${command}`;
  const guide = command === "help" ? "pubtool --help" : `${name} --help`;
  return new PubtoolError("USAGE", `${problem}; see ${guide}`, { speaker: name });
}

/** Options that take a value (the next argument, unless written `--x=value`). */
const VALUE_FLAGS = new Set(["-c", "--config", "--client-id", "--package"]);

/** The positionals of `argv` (option values skipped): the command's words come first. */
function positionalsOf(argv: readonly string[]): string[] {
  const found: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "--") return [...found, ...argv.slice(i + 1)];
    if (VALUE_FLAGS.has(arg)) i++;
    else if (!arg.startsWith("-") || arg === "-") found.push(arg);
  }
  return found;
}

function isCommandWords(words: string): words is CommandWords {
  return Object.hasOwn(COMMANDS, words);
}

/** Which command (or group) the positionals name, and how many of them that took. */
function commandOf(positionals: readonly string[]): { topic: HelpTopic; words: number } {
  const [first, second] = positionals;
  if (first === undefined) return { topic: "pubtool", words: 0 };
  if (first === "token" || first === "auth") {
    if (second === undefined) return { topic: first, words: 1 };
    const words = `${first} ${second}`;
    if (!isCommandWords(words)) throw usage(first, `unknown command ${words}`);
    return { topic: words, words: 2 };
  }
  if (!isCommandWords(first)) throw usage("pubtool", `unknown command ${first}`);
  return { topic: first, words: 1 };
}

/** The flag a parseArgs error names (`'--foo'`, `'-c, --config <value>'`: the long one). */
function flagIn(message: string): string {
  const quoted = /'([^']+)'/.exec(message)?.[1] ?? "";
  return /--[\w-]+/.exec(quoted)?.[0] ?? quoted.split(" ")[0] ?? quoted;
}

/** node:util parseArgs' errors said in pubtool's words, naming the command. */
function parseError(topic: HelpTopic, error: unknown): PubtoolError {
  const code = (error as { code?: string }).code;
  const message = error instanceof Error ? error.message : String(error);
  const flag = flagIn(message);
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return usage(topic, `unknown option ${flag}`);
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    return /does not take an argument/.test(message)
      ? usage(topic, `${flag} takes no value`)
      : usage(topic, `${flag} needs a value`);
  }
  return usage(topic, message.replace(/\.$/, ""));
}

/** The `--package` values, each checked to be a name (an empty one is a usage error). */
function packageNames(topic: HelpTopic, values: readonly string[] | undefined): string[] {
  const names = (values ?? []).map((value) => value.trim());
  if (names.some((name) => name === "")) throw usage(topic, "--package needs a package name");
  return names;
}

/** Parses `argv` (without node and the script). Throws a `USAGE` PubtoolError. */
export function parseCommandLine(argv: readonly string[]): Command {
  const positionals = positionalsOf(argv);
  const optionsEnd = argv.includes("--") ? argv.indexOf("--") : argv.length;
  const asksHelp = argv.slice(0, optionsEnd).some((arg) => arg === "--help" || arg === "-h");
  if (positionals[0] === "help") return helpCommand(positionals.slice(1));
  const command = commandOf(positionals);
  const { topic } = command;
  if (asksHelp) return { name: "help", topic };
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw parseError(topic, error);
  }
  const { values } = parsed;
  if (values.version) return { name: "version" };
  if (topic === "pubtool") return { name: "help", topic };
  if (topic === "token" || topic === "auth") {
    throw usage(topic, `a command is needed: ${groupMembers(topic).join(", ")}`);
  }
  const spec = COMMANDS[topic];
  for (const option of Object.keys(values) as (keyof typeof OPTIONS)[]) {
    if (option === "help" || option === "version") continue;
    if (!spec.options.includes(option)) {
      throw usage(topic, `--${option} is not an option of ${topic}`);
    }
  }
  const [extra] = parsed.positionals.slice(command.words);
  if (extra !== undefined) throw usage(topic, `unexpected argument ${extra}`);
  switch (topic) {
    case "doctor":
      return { name: "doctor", json: values.json === true, config: values.config };
    case "preflight":
      return {
        name: "preflight",
        json: values.json === true,
        config: values.config,
        packages: packageNames(topic, values.package),
      };
    case "publish":
      return {
        name: "publish",
        dryRun: values["dry-run"] === true,
        config: values.config,
        packages: packageNames(topic, values.package),
      };
    case "status":
    case "verify":
      return {
        name: topic,
        json: values.json === true,
        config: values.config,
        packages: packageNames(topic, values.package),
      };
    case "token list":
      return { name: "token-list", secrets: values.secrets === true, config: values.config };
    case "auth login":
      return { name: "auth-login", clientId: values["client-id"] };
    case "auth logout":
      return { name: "auth-logout" };
    case "auth status":
      return { name: "auth-status" };
    case "help":
      return { name: "help", topic: "pubtool" };
  }
}

/** `pubtool help [<command>]`: the overview, or that command's (or group's) usage. */
function helpCommand(words: readonly string[]): Command {
  if (words.length === 0) return { name: "help", topic: "pubtool" };
  const joined = words.join(" ");
  if (joined === "token" || joined === "auth" || isCommandWords(joined)) {
    return { name: "help", topic: joined };
  }
  throw usage("help", `no command ${joined}`);
}

/** The files pubtool reads and writes: the man page's FILES section (no --help prints it). */
export const FILES_TEXT = `pubtool.toml
    the packages to publish and their trust policies (docs/config.md); the nearest one from
    the working directory up to the repository root, or -c <file>
.github/workflows/*.yml
    the workflows doctor reads (never changed)
$XDG_CONFIG_HOME/pubtool/auth.json, else ~/.config/pubtool/auth.json
    the login auth login stores (mode 0600); auth logout deletes it
`;
