import type * as LosslessJson from "lossless-json";
import { lazyModule } from "../lazy-module.js";
import { INTERNAL_PREFIX } from "../shared/reserved-names.js";
import { foldName } from "../shared/sql-names.js";
import { parseExactJson, type StoredValue, toStoredValue } from "./exact-json.js";
import type { RowValue } from "./large-text.js";

export { type StoredValue, toStoredValue };

const losslessJson = lazyModule<typeof LosslessJson>("lossless-json");

/**
 * One row of a hook's output: column name → value, in the hook's key order. A large text value
 * read on the output thread is a `LargeText`.
 */
export type HookRow = Map<string, RowValue>;

export type ParsedOutput = { ok: true; rows: HookRow[] } | { ok: false; reason: string };

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** Sixteen digits or more may be an integer beyond 2^53, which JSON.parse would round. */
const LONG_NUMBER = /\d{16}/;

function parseNumber(text: string): number | bigint {
  if (/^-?\d+$/.test(text)) {
    const exact = BigInt(text);
    if (exact > BigInt(Number.MAX_SAFE_INTEGER) || exact < BigInt(Number.MIN_SAFE_INTEGER)) {
      return exact;
    }
  }
  return Number(text);
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
  return parseJsonExactRows(stdout, { whole: "hook printed", row: "the hook's output" });
}

/**
 * JSON text that must be an array of row objects, read as a hook's output is (exact numbers);
 * `source` names who produced it, as for `toRows`.
 */
export function parseJsonExactRows(
  text: string | Uint8Array,
  source: { whole: string; row: string },
  taggedBytes = false,
): ParsedOutput {
  const bytes =
    typeof text === "string" ? null : Buffer.from(text.buffer, text.byteOffset, text.byteLength);
  let parsed: ReturnType<typeof parseExactJson>;
  try {
    parsed = parseExactJson(bytes === null ? (text as string) : bytes.toString("utf8"));
  } catch (error) {
    const excerpt = (bytes ?? Buffer.from(text as string, "utf8")).toString("utf8", 0, 80).trim();
    return {
      ok: false,
      reason: `${source.whole} invalid JSON (${(error as Error).message}); output began: ${JSON.stringify(excerpt)}`,
    };
  }
  return toRows(parsed.data, source, taggedBytes ? withTaggedBytes(parsed.stored) : parsed.stored);
}

/**
 * `stored`, and a value `{"$base64": "..."}` (nothing else in the object) a BLOB of those
 * bytes: how an extract function that answers in JSON text (the Python SDK's) gives bytes.
 */
function withTaggedBytes(stored: (value: unknown) => StoredValue): (value: unknown) => StoredValue {
  return (value) => {
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      const keys = Object.keys(value);
      const tag = (value as { $base64?: unknown }).$base64;
      if (keys.length === 1 && typeof tag === "string") return Buffer.from(tag, "base64");
    }
    return stored(value);
  };
}

/**
 * Checks that `data` is an array of row objects and converts their values as stored. `source`
 * names who produced it, for the reason a file is skipped (`hook printed`, `the hook's output`);
 * `stored` turns a value into its stored form (the exact-number reader's, for JSON text).
 */
export function toRows(
  data: unknown,
  source: { whole: string; row: string },
  stored: (value: unknown) => StoredValue = toStoredValue,
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
      row.set(key, stored(value));
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
        const folded = foldName(key);
        if (!columns.has(folded)) columns.set(folded, key);
      }
    }
  }
  return [...columns.values()];
}

/**
 * Reads JSON from another producer exactly as a hook's output is read (`parseExactJson`):
 * a value taken out of `data` through `exact` is what the same value of a hook's output is
 * stored as (INTEGER within 64 bits exact, whole-valued REALs stay REAL, nested JSON as its
 * text). Worker replies use it, so a worker's result and a hook's value are stored alike.
 */
export function parseJsonLikeHookOutput(text: string): {
  data: unknown;
  exact: (value: unknown) => StoredValue;
} {
  const { data, stored } = parseExactJson(text);
  return { data, exact: stored };
}
