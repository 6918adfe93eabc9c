import { INTERNAL_PREFIX } from "../../shared/reserved-names.js";
import type { HookRow, StoredValue } from "../hook-rows.js";

/**
 * Rows out of a parsed document (JSON, a JSON Lines line, YAML, TOML): an array of objects is
 * one row per object, an object is one row, and `each` names the array (or object) deeper in
 * the document that holds them. Anything else is the file's error, said so that the user can
 * tell what the file holds and what to change.
 */

/** Thrown for a document that holds no rows where they are expected; caught per file. */
export class RowsError extends Error {}

function describe(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return typeof value === "bigint" ? "a number" : `a ${typeof value}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

const UNDERSCORE = 0x5f;

/** One object as a row: its keys in order, values as stored, dirq's own names left out. */
export function objectRow(
  object: Record<string, unknown>,
  stored: (value: unknown) => StoredValue,
): HookRow {
  const row: HookRow = new Map();
  for (const key of Object.keys(object)) {
    if (key.charCodeAt(0) === UNDERSCORE && INTERNAL_PREFIX.test(key)) continue;
    row.set(key, stored(object[key]));
  }
  return row;
}

/** Splits `each` (`a.b.0.c`) into its steps; an empty step is a config error elsewhere. */
export function eachSteps(each: string): string[] {
  return each.split(".");
}

/** The value `each` names inside `document`, or a `RowsError` saying where the path stops. */
function follow(document: unknown, each: string): unknown {
  let value = document;
  let where = "";
  for (const step of eachSteps(each)) {
    const at = where === "" ? "the document" : `'${where}'`;
    if (Array.isArray(value) && /^\d+$/.test(step)) {
      if (Number(step) >= value.length) {
        throw new RowsError(`each '${each}': ${at} has no item ${step}`);
      }
      value = value[Number(step)];
    } else if (isRecord(value)) {
      if (!Object.prototype.hasOwnProperty.call(value, step)) {
        throw new RowsError(`each '${each}': ${at} has no key '${step}'`);
      }
      value = value[step];
    } else {
      throw new RowsError(`each '${each}': ${at} is ${describe(value)}, not an object`);
    }
    where = where === "" ? step : `${where}.${step}`;
  }
  return value;
}

/**
 * The rows of one document, appended to `rows`. `each` (or `null`) names where they are;
 * `stored` converts a value to what is stored (the exact-number reader's for JSON text).
 * `firstItem`: for an array that is some items of a longer one, where the first of them is in it.
 */
export function documentRows(
  document: unknown,
  each: string | null,
  stored: (value: unknown) => StoredValue,
  rows: HookRow[],
  firstItem = 0,
): void {
  const value = each === null ? document : follow(document, each);
  const what = each === null ? "the file" : `each '${each}'`;
  if (isRecord(value)) {
    rows.push(objectRow(value, stored));
    return;
  }
  if (!Array.isArray(value)) {
    const hint = each === null ? " (give `each` to name the array that holds them)" : "";
    throw new RowsError(
      `${what} holds ${describe(value)}, expected an array of objects or an object${hint}`,
    );
  }
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    if (!isRecord(item)) {
      throw new RowsError(
        `item ${firstItem + i} of ${each === null ? "the array" : `each '${each}'`} is ${describe(item)}, expected an object`,
      );
    }
    rows.push(objectRow(item, stored));
  }
}
