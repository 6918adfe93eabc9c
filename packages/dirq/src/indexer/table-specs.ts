import { resolve } from "node:path";
import type { TableConfig } from "../config/types.js";
import { DirqError, isDirqError } from "../errors.js";
import { commandExtractor, type Extractor } from "../parse/extractor.js";
import { parseHookCommand } from "../parse/hook-command.js";
import { parsePathTableName } from "../scan/path-selection.js";
import { preciseStat } from "../scan/tree-signature.js";
import { type Catalog, type CatalogTable, dropObject, schemaObjects, specHash } from "./catalog.js";
import type { SqliteDatabase } from "./database.js";
import type { ParsedTableSpec } from "./parsed-tables.js";

/** A check of a config table's key failed: the message names the file and the key. */
function inConfig(table: TableConfig, key: string, error: DirqError): DirqError {
  return new DirqError("CONFIG_INVALID", `${table.origin}.${key}: ${error.message}`, {
    cause: error,
  });
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
    extractor = table.extractor ?? commandExtractor(parseHookCommand(table.onFile, table.baseDir));
  } catch (error) {
    throw isDirqError(error) ? inConfig(table, "on-file", error) : error;
  }
  return {
    name: table.name,
    selection,
    extractor,
    schema: table.schema,
    ddl: table.ddl,
    origin: table.origin,
  };
}

/** The parsed table `--on-file` makes of a path-table a statement names. */
export function onFileSpec(
  path: string,
  selection: ParsedTableSpec["selection"],
  extractor: Extractor,
): ParsedTableSpec {
  return {
    name: path,
    label: path,
    selection,
    extractor,
    schema: null,
    ddl: null,
    origin: "--on-file",
  };
}

/** The catalog's definition of a parsed table: a change of any part rebuilds it. */
export function parsedSpecHash(
  spec: ParsedTableSpec,
  root: string,
  rules: { useGitignore: boolean; extraIgnores?: readonly string[] },
): string {
  return specHash({
    kind: "parsed",
    selection: spec.selection,
    extractor: spec.extractor.id,
    // Editing the hook's script (or upgrading its program) re-parses the table's files.
    inputs: spec.extractor.inputs.map((word) => {
      const stats = preciseStat(resolve(root, word));
      return stats?.isFile() ? `${word}=${stats.size}:${stats.mtimeNs}` : word;
    }),
    schema: spec.schema,
    ddl: spec.ddl,
    useGitignore: rules.useGitignore,
    ignore: rules.extraIgnores,
  });
}

/**
 * Opening a persisted index: keeps the tables `keep` accepts (those this index would build the
 * same way) and drops every other object, so a statement never reads rows another
 * configuration made.
 */
export function sweepCatalog(
  db: SqliteDatabase,
  catalog: Catalog,
  keep: (table: CatalogTable) => boolean,
): void {
  const kept: CatalogTable[] = [];
  db.transaction(() => {
    for (const table of catalog.tables()) {
      if (keep(table)) kept.push(table);
      else catalog.dropTable(table);
    }
    const owned = new Set(
      kept.flatMap((table) => [table.name, ...table.objects].map((n) => n.toLowerCase())),
    );
    for (const name of schemaObjects(db)) {
      if (!owned.has(name.toLowerCase())) dropObject(db, name);
    }
  })();
}
