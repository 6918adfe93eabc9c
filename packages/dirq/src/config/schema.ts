import { z } from "zod";
import { INTERNAL_PREFIX } from "../shared/reserved-names.js";

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A declared column type: SQLite accepts a name with optional size, as in `VARCHAR(40)`. */
const COLUMN_TYPE = /^[A-Za-z][A-Za-z0-9_ ]*(\(\s*\d+\s*(,\s*\d+\s*)?\))?$/;

/** "is required" when the key is missing, else "expected <what>". */
function expected(what: string) {
  return {
    error: (issue: { input?: unknown }) =>
      issue.input === undefined ? "is required" : `expected ${what}`,
  };
}

const identifier = z
  .string(expected("a string"))
  .regex(
    IDENTIFIER,
    "expected an SQL identifier (letters, digits and _, not starting with a digit)",
  )
  .refine((name) => !INTERNAL_PREFIX.test(name), "names starting with _dirq_ are reserved for dirq")
  .refine((name) => !/^sqlite_/i.test(name), "names starting with sqlite_ are reserved for SQLite");

const nonEmptyString = z.string(expected("a string")).min(1, "must not be empty");

const tableEntry = z.strictObject({
  name: identifier,
  glob: nonEmptyString,
  schema: z
    .record(
      z.string().regex(IDENTIFIER, "column names must be SQL identifiers"),
      z.string(expected("a string")).regex(COLUMN_TYPE, "expected a column type"),
      {
        error: (issue: { code?: string; input?: unknown }) =>
          issue.code === "invalid_key"
            ? "column names must be SQL identifiers (letters, digits and _)"
            : issue.input === undefined
              ? "is required"
              : "expected a table of column = type",
      },
    )
    .superRefine((schema, context) => {
      const seen = new Set<string>();
      for (const column of Object.keys(schema)) {
        if (seen.has(column.toLowerCase())) {
          context.addIssue({
            code: "custom",
            path: [column],
            message: "duplicate column: SQLite column names ignore case",
          });
        }
        seen.add(column.toLowerCase());
      }
    })
    .optional(),
  "on-file": nonEmptyString,
  ddl: nonEmptyString.optional(),
});

const extensionEntry = z.strictObject({
  path: nonEmptyString,
  entrypoint: nonEmptyString.optional(),
});

const functionEntry = z.strictObject({
  name: identifier,
  command: nonEmptyString,
  deterministic: z.boolean(expected("true or false")).optional(),
});

/** One `.dirq.toml` file as written (relative paths not yet resolved). */
export const configFileSchema = z.strictObject({
  dirq: z
    .strictObject({
      ignore: z.array(nonEmptyString, expected("an array of strings")).optional(),
      extension: z.array(extensionEntry, expected("an array of tables")).optional(),
      function: z.array(functionEntry, expected("an array of tables")).optional(),
    })
    .optional(),
  table: z.array(tableEntry, expected("an array of tables ([[table]])")).optional(),
});

export type ConfigFile = z.infer<typeof configFileSchema>;

/** `table[1].schema.title` from zod's path. */
export function formatKeyPath(path: readonly PropertyKey[]): string {
  let text = "";
  for (const part of path) {
    if (typeof part === "number") text += `[${part}]`;
    else text += text === "" ? String(part) : `.${String(part)}`;
  }
  return text;
}

/** One line per problem, each naming the key: `table[0].glob: expected a string`. */
export function describeIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    if (issue.code === "unrecognized_keys") {
      const keys = issue.keys.map((key) => formatKeyPath([...issue.path, key]));
      return `${keys.join(", ")}: unknown key${keys.length > 1 ? "s" : ""}`;
    }
    const where = formatKeyPath(issue.path);
    let message = issue.message;
    if (issue.code === "invalid_type" && message.startsWith("Invalid input")) {
      message = issue.input === undefined ? "is required" : `expected ${issue.expected}`;
    }
    return where === "" ? message : `${where}: ${message}`;
  });
}
