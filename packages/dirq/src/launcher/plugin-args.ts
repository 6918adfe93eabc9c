/**
 * How a launcher hands discovered plugin fragments to the CLI: as `-c` files placed after the
 * user's own `-c` files, so that they load (and merge) last. The Python launcher
 * (python/src/dirq_launcher/plugins.py) follows the same rules; keep the two in step.
 */

/** The launcher's own flag: consumed, never forwarded. */
export const NO_PLUGIN_FLAG = "--no-plugin";

/** `DIRQ_NO_PLUGIN=1` (also `true`, `yes`, any case) turns discovery off. */
export function pluginsDisabledByEnv(value: string | undefined): boolean {
  return ["1", "true", "yes"].includes((value ?? "").trim().toLowerCase());
}

/** Subcommands that take `-c` after them; the default mode (SQL first) does too. */
const CONFIG_COMMANDS = new Set(["query", "server", "repl"]);
/**
 * First arguments that never take configs. `sdk-stdio` gets its configs in frames, and the
 * SDKs never discover plugins.
 */
const NO_CONFIG_FIRST = new Set([
  "init",
  "help",
  "completion",
  "sdk-stdio",
  "--help",
  "-h",
  "--version",
  "-V",
]);
const HELP_FLAGS = new Set(["--help", "-h"]);

/**
 * Whether the command reads configs: `init`, `completion`, `--version` and any `--help` do
 * not, so they neither discover plugins nor fail on a broken one.
 */
export function takesPluginConfigs(argv: readonly string[]): boolean {
  const [first] = argv;
  if (first !== undefined && NO_CONFIG_FIRST.has(first)) return false;
  const end = argv.indexOf("--");
  return !(end === -1 ? argv : argv.slice(0, end)).some((arg) => HELP_FLAGS.has(arg));
}

/**
 * Removes `--no-plugin` (before a `--` that ends the options) and says whether it was there.
 */
export function takeNoPluginFlag(argv: readonly string[]): { argv: string[]; noPlugin: boolean } {
  const end = argv.indexOf("--");
  const options = end === -1 ? argv : argv.slice(0, end);
  const rest = end === -1 ? [] : argv.slice(end);
  const kept = options.filter((arg) => arg !== NO_PLUGIN_FLAG);
  return { argv: [...kept, ...rest], noPlugin: kept.length !== options.length };
}

/** Where the user's last `-c`/`--config` ends (index after it), or -1 when there is none. */
function afterLastConfig(argv: readonly string[], end: number): number {
  let after = -1;
  for (let i = 0; i < end; i++) {
    const arg = argv[i] as string;
    if (arg === "-c" || arg === "--config") {
      after = Math.min(i + 2, end);
      i++;
    } else if (arg.startsWith("--config=") || (arg.startsWith("-c") && arg.length > 2)) {
      after = i + 1;
    }
  }
  return after;
}

/**
 * The command line with `-c <fragment>` for each plugin, after the user's last `-c`, else
 * right after the subcommand or the SQL, else (a bare `dirq` or options alone: the REPL) at
 * the end, before any `--`. Commands that read no config (`takesPluginConfigs`) are left
 * alone.
 */
export function withPluginConfigs(argv: readonly string[], fragments: readonly string[]): string[] {
  const [first] = argv;
  if (fragments.length === 0 || !takesPluginConfigs(argv)) return [...argv];
  const terminator = argv.indexOf("--");
  const end = terminator === -1 ? argv.length : terminator;
  let at = afterLastConfig(argv, end);
  if (at === -1) {
    const optionsOnly = first === undefined || (first.startsWith("-") && !/\s/.test(first));
    at = optionsOnly ? end : CONFIG_COMMANDS.has(first) ? 1 : Math.min(1, end);
  }
  const added = fragments.flatMap((fragment) => ["-c", fragment]);
  return [...argv.slice(0, at), ...added, ...argv.slice(at)];
}
