/**
 * The comparison behind diff-formats.test.ts and diff-formats-real.ts: the rows dirq's built-in
 * formats (`--parse <format>`, a config table's `format`) give, next to the rows reference
 * parsers nobody here wrote give for the same files:
 *
 * - Python (test/format-reference.py): json, csv, tomllib and PyYAML's safe_load, with dirq's
 *   value rules applied to what they parsed;
 * - DuckDB (JSON and CSV only): read_json_objects + json_each, and read_csv with every dialect
 *   option explicit and every field read as text.
 *
 * Every value is compared with its SQLite type (`typeof`), so an INTEGER 3 and a REAL 3.0 are
 * different answers even though dirq's JSON output prints both as `3`.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { isLosslessNumber, parse as parseLossless } from "lossless-json";
import { python3, runDirq } from "./helpers.js";

export const FORMATS = ["json", "jsonl", "csv", "tsv", "yaml", "toml", "markdown"] as const;
export type Format = (typeof FORMATS)[number] | "auto";

/** Each format's file extensions (the `auto` rule of DECISIONS.md). */
export const EXTENSIONS: Record<(typeof FORMATS)[number], readonly string[]> = {
  json: ["json"],
  jsonl: ["jsonl", "ndjson"],
  csv: ["csv"],
  tsv: ["tsv"],
  yaml: ["yaml", "yml"],
  toml: ["toml"],
  markdown: ["md", "markdown"],
};

const REFERENCE_SCRIPT = fileURLToPath(new URL("../../test/format-reference.py", import.meta.url));

/**
 * A stored value: null (SQL NULL) or its SQLite type and text. `json` is a nested array or
 * object, stored as TEXT: compared as a JSON value, not as a spelling (see `jsonEqual`); `date`
 * a YAML/TOML date or time, stored as TEXT: compared as an ISO-8601 value (see `isoEqual`).
 */
export type Cell =
  null | [kind: "integer" | "real" | "text" | "date" | "json" | "blob", text: string];
/** A row: column name → cell, in the file's order. */
export type Row = [column: string, cell: Cell][];

export interface ReferenceFile {
  path: string;
  /** CSV/TSV: the header's column names (also for a file with no data records). */
  columns?: string[];
  rows?: Row[];
  error?: string;
  line?: number | null;
}

/** Whether the Python reference can run here (python3 with PyYAML). */
export function pythonReferenceMissing(): string | false {
  const probe = spawnSync(python3(), ["-c", "import yaml, tomllib"], { encoding: "utf8" });
  return probe.status === 0 ? false : `python3 with PyYAML and tomllib is needed: ${probe.stderr}`;
}

/** Python's rows for `paths` (relative to `root`), one reference process for all of them. */
export function pythonReference(
  root: string,
  format: Format,
  paths: readonly string[],
  each?: string,
): Map<string, ReferenceFile> {
  const args = [REFERENCE_SCRIPT, format, ...(each === undefined ? [] : ["--each", each]), "-0"];
  const result = spawnSync(python3(), args, {
    cwd: root,
    input: paths.join("\0"),
    encoding: "utf8",
    maxBuffer: 1024 * 1024 * 1024,
  });
  if (result.status !== 0) {
    throw new Error(`format-reference.py ${format} failed (${result.status}): ${result.stderr}`);
  }
  const files = JSON.parse(result.stdout) as ReferenceFile[];
  return new Map(files.map((file) => [file.path, file]));
}

/** What dirq answered for one table. */
export interface DirqAnswer {
  code: number | null;
  stderr: string;
  /** Columns of `SELECT *` (empty when the table has no row). */
  columns: string[];
  /** Rows by file, in `_dirq_row_index` order, each with its non-NULL cells. */
  rows: Map<string, { index: number; row: Row }[]>;
  /** `dirq: skipped <path>: <reason>` lines, by path. */
  skipped: Map<string, string>;
}

/** An SQL string literal. */
export function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** An SQL identifier. */
export function sqlName(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Arguments per json_object call: pairs of a key and a value, well under SQLite's limit. */
const COLUMNS_PER_OBJECT = 50;

/** Parses `dirq: skipped <path>: <reason>` lines (a reason's further lines are indented). */
export function skippedFiles(stderr: string, known: Iterable<string>): Map<string, string> {
  const paths = [...known].sort((a, b) => b.length - a.length);
  const skipped = new Map<string, string>();
  const lines = stderr.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (!line.startsWith("dirq: skipped ")) continue;
    let rest = line.slice("dirq: skipped ".length);
    while ((lines[i + 1] ?? "").startsWith("    ")) rest += `\n${lines[++i]}`;
    const path = paths.find((p) => rest.startsWith(`${p}: `)) ?? rest.slice(0, rest.indexOf(": "));
    skipped.set(path, rest.slice(path.length + 2));
  }
  return skipped;
}

/**
 * One row's cells as a JSON object of its non-NULL columns only (json_patch drops the members
 * a patch sets to null), each `[typeof, value]` keyed by the column's position: a table that
 * unites many files' columns has mostly NULL cells, and its rows stay small. An INTEGER's
 * value is its text (JSON.parse would round one past 2^53); a REAL is as SQLite's JSON writes
 * it, which reads back exactly (infinity as 9.0e+999).
 */
function rowObject(columns: readonly string[], positions: readonly number[]): string {
  let expression = "'{}'";
  for (let start = 0; start < positions.length; start += COLUMNS_PER_OBJECT) {
    const members = positions.slice(start, start + COLUMNS_PER_OBJECT).map((position) => {
      const c = sqlName(columns[position] as string);
      const value =
        `CASE typeof(${c}) WHEN 'integer' THEN CAST(${c} AS TEXT) ` +
        `WHEN 'blob' THEN hex(${c}) ELSE ${c} END`;
      return `'${position}', CASE WHEN ${c} IS NULL THEN NULL ELSE json_array(typeof(${c}), ${value}) END`;
    });
    expression = `json_patch(${expression}, json_object(${members.join(", ")}))`;
  }
  return expression;
}

/**
 * Reads a table through the CLI: `SELECT *` once for its columns, then every row with each
 * cell's `typeof`, ordered by the hidden columns. `table` is SQL: a quoted path-table or a
 * config table's name.
 */
export async function dirqAnswer(
  root: string,
  table: string,
  args: readonly string[],
  knownPaths: Iterable<string> = [],
): Promise<DirqAnswer> {
  const run = async (sql: string) => {
    const result = await runDirq([sql, "--format", "json", "--no-ignore", ...args], {
      cwd: root,
    });
    if (result.code !== 0 && result.code !== 23) {
      throw new Error(`dirq exited ${result.code} for ${sql.slice(0, 200)}:\n${result.stderr}`);
    }
    return result;
  };
  const first = await run(`SELECT * FROM ${table} LIMIT 1`);
  const columns = Object.keys((JSON.parse(first.stdout) as Record<string, unknown>[])[0] ?? {});
  // Columns in batches, one statement each, so that no statement passes the 128 KiB a single
  // argument may have (a wide table's statement names every column several times).
  const batches: number[][] = [[]];
  let length = 0;
  columns.forEach((column, i) => {
    length += 4 * column.length + 160;
    if (length > 100_000 && (batches.at(-1) as number[]).length > 0) {
      batches.push([]);
      length = 4 * column.length + 160;
    }
    (batches.at(-1) as number[]).push(i);
  });
  const rows = new Map<string, { index: number; row: Row }[]>();
  const byKey = new Map<string, Row>();
  let result = first;
  for (const [b, batch] of batches.entries()) {
    const answer = await run(
      `SELECT _dirq_file_path AS f, _dirq_row_index AS i, ${rowObject(columns, batch)} AS j ` +
        `FROM ${table} ORDER BY f, i`,
    );
    if (b === 0) result = answer;
    for (const record of JSON.parse(answer.stdout) as { f: string; i: number; j: string }[]) {
      const key = `${record.i}\0${record.f}`;
      let row = byKey.get(key);
      if (row === undefined) {
        row = [];
        byKey.set(key, row);
        const list = rows.get(record.f) ?? [];
        list.push({ index: record.i, row });
        rows.set(record.f, list);
      }
      const cells = JSON.parse(record.j) as Record<string, [string, unknown]>;
      // Only the non-NULL cells: a row of a table of many files' columns is mostly NULL.
      for (const i of batch) {
        const cell = cells[i];
        if (cell !== undefined) row.push([columns[i] as string, dirqCell(cell[0], cell[1])]);
      }
    }
  }
  return {
    code: result.code,
    stderr: result.stderr,
    columns,
    rows,
    skipped: skippedFiles(result.stderr, knownPaths),
  };
}

function dirqCell(type: string, value: unknown): Cell {
  switch (type) {
    case "integer":
      return ["integer", String(value)];
    case "real":
      return ["real", String(value)];
    case "text":
      return ["text", String(value)];
    default:
      return ["blob", String(value)];
  }
}

function realValue(text: string): number {
  if (text === "inf" || text === "Infinity") return Infinity;
  if (text === "-inf" || text === "-Infinity") return -Infinity;
  return Number(text);
}

const INTEGER_TEXT = /^-?\d+$/;

/** Python's reference marks a date inside nested JSON text with this character. */
const DATE_MARK = "\uE010";

const ISO_8601 =
  /^(?:(\d{4})-(\d{2})-(\d{2}))?(?:(?<=\d)[Tt ])?(?:(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?)?(Z|z|[-+]\d{2}:\d{2})?$/;

/** An ISO-8601 date, time or date-time in one spelling: `Z` as `+00:00`, no trailing zeros. */
function isoValue(text: string): string | null {
  const match = ISO_8601.exec(text);
  if (match === null || text === "") return null;
  const [, year, month, day, hour, minute, second, fraction, zone] = match;
  if (year === undefined && hour === undefined) return null;
  const date = year === undefined ? "" : `${year}-${month}-${day}`;
  const digits = (fraction ?? "").replace(/0+$/, "");
  const time =
    hour === undefined ? "" : `T${hour}:${minute}:${second}${digits ? `.${digits}` : ""}`;
  const offset = zone === undefined ? "" : /^[Zz]$/.test(zone) ? "+00:00" : zone;
  return `${date}${time}${offset}`;
}

/**
 * The same date, time or date-time: the rules say "ISO-8601 text", not which of its spellings,
 * so `2001-12-15T02:59:43.1Z` is Python's `2001-12-15T02:59:43.100000+00:00`. A moved time
 * zone, a lost offset or lost digits of a fraction are still differences.
 */
export function isoEqual(expected: string, actual: string): boolean {
  const value = isoValue(expected);
  return value !== null && value === isoValue(actual);
}

/**
 * Two JSON texts hold the same value: numbers compared by kind (an integer literal or not, as
 * SQLite's json_extract tells INTEGER from REAL) and value (integers exactly), strings exactly.
 * Spelling is not compared: the rules say a nested value is stored as "its JSON text", and
 * dirq keeps the digits a literal was written with (`1e5`), where Python writes `100000.0`.
 * Object members are compared as a set (RFC 8259: an object is unordered; V8 lists integer-like
 * keys first, so dirq's text may order them differently from the file).
 */
export function jsonEqual(a: string, b: string): boolean {
  let left: unknown;
  let right: unknown;
  try {
    left = parseLossless(a);
    right = parseLossless(b);
  } catch {
    return false;
  }
  return sameJson(left, right);
}

function sameJson(a: unknown, b: unknown): boolean {
  if (isLosslessNumber(a) || isLosslessNumber(b)) {
    if (!isLosslessNumber(a) || !isLosslessNumber(b)) return false;
    const integerA = INTEGER_TEXT.test(a.value);
    if (integerA !== INTEGER_TEXT.test(b.value)) return false;
    return integerA ? BigInt(a.value) === BigInt(b.value) : Number(a.value) === Number(b.value);
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, i) => sameJson(item, b[i]))
    );
  }
  if (a !== null && b !== null && typeof a === "object" && typeof b === "object") {
    const keysA = Object.keys(a);
    const keysB = Object.keys(b);
    return (
      keysA.length === keysB.length &&
      keysA.every(
        (key) =>
          Object.hasOwn(b, key) &&
          sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
      )
    );
  }
  if (typeof a === "string" && a.startsWith(DATE_MARK)) {
    return typeof b === "string" && isoEqual(a.slice(1), b);
  }
  return a === b;
}

/** The same stored value. */
export function sameCell(expected: Cell, actual: Cell): boolean {
  // SQLite has no NaN: binding one stores NULL (YAML's .nan, TOML's nan).
  if (expected?.[0] === "real" && Number.isNaN(realValue(expected[1]))) return actual === null;
  if (expected === null || actual === null) return expected === actual;
  const [kind, text] = expected;
  if (kind === "json") return actual[0] === "text" && jsonEqual(text, actual[1]);
  if (kind === "date") return actual[0] === "text" && isoEqual(text, actual[1]);
  if (kind !== actual[0]) return false;
  if (kind === "integer") return BigInt(text) === BigInt(actual[1]);
  // -0.0 and 0.0 compare equal: dirq's JSON output prints both as 0.
  if (kind === "real") return realValue(text) === realValue(actual[1]);
  return text === actual[1];
}

export function showCell(cell: Cell): string {
  return cell === null ? "NULL" : `${cell[0].toUpperCase()} ${JSON.stringify(cell[1])}`;
}

export interface Disagreement {
  path: string;
  what: string;
}

/** ASCII-case folded, as SQLite compares column names. */
function fold(name: string): string {
  return name.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/**
 * Compares dirq's answer with a reference, file by file and row by row: a file the reference
 * cannot read must be skipped (naming the line the reference names, for the line-based formats
 * and JSON syntax errors); any other file must give the same rows, cell by cell, a key a row
 * lacks being NULL (as in SQL: the table's columns are the union of every file's).
 * `subset`: the reference covers only some of the table's files.
 */
export function compareAnswer(
  reference: ReadonlyMap<string, ReferenceFile>,
  dirq: DirqAnswer,
  options: { checkLines?: boolean; subset?: boolean } = {},
): Disagreement[] {
  const out: Disagreement[] = [];
  const dirqColumns = new Map(dirq.columns.map((name) => [fold(name), name]));
  for (const [path, file] of reference) {
    const skippedBecause = dirq.skipped.get(path);
    const got = dirq.rows.get(path) ?? [];
    if (file.error !== undefined) {
      if (skippedBecause === undefined) {
        out.push({
          path,
          what: `python cannot read it (${file.error}${file.line == null ? "" : `, line ${file.line}`}); dirq did not skip it and gave ${got.length} rows: ${preview(got.map((g) => g.row))}`,
        });
      } else if (
        options.checkLines &&
        file.line != null &&
        !new RegExp(`\\bline ${file.line}\\b`).test(skippedBecause)
      ) {
        out.push({
          path,
          what: `both refuse it; python names line ${file.line} (${file.error}), dirq: ${skippedBecause}`,
        });
      }
      if (got.length > 0 && skippedBecause !== undefined) {
        out.push({ path, what: `skipped, yet ${got.length} of its rows are in the table` });
      }
      continue;
    }
    const want = file.rows ?? [];
    if (skippedBecause !== undefined) {
      out.push({
        path,
        what: `dirq skipped it (${skippedBecause}); python reads ${want.length} rows: ${preview(want)}`,
      });
      continue;
    }
    if (got.length !== want.length) {
      out.push({
        path,
        what: `dirq gives ${got.length} rows, python ${want.length}\n      dirq:   ${preview(got.map((g) => g.row))}\n      python: ${preview(want)}`,
      });
      continue;
    }
    got.forEach(({ index, row }, i) => {
      if (index !== i) out.push({ path, what: `row ${i}: _dirq_row_index is ${index}` });
      const wantRow = want[i] as Row;
      const gotCells = new Map(row.map(([name, cell]) => [fold(name), cell]));
      const seen = new Set<string>();
      for (const [name, cell] of wantRow) {
        const folded = fold(name);
        seen.add(folded);
        if (!dirqColumns.has(folded)) {
          if (cell !== null) out.push({ path, what: `row ${i}: dirq has no column ${name}` });
          continue;
        }
        const actual = gotCells.get(folded) ?? null;
        if (!sameCell(cell, actual)) {
          out.push({
            path,
            what: `row ${i}, column ${JSON.stringify(name)}: dirq ${showCell(actual)}, python ${showCell(cell)}`,
          });
        }
      }
      for (const [folded, cell] of gotCells) {
        if (!seen.has(folded) && cell !== null) {
          out.push({
            path,
            what: `row ${i}, column ${JSON.stringify(dirqColumns.get(folded))}: dirq ${showCell(cell)}, python has no such key`,
          });
        }
      }
    });
  }
  // A reference that covers only some of the files (DuckDB's dialect) says nothing on the rest.
  if (options.subset) return out;
  for (const path of dirq.skipped.keys()) {
    if (!reference.has(path)) out.push({ path, what: `dirq skipped a file the test did not make` });
  }
  for (const path of dirq.rows.keys()) {
    if (!reference.has(path))
      out.push({ path, what: `dirq has rows of a file the test did not make` });
  }
  if (dirq.columns.length > 0) {
    // The table's columns: every key of every row, none other. A CSV file with a header and no
    // record adds no column (docs/formats.md: columns are the union of the rows' keys, as for
    // hooks; the reader hands rows, not a schema).
    const want = new Set<string>();
    for (const file of reference.values()) {
      for (const row of file.rows ?? []) for (const [name] of row) want.add(fold(name));
    }
    const extra = [...dirqColumns.keys()].filter((name) => !want.has(name));
    const missing = [...want].filter((name) => !dirqColumns.has(name));
    if (extra.length > 0 || missing.length > 0) {
      out.push({
        path: "(table)",
        what: `columns: dirq has ${JSON.stringify(extra)} that python's keys lack, lacks ${JSON.stringify(missing)}`,
      });
    }
    for (const name of dirq.columns) {
      if (/^_dirq_/i.test(name)) out.push({ path: "(table)", what: `SELECT * shows ${name}` });
    }
  }
  return out;
}

/** Rows as JSON, NULL cells left out (a table's row has every column of every file). */
function preview(rows: readonly Row[]): string {
  const text = JSON.stringify(
    rows.map((row) => Object.fromEntries(row.filter(([, cell]) => cell !== null))),
  );
  return text.length > 400 ? `${text.slice(0, 400)}...` : text;
}

/** A disagreement's shape: its text with quoted values and numbers taken out. */
function shape(what: string): string {
  return (what.split("\n", 1)[0] ?? "")
    .replace(/"(?:[^"\\]|\\.)*"/g, "…")
    .replace(/\[.*\]|\{.*\}/g, "…")
    .replace(/\d+/g, "N")
    .replace(/\(.*\)/g, "(…)");
}

/**
 * Disagreements as a report: first how many there are of each shape (with one file of each),
 * then file by file its first bytes and what differs.
 */
export function describeDisagreements(
  root: string,
  disagreements: readonly Disagreement[],
  limit = 40,
): string {
  const shapes = new Map<string, { count: number; example: string }>();
  for (const { path, what } of disagreements) {
    const key = shape(what);
    const entry = shapes.get(key) ?? { count: 0, example: path };
    entry.count++;
    shapes.set(key, entry);
  }
  const lines: string[] = [`${disagreements.length} disagreements:`];
  for (const [key, { count, example }] of [...shapes].sort((a, b) => b[1].count - a[1].count)) {
    lines.push(`  ${String(count).padStart(4)} × ${key}   (e.g. ${example})`);
  }
  const shownFiles = new Set<string>();
  for (const { path, what } of disagreements.slice(0, limit)) {
    if (!shownFiles.has(path) && path !== "(table)") {
      shownFiles.add(path);
      let bytes = "";
      try {
        const content = readFileSync(join(root, path));
        bytes = JSON.stringify(content.subarray(0, 300).toString("latin1"));
        if (content.length > 300) bytes += ` ... (${content.length} bytes)`;
      } catch {
        bytes = "(unreadable)";
      }
      lines.push(`${path}\n    bytes: ${bytes}`);
    }
    lines.push(`    ${path === "(table)" ? "(table) " : ""}${what}`);
  }
  if (disagreements.length > limit) lines.push(`... and ${disagreements.length - limit} more`);
  return lines.join("\n");
}

// ---------------------------------------------------------------------------------------------
// CSV typing and header names, for DuckDB's text (Python's are in format-reference.py).

const CSV_INTEGER = /^-?(?:0|[1-9][0-9]*)$/;
const CSV_REAL = /^-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** dirq's per-field CSV typing (DECISIONS.md), applied to a field's text. */
export function csvCell(field: string | null): Cell {
  if (field === null || field === "") return null;
  if (CSV_INTEGER.test(field)) {
    const value = BigInt(field);
    return value >= INT64_MIN && value <= INT64_MAX
      ? ["integer", value.toString()]
      : ["real", String(Number(field))];
  }
  if (CSV_REAL.test(field)) return ["real", String(Number(field))];
  return ["text", field];
}

/** Header names: empty → column<i>, repeats (ASCII case folded) → name_1, ... as DuckDB does. */
export function csvHeaderNames(fields: readonly (string | null)[]): string[] {
  const counts = new Map<string, number>();
  return fields.map((field, i) => {
    let name = field === null || field === "" ? `column${i}` : field;
    while (counts.has(fold(name))) {
      const count = (counts.get(fold(name)) as number) + 1;
      counts.set(fold(name), count);
      name = `${name}_${count}`;
    }
    counts.set(fold(name), 0);
    return name;
  });
}

// ---------------------------------------------------------------------------------------------
// DuckDB

type DuckConnection = Awaited<
  ReturnType<
    Awaited<ReturnType<typeof import("@duckdb/node-api").DuckDBInstance.create>>["connect"]
  >
>;

export async function duckdbConnection(): Promise<DuckConnection> {
  const { DuckDBInstance } = await import("@duckdb/node-api");
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  // One thread: objects and records come back in file order.
  await connection.run("SET threads = 1");
  return connection;
}

async function duckRows(
  connection: DuckConnection,
  sql: string,
): Promise<Record<string, string | null>[]> {
  const reader = await connection.runAndReadAll(sql);
  return reader.getRowObjectsJson() as Record<string, string | null>[];
}

/**
 * Text out of DuckDB as hex of its UTF-8 bytes: the node API decodes VARCHAR with a
 * TextDecoder, which drops a leading U+FEFF of a value (a string "\uFEFF..." in a file).
 */
function hexText(sql: string): string {
  return `hex(encode(${sql}))`;
}

function fromHex(hex: string | null | undefined): string | null {
  return hex === null || hex === undefined ? null : Buffer.from(hex, "hex").toString("utf8");
}

/**
 * DuckDB's reading of one JSON or JSON Lines file: read_json_objects splits the file into
 * objects (with format given, nothing sniffed), json_each lists each object's members with
 * DuckDB's own JSON type for each. Mapped by the rules: BIGINT/UBIGINT INTEGER (beyond 64 bits
 * REAL), DOUBLE REAL, BOOLEAN 0/1, VARCHAR TEXT, ARRAY/OBJECT their JSON text. A key repeated
 * in one object: json_each lists every copy, the rules keep the last value.
 */
export async function duckdbJsonRows(
  connection: DuckConnection,
  fullPath: string,
  format: "json" | "jsonl",
): Promise<Row[]> {
  let path = fullPath;
  let scratch: string | undefined;
  if (format === "jsonl") {
    // dirq does not read a last line that has no newline yet (a file being appended); DuckDB
    // does. DuckDB gets the file up to its last newline.
    const content = readFileSync(fullPath);
    const end = content.lastIndexOf(0x0a) + 1;
    scratch = mkdtempSync(join(tmpdir(), "dirq-duck-"));
    path = join(scratch, "file.jsonl");
    writeFileSync(path, content.subarray(0, end));
  }
  try {
    const text = readFileSync(path, "utf8").replace(/^\uFEFF/, "");
    const duckFormat =
      format === "jsonl"
        ? "newline_delimited"
        : text.trimStart().startsWith("[")
          ? "array"
          : "unstructured";
    const objects = `read_json_objects(${sqlString(path)}, format = ${sqlString(duckFormat)})`;
    const count = await duckRows(connection, `SELECT count(*)::VARCHAR AS n FROM ${objects}`);
    const members = await duckRows(
      connection,
      `SELECT (o.ordinality - 1)::VARCHAR AS r, ${hexText("j.key")} AS key, j.type, j.atom, ` +
        `${hexText("j.value")} AS value, ${hexText("j.value ->> '$'")} AS string ` +
        `FROM ${objects} WITH ORDINALITY o, json_each(o.json) j ORDER BY o.ordinality, j.id`,
    );
    // Keys that differ only in ASCII case are one column (dirq's documented rule, SQLite's
    // names): the first spelling, the last value. json_each lists every key as written.
    const rows: Map<string, [string, Cell]>[] = Array.from(
      { length: Number(count[0]?.n ?? 0) },
      () => new Map(),
    );
    for (const member of members) {
      const row = rows[Number(member.r)] as Map<string, [string, Cell]>;
      const key = fromHex(member.key) as string;
      const spelling = row.get(fold(key))?.[0] ?? key;
      row.set(fold(key), [spelling, duckCell(member)]);
    }
    return rows.map((row) => [...row.values()]);
  } finally {
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  }
}

function duckCell(member: Record<string, string | null>): Cell {
  const atom = member.atom as string;
  switch (member.type) {
    case "NULL":
      return null;
    case "BOOLEAN":
      return ["integer", atom === "true" ? "1" : "0"];
    case "BIGINT":
      return ["integer", atom];
    case "UBIGINT":
      return BigInt(atom) <= INT64_MAX ? ["integer", atom] : ["real", String(Number(atom))];
    case "DOUBLE":
      return ["real", atom];
    case "VARCHAR":
      return ["text", fromHex(member.string) as string];
    default:
      return ["json", lastValueWins(fromHex(member.value) as string)];
  }
}

/** Marks a number literal while JSON.parse (which would round it) reads the text around it. */
const NUMBER_MARK = "\uE011";

/**
 * A nested value's JSON text with each object's repeated keys reduced to the last value, as
 * the rules say ("a key repeated in one object keeps its last value") and as Python's json
 * reads it: DuckDB's json_each gives a nested value's text with every copy of a key, which
 * lossless-json (behind `jsonEqual`) refuses to read. Numbers keep their literal: each is
 * hidden in a marked string while JSON.parse reads the text (last key wins), then restored.
 */
function lastValueWins(text: string): string {
  const marked = text.replace(/"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?/g, (token) =>
    token.startsWith('"') ? token : `"${NUMBER_MARK}${token}"`,
  );
  return JSON.stringify(JSON.parse(marked)).replace(
    new RegExp(`"${NUMBER_MARK}([^"]*)"`, "g"),
    (_, digits: string) => digits,
  );
}

/**
 * DuckDB's reading of one CSV/TSV file, every record as text (header=false: the header is a
 * record too), with the dialect explicit (delimiter, `"` quote and escape, strict RFC 4180, no
 * sniffing). The rows are then made by dirq's rules: each field typed on its own (DuckDB types a
 * whole column; dirq types each field, DECISIONS.md). DuckDB reads an empty field, quoted or
 * not, as NULL, as the rules do. Column names are DuckDB's own (read_csv with header=true),
 * which the rules follow, for a header DuckDB names as the rules do: at most ten fields (past
 * ten DuckDB pads `column<i>` with zeros: `column03`), no line break in a name (its sniffer
 * cuts one) and no blank at either end of one (DuckDB trims names; the rules keep a name as
 * written); other headers get `csvHeaderNames`, the rule as written.
 */
export async function duckdbCsvRows(
  connection: DuckConnection,
  fullPath: string,
  delimiter: "," | "\t",
  width: number,
): Promise<{ columns: string[]; rows: Row[] }> {
  const dialect =
    `delim = ${sqlString(delimiter)}, quote = '"', escape = '"', strict_mode = true, ` +
    `all_varchar = true`;
  const columns = Array.from({ length: width }, (_, i) => `'c${i}': 'VARCHAR'`).join(", ");
  const items = Array.from({ length: width }, (_, i) => `${hexText(`c${i}`)} AS c${i}`);
  const records = await duckRows(
    connection,
    `SELECT ${items.join(", ")} FROM read_csv(${sqlString(fullPath)}, header = false, ` +
      `${dialect}, auto_detect = false, columns = {${columns}})`,
  );
  const fields = records.map((record) =>
    Array.from({ length: width }, (_, i) => fromHex(record[`c${i}`])),
  );
  const header = fields[0] ?? [];
  let names = csvHeaderNames(header);
  if (width <= 10 && !header.some((field) => field !== null && /[\r\n]|^\s|\s$/.test(field))) {
    const named = await connection.runAndReadAll(
      `SELECT * FROM read_csv(${sqlString(fullPath)}, header = true, ${dialect}) LIMIT 0`,
    );
    names = named.columnNames();
  }
  return {
    columns: names,
    rows: fields
      .slice(1)
      .map((record) => names.map((name, i): [string, Cell] => [name, csvCell(record[i] ?? null)])),
  };
}
