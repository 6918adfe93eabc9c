/*
 * Seeded SQL statements whose answers hold the values output formats find hard: quotes,
 * commas, line breaks, leading spaces, text beyond ASCII, repeated and numeric column names,
 * integers beyond 2^53, NULL, and (when asked) REALs, BLOBs and the 64-bit edges. The web
 * console's export tests (console-work.test.ts) and `--format csv`'s (output-csv.test.ts)
 * compare them with reference tools.
 */

const TEXTS = [
  "plain",
  "",
  "it's",
  'say "hi"',
  "a,b",
  "two\nlines",
  "cr\r\nlf",
  " lead",
  "tab\there",
  "ü é ß",
  "漢字",
  "😀 astral",
  "\ufb01 high BMP",
  "\ue000 private",
  "NULL",
  "10",
  "9",
  "-3",
  "=1+1",
];
const NAMES = ["a", "a", "2024", "1", "b c", 'q"q', "ü", "path"];

/** BLOBs, REALs of every shape and the integers at the ends of 64 bits, as SQL. */
const EDGES = [
  "x''",
  "x'00ff'",
  "x'41222c0a'",
  "2.0",
  "0.1",
  "-0.0",
  "1e300",
  "1.5e-7",
  "9e999",
  "-9e999",
  "9223372036854775807",
  "-9223372036854775808",
];

export interface SeededValues {
  /** REALs among the values (which sqlite3 and JavaScript write differently). */
  reals?: boolean;
  /** BLOBs, REAL edges (±Infinity, whole REALs) and the 64-bit integer edges too. */
  edges?: boolean;
}

function sqlText(text: string): string {
  if (text === "") return "''";
  // Control characters through char(): the statement itself stays on one line.
  return text
    .split(/([\n\r\t])/)
    .filter((part) => part !== "")
    .map((part) =>
      /^[\n\r\t]$/.test(part) ? `char(${part.charCodeAt(0)})` : `'${part.replaceAll("'", "''")}'`,
    )
    .join(" || ");
}

/** A value as SQL: text, an integer, a real, NULL or (with `edges`) one of EDGES. */
export function sqlValue(random: () => number, values: SeededValues = {}): string {
  const kind = random();
  if (kind < 0.5) return sqlText(TEXTS[Math.floor(random() * TEXTS.length)] as string);
  if (kind < 0.8) return String(Math.floor(random() * 2000) - 1000);
  if (values.reals && kind < 0.9) return String(Math.round(random() * 20000) / 100 - 100);
  if (kind < 0.9) return "9007199254740993";
  if (values.edges && kind < 0.96) return EDGES[Math.floor(random() * EDGES.length)] as string;
  return "NULL";
}

function quoteName(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** A seeded statement of `rows` rows and 1 to 5 columns, with repeated and numeric names. */
export function seededRows(random: () => number, rows: number, values: SeededValues = {}): string {
  const names = Array.from(
    { length: 1 + Math.floor(random() * 5) },
    () => NAMES[Math.floor(random() * NAMES.length)] as string,
  );
  return Array.from(
    { length: rows },
    () =>
      `SELECT ${names.map((name) => `${sqlValue(random, values)} AS ${quoteName(name)}`).join(", ")}`,
  ).join(" UNION ALL ");
}
