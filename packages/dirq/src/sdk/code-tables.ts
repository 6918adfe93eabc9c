import { validateConfigFile } from "../config/schema.js";
import type { DirqConfig, TableConfig } from "../config/types.js";
import { DirqError } from "../errors.js";
import { type ExtractFunction, functionExtractor } from "../parse/extractor.js";
import type { FormatName } from "../parse/formats/format-names.js";

/**
 * A named table defined in code: the keys of a config file's `[[table]]` (`onFile` is its
 * `on-file`), or an in-process `extract` function instead of a hook command.
 */
export interface TableDefinition {
  /** An SQL identifier, unique across all tables. */
  name: TableConfig["name"];
  /** The files, as a glob relative to the root (`posts/**\/*.json`). */
  glob: TableConfig["glob"];
  /** Column name → declared type, in order; without it columns are inferred from the rows. */
  schema?: Readonly<Record<string, string>>;
  /** SQL run once after the table is created (indexes, views, triggers). */
  ddl?: string;
  /**
   * Column → where its value comes from: a dot path into each row (`"metadata.author.name"`,
   * `"items.0.name"`) or the name of a `{capture}` of the glob. The whole projection: columns
   * it does not list are NULL. As the config's `[table.columns]`.
   */
  columns?: Readonly<Record<string, string>>;
  /** A row whose keys differ from `schema`'s is its file's error (needs `schema`). */
  strict?: boolean;
  /**
   * A built-in format dirq reads each file with, in-process: `json`, `jsonl`, `csv`, `tsv`,
   * `yaml`, `toml`, `markdown` or `auto` (by extension). Give one of `format`, `onFile`, `extract`.
   */
  format?: FormatName;
  /** With `format`: where the rows are inside each file (`"data.items"`), as the config's `each`. */
  each?: string;
  /** A hook command per file, as in the config's `on-file`. Give one of `format`, `onFile`, `extract`. */
  onFile?: TableConfig["onFile"];
  /**
   * With `onFile`: the hook's time limit in seconds (default 60; 0 = none), as the config's
   * `timeout`.
   */
  timeout?: number;
  /** Turns one file into rows, in-process (sync or async). Give one of `format`, `onFile`, `extract`. */
  extract?: ExtractFunction;
  /**
   * With `extract`: how many files' calls may be in flight at once (default 16). More helps an
   * async function whose answers come from elsewhere (another process, the network).
   */
  concurrency?: number;
}

const KEYS = new Set([
  "name",
  "glob",
  "schema",
  "ddl",
  "columns",
  "strict",
  "format",
  "each",
  "onFile",
  "extract",
  "concurrency",
  "timeout",
]);

function invalid(message: string): DirqError {
  return new DirqError("CONFIG_INVALID", message);
}

/** Checks one definition with the config file's own rules; messages say `tables[i].<key>`. */
function checkDefinition(definition: TableDefinition, origin: string): void {
  if (definition === null || typeof definition !== "object") {
    throw invalid(`${origin}: expected a table definition object`);
  }
  const unknown = Object.keys(definition).filter((key) => !KEYS.has(key));
  if (unknown.length > 0) {
    const keys = unknown.map((key) => `${origin}.${key}`).join(", ");
    throw invalid(`${keys}: unknown key${unknown.length > 1 ? "s" : ""}`);
  }
  const hasCommand = definition.onFile !== undefined;
  const hasFunction = definition.extract !== undefined;
  const hasFormat = definition.format !== undefined;
  if (Number(hasCommand) + Number(hasFunction) + Number(hasFormat) !== 1) {
    throw invalid(
      `${origin}: give exactly one of format (a built-in format), onFile (a hook command) or extract (a function)`,
    );
  }
  if (hasFunction && typeof definition.extract !== "function") {
    throw invalid(`${origin}.extract: expected a function (path, content) => rows`);
  }
  const { concurrency } = definition;
  if (concurrency !== undefined) {
    if (!hasFunction) throw invalid(`${origin}.concurrency: only a table with extract takes it`);
    if (!Number.isSafeInteger(concurrency) || concurrency < 1) {
      throw invalid(`${origin}.concurrency: expected a whole number of calls, 1 or more`);
    }
  }
  if (definition.timeout !== undefined && !hasCommand) {
    throw invalid(`${origin}.timeout: only a table with onFile takes it`);
  }
  const asWritten = {
    name: definition.name,
    glob: definition.glob,
    schema: definition.schema,
    columns: definition.columns,
    strict: definition.strict,
    ddl: definition.ddl,
    // The config schema requires a command or a format; an extract table has a function.
    "on-file": hasCommand ? definition.onFile : hasFunction ? "extract" : undefined,
    format: definition.format,
    each: definition.each,
    timeout: definition.timeout,
  };
  const result = validateConfigFile({ table: [asWritten] });
  if (!result.ok) {
    const lines = result.problems.map((line) =>
      line.replace(/^table\[0\](\.on-file)?/, (_, onFile) => `${origin}${onFile ? ".onFile" : ""}`),
    );
    throw invalid(lines.join("\n"));
  }
}

/**
 * Tables defined in code as the engine takes them. Relative hook programs resolve against
 * `baseDir` (the root), as a config file's resolve against its folder.
 */
export function codeTables(
  definitions: readonly TableDefinition[],
  baseDir: string,
): TableConfig[] {
  return definitions.map((definition, i) => {
    const origin = `tables[${i}]`;
    checkDefinition(definition, origin);
    const extract = definition.extract;
    return {
      name: definition.name,
      glob: definition.glob.replace(/^\.\//, ""),
      schema: definition.schema ? Object.entries(definition.schema) : null,
      onFile: definition.onFile ?? "",
      format: definition.format ?? null,
      each: definition.each ?? null,
      columns: definition.columns ? Object.entries(definition.columns) : null,
      strict: definition.strict ?? false,
      baseDir,
      ddl: definition.ddl ?? null,
      timeout: definition.timeout ?? null,
      origin,
      extractor: extract
        ? functionExtractor(definition.name, extract, definition.concurrency)
        : undefined,
    };
  });
}

/** Config files' tables first, then the code's; two tables with one name are an error. */
export function withCodeTables(config: DirqConfig, tables: readonly TableConfig[]): DirqConfig {
  const merged = { ...config, tables: [...config.tables, ...tables] };
  const seen = new Map<string, string>();
  for (const table of merged.tables) {
    const first = seen.get(table.name.toLowerCase());
    if (first !== undefined) {
      throw invalid(
        `${table.origin}.name: table '${table.name}' is already defined at ${first}: give each table its own name`,
      );
    }
    seen.set(table.name.toLowerCase(), table.origin);
  }
  return merged;
}
