import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { realPath } from "../shared/real-path.js";

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
// project's node_modules), so it stays lean: names from plain `readdirSync` (no Dirent
// objects), paths by concatenation, a stat only where a folder exists.

/** The `node_modules` folder nearest to `start`: itself or in it or an ancestor. */
export function nearestNodeModules(start: string): string | null {
  for (let dir = resolve(start); ; dir = dirname(dir)) {
    if (basename(dir) === "node_modules") return dir;
    const candidate = join(dir, "node_modules");
    if (existsSync(candidate) && isDirectory(candidate)) return candidate;
    if (dirname(dir) === dir) return null;
  }
}

function isDirectory(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false;
}

function entryNames(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return []; // a file where a folder was expected, or unreadable: no packages there
  }
}

/** Package folders directly in `nodeModules` (`name` and `@scope/name`), sorted by name. */
function packageFolders(nodeModules: string): { name: string; directory: string }[] {
  const found: { name: string; directory: string }[] = [];
  for (const entry of entryNames(nodeModules)) {
    if (entry.startsWith(".")) continue;
    const path = `${nodeModules}/${entry}`;
    if (entry.startsWith("@")) {
      for (const scoped of entryNames(path)) {
        if (!scoped.startsWith(".")) {
          found.push({ name: `${entry}/${scoped}`, directory: `${path}/${scoped}` });
        }
      }
    } else {
      found.push({ name: entry, directory: path });
    }
  }
  return found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
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
  if (!existsSync(fragment) || isDirectory(fragment)) {
    throw new LauncherError(
      `plugin ${label} (${folder.directory}): its config fragment ${config} is missing; reinstall or uninstall the package, or run with --no-plugin`,
    );
  }
  return { name: label, directory: folder.directory, config: fragment };
}

/**
 * Plugins installed in the `node_modules` nearest to the working directory and in the
 * launcher's own, in a stable order (by package name; a package in both counts once, the
 * working directory's copy first).
 */
export function discoverNpmPlugins(cwd: string, launcherPackage: string): NpmPlugin[] {
  const places = [nearestNodeModules(cwd), nearestNodeModules(dirname(launcherPackage))];
  const seen = new Set<string>();
  const byName = new Map<string, NpmPlugin>();
  for (const place of places) {
    if (place === null) continue;
    const real = realPath(place);
    if (seen.has(real)) continue;
    seen.add(real);
    for (const folder of packageFolders(place)) {
      if (byName.has(folder.name)) continue;
      const plugin = readPlugin(folder);
      if (plugin !== null) byName.set(folder.name, plugin);
    }
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
