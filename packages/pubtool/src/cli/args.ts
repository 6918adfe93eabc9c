import { parseArgs } from "node:util";
import { PubtoolError } from "../errors.js";

/** A parsed command line. */
export type Command =
  | { name: "help" }
  | { name: "version" }
  | { name: "doctor"; json: boolean; config?: string }
  | { name: "preflight"; json: boolean; config?: string; packages: string[] }
  | { name: "publish"; dryRun: boolean; config?: string; packages: string[] }
  | { name: "token-list"; secrets: boolean; config?: string }
  | { name: "auth-login"; clientId?: string }
  | { name: "auth-logout" }
  | { name: "auth-status" };

export const HELP_TEXT = `usage: pubtool <command> [options]

commands:
  doctor [-c <file>] [--json]        check the trust policy: workflows, declarations, rustreg
  preflight [-c <file>] [--package <name>]... [--json]
                                     check every package can be published, without side effects
  publish [-c <file>] [--package <name>]... [--dry-run]
                                     publish every package (or only the named ones) in
                                     dependency order
  token list [-c <file>] [--secrets] list registry credentials (names only, never values)
  auth login [--client-id <id>]      sign in to the workflow host (OAuth device flow)
  auth logout                        forget the stored login
  auth status                        show whether a login is stored

options:
  -c, --config <file>  config file (default: the nearest pubtool.toml from the working
                       directory up to the repository root); token list looks for the
                       repository's origin remote in its folder
  --package <name>     preflight and publish: only this package of the config (repeatable;
                       <kind>:<name> when two kinds share a name)
  -h, --help           show this help
  -V, --version        show the version

exit codes: 0 ok, 1 a check or step failed, 2 usage or config error
`;

function usage(message: string): PubtoolError {
  return new PubtoolError("USAGE", `${message}. Run pubtool --help for usage.`);
}

/** The `--package` values, each checked to be a name (an empty one is a usage error). */
function packageNames(values: readonly string[] | undefined): string[] {
  const names = (values ?? []).map((value) => value.trim());
  if (names.some((name) => name === "")) throw usage("--package needs a package name");
  return names;
}

/** Parses `argv` (without node and the script). */
export function parseCommandLine(argv: readonly string[]): Command {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "V" },
        json: { type: "boolean" },
        secrets: { type: "boolean" },
        "dry-run": { type: "boolean" },
        config: { type: "string", short: "c" },
        "client-id": { type: "string" },
        package: { type: "string", multiple: true },
      },
    });
  } catch (error) {
    throw usage(error instanceof Error ? error.message.replace(/\.$/, "") : String(error));
  }
  const { values, positionals } = parsed;
  if (values.help) return { name: "help" };
  if (values.version) return { name: "version" };
  const [first, second, ...rest] = positionals;
  const allow = (command: string, flags: string[]) => {
    for (const flag of Object.keys(values)) {
      if (!flags.includes(flag)) throw usage(`${command} does not take --${flag}`);
    }
  };
  const noMore = (command: string, extra: readonly (string | undefined)[]) => {
    const left = extra.filter((value) => value !== undefined);
    if (left.length > 0) throw usage(`${command}: unexpected argument ${left[0]}`);
  };
  switch (first) {
    case undefined:
      return { name: "help" };
    case "doctor":
      allow(first, ["json", "config"]);
      noMore(first, [second, ...rest]);
      return { name: first, json: values.json === true, config: values.config };
    case "preflight":
      allow(first, ["json", "config", "package"]);
      noMore(first, [second, ...rest]);
      return {
        name: first,
        json: values.json === true,
        config: values.config,
        packages: packageNames(values.package),
      };
    case "publish":
      allow(first, ["dry-run", "config", "package"]);
      noMore(first, [second, ...rest]);
      return {
        name: "publish",
        dryRun: values["dry-run"] === true,
        config: values.config,
        packages: packageNames(values.package),
      };
    case "token":
      if (second !== "list") throw usage(`unknown command: token ${second ?? ""}`.trim());
      allow("token list", ["secrets", "config"]);
      noMore("token list", rest);
      return { name: "token-list", secrets: values.secrets === true, config: values.config };
    case "auth":
      noMore(`auth ${second}`, rest);
      if (second === "login") {
        allow("auth login", ["client-id"]);
        return { name: "auth-login", clientId: values["client-id"] };
      }
      if (second === "logout" || second === "status") {
        allow(`auth ${second}`, []);
        return { name: second === "logout" ? "auth-logout" : "auth-status" };
      }
      throw usage(`unknown command: auth ${second ?? ""}`.trim());
    default:
      throw usage(`unknown command: ${first}`);
  }
}
