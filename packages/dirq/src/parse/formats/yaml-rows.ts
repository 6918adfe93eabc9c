import type * as Yaml from "yaml";
import { lazyModule } from "../../lazy-module.js";
import type { HookRow } from "../hook-rows.js";
import { documentRows, RowsError } from "./document-rows.js";
import { refuseDeepNesting } from "./nesting.js";
import { storedPlainValue } from "./plain-values.js";

const yaml = lazyModule<typeof Yaml>("yaml");

/**
 * YAML read as Python's `yaml.safe_load` reads it (YAML 1.1: `yes`/`no` are booleans, `<<`
 * merges, `2024-01-05` is a date), by the `yaml` package. Dates and times stay ISO-8601 text as
 * written (`2001-12-14T21:59:43.10-05:00`), never moved to another time zone. A file of several
 * documents (`---` between them) gives the rows of each in turn; an empty document none.
 */

/** YAML 1.1's timestamp, resolved to ISO-8601 text instead of a `Date`. */
const TIMESTAMP =
  /^(\d{4})-(\d\d?)-(\d\d?)(?:(?:[Tt]|[ \t]+)(\d\d?):(\d\d):(\d\d)(\.\d+)?(?:[ \t]*(Z|[-+]\d\d?(?::?\d\d)?))?)?$/;

function pad(text: string): string {
  return text.padStart(2, "0");
}

/** `2001-12-14 21:59:43.10 -5` as `2001-12-14T21:59:43.10-05:00`. */
export function timestampText(text: string): string {
  const match = TIMESTAMP.exec(text);
  if (match === null) return text;
  const [, year, month, day, hour, minute, second, fraction, zone] = match as unknown as (
    string | undefined
  )[];
  const date = `${year}-${pad(month ?? "")}-${pad(day ?? "")}`;
  if (hour === undefined) return date;
  let offset = "";
  if (zone === "Z") offset = "Z";
  else if (zone !== undefined) {
    const [, sign, hours, minutes] = /^([-+])(\d\d?):?(\d\d)?$/.exec(zone) ?? [];
    offset = `${sign}${pad(hours ?? "0")}:${minutes ?? "00"}`;
  }
  return `${date}T${pad(hour)}:${minute}:${second}${fraction ?? ""}${offset}`;
}

let tags: Yaml.Tags | null = null;

const TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp";
const BOOL_TAG = "tag:yaml.org,2002:bool";
const INT_TAG = "tag:yaml.org,2002:int";
const FLOAT_TAG = "tag:yaml.org,2002:float";

/**
 * PyYAML's resolvers (SafeLoader), where the `yaml` package's YAML 1.1 schema reads more: `y`
 * and `n` stay text, as do `09`, `1e5` (an exponent needs a dot and a sign) and `e2`.
 */
const PY_TRUE = /^(?:yes|Yes|YES|true|True|TRUE|on|On|ON)$/;
const PY_FALSE = /^(?:no|No|NO|false|False|FALSE|off|Off|OFF)$/;
const PY_DECIMAL = /^[-+]?(?:0|[1-9][0-9_]*)$/;
const PY_FLOAT =
  /^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?)$/;

/** The YAML 1.1 schema's tags as PyYAML resolves plain scalars; timestamps as text. */
function customTags(defaults: Yaml.Tags): Yaml.Tags {
  tags ??= defaults.flatMap((tag): Yaml.Tags => {
    if (typeof tag !== "object") return [tag];
    const scalar = tag as Yaml.ScalarTag;
    if (scalar.tag === TIMESTAMP_TAG) {
      return [{ ...scalar, resolve: (text: string) => timestampText(text), identify: () => false }];
    }
    if (scalar.tag === BOOL_TAG && scalar.test !== undefined) {
      return [{ ...scalar, test: scalar.test.test("true") ? PY_TRUE : PY_FALSE }];
    }
    if (scalar.tag === INT_TAG && scalar.format === undefined)
      return [{ ...scalar, test: PY_DECIMAL }];
    if (scalar.tag === FLOAT_TAG && scalar.format === "EXP") return [];
    if (scalar.tag === FLOAT_TAG && scalar.format === undefined && scalar.test?.test("1.5")) {
      return [
        {
          ...scalar,
          test: PY_FLOAT,
          resolve: (text: string) => parseFloat(text.replaceAll("_", "")),
        },
      ];
    }
    return [tag];
  });
  return tags;
}

const OPTIONS = {
  version: "1.1",
  merge: true,
  // As PyYAML: a key repeated in one mapping keeps its last value.
  uniqueKeys: false,
  intAsBigInt: true,
  customTags,
  // Collection keys are refused before `toJS` (see `collectionKey`), which would stringify
  // them with a warning on stderr.
  logLevel: "error",
} as const;

/**
 * The first mapping or list used as a mapping key (`? [a, b] : c`, or a template's
 * `title: {{ x }}`, a mapping whose key is a mapping), or `null`. PyYAML refuses such a key
 * ("found unhashable key"); the `yaml` package would make it text, a key no file wrote.
 */
function collectionKey(document: Yaml.Document.Parsed): Yaml.Node | null {
  const { isAlias, isCollection, visit } = yaml();
  let found: Yaml.Node | null = null;
  visit(document, {
    Pair(_, pair) {
      let key = pair.key;
      if (isAlias(key)) key = key.resolve(document) ?? null;
      if (!isCollection(key)) return undefined;
      found = key;
      return visit.BREAK;
    },
  });
  return found;
}

/** The first problem of a YAML text, with its line (`firstLine` is the text's first line). */
function yamlReason(error: Yaml.YAMLError, firstLine: number): string {
  const message = error.message.split("\n")[0]?.replace(/ at line \d+, column \d+:?$/, "") ?? "";
  const position = error.linePos?.[0];
  if (position === undefined) return `not valid YAML: ${message}`;
  return `line ${position.line + firstLine - 1}, column ${position.col}: ${message} (not valid YAML)`;
}

/** The parsed documents of a YAML text, or a `RowsError` naming the line. */
export function yamlDocuments(text: string, firstLine = 1): unknown[] {
  refuseDeepNesting(text, firstLine, true);
  const lineCounter = new (yaml().LineCounter)();
  const documents = yaml().parseAllDocuments(text, { ...OPTIONS, lineCounter });
  // A stream that is empty, or only comments, parses to no document (or an EmptyStream).
  if (!Array.isArray(documents)) return [];
  const values: unknown[] = [];
  for (const document of documents) {
    const error = document.errors[0];
    if (error !== undefined) throw new RowsError(yamlReason(error, firstLine));
    const key: Yaml.Node | null = collectionKey(document);
    if (key !== null) {
      const { line, col } = lineCounter.linePos(key.range?.[0] ?? 0);
      const what = yaml().isMap(key) ? "a mapping" : "a list";
      throw new RowsError(
        `line ${line + firstLine - 1}, column ${col}: ${what} used as a key (only text, numbers, booleans, dates and null can be keys, as in Python's yaml; a template's {{ }}? quote the value)`,
      );
    }
    try {
      values.push(document.toJS({ maxAliasCount: 1000 }));
    } catch (caught) {
      throw new RowsError(`not valid YAML: ${(caught as Error).message}`);
    }
  }
  return values;
}

/** A YAML file's rows: each document's, in order; a document that is empty has none. */
export function yamlRows(text: string, each: string | null, rows: HookRow[]): void {
  for (const document of yamlDocuments(text)) {
    if (document === null || document === undefined) continue;
    documentRows(document, each, storedPlainValue, rows);
  }
}
