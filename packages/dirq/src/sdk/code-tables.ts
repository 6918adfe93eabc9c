import { validateConfigFile } from "../config/schema.js";
import type { DirqConfig, TableConfig } from "../config/types.js";
import { DirqError } from "../errors.js";
import { type ExtractFunction, functionExtractor } from "../parse/extractor.js";

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
  /** A hook command per file, as in the config's `on-file`. Give this or `extract`. */
  onFile?: TableConfig["onFile"];
  /** Turns one file into rows, in-process (sync or async). Give this or `onFile`. */
  extract?: ExtractFunction;
}

const KEYS = new Set(["name", "glob", "schema", "ddl", "onFile", "extract"]);

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
  if (hasCommand === hasFunction) {
    throw invalid(`${origin}: give exactly one of onFile (a hook command) or extract (a function)`);
  }
  if (hasFunction && typeof definition.extract !== "function") {
    throw invalid(`${origin}.extract: expected a function (path, content) => rows`);
  }
  const asWritten = {
    name: definition.name,
    glob: definition.glob,
    schema: definition.schema,
    ddl: definition.ddl,
    // The config schema requires a command; an extract table has a function in its place.
    "on-file": hasCommand ? definition.onFile : "extract",
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
      baseDir,
      ddl: definition.ddl ?? null,
      origin,
      extractor: extract ? functionExtractor(definition.name, extract) : undefined,
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
