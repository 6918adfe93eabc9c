import type * as LosslessJson from "lossless-json";
import { lazyModule } from "../lazy-module.js";

const losslessJson = lazyModule<typeof LosslessJson>("lossless-json");

/**
 * The exact-number JSON reader: what a program printed (a hook's rows, a worker function's
 * reply) read with numbers typed as SQLite's own `json_extract` types them, so that a value
 * stored from JSON is the value `json_extract` would give:
 *
 * - an integer literal (`3`, `-0`, `9007199254740993`) is an INTEGER, exact, while it fits in
 *   64 bits; beyond that it is a REAL;
 * - any other number literal is a REAL, also when its value is whole (`3.0`, `1e5`, `-0.0`,
 *   as Python's `json.dumps` writes floats); past the double range it is ±Infinity;
 * - true and false are the INTEGERs 1 and 0; a nested array or object is stored as its JSON
 *   text, in which integers beyond 2^53 and whole-valued REALs keep the digits they were
 *   written with (other numbers and escapes are written as JSON.stringify writes them).
 *
 * `parseExactJson` gives the parsed document; `stored` of one of its values gives the value
 * to store. The parser is V8's own (JSON.parse): the literals it would misread (integers of 16
 * digits or more, whole-valued REALs) are first rewritten as marked strings. A general
 * exact-number parser costs tens of times the memory of the text on output full of long
 * digit runs; it is used only for text that already holds the mark character.
 */

/** A value as stored: INTEGER as bigint so SQLite keeps it an integer, nested JSON as text. */
export type StoredValue = null | bigint | number | string | Buffer;

export interface ExactJson {
  data: unknown;
  /** A value of `data` (at any depth) as stored. */
  stored(value: unknown): StoredValue;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** An integer literal: INTEGER within 64 bits, else a REAL, as `json_extract` reads it. */
function integerLiteral(text: string): bigint | number {
  const exact = BigInt(text);
  return exact >= INT64_MIN && exact <= INT64_MAX ? exact : Number(text);
}

const INTEGER_LITERAL = /^-?\d+$/;

/**
 * A JavaScript value as stored: a number that is a safe integer is taken for an integer
 * literal (the reader never leaves a whole-valued REAL as a plain number), booleans are 0/1,
 * bytes a BLOB, nesting is JSON text. Also for values that come from JavaScript rather than JSON text.
 */
export function toStoredValue(value: unknown): StoredValue {
  if (value === null || value === undefined) return null;
  if (typeof value === "boolean") return value ? 1n : 0n;
  if (typeof value === "number") return Number.isSafeInteger(value) ? BigInt(value) : value;
  if (typeof value === "bigint") {
    // Exact within SQLite's 64-bit INTEGER; beyond it a REAL, as SQLite itself reads such literals.
    return value >= INT64_MIN && value <= INT64_MAX ? value : Number(value);
  }
  if (typeof value === "string") return value;
  // Bytes (a Buffer, any Uint8Array) are a BLOB, copied: the caller may reuse its buffer.
  if (value instanceof Uint8Array) return Buffer.from(value);
  try {
    return JSON.stringify(value);
  } catch {
    // Only a bigint (an integer beyond 2^53, read exactly) makes JSON.stringify throw.
    return losslessJson().stringify(value) ?? "null";
  }
}

/**
 * A literal that JSON.parse would misread may be in the text: a run of 16 digits (an integer
 * beyond 2^53?), or a fraction or exponent that may be whole-valued (`3.0`, `2.50`, `1e5`).
 * Matches inside strings too (then the scan finds nothing to rewrite): only a pre-check.
 */
const MAY_NEED_MARKS = /\d{16}|\d\.0*(?!\d)|\d[eE]/;

/**
 * Marks a rewritten literal: private-use characters, the second telling a REAL from an
 * integer. Used only when the text holds no such character (raw or escaped), so a mark cannot
 * be confused with text.
 */
const INTEGER_MARK = "\uE000";
const REAL_MARK = "\uE001";
const MARK_IN_TEXT = /[\uE000\uE001]|\\u[eE]00[01]/;
const MARKED_IN_JSON = /"[\uE000\uE001]([-+.\deE]+)"/g;

/** A marked literal back as its value; any other string as it is. */
function unmarkString(value: string): StoredValue {
  const mark = value.charCodeAt(0);
  if (mark === 0xe000) return integerLiteral(value.slice(1));
  if (mark === 0xe001) return Number(value.slice(1));
  return value;
}

/** The end of the JSON string whose opening quote is at `open` (after its closing quote). */
export function stringEnd(text: string, open: number): number {
  let close = text.indexOf('"', open + 1);
  for (;;) {
    if (close === -1) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(close - 1 - backslashes) === 92) backslashes++;
    if (backslashes % 2 === 0) return close + 1;
    close = text.indexOf('"', close + 1);
  }
}

/**
 * A number literal as JSON writes one. A token that is not one is left as it is, for
 * JSON.parse to refuse (`2.`, `2.e3`, `01`: marked, they would have read as numbers).
 */
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

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
 * Rewrites, outside strings, each integer literal of 16 digits or more and each whole-valued
 * REAL literal as a marked string; `null` when there is none. One pass; strings are skipped
 * with native searches.
 */
function markLiterals(text: string): string | null {
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
      const token = text.slice(start, i);
      let mark: string | null = null;
      if (!JSON_NUMBER.test(token)) {
        mark = null;
      } else if (INTEGER_LITERAL.test(token)) {
        if (token.length >= 16) mark = INTEGER_MARK;
      } else if (Number.isInteger(Number(token))) {
        // `3.0`, `1e5`, `-0.0`: JSON.parse would give a number that looks like an integer.
        mark = REAL_MARK;
      }
      if (mark !== null) {
        parts.push(text.slice(copied, start), `"${mark}${token}"`);
        copied = i;
      }
    } else {
      i++;
    }
  }
  if (copied === 0) return null;
  parts.push(text.slice(copied));
  return parts.join("");
}

/** Nothing was marked: JSON.parse's values are as good as exact. */
const PLAIN: (value: unknown) => StoredValue = toStoredValue;

/** Values of a marked document: marks turned back into numbers, nested text as written. */
function storedMarked(value: unknown): StoredValue {
  if (typeof value === "string") return unmarkString(value);
  if (value === null || typeof value !== "object") return toStoredValue(value);
  // Nested JSON is stored as its text: put the literals back as written.
  return JSON.stringify(value).replace(MARKED_IN_JSON, "$1");
}

/** Values of a document read by lossless-json: every number is a LosslessNumber. */
function storedLossless(value: unknown): StoredValue {
  const json = losslessJson();
  if (json.isLosslessNumber(value)) {
    const text = value.value;
    return INTEGER_LITERAL.test(text) ? integerLiteral(text) : Number(text);
  }
  if (value === null || typeof value !== "object") return toStoredValue(value);
  return json.stringify(value) ?? "null";
}

/** Parses JSON text (throws on invalid JSON, as JSON.parse does). */
export function parseExactJson(text: string): ExactJson {
  if (!MAY_NEED_MARKS.test(text)) return { data: JSON.parse(text), stored: PLAIN };
  if (MARK_IN_TEXT.test(text)) return { data: losslessJson().parse(text), stored: storedLossless };
  const rewritten = markLiterals(text);
  if (rewritten === null) return { data: JSON.parse(text), stored: PLAIN };
  return { data: JSON.parse(rewritten), stored: storedMarked };
}
