import { type CliIo, run, type RunKindListener, startQueryWorkersEarly } from "../cli/main.js";
import { discoverNpmPlugins, LauncherError } from "./npm-plugins.js";
import { PluginCache } from "./plugin-cache.js";
import {
  pluginsDisabledByEnv,
  takeNoPluginFlag,
  takesPluginConfigs,
  withPluginConfigs,
} from "./plugin-args.js";

export { processIo } from "./process-io.js";

/**
 * The npm launcher (the package's `bin`): discovers installed plugins, hands their fragments
 * to the CLI as `-c` files after the user's, and runs it. Only launchers discover; the CLI,
 * core and SDK never do. Resolves to the exit code.
 */
export async function launch(
  argv: readonly string[],
  io: CliIo,
  options: {
    env: NodeJS.ProcessEnv;
    launcherPackage: string;
    /** Where discovery keeps what it found (plugin-cache.ts); none when absent. */
    pluginCache?: string;
    /** Hears what kinds of work the run did (see RunKind in cli/main.ts). */
    onRunKind?: RunKindListener;
  },
): Promise<number> {
  const { argv: args, noPlugin } = takeNoPluginFlag(argv);
  // A command that reads no config never discovers: a broken plugin cannot break --help.
  if (noPlugin || pluginsDisabledByEnv(options.env.DIRQ_NO_PLUGIN) || !takesPluginConfigs(args)) {
    return run(args, io, options.onRunKind);
  }
  // Discovery reads every installed package's manifest: the query's workers start first.
  await startQueryWorkersEarly(args, io.cwd);
  let fragments: string[];
  try {
    const cache =
      options.pluginCache === undefined || options.env.DIRQ_PLUGIN_CACHE === "0"
        ? null
        : PluginCache.open(options.pluginCache);
    fragments = discoverNpmPlugins(io.cwd, options.launcherPackage, cache).map(
      (plugin) => plugin.config,
    );
    cache?.save();
  } catch (error) {
    if (!(error instanceof LauncherError)) throw error;
    io.stderr.write(`dirq: ${error.message}\n`);
    return 1;
  }
  return run(withPluginConfigs(args, fragments), io, options.onRunKind);
}
