import { type Dirent, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { realPath } from "../shared/real-path.js";
import { statOrNone } from "../shared/stat-or-none.js";
import type { PluginCache } from "./plugin-cache.js";

/** A launcher failure: printed as `dirq: <message>`, exit 1. Names the package at fault. */
export class LauncherError extends Error {
  override readonly name = "LauncherError";
}

/** An installed npm package whose `package.json` has `"dirq": { "config": "<fragment>" }`. */
export interface NpmPlugin {
  name: string;
  /** The package's folder. */
  directory: string;
  /** The fragment's absolute path. */
  config: string;
}

// Discovery runs on every start and reads one manifest per installed package (hundreds in a
// project's node_modules), so it stays lean: paths by concatenation, a stat only where a folder
// exists, and what a folder held taken from the cache while its times are unchanged
// (plugin-cache.ts).

/** A plugin and the package folder it was found in (`name` or `@scope/name`). */
export interface FoundPlugin {
  folder: string;
  plugin: NpmPlugin;
}

/** A package folder in a `node_modules`: its name there, its path, whether it is a symlink. */
interface PackageFolder {
  name: string;
  directory: string;
  linked: boolean;
}

/** The `node_modules` folder nearest to `start`: itself or in it or an ancestor. */
export function nearestNodeModules(start: string): string | null {
  for (let dir = resolve(start); ; dir = dirname(dir)) {
    if (basename(dir) === "node_modules") return dir;
    const candidate = join(dir, "node_modules");
    if (isDirectory(candidate)) return candidate;
    if (dirname(dir) === dir) return null;
  }
}

function isDirectory(path: string): boolean {
  return statOrNone(path)?.isDirectory() ?? false;
}

function entries(dir: string): Dirent[] {
  try {
    return readdirSync(dir, { withFileTypes: true });
  } catch {
    return []; // a file where a folder was expected, or unreadable: no packages there
  }
}

/** Package folders directly in `nodeModules` (`name` and `@scope/name`), and its scope folders. */
function packageFolders(nodeModules: string): { packages: PackageFolder[]; scopes: string[] } {
  const packages: PackageFolder[] = [];
  const scopes: string[] = [];
  for (const entry of entries(nodeModules)) {
    if (entry.name.startsWith(".")) continue;
    const path = `${nodeModules}/${entry.name}`;
    if (entry.name.startsWith("@")) {
      scopes.push(entry.name);
      for (const scoped of entries(path)) {
        if (!scoped.name.startsWith(".")) {
          packages.push({
            name: `${entry.name}/${scoped.name}`,
            directory: `${path}/${scoped.name}`,
            linked: scoped.isSymbolicLink(),
          });
        }
      }
    } else {
      packages.push({ name: entry.name, directory: path, linked: entry.isSymbolicLink() });
    }
  }
  return { packages, scopes: scopes.sort() };
}

/** The plugin a package folder holds, if its manifest declares one. */
function readPlugin(folder: { name: string; directory: string }): NpmPlugin | null {
  const manifestPath = `${folder.directory}/package.json`;
  let manifest: unknown;
  try {
    const text = readFileSync(manifestPath, "utf8");
    // Most packages are not plugins: skip parsing a manifest that never names the key (it
    // runs for every installed package on every start).
    if (!text.includes('"dirq"')) return null;
    manifest = JSON.parse(text);
  } catch {
    return null; // not a package (or not ours to judge): only declared plugins count
  }
  if (manifest === null || typeof manifest !== "object" || !("dirq" in manifest)) return null;
  const name = (manifest as { name?: unknown }).name;
  const label = typeof name === "string" ? name : folder.name;
  if (label === "dirq") return null;
  const declared = (manifest as { dirq: unknown }).dirq;
  const config =
    declared !== null && typeof declared === "object" && "config" in declared
      ? (declared as { config: unknown }).config
      : undefined;
  if (typeof config !== "string" || config === "") {
    throw new LauncherError(
      `plugin ${label} (${folder.directory}): its package.json "dirq" entry needs "config": "<path of its dirq.toml fragment>"; fix or uninstall the package, or run with --no-plugin`,
    );
  }
  const fragment = resolve(folder.directory, config);
  if (!isFragment(fragment)) {
    throw new LauncherError(
      `plugin ${label} (${folder.directory}): its config fragment ${config} is missing; reinstall or uninstall the package, or run with --no-plugin`,
    );
  }
  return { name: label, directory: folder.directory, config: fragment };
}

/**
 * Plugins installed in the `node_modules` nearest to the working directory and in the
 * launcher's own, in a stable order (by package name; a package in both counts once, the
 * working directory's copy first). With a cache, a folder whose times are unchanged since it
 * was last read is not read again (plugin-cache.ts).
 */
export function discoverNpmPlugins(
  cwd: string,
  launcherPackage: string,
  cache: PluginCache | null = null,
): NpmPlugin[] {
  const places = [nearestNodeModules(cwd), nearestNodeModules(dirname(launcherPackage))];
  const seen = new Set<string>();
  const byFolder = new Map<string, NpmPlugin>();
  for (const place of places) {
    if (place === null) continue;
    const real = realPath(place);
    if (seen.has(real)) continue;
    seen.add(real);
    for (const { folder, plugin } of pluginsIn(place, cache)) {
      if (!byFolder.has(folder)) byFolder.set(folder, plugin);
    }
  }
  return [...byFolder.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The plugins in one `node_modules`: from the cache while it holds, else read (and recorded). */
function pluginsIn(nodeModules: string, cache: PluginCache | null): FoundPlugin[] {
  const record = cache?.current(nodeModules) ?? null;
  // A fragment removed since: the full read below names the package.
  if (record !== null && record.plugins.every(({ plugin }) => isFragment(plugin.config))) {
    const found = [...record.plugins];
    for (const folder of record.linked) {
      const plugin = readPlugin(folder);
      if (plugin !== null) found.push({ folder: folder.name, plugin });
    }
    return found;
  }
  const { packages, scopes } = packageFolders(nodeModules);
  const found: FoundPlugin[] = [];
  const unlinked: FoundPlugin[] = [];
  for (const folder of packages) {
    const plugin = readPlugin(folder);
    if (plugin === null) continue;
    found.push({ folder: folder.name, plugin });
    if (!folder.linked) unlinked.push({ folder: folder.name, plugin });
  }
  const linked = packages
    .filter((folder) => folder.linked)
    .map(({ name, directory }) => ({ name, directory }));
  cache?.record(nodeModules, { scopes, linked, plugins: unlinked });
  return found;
}

/** Whether a config fragment is there: anything but a folder (one `stat`). */
function isFragment(path: string): boolean {
  const stats = statOrNone(path);
  return stats !== undefined && !stats.isDirectory();
}
