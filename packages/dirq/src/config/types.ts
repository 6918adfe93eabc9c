/** The merged configuration, as the engine uses it (no parsing or validation here). */
import type { Extractor } from "../parse/extractor.js";
import type { FormatName } from "../parse/formats/format-names.js";

/** A `[[table]]` ready to use: paths resolved, its origin kept for messages. */
export interface TableConfig {
  name: string;
  glob: string;
  /** Column name → declared type, in order; `null` infers columns from the hook output. */
  schema: [string, string][] | null;
  /** The parser command (`on-file`); empty when the table has a `format` or an extractor. */
  onFile: string;
  /** A built-in format dirq reads the files with (`format`), else `null`. */
  format: FormatName | null;
  /** Where the rows are inside each file (`each = "a.b"`), else `null`. */
  each: string | null;
  /** Column → dot path into the row or capture name (`[table.columns]`), in order; the whole projection. */
  columns?: [string, string][] | null;
  /** A row whose keys differ from the schema's is its file's error (`strict = true`). */
  strict?: boolean;
  /** Folder a relative hook program resolves against (the config file's folder). */
  baseDir: string;
  ddl: string | null;
  /** The hook's time limit in seconds (`timeout`; 0: none); `null`: the default. */
  timeout: number | null;
  /** `config.toml: table[1]`, for messages. */
  origin: string;
  /**
   * Produces the rows instead of `onFile` (a table defined in code with an `extract` function;
   * never set by a config file).
   */
  extractor?: Extractor;
}

export interface ExtensionConfig {
  path: string;
  entrypoint: string | null;
  origin: string;
}

export interface FunctionConfig {
  name: string;
  command: string;
  baseDir: string;
  deterministic: boolean;
  origin: string;
}

/** Every `-c` file merged in argument order. */
export interface DirqConfig {
  ignore: string[];
  tables: TableConfig[];
  extensions: ExtensionConfig[];
  functions: FunctionConfig[];
}

export const EMPTY_CONFIG: DirqConfig = { ignore: [], tables: [], extensions: [], functions: [] };
