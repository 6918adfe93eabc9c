import assert from "node:assert/strict";
import { test } from "node:test";
import { parse as losslessParse, isLosslessNumber } from "lossless-json";
import { parseHookOutput, toStoredValue } from "../../src/parse/hook-rows.js";

/** A literal with a fraction or exponent: a REAL even when whole-valued, as json_extract reads it. */
class Real {
  constructor(readonly value: number) {}
}

/**
 * The reference: lossless-json reads every number exactly; integers become bigint when unsafe;
 * other literals are REAL.
 */
function reference(text: string): unknown[][] {
  const data = losslessParse(text, null, (value: string) => {
    if (/^-?\d+$/.test(value)) {
      const exact = BigInt(value);
      const safe =
        exact <= BigInt(Number.MAX_SAFE_INTEGER) && exact >= BigInt(Number.MIN_SAFE_INTEGER);
      return safe ? Number(value) : exact;
    }
    return new Real(Number(value));
  }) as Record<string, unknown>[];
  return data.map((row) =>
    Object.values(row).map((value) => {
      if (value instanceof Real) return value.value;
      return value !== null && typeof value === "object" && !isLosslessNumber(value)
        ? JSON.stringify(value, (_key, inner: unknown) =>
            typeof inner === "bigint" ? `\u0000${inner}\u0000` : inner,
          ).replace(/"\\u0000(-?\d+)\\u0000"/g, "$1")
        : toStoredValue(value);
    }),
  );
}

function rowsOf(text: string): unknown[][] {
  const parsed = parseHookOutput(Buffer.from(text));
  assert.ok(parsed.ok, text);
  return parsed.rows.map((row) => [...row.values()]);
}

/** A small seeded generator (mulberry32), so every run checks the same cases. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function digits(next: () => number, count: number): string {
  let text = String(1 + Math.floor(next() * 9));
  for (let i = 1; i < count; i++) text += String(Math.floor(next() * 10));
  return text;
}

function literal(next: () => number): string {
  const long = digits(next, 14 + Math.floor(next() * 12));
  switch (Math.floor(next() * 9)) {
    case 0:
      return `-${long}`;
    case 1:
      return `${long}.${digits(next, 3)}`;
    case 2:
      return `1e${digits(next, 2)}`;
    case 3:
      return JSON.stringify(`id ${long} "quoted" \\ ${long}`);
    case 4:
      return `[${long}, {"deep": -${long}}]`;
    case 5:
      return `{"${long}": ${long}}`;
    case 6:
      return String(Math.floor(next() * 1000));
    case 7:
      return `${digits(next, 3)}E+${digits(next, 2)}`;
    default:
      return long;
  }
}

test("long integers are exact, and agree with lossless-json on seeded cases", () => {
  const next = random(10);
  for (let i = 0; i < 300; i++) {
    const fields = Array.from(
      { length: 1 + Math.floor(next() * 5) },
      (_, j) => `"c${j}": ${literal(next)}`,
    );
    const text = `[{${fields.join(", ")}}]`;
    assert.deepEqual(rowsOf(text), reference(text), text);
  }
});

test("values at the edges of the safe and 64-bit ranges", () => {
  assert.deepEqual(
    rowsOf('[{"a": 9007199254740993, "b": 9223372036854775807, "c": 9223372036854775808}]'),
    [[9007199254740993n, 9223372036854775807n, 9223372036854775808]],
  );
  assert.deepEqual(rowsOf('[{"a": 1234567890123456}]'), [[1234567890123456n]]);
});

test("text holding the private-use mark still parses exactly", () => {
  const text = '[{"a": "\\ue000 12345678901234567890", "b": 1234567890123456789}]';
  assert.deepEqual(rowsOf(text), [["\ue000 12345678901234567890", 1234567890123456789n]]);
});

test("whole-valued REALs stay numbers (REAL), also nested and in text holding the mark", () => {
  // A plain number that is a safe integer is stored as an INTEGER (bigint); a literal with a
  // fraction or an exponent stays a number, and nested JSON keeps it as written.
  assert.deepEqual(rowsOf('[{"a": 3.0, "b": 1e5, "c": 3, "d": [1.0, 2.5, 1e2]}]'), [
    [3, 100000, 3n, "[1.0,2.5,1e2]"],
  ]);
  assert.ok(Object.is(rowsOf('[{"z": -0.0}]')[0]?.[0], -0));
  assert.deepEqual(rowsOf('[{"m": "\\ue000", "a": 3.0, "b": [1.0, 12345678901234567890]}]'), [
    ["\ue000", 3, "[1.0,12345678901234567890]"],
  ]);
});
