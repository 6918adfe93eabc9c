import { delimiter, join, resolve } from "node:path";
import type { TableConfig } from "../config/types.js";
import type { ExtensionSpec } from "../extensions/load-extensions.js";
import type { WorkerSpec } from "../functions/worker-process.js";
import { DirqError, isDirqError } from "../errors.js";
import { commandExtractor, DEFAULT_HOOK_TIME_LIMIT, type Extractor } from "../parse/extractor.js";
import type { HookTimeLimit } from "../parse/hook-timeout.js";
import { formatExtractor, isReaderExtractor } from "../parse/format-extractor.js";
import { parseHookCommand } from "../parse/hook-command.js";
import { needsShape, type RowShape, shapedExtractor, shapeText } from "../parse/row-shape.js";
import { parsePathTableName } from "../scan/path-selection.js";
import { preciseStat } from "../scan/tree-signature.js";
import {
  type CatalogStore,
  type CatalogTable,
  dropObject,
  schemaObjects,
  specText,
} from "./catalog-store.js";
import type { SqliteDatabase } from "./database.js";
import type { ParsedTableSpec } from "./parsed-tables.js";

/** A check of a config table's key failed: the message names the file and the key. */
function inConfig(table: TableConfig, key: string, error: DirqError): DirqError {
  return new DirqError("CONFIG_INVALID", `${table.origin}.${key}: ${error.message}`, {
    cause: error,
  });
}

/** A config table's hook time limit, and what its message says changes it. */
function tableTimeLimit(table: TableConfig): HookTimeLimit {
  if (table.timeout === null) {
    return {
      ...DEFAULT_HOOK_TIME_LIMIT,
      setBy: `the default: set timeout in ${table.origin}, 0 = none`,
    };
  }
  return { seconds: table.timeout, setBy: `timeout = ${table.timeout} in ${table.origin}` };
}

/** The parsed table a config `[[table]]` defines. Throws a `CONFIG_INVALID` naming the key. */
export function configTableSpec(table: TableConfig, root: string): ParsedTableSpec {
  let selection: ParsedTableSpec["selection"];
  try {
    selection = parsePathTableName(`./${table.glob}`, root);
  } catch (error) {
    if (!isDirqError(error)) throw error;
    if (error.code !== "PATH_NOT_FOUND") throw inConfig(table, "glob", error);
    // Nothing there yet: the watcher picks the files up if the folder appears later.
    selection = { kind: "tree", base: table.glob.replace(/\/+$/, "") };
  }
  let extractor: Extractor;
  try {
    extractor =
      table.extractor ??
      (table.format !== null
        ? formatExtractor(table.format, table.each)
        : commandExtractor(parseHookCommand(table.onFile, table.baseDir), tableTimeLimit(table)));
  } catch (error) {
    throw isDirqError(error) ? inConfig(table, "on-file", error) : error;
  }
  const shape: RowShape = {
    glob: table.glob,
    columns: table.columns ?? null,
    strict: table.strict ?? false,
    schema: table.schema,
    origin: table.origin,
  };
  const shaped = needsShape(shape);
  return {
    name: table.name,
    selection,
    extractor: shaped ? shapedExtractor(extractor, shape) : extractor,
    schema: table.schema,
    ddl: table.ddl,
    origin: table.origin,
    ...(shaped ? { shape: shapeText(shape) } : {}),
  };
}

/** The parsed table `--on-file` makes of a path-table a statement names. */
export function onFileSpec(
  path: string,
  selection: ParsedTableSpec["selection"],
  extractor: Extractor,
): ParsedTableSpec {
  // A glob's captures are columns beside the format's or the hook's.
  const shape: RowShape | null =
    selection?.kind === "glob"
      ? { glob: selection.pattern, columns: null, strict: false, schema: null, origin: path }
      : null;
  return {
    name: path,
    label: path,
    selection,
    extractor: shape !== null && needsShape(shape) ? shapedExtractor(extractor, shape) : extractor,
    schema: null,
    ddl: null,
    origin: isReaderExtractor(extractor) ? "--parse" : "--on-file",
  };
}

/** What a parsed table's definition reads besides its spec. */
export interface DefinitionContext {
  root: string;
  /** `--no-ignore` or not. */
  useGitignore: boolean;
  /** The user's ignore patterns (`[dirq] ignore`); never the cache's own files. */
  ignore: readonly string[];
  /** Extensions every connection loads: part of a table whose `ddl` may use them. */
  extensions: readonly ExtensionSpec[];
  /** Worker functions declared: part of a table whose `ddl` names them. */
  functions: readonly WorkerSpec[];
  /** The content hash of a file (see `CatalogStore.programHash`), `null` when unreadable. */
  contentHash: (absolute: string) => string | null;
}

/** The file a hook's program word names: relative to the root (the hook's cwd), else on PATH. */
function programFile(word: string, root: string): string | null {
  const inRoot = resolve(root, word);
  if (preciseStat(inRoot)?.isFile()) return inRoot;
  if (word.includes("/")) return null;
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, word);
    if (preciseStat(candidate)?.isFile()) return candidate;
  }
  return null;
}

/** Why each part of a definition moves, as the rebuild notice says it. */
const DEFINITION_PARTS: Record<string, string> = {
  selection: "its glob changed",
  shape: "its columns or strict changed",
  command: "how its files are parsed changed (its on-file command, format or each)",
  program: "its on-file program changed",
  schema: "its schema changed",
  ddl: "its ddl changed",
  ignore: "the ignore settings changed",
  extensions: "the extensions its ddl may use changed",
  functions: "the worker functions its ddl names changed",
};

/**
 * The catalog's definition of a parsed table: each part's text (specText), as JSON, so that a
 * change of any part rebuilds it and the notice can say which. The program (a hook's script,
 * or its executable) counts by content: a `touch` or a reinstall with the same bytes keeps the
 * table; its other arguments (a `--log` file) never count.
 */
export function parsedSpecText(spec: ParsedTableSpec, context: DefinitionContext): string {
  const programs = spec.extractor.inputs.map((word) => {
    const file = programFile(word, context.root);
    return file === null ? word : `${word}=${context.contentHash(file) ?? "unreadable"}`;
  });
  const ddl = spec.ddl ?? "";
  const named = (name: string) =>
    new RegExp(`(^|[^\\w$])${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\s*\\(`, "i").test(ddl);
  const parts: Record<string, unknown> = {
    selection: spec.selection,
    // Only a table with captures, columns or strict has it: other tables' texts stay as they were.
    ...(spec.shape === undefined ? {} : { shape: spec.shape }),
    command: spec.extractor.id,
    program: programs,
    schema: spec.schema,
    ddl: spec.ddl,
    ignore: { useGitignore: context.useGitignore, ignore: context.ignore },
    extensions:
      spec.ddl === null
        ? []
        : context.extensions.map((extension) => ({
            entrypoint: extension.entrypoint,
            content: context.contentHash(extension.path) ?? extension.path,
          })),
    functions: context.functions
      .filter((fn) => named(fn.name))
      .map((fn) => ({ name: fn.name, argv: fn.argv, deterministic: fn.deterministic })),
  };
  return JSON.stringify(
    Object.fromEntries(Object.entries(parts).map(([key, value]) => [key, specText(value)])),
  );
}

/** Why a table stored with definition `stored` is rebuilt for definition `expected`. */
export function definitionChange(stored: string, expected: string): string {
  let before: Record<string, string>;
  let after: Record<string, string>;
  try {
    before = JSON.parse(stored) as Record<string, string>;
    after = JSON.parse(expected) as Record<string, string>;
  } catch {
    return "its definition changed";
  }
  for (const [part, reason] of Object.entries(DEFINITION_PARTS)) {
    if (before[part] === after[part]) continue;
    if (part !== "command") return reason;
    // The extractor's id: `command:<text>` for a hook, `format:<name>[ each:<path>]` for a format.
    const kinds = [before[part], after[part]].map((id) =>
      /format:/.test(id ?? "") ? "format" : "command",
    );
    if (kinds[0] === "command" && kinds[1] === "command") return "its on-file command changed";
    if (kinds[0] === "format" && kinds[1] === "format") return "its format or each changed";
    return reason;
  }
  return "its definition changed";
}

/**
 * Opening a persisted index: keeps the tables `keep` accepts (those this index would build the
 * same way) and drops every other object, so a statement never reads rows another
 * configuration made.
 */
export function sweepCatalog(
  db: SqliteDatabase,
  store: CatalogStore,
  keep: (table: CatalogTable) => boolean,
): void {
  const kept: CatalogTable[] = [];
  db.transaction(() => {
    for (const table of store.tables()) {
      if (keep(table)) kept.push(table);
      else store.dropTable(table);
    }
    const owned = new Set(
      kept.flatMap((table) => [table.name, ...table.objects].map((n) => n.toLowerCase())),
    );
    for (const name of schemaObjects(db)) {
      if (!owned.has(name.toLowerCase())) dropObject(db, name);
    }
  })();
}
