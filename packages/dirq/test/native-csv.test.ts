/**
 * CSV and TSV files are read natively (native/dirq-csv.c) when dirq's extension is built, and by
 * the JavaScript reader (csv-parse) when it is not (`DIRQ_NATIVE_FS=0`, no C compiler). Both
 * must give the same tables: the same rows, values and types, and the same skipped files for
 * the same reasons. The seeded files below are read both ways through the CLI and compared;
 * the differential test against Python's csv and DuckDB (diff-formats.test.ts) covers what the
 * right answer is.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { harnessSeed, pick, seededRandom } from "./differential.js";
import { runDirq, type RunResult } from "./helpers.js";

const JS_READER = { DIRQ_NATIVE_FS: "0" };

const NUMBERS = [
  ...["0", "-0", "7", "-12", "007", "+1", "1_000", " 1", "0x10", "-", ".", "e5", "1e", "1e+"],
  ...["1.5", ".5", "-.5", "1.", "-2.", "1e3", "1E-3", "2.5e+10", "1e400", "-1e400", "0.1"],
  ...["279.97", "0.30000000000000004", "123456789012345.6", "1234567890123456.7", "NaN"],
  ...["1.7976931348623157e308", "5e-324", "4.9406564584124654e-324", "2.2250738585072011e-308"],
  ...["9007199254740993", "9223372036854775807", "9223372036854775808", "-9223372036854775808"],
  ...["-9223372036854775809", "123456789012345678901234567890", "999999999999999", "-00"],
];

const TEXTS = [
  ...["", "plain", "with, comma", 'say "hi"', "tab\there", "line\nbreak", "é ü 日本", "😀"],
  ...[" spaced ", '"', '""', "crlf\r\nbreak", "cr\ronly", "a\u0000nul", "\\back"],
];

const NAMES = ["id", "name", "Value", "n", "x y", "é", "note", "_dirq_own", "", "ID"];

function quoted(field: string, delimiter: string, anyway: boolean): string {
  const needs = /["\r\n]/.test(field) || field.includes(delimiter);
  return needs || anyway ? `"${field.replaceAll('"', '""')}"` : field;
}

/** A seeded CSV or TSV file; now and then one of its records breaks a rule. */
function generatedFile(random: () => number, delimiter: "," | "\t"): string {
  const width = 1 + Math.floor(random() * 6);
  const header = Array.from({ length: width }, () => pick(random, NAMES));
  const eol = pick(random, ["\n", "\r\n", "\r", "\n"]);
  const lines = [header.map((name) => quoted(name, delimiter, random() < 0.1)).join(delimiter)];
  const records = Math.floor(random() * 12);
  for (let r = 0; r < records; r++) {
    if (random() < 0.1) lines.push("");
    const fields = Array.from({ length: width }, () => {
      const field = random() < 0.6 ? pick(random, NUMBERS) : pick(random, TEXTS);
      return quoted(field, delimiter, random() < 0.15);
    });
    lines.push(fields.join(delimiter));
  }
  if (records > 0 && random() < 0.3) {
    const at = 1 + Math.floor(random() * records);
    const broken = pick(random, ["extra", "fewer", "inner", "after", "open"]);
    const line = lines[at] as string;
    if (broken === "extra") lines[at] = `${line}${delimiter}x`;
    if (broken === "fewer") lines[at] = width > 1 ? "1" : `1${delimiter}2`;
    if (broken === "inner") lines[at] = `ab"c${delimiter}${line}`;
    if (broken === "after") lines[at] = `"ab"c${line.length > 0 ? delimiter : ""}${line}`;
    if (broken === "open") lines[at] = `"open${delimiter}${line}`;
  }
  const bom = random() < 0.1 ? "\uFEFF" : "";
  return bom + lines.join(eol) + (random() < 0.7 ? eol : "");
}

/** `dirq: skipped` lines, with the line numbers csv-parse counts its own way left out. */
function skippedLines(stderr: string, files: Record<string, string>): string[] {
  return stderr
    .split("\n")
    .filter((line) => line.startsWith("dirq: skipped "))
    .map((line) => {
      const path = line.slice("dirq: skipped ".length, line.indexOf(": ", 14));
      // csv-parse names the last line for a quote left open (dirq's reader the line where it
      // opened), and counts a CRLF inside a quoted field as two lines.
      const ownCount =
        line.includes("still open") ||
        (/quote/.test(line) && (files[path.replace(/^gen\//, "")] ?? "").includes("\r"));
      const counted = ownCount ? line.replace(/: line \d+: /, ": line N: ") : line;
      // csv-parse names a byte of a character after a closing quote; dirq's reader all of it.
      return counted.replace(/text "[^\x00-\x7f]+" after/, 'text "…" after');
    })
    .sort();
}

/** Every cell of a table with its type, exactly (INTEGERs as text, REALs to 17 digits). */
async function typedRows(
  root: string,
  table: string,
  args: readonly string[],
  env: Record<string, string>,
): Promise<RunResult> {
  const first = await runDirq([`SELECT * FROM ${table} LIMIT 1`, ...args], { cwd: root, env });
  const columns = Object.keys((JSON.parse(first.stdout) as object[])[0] ?? {});
  const cells = columns.map((column) => {
    const c = `"${column.replaceAll('"', '""')}"`;
    return `typeof(${c}) || ':' || CASE typeof(${c}) WHEN 'real' THEN printf('%!.17g', ${c}) ELSE quote(${c}) END`;
  });
  const sql = `SELECT _dirq_file_path, _dirq_row_index, ${["''", ...cells].join(", ")} FROM ${table} ORDER BY 1, 2`;
  return runDirq([sql, "--format", "json", ...args], { cwd: root, env });
}

function assertSameRun(native: RunResult, js: RunResult, files: Record<string, string>): void {
  assert.equal(native.code, js.code, `exit codes: native ${native.stderr}\njs ${js.stderr}`);
  assert.deepEqual(skippedLines(native.stderr, files), skippedLines(js.stderr, files));
  assert.equal(native.stdout, js.stdout);
}

describe("CSV read natively and by the JavaScript reader", () => {
  const root = mkdtempSync(join(tmpdir(), "dirq-native-csv-"));
  after(() => rmSync(root, { recursive: true, force: true }));

  test("seeded files: the same rows, types and skipped files both ways", async () => {
    const seed = harnessSeed(4811);
    const random = seededRandom(seed);
    const files: Record<string, string> = {};
    mkdirSync(join(root, "gen"));
    for (let i = 0; i < 240; i++) {
      const tsv = i % 4 === 3;
      const name = `f${String(i).padStart(3, "0")}.${tsv ? "tsv" : "csv"}`;
      files[name] = generatedFile(random, tsv ? "\t" : ",");
      writeFileSync(join(root, "gen", name), files[name]);
    }
    for (const format of ["csv", "tsv"]) {
      const table = `'./gen/*.${format}'`;
      const args = ["--parse", format];
      const native = await typedRows(root, table, args, {});
      const js = await typedRows(root, table, args, JS_READER);
      assertSameRun(native, js, files);
      assert.equal(native.code, 23, `seed ${seed}: some files break a rule`);
      assert.ok((JSON.parse(native.stdout) as object[]).length > 100, native.stderr);
    }
  });

  test("a file of many pieces: the same rows both ways, and a bad record deep in it is named", async () => {
    mkdirSync(join(root, "big"));
    const lines = ["id,text,n,_dirq_own,e"];
    for (let i = 0; lines.length < 120_000; i++) {
      lines.push(
        `${i},"quoted, ""é""\nnext",${i % 7 === 0 ? "" : i * 0.25},x,${i % 3 === 0 ? "007" : "9223372036854775808"}`,
      );
    }
    const text = `\uFEFF${lines.join("\r\n")}\r\n`;
    writeFileSync(join(root, "big", "good.csv"), text);
    // The header is line 1 and every record takes two lines (its quoted field has a line break).
    const at = 100_000;
    const broken = [...lines.slice(0, at), "1,2", ...lines.slice(at)].join("\n");
    writeFileSync(join(root, "big", "broken.csv"), broken);
    const sql =
      "SELECT _dirq_file_path, count(*), sum(_dirq_row_index), total(n), sum(typeof(e) = 'real'), " +
      "sum(e = '007'), sum(length(text)), count(id) FROM './big/*.csv' GROUP BY 1";
    const native = await runDirq([sql, "--parse", "csv"], { cwd: root });
    const js = await runDirq([sql, "--parse", "csv"], { cwd: root, env: JS_READER });
    assertSameRun(native, js, {});
    assert.equal(native.code, 23);
    assert.match(native.stderr, new RegExp(`skipped big/broken.csv: line ${2 * at}: 2 fields`));
    const [row] = JSON.parse(native.stdout) as Record<string, unknown>[];
    assert.equal(row?.["count(*)"], lines.length - 1);
  });

  test("a file wider than the native reader takes is read by the JavaScript reader", async () => {
    const width = 1997;
    const names = Array.from({ length: width }, (_, i) => `c${i}`);
    const record = (r: number) => names.map((_, i) => (i === width - 1 ? r : "")).join(",");
    writeFileSync(join(root, "wide.csv"), `${names.join(",")}\n${record(5)}\n${record(7)}\n`);
    const result = await runDirq(
      ["SELECT count(*) AS n, sum(c1996) AS s, count(c0) AS e FROM './wide.csv'", "--parse", "csv"],
      { cwd: root },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), [{ n: 2, s: 12, e: 0 }]);
  });

  test("a header with no record adds no column; an open quote is named where it opened", async () => {
    mkdirSync(join(root, "some"));
    writeFileSync(join(root, "some", "a.csv"), "k,v\n1,2\n");
    writeFileSync(join(root, "some", "b.csv"), "k,only_header\n\n");
    writeFileSync(join(root, "some", "c.csv"), 'k,v\n3,"open\n\n4,5\n');
    const result = await runDirq(["SELECT * FROM './some/*.csv'", "--parse", "csv"], {
      cwd: root,
    });
    assert.equal(result.code, 23);
    assert.deepEqual(JSON.parse(result.stdout), [{ k: 1, v: 2 }]);
    assert.match(result.stderr, /skipped some\/c\.csv: line 2: a quoted field is still open/);
  });

  test("a schema's TEXT column keeps each field as written, as sqlite3's .import does", async () => {
    // Every field that reads as a number (and a few that do not), under TEXT-affinity columns
    // and a REAL one; a file past the size read on worker threads too.
    const fields = NUMBERS.filter((field) => field !== "" && !/^[ ]|[ ]$/.test(field));
    const lines = fields.map((field, i) => `${field},${field},${field},${i}`);
    const small = `a,b,c,n\n${lines.join("\n")}\n`;
    const big = `a,b,c,n\n${Array.from({ length: (9 * 1024 * 1024) / small.length + 1 }, () => lines.join("\n")).join("\n")}\n`;
    mkdirSync(join(root, "typed"));
    writeFileSync(join(root, "typed", "small.csv"), small);
    writeFileSync(join(root, "typed", "big.csv"), big);
    const schema = 'schema = { a = "TEXT", b = "VARCHAR(20)", c = "REAL", n = "INTEGER" }';
    const config = (file: string) =>
      `[[table]]\nname = "t"\nglob = "typed/${file}"\nformat = "csv"\n${schema}\n`;
    writeFileSync(join(root, "small.toml"), config("small.csv"));
    writeFileSync(join(root, "big.toml"), config("big.csv"));
    const sql =
      "SELECT a, typeof(a) AS ta, b, typeof(b) AS tb, typeof(c) AS tc " +
      "FROM t ORDER BY _dirq_row_index LIMIT " +
      String(fields.length);
    const shell = spawnSync(
      "sqlite3",
      [
        "-json",
        ":memory:",
        "CREATE TABLE t(a TEXT, b VARCHAR(20), c REAL, n INTEGER)",
        `.import --csv --skip 1 ${join(root, "typed", "small.csv")} t`,
        sql.replace("_dirq_row_index", "rowid"),
      ],
      { encoding: "utf8" },
    );
    assert.equal(shell.status, 0, shell.stderr);
    const expected = JSON.parse(shell.stdout) as unknown;
    for (const file of ["small", "big"]) {
      for (const env of [{}, JS_READER]) {
        const result = await runDirq([sql, "-c", `${file}.toml`], { cwd: root, env });
        assert.equal(result.code, 0, result.stderr);
        assert.deepEqual(JSON.parse(result.stdout), expected, `${file}.csv ${JSON.stringify(env)}`);
      }
    }
  });
});
