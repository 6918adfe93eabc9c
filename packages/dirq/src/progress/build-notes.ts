import type { EmptyPathTable } from "../scan/empty-selection.js";
import type { SkippedPath } from "../scan/walk.js";

/**
 * What a statement's build tells on stderr besides progress: the files it skipped, and the
 * path-tables that list no file. Lines without the `dirq: ` prefix and without escaping (each
 * client escapes as it prints).
 */

/** Files of one table and extension that no built-in format reads. */
interface NoFormatGroup {
  table: string;
  extension: string | null;
  paths: string[];
}

function noFormatLine(group: NoFormatGroup): string {
  const { table, extension, paths } = group;
  const kind = extension === null ? "files without an extension" : `.${extension} files`;
  const reads = extension === null ? "a file without an extension" : `.${extension} files`;
  const pathTable = table.startsWith(".");
  const subject =
    paths.length === 1
      ? (paths[0] as string)
      : `${paths.length} ${kind} ${pathTable ? `under '${table}'` : `of table ${table}`}`;
  const them = paths.length === 1 ? "it" : "them";
  const hint = pathTable
    ? `Use --on-file or a [[table]] with an on-file hook to read ${them}`
    : `Narrow the table's glob, or read ${them} with an on-file hook`;
  return `skipped ${subject}: no built-in format reads ${reads}. ${hint}`;
}

/**
 * One line per skipped file, `skipped <path>: <reason>`, except files that format `auto` has
 * no format for (`SkippedPath.noFormat`): one line per table and extension, with their count,
 * where the first of them stood.
 */
export function skippedLines(skipped: readonly SkippedPath[]): string[] {
  const lines: (string | NoFormatGroup)[] = [];
  const groups = new Map<string, NoFormatGroup>();
  for (const file of skipped) {
    if (file.noFormat === undefined) {
      lines.push(`skipped ${file.path}: ${file.reason}`);
      continue;
    }
    const { table, extension } = file.noFormat;
    const key = JSON.stringify([table, extension]);
    const group = groups.get(key);
    if (group !== undefined) {
      group.paths.push(file.path);
      continue;
    }
    const created = { table, extension, paths: [file.path] };
    groups.set(key, created);
    lines.push(created);
  }
  return lines.map((line) => (typeof line === "string" ? line : noFormatLine(line)));
}

/** `path-table './x/*.json' is empty: <why>`. */
export function emptyTableLine(empty: EmptyPathTable): string {
  return `path-table '${empty.table}' is empty: ${empty.reason}`;
}
