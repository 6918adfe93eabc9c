import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { DirqError } from "../errors.js";
import { parsePathTableName } from "../scan/path-selection.js";
import { walkSelection } from "../scan/walk.js";
import { INTERNAL_PREFIX } from "../shared/reserved-names.js";

/** The starter table's name and the files it reads. */
export const STARTER_TABLE = "records";
const STARTER_GLOB = "**/*.json";

/**
 * A hook that needs nothing but Node: prints the file's JSON as an array of rows (an object
 * becomes one row, an array is taken as the rows).
 */
const STARTER_HOOK =
  `node -e "const d = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8')); ` +
  `console.log(JSON.stringify(Array.isArray(d) ? d : [d]))" {path}`;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

function sqlType(value: unknown): string {
  if (typeof value === "number") return Number.isInteger(value) ? "INTEGER" : "REAL";
  if (typeof value === "boolean") return "INTEGER";
  return "TEXT";
}

/** Column types from the first JSON row found under the root, if any. */
function sampleSchema(root: string): { file: string; columns: [string, string][] } | null {
  const selection = parsePathTableName(`./${STARTER_GLOB}`, root);
  if (selection === null) return null;
  const { paths } = walkSelection({ root, selection, useGitignore: true });
  for (const path of paths.slice(0, 20)) {
    try {
      const data: unknown = JSON.parse(readFileSync(resolve(root, path), "utf8"));
      const row = Array.isArray(data) ? data[0] : data;
      if (row === null || typeof row !== "object" || Array.isArray(row)) continue;
      // SQLite column names ignore case: keep the first of `Title` and `title`, or the
      // written config would not load.
      const seen = new Set<string>();
      const columns = Object.entries(row)
        .filter(([key]) => IDENTIFIER.test(key) && !INTERNAL_PREFIX.test(key))
        .filter(([key]) => !seen.has(key.toLowerCase()) && seen.add(key.toLowerCase()))
        .map(([key, value]): [string, string] => [key, sqlType(value)]);
      if (columns.length > 0) return { file: path, columns };
    } catch {
      // Not JSON after all: try the next file.
    }
  }
  return null;
}

function schemaLines(root: string): string[] {
  const sample = sampleSchema(root);
  if (sample === null) {
    return [
      "# schema fixes the columns and their order; keys outside it are dropped, missing ones are",
      "# NULL. Delete the line to take the union of the keys the hook prints (first seen first).",
      'schema = { title = "TEXT", author = "TEXT", words = "INTEGER" }',
    ];
  }
  const pairs = sample.columns.map(([column, type]) => `${column} = "${type}"`).join(", ");
  return [
    `# schema fixes the columns and their order (taken from ${sample.file}); keys outside it are`,
    "# dropped, missing ones are NULL. Delete the line to take every key the hook prints.",
    `schema = { ${pairs} }`,
  ];
}

/** The text of a starter `.dirq.toml` for `root`. */
export function starterConfig(root: string): string {
  return [
    '# dirq configuration. Load it explicitly: dirq query -c .dirq.toml "SELECT ..."',
    "# (it is never read automatically). Paths and globs are relative to the directory you",
    "# run dirq in, which is the index root.",
    "",
    "[dirq]",
    "# Globs that are never indexed, on top of .gitignore, node_modules and .git.",
    "ignore = []",
    "",
    "# Each [[table]] is a named table whose rows a hook prints, one run per matching file.",
    "[[table]]",
    "# The SQL name: SELECT * FROM records",
    `name = "${STARTER_TABLE}"`,
    "# Which files feed it (bash globstar rules: * and ** skip dot-files unless spelled).",
    `glob = "${STARTER_GLOB}"`,
    ...schemaLines(root),
    "# The parser. It is split into words like a shell would (no shell runs); {path} is the",
    "# file's absolute path, {root} the root's. It must print a JSON array of row objects.",
    "# A file whose hook fails is skipped and named on stderr; the query exits 23.",
    `on-file = '''${STARTER_HOOK}'''`,
    "# Optional SQL run once after the table is created, before its rows are inserted:",
    `# ddl = "CREATE INDEX records_path ON records(_dirq_file_path)"`,
    "",
  ].join("\n");
}

export interface InitOptions {
  /** Directory the default output resolves against; default: the working directory. */
  root?: string;
  /** Where to write; default `<root>/.dirq.toml`. */
  output?: string;
  /** Overwrite an existing file. */
  force?: boolean;
}

/** Writes a starter config and returns its path. Never touches an existing file unless `force`. */
export function writeStarterConfig(options: InitOptions = {}): string {
  const root = resolve(options.root ?? process.cwd());
  const output = options.output ? resolve(options.output) : resolve(root, ".dirq.toml");
  const text = starterConfig(root);
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
  return output;
}
