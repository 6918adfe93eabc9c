import type * as LosslessJson from "lossless-json";
import { lazyModule } from "../lazy-module.js";
import { INTERNAL_PREFIX } from "../shared/reserved-names.js";

const losslessJson = lazyModule<typeof LosslessJson>("lossless-json");

/** A value as stored: INTEGER as bigint so SQLite keeps it an integer, nested JSON as text. */
export type StoredValue = null | bigint | number | string;

/** One row of a hook's output: column name → value, in the hook's key order. */
export type HookRow = Map<string, StoredValue>;

export type ParsedOutput = { ok: true; rows: HookRow[] } | { ok: false; reason: string };

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** JSON value → stored value: numbers keep their kind, booleans are 0/1, nesting is JSON text. */
export function toStoredValue(value: unknown): StoredValue {
  if (value === null || value === undefined) return null;
  if (typeof value === "boolean") return value ? 1n : 0n;
  if (typeof value === "number") return Number.isSafeInteger(value) ? BigInt(value) : value;
  if (typeof value === "bigint") {
    // Exact within SQLite's 64-bit INTEGER; beyond it a REAL, as SQLite itself reads such literals.
    return value >= INT64_MIN && value <= INT64_MAX ? value : Number(value);
  }
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value);
  } catch {
    // Only a bigint (an integer beyond 2^53, read exactly) makes JSON.stringify throw.
    return losslessJson().stringify(value) ?? "null";
  }
}

/** Sixteen digits or more may be an integer beyond 2^53, which JSON.parse would round. */
const LONG_NUMBER = /\d{16}/;

/**
 * Marks a long integer turned into a string before JSON.parse: a private-use character. Used
 * only when the text holds no such character (raw or escaped), so it cannot be confused.
 */
const MARK = "\uE000";
const MARK_IN_TEXT = /\uE000|\\u[eE]000/;
const MARKED_IN_JSON = /"\uE000(-?\d+)"/g;

function parseNumber(text: string): number | bigint {
  if (/^-?\d+$/.test(text)) {
    const exact = BigInt(text);
    if (exact > BigInt(Number.MAX_SAFE_INTEGER) || exact < BigInt(Number.MIN_SAFE_INTEGER)) {
      return exact;
    }
  }
  return Number(text);
}

/** A parsed value with marked long integers turned back into exact ones. */
function unmark(value: unknown): unknown {
  if (typeof value === "string") {
    return value.startsWith(MARK) ? parseNumber(value.slice(MARK.length)) : value;
  }
  if (value === null || typeof value !== "object") return value;
  // Nested JSON is stored as its text: put the digits back as written.
  return JSON.stringify(value).replace(MARKED_IN_JSON, "$1");
}

/**
 * JSON.parse, but integers beyond 2^53 come back exact (as bigint). Long integer literals are
 * rewritten as marked strings so the native parser does the work: a general exact-number
 * parser costs tens of times the memory of the text on output full of long digit runs.
 * Returns whether values need `unmark`.
 */
function parseJson(text: string): { data: unknown; marked: boolean } {
  if (!LONG_NUMBER.test(text)) return { data: JSON.parse(text), marked: false };
  if (MARK_IN_TEXT.test(text)) {
    return { data: losslessJson().parse(text, null, parseNumber), marked: false };
  }
  const rewritten = markLongIntegers(text);
  return { data: JSON.parse(rewritten ?? text), marked: rewritten !== null };
}

/** The end of the JSON string whose opening quote is at `open` (after its closing quote). */
function stringEnd(text: string, open: number): number {
  let close = text.indexOf('"', open + 1);
  for (;;) {
    if (close === -1) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(close - 1 - backslashes) === 92) backslashes++;
    if (backslashes % 2 === 0) return close + 1;
    close = text.indexOf('"', close + 1);
  }
}

function isNumberChar(code: number): boolean {
  // 0-9 . e E + -
  return (
    (code >= 48 && code <= 57) ||
    code === 46 ||
    code === 101 ||
    code === 69 ||
    code === 43 ||
    code === 45
  );
}

/**
 * Rewrites each integer literal of 16 digits or more (outside strings) as a marked string;
 * `null` when there is none. One pass; strings are skipped with native searches.
 */
function markLongIntegers(text: string): string | null {
  const parts: string[] = [];
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (code === 34) {
      i = stringEnd(text, i);
    } else if (code === 45 || (code >= 48 && code <= 57)) {
      const start = i;
      while (i < text.length && isNumberChar(text.charCodeAt(i))) i++;
      if (i - start >= 16) {
        const token = text.slice(start, i);
        if (/^-?\d+$/.test(token)) {
          parts.push(text.slice(copied, start), `"${MARK}${token}"`);
          copied = i;
        }
      }
    } else {
      i++;
    }
  }
  if (copied === 0) return null;
  parts.push(text.slice(copied));
  return parts.join("");
}

/**
 * JSON.parse, but integers beyond 2^53 come back exact (as bigint), also inside nested
 * values. For small texts (event rows); hook output goes through `parseJson`.
 */
export function parseJsonExact(text: string): unknown {
  if (!LONG_NUMBER.test(text)) return JSON.parse(text);
  return losslessJson().parse(text, null, parseNumber);
}

const UNDERSCORE = 0x5f;

/** Keys a hook may not set: the hidden columns and anything else in dirq's namespace. */
function isReservedKey(key: string): boolean {
  return INTERNAL_PREFIX.test(key);
}

/**
 * Reads a hook's stdout: it must be a JSON array of objects (`[]` is zero rows). Anything else
 * is a reason to skip the file, never an exception.
 */
export function parseHookOutput(stdout: Buffer): ParsedOutput {
  let data: unknown;
  let marked: boolean;
  try {
    ({ data, marked } = parseJson(stdout.toString("utf8")));
  } catch (error) {
    const excerpt = stdout.toString("utf8", 0, 80).trim();
    return {
      ok: false,
      reason: `hook printed invalid JSON (${(error as Error).message}); output began: ${JSON.stringify(excerpt)}`,
    };
  }
  return toRows(data, { whole: "hook printed", row: "the hook's output" }, marked);
}

/**
 * Checks that `data` is an array of row objects and converts their values as stored. `source`
 * names who produced it, for the reason a file is skipped (`hook printed`, `the hook's output`);
 * `marked`: long integers were marked by `parseJson` and are turned back into exact ones.
 */
export function toRows(
  data: unknown,
  source: { whole: string; row: string },
  marked = false,
): ParsedOutput {
  if (!Array.isArray(data)) {
    return {
      ok: false,
      reason: `${source.whole} ${describe(data)}, expected a JSON array of row objects`,
    };
  }
  const rows: HookRow[] = [];
  for (let i = 0; i < data.length; i++) {
    const item: unknown = data[i];
    if (item === null || typeof item !== "object" || Array.isArray(item)) {
      return {
        ok: false,
        reason: `row ${i} of ${source.row} is ${describe(item)}, expected an object`,
      };
    }
    const row: HookRow = new Map();
    const object = item as Record<string, unknown>;
    // Runs for every row of every file: keys without a pair array each, and the reserved-name
    // test only for keys that start with `_`.
    for (const key of Object.keys(object)) {
      if (key.charCodeAt(0) === UNDERSCORE && isReservedKey(key)) continue;
      const value = object[key];
      row.set(key, toStoredValue(marked ? unmark(value) : value));
    }
    rows.push(row);
  }
  return { ok: true, rows };
}

/**
 * Columns as the union of keys in first-seen order. SQLite column names ignore ASCII case, so
 * `Title` and `title` are one column, spelled as first seen.
 */
export function inferColumns(rowSets: Iterable<readonly HookRow[]>): string[] {
  const columns = new Map<string, string>();
  // Keys as spelled that were already folded: most rows repeat the same few keys.
  const seen = new Set<string>();
  for (const rows of rowSets) {
    for (const row of rows) {
      for (const key of row.keys()) {
        if (seen.has(key)) continue;
        seen.add(key);
        const folded = key.toLowerCase();
        if (!columns.has(folded)) columns.set(folded, key);
      }
    }
  }
  return [...columns.values()];
}

/**
 * Reads JSON from another producer exactly as a hook's output is read (`parseJson`): integers
 * beyond 2^53 come back exact, and a value taken out of `data` becomes what a hook's value
 * would be once passed through `exact` (nested JSON as its text, digits as written). Worker
 * replies use it, so a worker's result and a hook's value are stored alike.
 */
export function parseJsonLikeHookOutput(text: string): {
  data: unknown;
  exact: (value: unknown) => unknown;
} {
  const { data, marked } = parseJson(text);
  return { data, exact: marked ? unmark : (value) => value };
}
