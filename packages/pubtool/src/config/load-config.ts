import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { ancestors, findRepositoryRoot } from "../repository.js";
import { parse as parseToml } from "smol-toml";
import { PubtoolError } from "../errors.js";
import { configSchema, type PackageEntry } from "./schema.js";

/** The default config file name, looked up in the working directory. */
export const CONFIG_FILE = "pubtool.toml";

/** A validated config: its file, the folder paths resolve against, and the packages. */
export interface Config {
  file: string;
  root: string;
  packages: PackageEntry[];
}

/** Formats a zod issue path (`["package", 0, "trust_policy", "workflow"]`) for a message. */
function describePath(path: readonly PropertyKey[], data: unknown): string {
  const parts: string[] = [];
  let where = "";
  if (path[0] === "package" && typeof path[1] === "number") {
    const entry = (data as { package?: Record<string, unknown>[] }).package?.[path[1]];
    const name = typeof entry?.name === "string" ? ` "${entry.name}"` : "";
    where = `package #${path[1] + 1}${name}`;
    path = path.slice(2);
  }
  for (const part of path) parts.push(typeof part === "number" ? `[${part}]` : String(part));
  const key = parts.join(".").replaceAll(".[", "[");
  if (where && key) return `${where}: key ${key}`;
  return where || (key ? `key ${key}` : "top level");
}

/** Parses and validates `text` as the contents of `file`. */
export function parseConfig(text: string, file: string, shown = file): Config {
  let data: unknown;
  try {
    data = parseToml(text);
  } catch (error) {
    const detail = error instanceof Error ? error.message.split("\n")[0] : String(error);
    throw new PubtoolError("CONFIG_INVALID", `${shown}: invalid TOML: ${detail}`);
  }
  const result = configSchema.safeParse(data);
  if (!result.success) {
    const messages = result.error.issues.map((issue) => {
      let path = issue.path;
      let message = issue.message;
      if (issue.code === "unrecognized_keys") {
        const keys = issue.keys;
        path = [...path, keys[0] ?? ""];
        message = `unknown key${keys.length > 1 ? "s" : ""} ${keys.join(", ")}`;
      } else if (issue.code === "invalid_type" && message.includes("received undefined")) {
        message = "is required";
      }
      return `${shown}: ${describePath(path, data)}: ${message}`;
    });
    throw new PubtoolError("CONFIG_INVALID", messages.join("\n"));
  }
  if (result.data.package.length === 0) {
    // A config with nothing to publish would make `publish` succeed having done nothing.
    throw new PubtoolError(
      "CONFIG_INVALID",
      `${shown}: declares no package; add a [[package]] entry with name, kind and path (see docs/config.md)`,
    );
  }
  const names = new Set<string>();
  for (const entry of result.data.package) {
    const id = `${entry.kind}:${entry.name}`;
    if (names.has(id)) {
      throw new PubtoolError(
        "CONFIG_INVALID",
        `${shown}: package "${entry.name}": declared twice for ${entry.kind}`,
      );
    }
    names.add(id);
  }
  return { file, root: dirname(file), packages: result.data.package };
}

/**
 * Loads the config. With an explicit `path` the file must exist; otherwise the nearest
 * `pubtool.toml` in `cwd` or a folder above it (up to the repository root) is used when present,
 * and `null` is returned when there is none.
 */
export function loadConfig(cwd: string, path?: string): Config | null {
  if (path !== undefined) {
    const file = resolve(cwd, path);
    if (!existsSync(file))
      throw new PubtoolError("CONFIG_NOT_FOUND", `${path}: no such config file`);
    return parseConfig(readFileSync(file, "utf8"), file, path);
  }
  // From a subfolder: the nearest pubtool.toml up to the repository root.
  const root = findRepositoryRoot(cwd);
  for (const dir of ancestors(cwd)) {
    const file = join(dir, CONFIG_FILE);
    if (existsSync(file)) {
      return parseConfig(readFileSync(file, "utf8"), file, relative(cwd, file) || CONFIG_FILE);
    }
    if (dir === root) break;
  }
  return null;
}

/** True when `selector` (`name` or `kind:name`) names `entry`. */
export function selects(selector: string, entry: PackageEntry): boolean {
  return selector === entry.name || selector === `${entry.kind}:${entry.name}`;
}

/**
 * The config restricted to the packages `selectors` name (`--package`), in the config's order;
 * all of them when `selectors` is empty. A selector that names no package is a usage error that
 * lists the packages there are, so a typo never publishes nothing and succeeds.
 */
export function selectPackages(config: Config, selectors: readonly string[], cwd: string): Config {
  if (selectors.length === 0) return config;
  const unknown = selectors.filter(
    (selector) => !config.packages.some((entry) => selects(selector, entry)),
  );
  if (unknown.length > 0) {
    const shown = relative(cwd, config.file) || CONFIG_FILE;
    const known = config.packages.map((entry) => entry.name).join(", ") || "none";
    throw new PubtoolError(
      "USAGE",
      `--package ${unknown.join(", ")}: no such package in ${shown} (it has: ${known})`,
    );
  }
  return {
    ...config,
    packages: config.packages.filter((entry) =>
      selectors.some((selector) => selects(selector, entry)),
    ),
  };
}

/** Like `loadConfig`, but a missing config is an error naming what to create. */
export function requireConfig(cwd: string, path?: string): Config {
  const config = loadConfig(cwd, path);
  if (config === null) {
    throw new PubtoolError(
      "CONFIG_NOT_FOUND",
      `no ${CONFIG_FILE} in ${cwd}. Create one with a [[package]] entry (see docs/config.md).`,
    );
  }
  return config;
}
