import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parse as parseToml } from "smol-toml";
import type { FunctionConfig } from "../config/types.js";
import { prestartWorker } from "./worker-process.js";
import { workerSpec } from "./worker-specs.js";

/** `name(` as a call in SQL text, any case, not the tail of a longer name. */
function callPattern(name: string): RegExp {
  // Names are SQL identifiers ([A-Za-z_][A-Za-z0-9_]*): nothing to escape.
  return new RegExp(`(?<![\\w$])${name}\\s*\\(`, "i");
}

const SQL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Starts, ahead of their first call, the workers of the functions `sql` appears to call, so
 * their start-up (a Node worker takes about as long to start as dirq itself) overlaps dirq's
 * own: loading its modules, building tables, the first pass over the statement. A plain text
 * match: a name inside a string or comment starts a worker that is then never called (and is
 * stopped at exit); a call only a view makes starts on its first call as usual. Never throws:
 * a command that cannot be split or started fails later, on its first call, as it always does.
 */
export function prestartWorkersFor(sql: string, functions: readonly FunctionConfig[]): void {
  for (const fn of functions) {
    if (!SQL_NAME.test(fn.name) || !callPattern(fn.name).test(sql)) continue;
    try {
      prestartWorker(workerSpec(fn));
    } catch {
      // Reported by the first call.
    }
  }
}

/**
 * The `[[dirq.function]]` entries of the config files named on the command line, read without
 * validating the rest of the file: enough to start their workers before the launcher looks for
 * plugins and the config loader is even loaded. An entry that is not well-formed is left out
 * (the real config load reports it); a file that cannot be read or parsed gives none.
 */
function functionsIn(configPaths: readonly string[], cwd: string): FunctionConfig[] {
  const found: FunctionConfig[] = [];
  for (const path of configPaths) {
    const file = resolve(cwd, path);
    let entries: unknown;
    try {
      const data = parseToml(readFileSync(file, "utf8")) as { dirq?: { function?: unknown } };
      entries = data.dirq?.function;
    } catch {
      continue;
    }
    if (!Array.isArray(entries)) continue;
    entries.forEach((entry: unknown, i) => {
      const { name, command } = (entry ?? {}) as { name?: unknown; command?: unknown };
      if (typeof name !== "string" || typeof command !== "string") return;
      const origin = `${path}: dirq.function[${i}]`;
      found.push({ name, command, baseDir: dirname(file), deterministic: false, origin });
    });
  }
  return found;
}

/**
 * `prestartWorkersFor` for a one-shot query straight from its command line: the workers start
 * while dirq is still starting (plugin discovery, loading the config loader and the engine).
 * The validated config later takes them (same command, same folder); a worker started here for
 * a config that then turns out to be invalid is stopped at exit without a request.
 */
export function prestartWorkersFromConfigFiles(
  sql: string,
  configPaths: readonly string[],
  cwd: string,
): void {
  prestartWorkersFor(sql, functionsIn(configPaths, cwd));
}
