import type * as LosslessJson from "lossless-json";
import { lazyModule } from "../lazy-module.js";

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

function parseNumber(text: string): number | bigint {
  if (/^-?\d+$/.test(text)) {
    const exact = BigInt(text);
    if (exact > BigInt(Number.MAX_SAFE_INTEGER) || exact < BigInt(Number.MIN_SAFE_INTEGER)) {
      return exact;
    }
  }
  return Number(text);
}

/** JSON.parse, but integers beyond 2^53 come back exact (as bigint). */
export function parseJson(text: string): unknown {
  if (!LONG_NUMBER.test(text)) return JSON.parse(text);
  return losslessJson().parse(text, null, parseNumber);
}

/** Keys a hook may not set: the hidden columns and anything else in dirq's namespace. */
function isReservedKey(key: string): boolean {
  return /^_dirq_/i.test(key);
}

/**
 * Reads a hook's stdout: it must be a JSON array of objects (`[]` is zero rows). Anything else
 * is a reason to skip the file, never an exception.
 */
export function parseHookOutput(stdout: Buffer): ParsedOutput {
  let data: unknown;
  try {
    data = parseJson(stdout.toString("utf8"));
  } catch (error) {
    const excerpt = stdout.toString("utf8", 0, 80).trim();
    return {
      ok: false,
      reason: `hook printed invalid JSON (${(error as Error).message}); output began: ${JSON.stringify(excerpt)}`,
    };
  }
  return toRows(data, { whole: "hook printed", row: "the hook's output" });
}

/**
 * Checks that `data` is an array of row objects and converts their values as stored. `source`
 * names who produced it, for the reason a file is skipped (`hook printed`, `the hook's output`).
 */
export function toRows(data: unknown, source: { whole: string; row: string }): ParsedOutput {
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
    for (const [key, value] of Object.entries(item)) {
      if (!isReservedKey(key)) row.set(key, toStoredValue(value));
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
  for (const rows of rowSets) {
    for (const row of rows) {
      for (const key of row.keys()) {
        const folded = key.toLowerCase();
        if (!columns.has(folded)) columns.set(folded, key);
      }
    }
  }
  return [...columns.values()];
}
