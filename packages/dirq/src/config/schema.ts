import * as v from "valibot";
import { INTERNAL_PREFIX } from "../shared/reserved-names.js";

// Validated with valibot rather than zod: zod 4 takes about 70 ms to load, paid by every
// dirq run with a `-c` config; valibot is one module that loads in a few.

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A declared column type: SQLite accepts a name with optional size, as in `VARCHAR(40)`. */
const COLUMN_TYPE = /^[A-Za-z][A-Za-z0-9_ ]*(\(\s*\d+\s*(,\s*\d+\s*)?\))?$/;

/** Marks the one issue per object that lists its unknown keys (as JSON after the mark). */
const UNKNOWN_KEYS = "\u0000unknown-keys:";

/** "is required" when the key is missing, else "expected <what>". */
function expected(what: string) {
  return (issue: { received: string }) =>
    issue.received === "undefined" ? "is required" : `expected ${what}`;
}

/**
 * A table (TOML) with exactly these keys: a missing required key "is required", every unknown
 * key is named in one issue, a value of another type is "expected <what>".
 */
function strictTable<const TEntries extends v.ObjectEntries>(entries: TEntries, what: string) {
  const known = new Set(Object.keys(entries));
  return v.pipe(
    notAnArray(what),
    v.looseObject(entries, expected(what)),
    v.rawCheck(({ dataset, addIssue }) => {
      if (!dataset.typed) return;
      const unknown = Object.keys(dataset.value).filter((key) => !known.has(key));
      if (unknown.length > 0) addIssue({ message: `${UNKNOWN_KEYS}${JSON.stringify(unknown)}` });
    }),
  );
}

/** valibot takes an array for an object or record; TOML (and code) may give one. */
function notAnArray(what: string) {
  return v.custom<unknown>((input) => !Array.isArray(input), expected(what));
}

const identifier = v.pipe(
  v.string(expected("a string")),
  v.regex(
    IDENTIFIER,
    "expected an SQL identifier (letters, digits and _, not starting with a digit)",
  ),
  v.check(
    (name) => !INTERNAL_PREFIX.test(name),
    "names starting with _dirq_ are reserved for dirq",
  ),
  v.check((name) => !/^sqlite_/i.test(name), "names starting with sqlite_ are reserved for SQLite"),
);

const nonEmptyString = v.pipe(v.string(expected("a string")), v.minLength(1, "must not be empty"));

/**
 * Config ignore patterns are never undone (config.md), so a negation (`!keep.md`) would be
 * a promise dirq does not keep: refused. `\!name` matches a name starting with `!`.
 */
const ignorePattern = v.pipe(
  nonEmptyString,
  v.check(
    (pattern) => !pattern.startsWith("!"),
    "config ignore patterns cannot be negated (nothing undoes them): remove the pattern it was meant to undo, or write \\! for a name that starts with !",
  ),
);

const columnSchema = v.pipe(
  notAnArray("a table of column = type"),
  v.record(
    v.pipe(
      v.string(),
      v.regex(IDENTIFIER, "column names must be SQL identifiers (letters, digits and _)"),
      v.check(
        (name) => !INTERNAL_PREFIX.test(name),
        "column names starting with _dirq_ are reserved for dirq: rename the column",
      ),
      v.check(
        (name) => !/^sqlite_/i.test(name),
        "column names starting with sqlite_ are reserved for SQLite: rename the column",
      ),
    ),
    v.pipe(v.string(expected("a string")), v.regex(COLUMN_TYPE, "expected a column type")),
    expected("a table of column = type"),
  ),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const seen = new Set<string>();
    for (const [column, type] of Object.entries(dataset.value)) {
      if (seen.has(column.toLowerCase())) {
        addIssue({
          message: "duplicate column: SQLite column names ignore case",
          path: [
            { type: "object", origin: "value", input: dataset.value, key: column, value: type },
          ],
        });
      }
      seen.add(column.toLowerCase());
    }
  }),
);

const tableEntry = strictTable(
  {
    name: identifier,
    glob: nonEmptyString,
    schema: v.optional(columnSchema),
    "on-file": nonEmptyString,
    ddl: v.optional(nonEmptyString),
  },
  "a table",
);

const extensionEntry = strictTable(
  { path: nonEmptyString, entrypoint: v.optional(nonEmptyString) },
  "a table",
);

const functionEntry = strictTable(
  {
    name: identifier,
    command: nonEmptyString,
    deterministic: v.optional(v.boolean(expected("true or false"))),
  },
  "a table",
);

/** One `.dirq.toml` file as written (relative paths not yet resolved). */
const configFileSchema = strictTable(
  {
    dirq: v.optional(
      strictTable(
        {
          ignore: v.optional(v.array(ignorePattern, expected("an array of strings"))),
          extension: v.optional(v.array(extensionEntry, expected("an array of tables"))),
          function: v.optional(v.array(functionEntry, expected("an array of tables"))),
        },
        "a table ([dirq])",
      ),
    ),
    table: v.optional(v.array(tableEntry, expected("an array of tables ([[table]])"))),
  },
  "a table",
);

export type ConfigFile = v.InferOutput<typeof configFileSchema>;

/** `table[1].schema.title` from a path of keys. */
export function formatKeyPath(path: readonly PropertyKey[]): string {
  let text = "";
  for (const part of path) {
    if (typeof part === "number") text += `[${part}]`;
    else text += text === "" ? String(part) : `.${String(part)}`;
  }
  return text;
}

/** One line per problem, each naming the key: `table[0].glob: expected a string`. */
function describeIssue(issue: v.GenericIssue): string {
  const path = (issue.path ?? []).map((item) => item.key as PropertyKey);
  if (issue.message.startsWith(UNKNOWN_KEYS)) {
    const unknown = JSON.parse(issue.message.slice(UNKNOWN_KEYS.length)) as string[];
    const keys = unknown.map((key) => formatKeyPath([...path, key]));
    return `${keys.join(", ")}: unknown key${keys.length > 1 ? "s" : ""}`;
  }
  const where = formatKeyPath(path);
  return where === "" ? issue.message : `${where}: ${issue.message}`;
}

/**
 * Checks one parsed config file: its contents as written, or one line per problem, each
 * naming the key (`table[0].glob: expected a string`).
 */
export function validateConfigFile(
  data: unknown,
): { ok: true; value: ConfigFile } | { ok: false; problems: string[] } {
  const result = v.safeParse(configFileSchema, data);
  return result.success
    ? { ok: true, value: result.output }
    : { ok: false, problems: result.issues.map(describeIssue) };
}
