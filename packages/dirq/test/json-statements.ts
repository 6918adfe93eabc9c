/*
 * Seeded SQL statements whose answers hold every kind of value, for tests that compare JSON
 * written by SQLite with JSON written in JS (the server's and the CLI's).
 */

export const TEXTS = [
  "'plain'",
  "'it''s'",
  "'quote \" and back\\slash'",
  "char(0, 1, 8, 9, 10, 12, 13, 27, 31, 127)",
  "'ü é ß 漢字 😀'",
  "char(8232, 8233, 65279)",
  "'{\"a\": 1}'",
  "json('{\"a\": [1, 2]}')",
  "json_object('k', 'v')",
  "CAST(x'ff41' AS TEXT)",
  "''",
];
const INTEGERS = ["0", "-1", "42", "9223372036854775807", "-9223372036854775808", "1 << 53"];
/** Values SQLite's JSON would write differently: the answer goes the JS way. */
const ODD = ["1.0", "0.1", "-0.0", "1e300", "1e999", "1e999 - 1e999", "x'00ff'", "2.5e-7"];

/** A value as SQL; `odd`: maybe one SQLite writes otherwise than JS (REAL, BLOB). */
export function valueSql(random: () => number, odd: boolean): string {
  const kind = random();
  if (odd && kind < 0.3) return ODD[Math.floor(random() * ODD.length)] as string;
  if (kind < 0.55) return TEXTS[Math.floor(random() * TEXTS.length)] as string;
  if (kind < 0.85) return INTEGERS[Math.floor(random() * INTEGERS.length)] as string;
  return "NULL";
}

/** 1 to 300 (generate_series is not built into this SQLite). */
export const SERIES =
  "WITH RECURSIVE s(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM s WHERE value < 300)";

/** Column names, repeats and integer-like ones included. */
export const COLUMN_NAMES = ["a", "a", "b c", '"q"', "ü", "x\ty", "1", "2024", "10"];

/** A statement of 1-4 rows of 1-4 columns; every third one has a value SQLite writes otherwise. */
export function jsonStatement(random: () => number, index: number): string {
  const odd = index % 3 === 0;
  const columns = 1 + Math.floor(random() * 4);
  const rows = 1 + Math.floor(random() * 4);
  const select = (row: number) =>
    Array.from({ length: columns }, () => {
      const name = COLUMN_NAMES[Math.floor(random() * COLUMN_NAMES.length)] as string;
      return `${valueSql(random, odd && row === rows - 1)} AS "${name.replaceAll('"', '""')}"`;
    }).join(", ");
  const body = Array.from({ length: rows }, (_, row) => `SELECT ${select(row)}`).join(
    " UNION ALL ",
  );
  return index % 4 === 1 ? `${body} -- a trailing comment` : body;
}
