// The version of dirq in each place that states it. The npm package, the Python launcher and
// the Rust crate are one release: they must always agree (DECISIONS.md, "Plugins and
// launchers").
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** `key = "value"` of a TOML table (`[package]`), for the plain manifests kept here. */
export function tomlTableString(text, table, key) {
  let inTable = false;
  for (const line of text.split(/\r?\n/)) {
    const header = /^\s*\[([^\]]+)\]\s*(#.*)?$/.exec(line);
    if (header) {
      inTable = header[1].trim() === table;
      continue;
    }
    const pair = new RegExp(`^\\s*${key}\\s*=\\s*"([^"]*)"`).exec(line);
    if (inTable && pair) return pair[1];
  }
  return undefined;
}

/** Where each version is written (a path relative to the repository) and what it says. */
export function readVersions(repo) {
  const read = (path) => readFileSync(join(repo, path), "utf8");
  const launcherInit = "python/src/dirq_launcher/__init__.py";
  return {
    "packages/dirq/package.json": JSON.parse(read("packages/dirq/package.json")).version,
    "python/pyproject.toml": tomlTableString(read("python/pyproject.toml"), "project", "version"),
    [launcherInit]: /^__version__\s*=\s*"([^"]+)"/m.exec(read(launcherInit))?.[1],
    "rust/Cargo.toml": tomlTableString(read("rust/Cargo.toml"), "package", "version"),
  };
}
