import { statSync, writeFileSync } from "node:fs";
import { relative, resolve, sep } from "node:path";
import { DirqError } from "../errors.js";
import { type FileFormat, formatOfPath } from "../parse/formats/format-names.js";
import { readFileRows } from "../parse/formats/read-file-rows.js";
import type { HookRow } from "../parse/hook-rows.js";
import { parsePathTableName } from "../scan/path-selection.js";
import { SelectionWalker } from "../scan/walk.js";
import { isWellFormed } from "../parse/large-text.js";
import { INTERNAL_PREFIX } from "../shared/reserved-names.js";
import { tomlKey, tomlString } from "./toml-text.js";

/**
 * `dirq init`: a starter `.dirq.toml` for the files found under the root. A bounded walk (the
 * index's own, ignore rules and all) counts the files each built-in format reads; the most
 * common kind gets a `[[table]]` with a glob over the folder they are in, its `format`, and a
 * `schema` taken from a sample of their rows (read by the format's own reader, so the types are
 * the ones the table will hold). A commented `on-file` table shows what to do for files no
 * format reads. With no such file, the table reads `**\/*.json` and its schema is an example.
 */

/** The starter table's name when nothing better is found. */
export const STARTER_TABLE = "records";

/** Files looked at, at most: `init` answers at once, also at the top of a huge tree. */
const MAX_WALKED = 20_000;
/** Files of the chosen kind read for the schema, at most, and rows taken from them. */
const MAX_SAMPLED_FILES = 20;
const MAX_SAMPLED_ROWS = 200;
/** One-document files larger than this are not read for the sample (they are read whole). */
const MAX_SAMPLED_BYTES = 16 << 20;
/** A schema wider than this is left to inference: one TOML line would be unreadable. */
const MAX_SCHEMA_COLUMNS = 48;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * SQLite's keywords (sqlite.org/lang_keywords.html): a table named after one would need quoting
 * in every statement (`SELECT * FROM order` is a syntax error), so a folder named so is not a
 * table name.
 */
const SQL_KEYWORDS = new Set(
  `ABORT ACTION ADD AFTER ALL ALTER ALWAYS ANALYZE AND AS ASC ATTACH AUTOINCREMENT BEFORE BEGIN
  BETWEEN BY CASCADE CASE CAST CHECK COLLATE COLUMN COMMIT CONFLICT CONSTRAINT CREATE CROSS
  CURRENT CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP DATABASE DEFAULT DEFERRABLE DEFERRED DELETE
  DESC DETACH DISTINCT DO DROP EACH ELSE END ESCAPE EXCEPT EXCLUDE EXCLUSIVE EXISTS EXPLAIN FAIL
  FILTER FIRST FOLLOWING FOR FOREIGN FROM FULL GENERATED GLOB GROUP GROUPS HAVING IF IGNORE
  IMMEDIATE IN INDEX INDEXED INITIALLY INNER INSERT INSTEAD INTERSECT INTO IS ISNULL JOIN KEY LAST
  LEFT LIKE LIMIT MATCH MATERIALIZED NATURAL NO NOT NOTHING NOTNULL NULL NULLS OF OFFSET ON OR
  ORDER OTHERS OUTER OVER PARTITION PLAN PRAGMA PRECEDING PRIMARY QUERY RAISE RANGE RECURSIVE
  REFERENCES REGEXP REINDEX RELEASE RENAME REPLACE RESTRICT RETURNING RIGHT ROLLBACK ROW ROWS
  SAVEPOINT SELECT SET TABLE TEMP TEMPORARY THEN TIES TO TRANSACTION TRIGGER UNBOUNDED UNION
  UNIQUE UPDATE USING VACUUM VALUES VIEW VIRTUAL WHEN WHERE WINDOW WITH WITHOUT`.split(/\s+/),
);

/** What one format is called in comments, and what a row is in it. */
const KINDS: Readonly<Record<FileFormat, { label: string; rows: string[] }>> = {
  json: {
    label: "JSON",
    rows: ["# An array of objects is one row per object; an object is one row."],
  },
  jsonl: {
    label: "JSON Lines",
    rows: ["# One row per line, each line an object; blank lines are skipped."],
  },
  csv: {
    label: "CSV",
    rows: [
      "# The first record is the header; one row per record after it. A field that is a number",
      "# is an INTEGER or REAL, an empty one NULL, anything else TEXT as written.",
    ],
  },
  tsv: {
    label: "TSV",
    rows: [
      "# The first record is the header; one row per record after it. A field that is a number",
      "# is an INTEGER or REAL, an empty one NULL, anything else TEXT as written.",
    ],
  },
  yaml: {
    label: "YAML",
    rows: [
      "# A list of mappings is one row per mapping; a mapping is one row; several documents",
      "# (--- between them) give their rows in turn.",
    ],
  },
  toml: {
    label: "TOML",
    rows: ["# Each file is one row: its top-level keys are the columns."],
  },
  markdown: {
    label: "Markdown",
    rows: [
      "# Each file is one row: the front matter's keys (YAML between --- lines or TOML between",
      "# +++ lines, at the top) are columns, and body holds the text after it.",
    ],
  },
};

/** The table name when the files' folder gives none. */
function defaultName(format: FileFormat): string {
  return format === "markdown" ? "pages" : STARTER_TABLE;
}

/** What the walk found: the files each format reads, and how many other files per extension. */
interface Found {
  byFormat: Map<FileFormat, string[]>;
  others: Map<string, number>;
  /** The walk stopped at `MAX_WALKED`: there may be more files than these. */
  truncated: boolean;
}

/** A name a `**` or `*` in the starter's glob would never match (it spells no dot). */
function underDotName(path: string): boolean {
  return path.startsWith(".") || path.includes("/.");
}

function findFiles(root: string, skip: ReadonlySet<string>): Found {
  const byFormat = new Map<FileFormat, string[]>();
  const others = new Map<string, number>();
  const selection = parsePathTableName("./", root);
  if (selection === null) return { byFormat, others, truncated: false };
  const walker = new SelectionWalker({ root, selection, useGitignore: true });
  let walked = 0;
  let truncated = false;
  try {
    for (let batch = walker.next(); batch !== null; batch = walker.next()) {
      for (const path of batch.paths) {
        if (walked >= MAX_WALKED) {
          truncated = true;
          break;
        }
        walked++;
        if (batch.rawPaths.has(path) || underDotName(path) || skip.has(path)) continue;
        const name = path.slice(path.lastIndexOf("/") + 1);
        // Configs (dirq's own, a plugin's fragment) are not data.
        if (name === "dirq.toml") continue;
        const format = formatOfPath(path);
        if (format !== null) {
          const list = byFormat.get(format) ?? [];
          list.push(path);
          byFormat.set(format, list);
        } else {
          const dot = name.lastIndexOf(".");
          const extension = dot > 0 ? name.slice(dot + 1).toLowerCase() : "";
          if (/^[a-z0-9]+$/.test(extension)) {
            others.set(extension, (others.get(extension) ?? 0) + 1);
          }
        }
      }
      if (truncated) break;
    }
  } finally {
    walker.close();
  }
  return { byFormat, others, truncated };
}

/** A path's glob characters (and backslashes) escaped, so the glob matches it literally. */
function literalGlob(path: string): string {
  return path.replace(/[\\*?[\]{}]/g, "\\$&");
}

/** The folder all `paths` are under (`''` for the root). */
function commonFolder(paths: readonly string[]): string {
  let common: string[] | null = null;
  for (const path of paths) {
    const folders = path.split("/").slice(0, -1);
    if (common === null) {
      common = folders;
      continue;
    }
    let same = 0;
    while (same < common.length && same < folders.length && common[same] === folders[same]) {
      same++;
    }
    common = common.slice(0, same);
  }
  return (common ?? []).join("/");
}

/** `word` as a table name (letters, digits and `_`), or `null` when it would not make one. */
function asTableName(word: string): string | null {
  const name = word.replace(/[^A-Za-z0-9_]+/g, "_").replace(/^_+|_+$/g, "");
  if (!/^[A-Za-z]/.test(name) || !IDENTIFIER.test(name)) return null;
  if (INTERNAL_PREFIX.test(name) || /^sqlite_/i.test(name)) return null;
  if (SQL_KEYWORDS.has(name.toUpperCase())) return null;
  return name;
}

/** The table's glob and name: one file is named after itself, files after their folder. */
function tableTarget(
  format: FileFormat,
  paths: readonly string[],
  truncated: boolean,
): { glob: string; name: string; where: string; single: boolean } {
  if (paths.length === 1 && !truncated) {
    const path = paths[0] as string;
    const base = path.slice(path.lastIndexOf("/") + 1);
    const stem = base.slice(0, base.lastIndexOf("."));
    const name = asTableName(stem) ?? defaultName(format);
    return { glob: literalGlob(path), name, where: path, single: true };
  }
  // Extensions as written (globs match with case), the most common first.
  const counts = new Map<string, number>();
  for (const path of paths) {
    const extension = path.slice(path.lastIndexOf(".") + 1);
    counts.set(extension, (counts.get(extension) ?? 0) + 1);
  }
  const extensions = [...counts.keys()].sort((a, b) => (counts.get(b) ?? 0) - (counts.get(a) ?? 0));
  const pattern =
    extensions.length === 1
      ? `*.${literalGlob(extensions[0] as string)}`
      : `*.{${extensions.map(literalGlob).join(",")}}`;
  // A walk cut short may have missed files elsewhere: then the glob takes the whole tree.
  const folder = truncated ? "" : commonFolder(paths);
  const glob = folder === "" ? `**/${pattern}` : `${literalGlob(folder)}/**/${pattern}`;
  // The innermost folder that makes a name (`posts` rather than `2024` in `posts/2024`).
  const segments = folder === "" ? [] : folder.split("/");
  let name: string | null = null;
  for (let i = segments.length - 1; i >= 0 && name === null; i--) {
    name = asTableName(segments[i] as string);
  }
  const where = folder === "" ? "" : `${folder}/`;
  return { glob, name: name ?? defaultName(format), where, single: false };
}

type ColumnKind = "INTEGER" | "REAL" | "TEXT";

function kindOf(value: unknown): ColumnKind | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "bigint") return "INTEGER";
  if (typeof value === "number") return "REAL";
  return "TEXT";
}

/** Two kinds seen in one column: numbers widen to REAL, anything with text is TEXT. */
function merged(a: ColumnKind | null, b: ColumnKind | null): ColumnKind | null {
  if (a === null || a === b) return b ?? a;
  if (b === null) return a;
  if (a === "TEXT" || b === "TEXT") return "TEXT";
  return "REAL";
}

/** Stops reading a file once the sample has enough rows (caught below). */
class SampleFull extends Error {}

interface Sample {
  /** The files the rows were read from. */
  files: string[];
  /** Every key of the sampled rows, first seen first (case kept), with its values' kind. */
  columns: Map<string, ColumnKind | null>;
  /** A key whose value, in one-row files, is an array of objects: a candidate for `each`. */
  each: string | null;
}

/** A nested value stored as JSON text that holds an array of objects. */
function holdsObjects(value: unknown): boolean {
  if (typeof value !== "string" || !value.startsWith("[{")) return false;
  try {
    const parsed: unknown = JSON.parse(value);
    return (
      Array.isArray(parsed) &&
      parsed.length > 0 &&
      parsed.every((item) => item !== null && typeof item === "object" && !Array.isArray(item))
    );
  } catch {
    return false;
  }
}

/** Rows of the first files of the chosen kind, read as the table will read them. */
function sampleRows(root: string, format: FileFormat, paths: readonly string[]): Sample {
  const sample: Sample = { files: [], columns: new Map(), each: null };
  const lowerSeen = new Set<string>();
  let rowsTaken = 0;
  let oneRowFiles = 0;
  let eachCandidate: string | null | undefined;
  for (const path of paths) {
    if (sample.files.length >= MAX_SAMPLED_FILES || rowsTaken >= MAX_SAMPLED_ROWS) break;
    const absolute = resolve(root, path);
    const streams = format === "jsonl" || format === "csv" || format === "tsv";
    try {
      if (!streams && statSync(absolute).size > MAX_SAMPLED_BYTES) continue;
    } catch {
      continue;
    }
    const rows: HookRow[] = [];
    try {
      readFileRows(format, null, absolute, path, (batch) => {
        for (const row of batch) {
          rows.push(row);
          if (rowsTaken + rows.length >= MAX_SAMPLED_ROWS) throw new SampleFull();
        }
      });
    } catch (error) {
      // A file the format cannot read is the table's to report; the sample tries the next.
      if (!(error instanceof SampleFull)) continue;
    }
    if (rows.length === 0) continue;
    sample.files.push(path);
    rowsTaken += rows.length;
    for (const row of rows) {
      for (const [key, value] of row) {
        // SQLite column names ignore case: `Title` and `title` are one column, the first.
        const lower = key.toLowerCase();
        if (!lowerSeen.has(lower)) {
          lowerSeen.add(lower);
          sample.columns.set(key, null);
        }
        if (sample.columns.has(key)) {
          sample.columns.set(key, merged(sample.columns.get(key) ?? null, kindOf(value)));
        }
      }
    }
    if (rows.length === 1 && format !== "csv" && format !== "tsv" && format !== "markdown") {
      oneRowFiles++;
      const row = rows[0] as HookRow;
      const keys = [...row.keys()].filter((key) => holdsObjects(row.get(key)));
      const candidate = keys.length === 1 ? (keys[0] as string) : null;
      // `each` is suggested only when every sampled file holds its rows under the same key.
      eachCandidate = eachCandidate === undefined || eachCandidate === candidate ? candidate : null;
    } else {
      eachCandidate = null;
    }
  }
  sample.each = oneRowFiles > 0 && eachCandidate ? eachCandidate : null;
  return sample;
}

/**
 * Whether a `schema` key may name the column (config/schema.ts): any text but an empty one,
 * one with a NUL, a reserved name, or text TOML cannot write (a lone surrogate).
 */
function schemaCanName(key: string): boolean {
  return (
    key !== "" &&
    !key.includes("\u0000") &&
    isWellFormed(key) &&
    !INTERNAL_PREFIX.test(key) &&
    !/^sqlite_/i.test(key)
  );
}

/** Text safe inside a `#` comment line. */
function commentText(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, "?");
}

/** `a.json, b.json and 3 more`. */
function fileList(files: readonly string[]): string {
  const shown = files.slice(0, 2).map(commentText);
  const rest = files.length - shown.length;
  return rest > 0 ? `${shown.join(", ")} and ${rest} more` : shown.join(" and ");
}

function schemaLines(sample: Sample | null): string[] {
  const example = 'schema = { title = "TEXT", author = "TEXT", words = "INTEGER" }';
  if (sample === null || sample.columns.size === 0) {
    return [
      "# schema fixes the columns and their order: keys outside it are dropped, missing ones are",
      "# NULL. Without it, the columns are every key the files hold (first seen first), e.g.",
      `# ${example}`,
    ];
  }
  const columns = [...sample.columns];
  const named = columns.filter(([key]) => schemaCanName(key));
  const pairs = named.map(([key, kind]) => `${tomlKey(key)} = "${kind ?? "TEXT"}"`).join(", ");
  const from = `taken from ${fileList(sample.files)}`;
  if (named.length < columns.length) {
    const others = columns
      .filter((column) => !named.includes(column))
      .slice(0, 3)
      .map(([key]) => tomlString(commentText(key)));
    return [
      "# No schema: the columns are every key the files hold. A schema could not keep",
      `# ${others.join(", ")}${columns.length - named.length > 3 ? ", ..." : ""}: names a schema cannot hold (reserved or empty).`,
      `# The others, ${from}:`,
      `# schema = { ${pairs} }`,
    ];
  }
  if (columns.length > MAX_SCHEMA_COLUMNS) {
    return [
      `# No schema: the ${columns.length} columns are every key the files hold (${from}).`,
      "# A schema fixes the columns and their order; keys outside it are dropped, e.g.",
      `# ${example}`,
    ];
  }
  return [
    "# schema fixes the columns, their order and types; keys outside it are dropped, missing",
    "# ones are NULL. Delete the line to take every key the files hold. This one was",
    `# ${from}:`,
    `schema = { ${pairs} }`,
  ];
}

/**
 * A hook that needs nothing but Node, for files no format reads: one row per non-empty line,
 * with its line number.
 */
const LINES_HOOK =
  `node -e "const text = require('fs').readFileSync(process.argv[1], 'utf8'); ` +
  `console.log(JSON.stringify(text.split('\\n').map((line, i) => ({ n: i + 1, line }))` +
  `.filter((row) => row.line !== '')))" {path}`;

/** Text-like extensions a line-per-row hook makes sense for, the most common one first. */
const TEXT_EXTENSIONS = new Set(["log", "txt", "text", "ini", "conf", "cfg", "sql", "tex", "rst"]);

function hookLines(found: Found, tableName: string): string[] {
  const text = [...found.others]
    .filter(([extension]) => TEXT_EXTENSIONS.has(extension))
    .sort((a, b) => b[1] - a[1]);
  const extension = text[0]?.[0] ?? "txt";
  const name = tableName === "lines" ? "text_lines" : "lines";
  return [
    "# For files no format reads, a program can print their rows: on-file runs it once per",
    "# file (split into words like a shell would, no shell run; {path} is the file's absolute",
    "# path, {root} the root's) and reads the JSON array of row objects it prints. A file",
    `# whose hook fails is skipped and named on stderr. Uncomment for the lines of .${extension} files:`,
    "# [[table]]",
    `# name = "${name}"`,
    `# glob = "**/*.${extension}"`,
    `# on-file = '''${LINES_HOOK}'''`,
  ];
}

/** Other kinds found, for a comment: `3 CSV files (format = "csv")`. */
function alsoFound(found: Found, chosen: FileFormat): string[] {
  const others = [...found.byFormat]
    .filter(([format]) => format !== chosen)
    .sort((a, b) => b[1].length - a[1].length)
    .map(([format, paths]) => {
      const plural = paths.length === 1 ? "file" : "files";
      return `${paths.length} ${KINDS[format].label} ${plural} (format = "${format}")`;
    });
  if (others.length === 0) return [];
  return [
    `# Also found: ${others.join(", ")}.`,
    '# Give them a [[table]] of their own, or read several kinds in one with format = "auto".',
  ];
}

/** The starter's text, and the name of the table it defines. */
export function starterFor(
  root: string,
  skip: ReadonlySet<string> = new Set(),
): {
  text: string;
  table: string;
} {
  const found = findFiles(root, skip);
  const ranked = [...found.byFormat].sort((a, b) => b[1].length - a[1].length);
  const [chosen, paths] = ranked[0] ?? ["json" as FileFormat, [] as string[]];
  const sample = paths.length === 0 ? null : sampleRows(root, chosen, paths);
  const target =
    paths.length === 0
      ? { glob: "**/*.json", name: STARTER_TABLE, where: "", single: false }
      : tableTarget(chosen, paths, found.truncated);
  const { label } = KINDS[chosen];
  const count = `${paths.length}${found.truncated ? " or more" : ""}`;
  const intro =
    paths.length === 0
      ? [
          "# No file that a format reads was found, so this one reads JSON files: change glob and",
          "# format to fit yours.",
        ]
      : target.single
        ? [`# This one was written for ${commentText(target.where)}, the one ${label} file found.`]
        : [
            `# This one was written for the ${count} ${label} files found${target.where === "" ? "" : ` under ${commentText(target.where)}`}.`,
          ];
  const each =
    sample?.each && IDENTIFIER.test(sample.each)
      ? [
          `# ${sample.each} holds an array of objects in each sampled file. To make each object a`,
          "# row (rather than one row per file), uncomment each (keys joined by dots: a.b.c) and",
          "# delete the schema line (or fit it to the objects' keys):",
          `# each = "${sample.each}"`,
        ]
      : [
          "# each names where the rows are inside each file (keys joined by dots: data.items),",
          "# for JSON, JSON Lines, YAML and TOML files that hold them deeper.",
        ];
  const lines = [
    '# dirq configuration. Load it explicitly: dirq query -c .dirq.toml "SELECT ..."',
    "# (it is never read automatically). Paths and globs are relative to the directory you",
    "# run dirq in, which is the index root.",
    "",
    "[dirq]",
    "# Globs that are never indexed, on top of .gitignore, node_modules and .git.",
    "ignore = []",
    "",
    "# Each [[table]] is a named table made of the rows of the files its glob matches.",
    ...intro,
    ...alsoFound(found, chosen),
    "[[table]]",
    `# The SQL name: SELECT * FROM ${target.name}`,
    `name = "${target.name}"`,
    "# Which files feed it (bash globstar rules: * and ** skip dot-files unless spelled).",
    `glob = ${tomlString(target.glob)}`,
    "# How dirq reads each file, in its own process: json, jsonl, csv, tsv, yaml, toml,",
    "# markdown, or auto (by each file's extension).",
    ...KINDS[chosen].rows,
    "# A file that breaks its format's rules is skipped and named on stderr; the query exits 23.",
    `format = "${chosen}"`,
    ...(chosen === "json" || chosen === "jsonl" || chosen === "yaml" || chosen === "toml"
      ? each
      : []),
    ...schemaLines(sample),
    "# Optional SQL run once after the table is created, before its rows are inserted:",
    `# ddl = "CREATE INDEX ${target.name}_file ON ${target.name}(_dirq_file_path)"`,
    "",
    ...hookLines(found, target.name),
    "",
  ];
  return { text: lines.join("\n"), table: target.name };
}

/** The text of a starter `.dirq.toml` for `root`. */
export function starterConfig(root: string): string {
  return starterFor(root).text;
}

export interface InitOptions {
  /** Directory the default output resolves against; default: the working directory. */
  root?: string;
  /** Where to write; default `<root>/.dirq.toml`. */
  output?: string;
  /** Overwrite an existing file. */
  force?: boolean;
}

/**
 * Writes a starter config; returns its path and the name of the table it defines. Never
 * touches an existing file unless `force`.
 */
export function writeStarter(options: InitOptions = {}): { output: string; table: string } {
  const root = resolve(options.root ?? process.cwd());
  const output = options.output ? resolve(options.output) : resolve(root, ".dirq.toml");
  // The file being written (an older starter, with --force) is not data.
  const inside = relative(root, output);
  const skip = new Set(inside.startsWith("..") ? [] : [inside.split(sep).join("/")]);
  const { text, table } = starterFor(root, skip);
  try {
    writeFileSync(output, text, { flag: options.force ? "w" : "wx" });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") {
      throw new DirqError(
        "INIT_OUTPUT_EXISTS",
        `${output} already exists; nothing was written. Pass --force to overwrite it`,
      );
    }
    throw new DirqError(
      "INIT_WRITE_FAILED",
      `cannot write ${output}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  return { output, table };
}

/** Writes a starter config and returns its path. Never touches an existing file unless `force`. */
export function writeStarterConfig(options: InitOptions = {}): string {
  return writeStarter(options).output;
}
