import type { StoredValue } from "../hook-rows.js";

/**
 * Values of a YAML or TOML document as stored. Their readers give integers as bigint (exact) and
 * every other number as a float, so a number here is always a REAL, also when whole (`3.0`), as
 * Python's `yaml` and `tomllib` read it. Dates are ISO-8601 text; nesting is JSON text. YAML's
 * `!!binary` is a BLOB, and inside a nested value's JSON text its lowercase hex (as dirq's JSON
 * output writes a BLOB).
 */

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** A TOML date, time or date-time as ISO-8601 text, without a `.000` that was never written. */
export function isoText(date: Date): string {
  return date.toISOString().replace(/\.000(?=Z|[+-]\d|$)/, "");
}

/** Marks a bigint in nested JSON text while it is written (the mark is stripped after). */
const BIGINT_MARK = "\uE002";
const MARKED_BIGINT = /"\uE002(-?\d+(?:\.0)?)"/g;

function nestedJson(value: object): string {
  let marked = false;
  const text = JSON.stringify(value, function (this: Record<string, unknown>, key, item) {
    const original = this[key];
    if (original instanceof Date) return isoText(original);
    if (original instanceof Uint8Array) return Buffer.from(original).toString("hex");
    if (typeof item === "bigint") {
      marked = true;
      return `${BIGINT_MARK}${item}`;
    }
    // Integers are bigint here, so a whole number is a float: written `3.0`, as Python writes it.
    if (typeof item === "number" && Number.isInteger(item) && Math.abs(item) < 1e16) {
      marked = true;
      return `${BIGINT_MARK}${item}.0`;
    }
    return item as unknown;
  });
  return marked ? text.replace(MARKED_BIGINT, "$1") : text;
}

export function storedPlainValue(value: unknown): StoredValue {
  switch (typeof value) {
    case "string":
      return value;
    case "number":
      return value;
    case "bigint":
      return value >= INT64_MIN && value <= INT64_MAX ? value : Number(value);
    case "boolean":
      return value ? 1n : 0n;
    case "undefined":
      return null;
    default:
      if (value === null) return null;
      if (value instanceof Date) return isoText(value);
      if (value instanceof Uint8Array) return Buffer.from(value);
      return nestedJson(value as object);
  }
}
