import { writeFileSync } from "node:fs";
import { relative, resolve, sep } from "node:path";
import { DirqError } from "../errors.js";
import { type FileFormat, formatOfPath } from "../parse/formats/format-names.js";
import type { ProgressReporter } from "../progress/reporter.js";
import { parsePathTableName } from "../scan/path-selection.js";
import { SelectionWalker } from "../scan/walk.js";
import { isWellFormed } from "../parse/large-text.js";
import { INTERNAL_PREFIX } from "../shared/reserved-names.js";
import { type InferredColumns, inferSchemaColumns } from "./infer-columns.js";
import { tomlKey, tomlString } from "./toml-text.js";

/**
 * `dirq init`: a starter `.dirq.toml` for the files found under the root. A walk (the index's
 * own, ignore rules and all) counts the files each built-in format reads; the most common kind
 * gets a `[[table]]` with a glob over the folder they are in, its `format`, and a `schema` of
 * every key of every one of those files, read by the format's own reader (so the types are the
 * ones the table will hold). A commented `on-file` table shows what to do for files no format
 * reads. With no file a format reads, the starter is the spec's: a table over `**\/*.jsonl`
 * with an example schema and an `on-file` hook that needs nothing but Node.js.
 */

/** The starter table's name when nothing better is found. */
export const STARTER_TABLE = "records";

/** Columns for a schema where none can be inferred: an example to fit to the files. */
const EXAMPLE_SCHEMA = 'schema = { title = "TEXT", author = "TEXT", words = "INTEGER" }';

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
  /** Paths in walk order: by name within each folder, a folder's contents where its name sorts. */
  byFormat: Map<FileFormat, string[]>;
  others: Map<string, number>;
}

/** A name a `**` or `*` in the starter's glob would never match (it spells no dot). */
function underDotName(path: string): boolean {
  return path.startsWith(".") || path.includes("/.");
}

/**
 * Every file under the root, in the walk the index makes (so in the order a table without a
 * schema meets their keys); `onProgress` hears the count after each batch.
 */
function findFiles(
  root: string,
  skip: ReadonlySet<string>,
  onProgress: (walked: number) => void,
): Found {
  const byFormat = new Map<FileFormat, string[]>();
  const others = new Map<string, number>();
  const selection = parsePathTableName("./", root);
  if (selection === null) return { byFormat, others };
  const walker = new SelectionWalker({ root, selection, useGitignore: true, onProgress });
  try {
    for (let batch = walker.next(); batch !== null; batch = walker.next()) {
      for (const path of batch.paths) {
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
    }
  } finally {
    walker.close();
  }
  return { byFormat, others };
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

/** Where the starter's table reads, and its name. */
interface TableTarget {
  glob: string;
  name: string;
  /** The file, or the folder (with its `/`; `''` for the root) the files are under. */
  where: string;
  single: boolean;
}

/** The table's glob and name: one file is named after itself, files after their folder. */
function tableTarget(format: FileFormat, paths: readonly string[]): TableTarget {
  if (paths.length === 1) {
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
  const folder = commonFolder(paths);
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

/** The `schema` line, active when every column can be a key of it, with what it holds. */
function schemaLines(inferred: InferredColumns): string[] {
  if (inferred.columns.size === 0) {
    return [
      "# schema fixes the columns and their order: keys outside it are dropped, missing ones are",
      "# NULL. Without it, the columns are every key the files hold (first seen first), e.g.",
      `# ${EXAMPLE_SCHEMA}`,
    ];
  }
  const columns = [...inferred.columns];
  const named = columns.filter(([key]) => schemaCanName(key));
  const pairs = named.map(([key, type]) => `${tomlKey(key)} = "${type ?? "TEXT"}"`).join(", ");
  const files = `${inferred.read} ${inferred.read === 1 ? "file" : "files"}`;
  if (named.length < columns.length) {
    const others = columns
      .filter((column) => !named.includes(column))
      .slice(0, 3)
      .map(([key]) => tomlString(commentText(key)));
    return [
      "# No schema: the columns are every key the files hold. A schema could not keep",
      `# ${others.join(", ")}${columns.length - named.length > 3 ? ", ..." : ""}: names a schema cannot hold (reserved or empty).`,
      `# The others, of all ${files}:`,
      `# schema = { ${pairs} }`,
    ];
  }
  if (columns.length > MAX_SCHEMA_COLUMNS) {
    return [
      `# No schema: the ${columns.length} columns are every key the ${files} hold.`,
      "# A schema fixes the columns and their order; keys outside it are dropped, e.g.",
      `# ${EXAMPLE_SCHEMA}`,
    ];
  }
  return [
    "# schema fixes the columns, their order and types; keys outside it are dropped, missing",
    "# ones are NULL. Delete the line to take every key the files hold. This one holds every",
    `# key of the ${files} (first seen first), each with a type that fits all its values`,
    "# (INTEGER, REAL for numbers with a fraction too, TEXT when any value is text or nested):",
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

/**
 * A hook that needs nothing but Node, which dirq runs on, for JSON Lines files: their non-blank
 * lines joined into one JSON array, left unparsed so that dirq's own reader types the numbers.
 */
const JSON_LINES_HOOK =
  `node -e "const text = require('fs').readFileSync(process.argv[1], 'utf8'); ` +
  `console.log('[' + text.split('\\n').filter((line) => line.trim() !== '').join(',') + ']')" {path}`;

/** What `on-file` does, for the comment above one. */
const ON_FILE_LINES = [
  "# on-file runs a program once per file (split into words like a shell would, no shell run;",
  "# {path} is the file's absolute path, {root} the root's) and reads the JSON array of row",
  "# objects it prints. A file whose hook fails is skipped and named on stderr.",
];

/** Text-like extensions a line-per-row hook makes sense for, the most common one first. */
const TEXT_EXTENSIONS = new Set(["log", "txt", "text", "ini", "conf", "cfg", "sql", "tex", "rst"]);

function hookLines(found: Found, tableName: string): string[] {
  const text = [...found.others]
    .filter(([extension]) => TEXT_EXTENSIONS.has(extension))
    .sort((a, b) => b[1] - a[1]);
  const extension = text[0]?.[0] ?? "txt";
  const name = tableName === "lines" ? "text_lines" : "lines";
  return [
    "# For files no format reads, a program can print their rows.",
    ...ON_FILE_LINES,
    `# Uncomment for the lines of .${extension} files:`,
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

/** The file's opening: how to load it, and the ignore list. */
const PREAMBLE = [
  '# dirq configuration. Load it explicitly: dirq query -c .dirq.toml "SELECT ..."',
  "# (it is never read automatically). Paths and globs are relative to the directory you",
  "# run dirq in, which is the index root.",
  "",
  "[dirq]",
  "# Globs that are never indexed, on top of .gitignore, node_modules and .git.",
  "ignore = []",
  "",
  "# Each [[table]] is a named table made of the rows of the files its glob matches.",
];

/** A table's first lines: its name and glob. */
function tableHead(target: Pick<TableTarget, "name" | "glob">): string[] {
  return [
    "[[table]]",
    `# The SQL name: SELECT * FROM ${target.name}`,
    `name = "${target.name}"`,
    "# Which files feed it (bash globstar rules: * and ** skip dot-files unless spelled).",
    `glob = ${tomlString(target.glob)}`,
  ];
}

function ddlLines(name: string): string[] {
  return [
    "# Optional SQL run once after the table is created, before its rows are inserted:",
    `# ddl = "CREATE INDEX ${name}_file ON ${name}(_dirq_file_path)"`,
  ];
}

/** What `init` wrote, for its report. */
export interface Starter {
  text: string;
  table: string;
  glob: string;
  /** The format the table reads its files with; `null` for the hook starter. */
  format: FileFormat | null;
  /** The files the glob matched; for the hook starter, none. */
  files: number;
  /** The columns of the active schema; `null` when the schema line is a comment. */
  schemaColumns: number | null;
  /** Files the format cannot read (the table will skip them): how many, and the first. */
  unreadable: number;
  firstUnreadable: { path: string; reason: string } | null;
}

/**
 * The spec's starter, for a folder with no file a format reads: a glob, an active schema and
 * an `on-file` hook whose program is there wherever dirq runs.
 */
function hookStarter(): Starter {
  const target = { name: STARTER_TABLE, glob: "**/*.jsonl" };
  const lines = [
    ...PREAMBLE,
    "# No file that a format reads was found, so this one runs a program on each JSON Lines file",
    "# (one object per line). Once there are data files, dirq init --force writes a table for them.",
    ...tableHead(target),
    "# schema fixes the columns, their order and types: keys outside it are dropped, missing ones",
    "# are NULL. Fit it to your files, or delete it to take every key they hold.",
    EXAMPLE_SCHEMA,
    ...ON_FILE_LINES,
    "# This one needs only Node.js: it prints a file's non-blank lines as one JSON array.",
    `on-file = '''${JSON_LINES_HOOK}'''`,
    "# dirq reads JSON Lines itself too, in its own process, with no program per file: for",
    '# that, replace the on-file line with format = "jsonl".',
    ...ddlLines(target.name),
    "",
  ];
  return {
    text: lines.join("\n"),
    table: target.name,
    glob: target.glob,
    format: null,
    files: 0,
    schemaColumns: 3,
    unreadable: 0,
    firstUnreadable: null,
  };
}

/** The comment that says which files the table was written for. */
function introLines(target: TableTarget, label: string, files: number): string[] {
  if (target.single) {
    return [
      `# This one was written for ${commentText(target.where)}, the one ${label} file found.`,
    ];
  }
  const under = target.where === "" ? "" : ` under ${commentText(target.where)}`;
  return [`# This one was written for the ${files} ${label} files found${under}.`];
}

/** The `each` comment: a ready line when every one-row file holds its rows under one key. */
function eachLines(each: string | null): string[] {
  if (each !== null && IDENTIFIER.test(each)) {
    return [
      `# ${each} holds an array of objects in every file. To make each object a row (rather`,
      "# than one row per file), uncomment each (keys joined by dots: a.b.c) and delete the",
      "# schema line (or fit it to the objects' keys):",
      `# each = "${each}"`,
    ];
  }
  return [
    "# each names where the rows are inside each file (keys joined by dots: data.items),",
    "# for JSON, JSON Lines, YAML and TOML files that hold them deeper.",
  ];
}

/** A table that reads the files of format `chosen` with the format itself. */
function formatStarter(
  found: Found,
  chosen: FileFormat,
  inferred: InferredColumns,
  target: TableTarget,
): Starter {
  const nested = chosen === "json" || chosen === "jsonl" || chosen === "yaml" || chosen === "toml";
  const files = inferred.read + inferred.unreadable;
  const schema = schemaLines(inferred);
  const lines = [
    ...PREAMBLE,
    ...introLines(target, KINDS[chosen].label, files),
    ...alsoFound(found, chosen),
    ...tableHead(target),
    "# How dirq reads each file, in its own process: json, jsonl, csv, tsv, yaml, toml,",
    "# markdown, or auto (by each file's extension).",
    ...KINDS[chosen].rows,
    "# A file that breaks its format's rules is skipped and named on stderr; the query exits 23.",
    `format = "${chosen}"`,
    ...(nested ? eachLines(inferred.each) : []),
    ...schema,
    ...ddlLines(target.name),
    "",
    ...hookLines(found, target.name),
    "",
  ];
  const active = schema.some((line) => line.startsWith("schema = "));
  return {
    text: lines.join("\n"),
    table: target.name,
    glob: target.glob,
    format: chosen,
    files,
    schemaColumns: active ? inferred.columns.size : null,
    unreadable: inferred.unreadable,
    firstUnreadable: inferred.firstUnreadable,
  };
}

/**
 * The starter for the files under `root` (but `skip`): every file is walked, and every file of
 * the most common kind read. `progress` shows both phases, as the index shows its own.
 */
export function starterFor(
  root: string,
  skip: ReadonlySet<string>,
  progress: ProgressReporter,
): Starter {
  const scan = progress.start();
  let walked = 0;
  const found = findFiles(root, skip, (count) => {
    walked = count;
    scan.update(`scanning ${count} files`);
  });
  scan.finish((duration) => `scanned ${walked} files in ${duration}`);
  const ranked = [...found.byFormat].sort((a, b) => b[1].length - a[1].length);
  if (ranked[0] === undefined) return hookStarter();
  const [chosen, paths] = ranked[0];
  const reading = progress.start();
  const inferred = inferSchemaColumns(root, chosen, paths, (done) => {
    const percent = Math.floor((done / paths.length) * 100);
    reading.update(`reading ${done}/${paths.length} files (${percent}%)`);
  });
  reading.finish((duration) => `read ${paths.length} files in ${duration}`);
  return formatStarter(found, chosen, inferred, tableTarget(chosen, paths));
}

export interface InitOptions {
  /** Directory the default output resolves against; default: the working directory. */
  root?: string;
  /** Where to write; default `<root>/.dirq.toml`. */
  output?: string;
  /** Overwrite an existing file. */
  force?: boolean;
  /** Shows the walk and the reading of the files; default: nothing shown. */
  progress?: ProgressReporter;
}

const SILENT: ProgressReporter = {
  start: () => ({ update() {}, finish() {} }),
};

/**
 * Writes a starter config; returns its path and what it holds. Never touches an existing file
 * unless `force`.
 */
export function writeStarter(options: InitOptions = {}): Starter & { output: string } {
  const root = resolve(options.root ?? process.cwd());
  const output = options.output ? resolve(options.output) : resolve(root, ".dirq.toml");
  // The file being written (an older starter, with --force) is not data.
  const inside = relative(root, output);
  const skip = new Set(inside.startsWith("..") ? [] : [inside.split(sep).join("/")]);
  const starter = starterFor(root, skip, options.progress ?? SILENT);
  try {
    writeFileSync(output, starter.text, { flag: options.force ? "w" : "wx" });
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
  return { ...starter, output };
}
