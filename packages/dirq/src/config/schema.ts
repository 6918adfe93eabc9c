import * as v from "valibot";
import { FORMAT_LIST, FORMAT_NAMES } from "../parse/formats/format-names.js";
import { hookTimeoutProblem } from "../parse/hook-timeout.js";
import { INTERNAL_PREFIX } from "../shared/reserved-names.js";
import { foldName } from "../shared/sql-names.js";
import { globProblem } from "../scan/bash-glob.js";
import { tomlKey } from "./toml-text.js";

// Validated with valibot rather than zod: zod 4 is slow to load, a cost every dirq run with a
// `-c` config would pay; valibot is one small module that loads quickly.

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A declared column type: SQLite accepts a name with optional size, as in `VARCHAR(40)`. */
const COLUMN_TYPE = /^[A-Za-z][A-Za-z0-9_ ]*(\(\s*\d+\s*(,\s*\d+\s*)?\))?$/;

/** Marks the one issue per object that lists its unknown keys (as JSON after the mark). */
const UNKNOWN_KEYS = "\u0000unknown-keys:";
/** Marks an issue whose message starts with the keys it is about (`format, on-file: ...`). */
const KEYS_MARK = "\u0000keys:";

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

/**
 * A column name: any text a CSV header or a hook's key may be (`"Region Name"`,
 * `"ISO4217-currency_numeric_code"`: a quoted TOML key), created as spelled and quoted in SQL.
 */
const columnName = v.pipe(
  v.string(),
  v.minLength(1, "column names must not be empty"),
  v.check(
    (name) => !name.includes("\u0000"),
    "column names cannot hold a NUL character (SQLite ends a name there)",
  ),
  v.check(
    (name) => !INTERNAL_PREFIX.test(name),
    "column names starting with _dirq_ are reserved for dirq: rename the column",
  ),
  v.check(
    (name) => !/^sqlite_/i.test(name),
    "column names starting with sqlite_ are reserved for SQLite: rename the column",
  ),
);

const columnSchema = v.pipe(
  notAnArray("a table of column = type"),
  v.record(
    columnName,
    v.pipe(v.string(expected("a string")), v.regex(COLUMN_TYPE, "expected a column type")),
    expected("a table of column = type"),
  ),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const seen = new Set<string>();
    for (const [column, type] of Object.entries(dataset.value)) {
      if (seen.has(foldName(column))) {
        addIssue({
          message:
            "duplicate column: SQLite column names ignore ASCII case, so this key names an earlier column again: keep one of them",
          path: [
            { type: "object", origin: "value", input: dataset.value, key: column, value: type },
          ],
        });
      }
      seen.add(foldName(column));
    }
  }),
);

const formatName = v.picklist(FORMAT_NAMES, `expected one of ${FORMAT_LIST}`);

/** `each`: keys (or array positions) joined by dots, as in `data.items`. */
const eachPath = v.pipe(
  nonEmptyString,
  v.check(
    (path) => path.split(".").every((step) => step !== ""),
    "expected keys joined by dots, as in data.items (no empty key)",
  ),
);

/** A table's glob: its `{name}` captures each named once in one path. */
const tableGlob = v.pipe(
  nonEmptyString,
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const problem = globProblem(dataset.value);
    if (problem !== null) addIssue({ message: problem });
  }),
);

/** `[table.columns]`: column name → a dot path into the row (`a.b.0`) or a capture's name. */
const columnMapping = v.pipe(
  notAnArray("a table of column = source"),
  v.record(columnName, eachPath, expected("a table of column = source")),
);

/** `timeout`: a hook's time limit in seconds, 0 for none. */
const hookTimeout = v.rawCheck<unknown>(({ dataset, addIssue }) => {
  const problem = hookTimeoutProblem(dataset.value);
  if (problem !== null) addIssue({ message: problem });
});

/** Formats whose files can hold their rows deeper inside: `each` applies to them. */
const NESTED = new Set(["json", "jsonl", "yaml", "toml", "auto"]);

/** Issues on one `[[table]]`'s keys (named in the message, the table's path added by valibot). */
interface ParserKeys {
  "on-file"?: string;
  format?: string;
  each?: string;
  timeout?: unknown;
  schema?: Record<string, string>;
  columns?: Record<string, string>;
  strict?: boolean;
}

type IssueAt = Parameters<v.RawCheckContext<unknown>["addIssue"]>[0] & {};

/** `strict` needs a schema; with one, `columns` names only its columns (strict: all of them). */
function shapeKeys(table: ParserKeys, addIssue: (issue: IssueAt) => void): void {
  if (table.strict === true && table.schema === undefined) {
    addIssue({
      message: `${KEYS_MARK}strict: needs a schema (strict compares each row's keys with the schema's columns): add schema = { column = "TYPE", ... } or remove strict`,
    });
  }
  if (table.columns === undefined || table.schema === undefined) return;
  const declared = new Set(Object.keys(table.schema).map(foldName));
  const mapped = new Set(Object.keys(table.columns).map(foldName));
  for (const column of Object.keys(table.columns)) {
    if (declared.has(foldName(column))) continue;
    const at = (key: string, input: Record<string, unknown>, value: unknown) =>
      ({ type: "object", origin: "value", input, key, value }) as const;
    addIssue({
      message: "is not a column of the schema: add it to schema or remove it from columns",
      path: [
        at("columns", table as Record<string, unknown>, table.columns),
        at(column, table.columns, table.columns[column]),
      ],
    });
  }
  if (table.strict !== true) return;
  for (const column of Object.keys(table.schema)) {
    if (mapped.has(foldName(column))) continue;
    addIssue({
      message: `${KEYS_MARK}columns: strict needs every schema column mapped; ${tomlKey(column)} is not (add ${tomlKey(column)} = "<dot path or capture>")`,
    });
  }
}

function tableKeys<T extends ParserKeys>({ dataset, addIssue }: v.RawCheckContext<T>) {
  if (!dataset.typed) return;
  const table: ParserKeys = dataset.value;
  const hasCommand = table["on-file"] !== undefined;
  const hasFormat = table.format !== undefined;
  if (hasCommand && hasFormat) {
    addIssue({
      message: `${KEYS_MARK}format, on-file: give one of them: format (dirq reads the files) or on-file (a program does)`,
    });
  } else if (!hasCommand && !hasFormat) {
    addIssue({
      message: `${KEYS_MARK}format: is required (or on-file): one of ${FORMAT_LIST}, or a parser command in on-file`,
    });
  }
  if (table.timeout !== undefined && !hasCommand) {
    addIssue({
      message: `${KEYS_MARK}timeout: applies only with on-file (it limits how long the hook runs for one file)`,
    });
  }
  if (table.each !== undefined && !(hasFormat && NESTED.has(table.format as string))) {
    addIssue({
      message: `${KEYS_MARK}each: applies only with format = "json", "jsonl", "yaml", "toml" or "auto" (it names the array inside each file that holds the rows)`,
    });
  }
  shapeKeys(table, addIssue);
}

const tableEntry = v.pipe(
  strictTable(
    {
      name: identifier,
      glob: tableGlob,
      schema: v.optional(columnSchema),
      columns: v.optional(columnMapping),
      strict: v.optional(v.boolean(expected("true or false"))),
      "on-file": v.optional(nonEmptyString),
      format: v.optional(formatName),
      each: v.optional(eachPath),
      ddl: v.optional(nonEmptyString),
      timeout: v.optional(v.pipe(v.unknown(), hookTimeout)),
    },
    "a table",
  ),
  v.rawCheck(tableKeys),
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

/** `table[1].schema.title`, `table[0].schema."Region Name"`, from a path of keys. */
export function formatKeyPath(path: readonly PropertyKey[]): string {
  let text = "";
  for (const part of path) {
    if (typeof part === "number") {
      text += `[${part}]`;
      continue;
    }
    const key = tomlKey(String(part));
    text += text === "" ? key : `.${key}`;
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
  if (issue.message.startsWith(KEYS_MARK)) {
    const [keys = "", ...rest] = issue.message.slice(KEYS_MARK.length).split(": ");
    const named = keys.split(", ").map((key) => formatKeyPath([...path, key]));
    return `${named.join(", ")}: ${rest.join(": ")}`;
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
