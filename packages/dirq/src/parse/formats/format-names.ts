/**
 * The built-in formats a table can read its files with (`format = "..."`, `--parse`), and which
 * format `auto` picks for a file by its extension.
 */

export const FORMAT_NAMES = [
  "json",
  "jsonl",
  "csv",
  "tsv",
  "yaml",
  "toml",
  "markdown",
  "auto",
] as const;

export type FormatName = (typeof FORMAT_NAMES)[number];

/** A format that reads one file: every name but `auto`. */
export type FileFormat = Exclude<FormatName, "auto">;

export function isFormatName(name: string): name is FormatName {
  return (FORMAT_NAMES as readonly string[]).includes(name);
}

/** Formats whose documents can hold the rows deeper inside (`each = "a.b"`). */
export const NESTED_FORMATS: ReadonlySet<FileFormat> = new Set(["json", "jsonl", "yaml", "toml"]);

const BY_EXTENSION: Readonly<Record<string, FileFormat>> = {
  json: "json",
  jsonl: "jsonl",
  ndjson: "jsonl",
  csv: "csv",
  tsv: "tsv",
  yaml: "yaml",
  yml: "yaml",
  toml: "toml",
  md: "markdown",
  markdown: "markdown",
};

/** A file's extension, lower-cased, without the dot; `null` when it has none (`.env`, `Makefile`). */
export function extensionOf(path: string): string | null {
  const name = path.slice(path.lastIndexOf("/") + 1);
  const dot = name.lastIndexOf(".");
  return dot <= 0 ? null : name.slice(dot + 1).toLowerCase();
}

/** The format `auto` reads a file with (extension compared without case), or `null`. */
export function formatOfPath(path: string): FileFormat | null {
  const extension = extensionOf(path);
  return extension === null ? null : (BY_EXTENSION[extension] ?? null);
}

/** The list for messages: `json, jsonl, csv, ...`. */
export const FORMAT_LIST = FORMAT_NAMES.join(", ");

/** What `auto` recognizes, for its error message. */
export const AUTO_EXTENSIONS = Object.keys(BY_EXTENSION)
  .map((extension) => `.${extension}`)
  .join(", ");
