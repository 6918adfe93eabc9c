import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parse as parseToml, TomlError } from "smol-toml";
import { DirqError } from "../errors.js";
import { checkDdl } from "./ddl-check.js";
import { validateConfigFile } from "./schema.js";
import type { DirqConfig, FunctionConfig } from "./types.js";

export type { DirqConfig, ExtensionConfig, FunctionConfig, TableConfig } from "./types.js";
export { EMPTY_CONFIG } from "./types.js";

function configError(message: string, cause?: unknown): DirqError {
  return new DirqError("CONFIG_INVALID", message, { cause });
}

function readConfigText(file: string, path: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw configError(`config file ${path} not found`, error);
    if (code === "EISDIR") throw configError(`config file ${path} is a directory`, error);
    throw configError(`config file ${path} cannot be read: ${(error as Error).message}`, error);
  }
}

function parseTomlFile(path: string, text: string): unknown {
  try {
    return parseToml(text);
  } catch (error) {
    if (error instanceof TomlError) {
      const reason = error.message.split("\n")[0]?.replace(/^Invalid TOML document: /, "");
      throw configError(`${path}:${error.line}:${error.column}: invalid TOML: ${reason}`, error);
    }
    throw error;
  }
}

/**
 * The `[[dirq.function]]` entries of these config files, read without validating the rest of
 * a file: enough to start their workers before the files are validated and the index is made
 * (`prestartWorkersFor`). An entry that is not well-formed is left out (`loadConfigs` reports
 * it); a file that cannot be read or parsed gives none.
 */
export function declaredFunctions(configPaths: readonly string[], cwd: string): FunctionConfig[] {
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
 * Loads and validates one config file; a relative `path` resolves against `cwd`. Errors name
 * the file as given and the key path.
 */
export function loadConfigFile(path: string, cwd: string = process.cwd()): DirqConfig {
  const text = readConfigText(resolve(cwd, path), path);
  const data = parseTomlFile(path, text);
  const result = validateConfigFile(data);
  if (!result.ok) {
    throw configError(result.problems.map((line) => `${path}: ${line}`).join("\n"));
  }
  const baseDir = dirname(resolve(cwd, path));
  const file = result.value;
  (file.table ?? []).forEach((table, i) => {
    const problem = table.ddl === undefined ? null : checkDdl(table.ddl);
    if (problem !== null) throw configError(`${path}: table[${i}].ddl: ${problem}`);
  });
  return {
    ignore: file.dirq?.ignore ?? [],
    tables: (file.table ?? []).map((table, i) => ({
      name: table.name,
      glob: table.glob.replace(/^\.\//, ""),
      schema: table.schema ? Object.entries(table.schema) : null,
      onFile: table["on-file"] ?? "",
      format: table.format ?? null,
      each: table.each ?? null,
      columns: table.columns ? Object.entries(table.columns) : null,
      strict: table.strict ?? false,
      baseDir,
      ddl: table.ddl ?? null,
      timeout: (table.timeout as number | undefined) ?? null,
      origin: `${path}: table[${i}]`,
    })),
    extensions: (file.dirq?.extension ?? []).map((extension, i) => ({
      path: resolve(baseDir, extension.path),
      entrypoint: extension.entrypoint ?? null,
      origin: `${path}: dirq.extension[${i}]`,
    })),
    functions: (file.dirq?.function ?? []).map((fn, i) => ({
      name: fn.name,
      command: fn.command,
      baseDir,
      deterministic: fn.deterministic ?? false,
      origin: `${path}: dirq.function[${i}]`,
    })),
  };
}

function rejectDuplicates(kind: string, entries: { name: string; origin: string }[]): void {
  const seen = new Map<string, string>();
  for (const entry of entries) {
    const key = entry.name.toLowerCase();
    const first = seen.get(key);
    if (first !== undefined) {
      throw configError(
        `${entry.origin}.name: ${kind} '${entry.name}' is already defined at ${first}: give each ${kind} its own name`,
      );
    }
    seen.set(key, entry.origin);
  }
}

/** Loads every `-c` file and merges them in order. Never auto-loads anything. */
export function loadConfigs(paths: readonly string[], cwd: string = process.cwd()): DirqConfig {
  const merged: DirqConfig = { ignore: [], tables: [], extensions: [], functions: [] };
  for (const path of paths) {
    const config = loadConfigFile(path, cwd);
    merged.ignore.push(...config.ignore);
    merged.tables.push(...config.tables);
    merged.extensions.push(...config.extensions);
    merged.functions.push(...config.functions);
  }
  rejectDuplicates("table", merged.tables);
  rejectDuplicates("function", merged.functions);
  return merged;
}
