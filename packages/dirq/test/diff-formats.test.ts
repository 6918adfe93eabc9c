/**
 * Differential harness for the built-in formats (`--parse <format>`, a config table's `format`
 * and `each`): seeded generators write many files of each format with the nasty cases (unicode
 * of every plane and combining marks, CSV quoting with embedded delimiters and line breaks,
 * CRLF and lone-CR line endings, byte-order marks, empty and header-only files, repeated and
 * empty header names, integers at and past 2^53 and 64 bits, deep nesting, whole-valued floats,
 * YAML 1.1 booleans, anchors, merge keys and timestamps, TOML dates and arrays of tables,
 * Markdown with YAML, TOML or no front matter); one dirq run reads each format's folder, and
 * every row, cell and SQLite type (`typeof`) is compared with what Python's own parsers read
 * (test/format-reference.py), and for JSON, JSON Lines, CSV and TSV also with DuckDB.
 *
 * Seeded: DIRQ_TEST_SEED replays a run; DIRQ_TEST_KEEP=1 keeps the generated tree.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { harnessSeed, pick, seededRandom } from "./differential.js";
import {
  compareAnswer,
  type DirqAnswer,
  dirqAnswer,
  type Disagreement,
  describeDisagreements,
  duckdbConnection,
  duckdbCsvRows,
  duckdbJsonRows,
  type Format,
  pythonReference,
  pythonReferenceMissing,
  type ReferenceFile,
} from "./format-diff.js";
import { runDirq } from "./helpers.js";

const SEED = harnessSeed(20240);

type Random = () => number;

const chance = (random: Random, p: number) => random() < p;
const int = (random: Random, n: number) => Math.floor(random() * n);

// ---------------------------------------------------------------------------------------------
// Shared pools

const STRINGS = [
  "",
  " ",
  "plain",
  "with,comma",
  'say "hi"',
  "line\nbreak",
  "crlf\r\nbreak",
  "lone\rcr",
  "tab\there",
  "emoji 😀",
  "astral 𝄞 𠀀 🏳️‍🌈",
  "combining e\u0301 a\u0308\u0301",
  "family 👨‍👩‍👧",
  "RTL שלום مرحبا",
  "back\\slash",
  "0123",
  "1e5",
  "true",
  "null",
  "  padded  ",
  "\u2028 separator \u2029",
  "# hash",
  "key: value",
  "- dash",
  "{brace}",
  "[bracket]",
  "'single'",
  "ctl \u0001\u001f",
  "zero\u200bwidth",
  "\uFEFFbom inside",
  "日本語テキスト",
];

/** Keys: distinct under ASCII case folding (SQLite's), none reserved, none `body`. */
const KEYS = [
  "id",
  "name",
  "title",
  "value",
  "n",
  "x y",
  "Ünïcode",
  "ключ",
  "emoji😀",
  "with.dot",
  'with"quote',
  "123",
  "select",
  "a-b",
  "tab\there",
  "s\u0301",
  "𝄞clef",
  "Count",
  "tags",
  "meta",
];

// ---------------------------------------------------------------------------------------------
// JSON and JSON Lines: an AST whose numbers keep the literal they are written with

type JsonValue = null | boolean | string | { num: string } | JsonValue[] | { pairs: Pair[] };
type Pair = [string, JsonValue];

const NUMBERS = [
  "0",
  "-0",
  "1",
  "-1",
  "42",
  "9007199254740991",
  "9007199254740992",
  "9007199254740993",
  "-9007199254740993",
  "9223372036854775807",
  "-9223372036854775808",
  "9223372036854775808",
  "-9223372036854775809",
  "18446744073709551615",
  "18446744073709551616",
  "123456789012345678901234567890",
  "3.0",
  "-3.0",
  "0.0",
  "-0.0",
  "1e5",
  "1E5",
  "1e+5",
  "2.5",
  "-2.5e-3",
  "0.1",
  "1.5e300",
  "100.000",
  "9007199254740993.0",
  "1e16",
  "4.0e-1",
  "12345.678",
  "5e-324",
  "1.7976931348623157e308",
];
/** Only as a row's own value: inside a nested value Python would write `Infinity`. */
const TOP_NUMBERS = [...NUMBERS, "1e400", "-1e400", "1e-400"];

function jsonScalar(random: Random, top: boolean): JsonValue {
  switch (int(random, 5)) {
    case 0:
      return null;
    case 1:
      return chance(random, 0.5);
    case 2:
    case 3:
      return { num: pick(random, top ? TOP_NUMBERS : NUMBERS) };
    default:
      return pick(random, STRINGS);
  }
}

function jsonValue(random: Random, depth: number, top = false): JsonValue {
  const roll = random();
  if (depth > 0 && roll < 0.12) {
    return Array.from({ length: int(random, 4) }, () => jsonValue(random, depth - 1));
  }
  if (depth > 0 && roll < 0.22) return jsonObject(random, depth - 1);
  return jsonScalar(random, top);
}

function jsonObject(random: Random, depth: number, top = false): { pairs: Pair[] } {
  const keys = [...KEYS].sort(() => random() - 0.5).slice(0, int(random, 6));
  const pairs: Pair[] = keys.map((key) => [key, jsonValue(random, depth, top)]);
  // A key repeated in one object: the last value stands.
  if (pairs.length > 0 && chance(random, 0.1)) {
    pairs.push([pick(random, pairs)[0], jsonValue(random, depth, top)]);
  }
  return { pairs };
}

/** Deep nesting: arrays and objects `depth` levels down. */
function deep(depth: number): JsonValue {
  let value: JsonValue = { num: "9007199254740993" };
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value, "x"] : { pairs: [["k", value]] };
  return value;
}

interface JsonStyle {
  indent: string;
  eol: string;
  escapeUnicode: boolean;
}

function jsonString(text: string, style: JsonStyle, random: Random): string {
  let out = '"';
  for (const ch of text) {
    const code = ch.codePointAt(0) as number;
    if (ch === '"' || ch === "\\") out += `\\${ch}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch === "/" && chance(random, 0.5)) out += "\\/";
    else if (code < 0x20 || (style.escapeUnicode && code > 0x7e)) {
      // UTF-16 escapes: an astral character becomes its surrogate pair.
      for (let i = 0; i < ch.length; i++) {
        out += `\\u${ch.charCodeAt(i).toString(16).padStart(4, "0")}`;
      }
    } else out += ch;
  }
  return `${out}"`;
}

function jsonText(value: JsonValue, style: JsonStyle, random: Random, level = 0): string {
  if (value === null) return "null";
  if (typeof value === "boolean") return String(value);
  if (typeof value === "string") return jsonString(value, style, random);
  const pad = style.indent === "" ? "" : style.eol + style.indent.repeat(level + 1);
  const close = style.indent === "" ? "" : style.eol + style.indent.repeat(level);
  const colon = style.indent === "" ? ":" : ": ";
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return `[${value.map((item) => pad + jsonText(item, style, random, level + 1)).join(",")}${close}]`;
  }
  if ("num" in value) return value.num;
  if (value.pairs.length === 0) return "{}";
  const members = value.pairs.map(
    ([key, item]) =>
      pad + jsonString(key, style, random) + colon + jsonText(item, style, random, level + 1),
  );
  return `{${members.join(",")}${close}}`;
}

function jsonStyle(random: Random): JsonStyle {
  return {
    indent: pick(random, ["", "", "  ", "    ", "\t"]),
    eol: chance(random, 0.3) ? "\r\n" : "\n",
    escapeUnicode: chance(random, 0.3),
  };
}

const BOM = "\uFEFF";

const JSON_FIXED: Record<string, string> = {
  "empty.json": "",
  // An empty or all-blank file is the file's error, as for Python (dirq's documented rule).
  "blank.json": "  \r\n\t\n",
  "bom-only.json": BOM,
  "empty-array.json": "[]",
  "empty-object.json": "{}",
  "empty-objects.json": "[{}, {}]",
  "bom-object.json": `${BOM}{"a": 1, "b": "x"}`,
  "bom-array-crlf.json": `${BOM}[\r\n  {"a": 1},\r\n  {"b": 2.0}\r\n]\r\n`,
  "duplicate-key.json": '[{"a": 1, "b": 2, "a": 3}]',
  "whole-reals.json": '[{"r": 3.0, "e": 1e5, "z": -0.0, "i": -0, "big": 1E2}]',
  "int64.json":
    '[{"max": 9223372036854775807, "min": -9223372036854775808, "over": 9223372036854775808, "s": 9007199254740993}]',
  "nested-numbers.json":
    '{"arr": [1.0, 9007199254740993, 1e5, -0, 2.50, {"k": 18446744073709551616}]}',
  "trailing-comma.json": '[{"a": 1},\n]',
  "nan.json": '{"a": NaN}',
  "infinity.json": '[{"a": -Infinity}]',
  "scalar.json": "42",
  "null.json": "null",
  "string.json": '"text"',
  "array-of-scalars.json": "[1, 2]",
  "array-with-null.json": '[{"a": 1}, null]',
  "two-texts.json": '{"a": 1}\n{"b": 2}\n',
  "truncated.json": '[{"a": 1}',
  "object-trailing-comma.json": '{"a": 1,}\n',
  "bad-literal.json": '\n\n{"a": tru}\n',
  "raw-newline-in-string.json": '[{"a": "x\ny"}]',
  "surrogate-pair-escape.json": '{"a": "\\ud83d\\ude00", "b": "\\u00e9\\u0301"}',
  "unicode-case-keys.json": '{"É": 1, "é": 2, "x": 3}',
  // Keys that differ in ASCII case only are one column: first spelling, last value.
  "ascii-case-keys.json": '[{"Ab": 1, "x": 2, "aB": 3}, {"AB": null, "ab": 4}, {"aB": 5}]',
  "ascii-case-nested.json": '{"o": {"k": 1, "K": 2}, "O2": [{"a": 1, "A": 2}]}',
  "escapes.json": '{"a": "\\b\\f\\n\\r\\t\\"\\\\\\/"}',
};

const JSONL_FIXED: Record<string, string> = {
  "empty.jsonl": "",
  "blank-lines.jsonl": '\n\n{"a": 1}\n   \n\t\n{"a": 2}\n\n',
  "crlf.jsonl": '{"a": 1}\r\n\r\n{"b": "x"}\r\n',
  "no-final-newline.jsonl": '{"a": 1}\n{"a": 2}',
  "no-final-newline-invalid.jsonl": '{"a": 1}\n{"a": ',
  "bom.jsonl": `${BOM}{"a": 1}\n{"a": 2}\n`,
  "bad-middle-line.jsonl": '{"a": 1}\n{"a": 2}\n{"a": }\n{"a": 4}\n',
  "bad-after-blank.jsonl": '{"a": 1}\n\n\n{oops}\n',
  "array-line.jsonl": '{"a": 1}\n[1, 2]\n',
  "string-line.jsonl": '"text"\n',
  "two-objects-one-line.jsonl": '{"a": 1} {"b": 2}\n',
  "nan-line.jsonl": '{"a": 1}\n{"a": NaN}\n',
  "big-numbers.jsonl":
    '{"a": 9223372036854775807}\n{"a": 18446744073709551616}\n{"a": 3.0}\n{"a": -0.0}\n',
  "only-unterminated.jsonl": '{"a": 1}',
  "separator-in-string.jsonl": '{"a": "x\u2028y\u2029z"}\n',
};

function jsonFiles(random: Random, count: number): Record<string, string> {
  const files: Record<string, string> = { ...JSON_FIXED };
  const deepStyle = { indent: "", eol: "\n", escapeUnicode: false };
  files["deep.json"] =
    `[{"deep": ${jsonText(deep(120), deepStyle, random)}, "n": 1}, ` +
    `{"deep": ${jsonText(deep(7), { ...deepStyle, indent: " " }, random)}}]`;
  for (let i = 0; i < count; i++) {
    const style = jsonStyle(random);
    const value: JsonValue = chance(random, 0.7)
      ? Array.from({ length: int(random, 6) }, () => jsonObject(random, 3, true))
      : jsonObject(random, 3, true);
    const text = jsonText(value, style, random);
    files[`gen-${String(i).padStart(3, "0")}.json`] =
      (chance(random, 0.15) ? BOM : "") + text + (chance(random, 0.5) ? style.eol : "");
  }
  return files;
}

function jsonlFiles(random: Random, count: number): Record<string, string> {
  const files: Record<string, string> = { ...JSONL_FIXED };
  for (let i = 0; i < count; i++) {
    const style = { ...jsonStyle(random), indent: "" };
    let text = chance(random, 0.1) ? BOM : "";
    const lines = int(random, 7);
    for (let l = 0; l < lines; l++) {
      if (chance(random, 0.15)) text += pick(random, ["", "  ", "\t", " \r"]) + style.eol;
      text += jsonText(jsonObject(random, 3, true), style, random) + style.eol;
    }
    // A last line still being written: never read, even when it does not parse yet.
    if (chance(random, 0.2)) {
      const partial = jsonText(jsonObject(random, 2, true), style, random);
      text += partial.slice(0, 1 + int(random, partial.length));
    }
    files[`gen-${String(i).padStart(3, "0")}.jsonl`] = text;
  }
  return files;
}

// ---------------------------------------------------------------------------------------------
// CSV and TSV

const CSV_FIELDS = [
  ...["0", "-0", "42", "-17", "007", "00", "9223372036854775807", "-9223372036854775808"],
  ...["9223372036854775808", "18446744073709551616", "123456789012345678901234567890"],
  ...["1.5", "-2e3", ".5", "-.5", "0.0", "-0.0", "3.0", "1E5", "2.5e-3", "0.1"],
  ...["+5", "1_000", "0x1F", "NaN", "inf", "Infinity", " 5", "5 ", "1,000", "abc", "TRUE"],
  ...["null", "NULL", "é", "😀", "e\u0301", "𝄞 clef", "日本", "  ", "x y", "\\N"],
  ...["a,b", 'say "hi"', '"', '""', "line\nbreak", "crlf\r\nbreak", "lone\rcr", "tab\there"],
  ...["trailing\n", "\r", "\n"],
];

const CSV_NAMES = [
  "id",
  "name",
  "Name",
  "NAME",
  "",
  "",
  "value",
  "x y",
  "Ünïcode",
  "a,b",
  'q"uote',
  "multi\nline",
  "column1",
  "name_1",
  "😀",
  "a",
  "a",
];

function csvField(field: string, delimiter: string, quoteAnyway: boolean): string {
  const needs =
    field.includes(delimiter) ||
    field.includes('"') ||
    field.includes("\n") ||
    field.includes("\r");
  return needs || quoteAnyway ? `"${field.replaceAll('"', '""')}"` : field;
}

interface CsvOptions {
  delimiter: "," | "\t";
  eol: string | "mixed";
  blankLines: boolean;
  finalEol: boolean;
  bom: boolean;
}

function csvText(records: readonly string[][], options: CsvOptions, random: Random): string {
  let text = options.bom ? BOM : "";
  records.forEach((record, i) => {
    const eol = options.eol === "mixed" ? pick(random, ["\n", "\r\n", "\r"]) : options.eol;
    if (options.blankLines && i > 0 && chance(random, 0.15)) text += eol;
    text += record
      .map((field) => csvField(field, options.delimiter, chance(random, 0.12)))
      .join(options.delimiter);
    if (i < records.length - 1 || options.finalEol) text += eol;
  });
  return text;
}

const CSV_FIXED: Record<string, string> = {
  "empty.csv": "",
  "header-only.csv": "a,b\n",
  "header-only-no-eol.csv": "a,b",
  "only-blank-lines.csv": "\n\n\r\n\r",
  "repeated-names.csv": "a,A,a,,b,a_1,column4,\n1,2,3,4,5,6,7,8\n",
  "bom-crlf.csv": `${BOM}x,y\r\n1,2\r\n3,"4\r\n5"\r\n`,
  "lone-cr.csv": "x,y\r1,2\r\r3,4\r",
  "mixed-endings.csv": "x,y\r\n1,2\n3,4\r5,6",
  "blank-lines.csv": "\n\nx,y\n\n1,2\n\n\n3,4\n\n",
  "quoted-numbers.csv": 'n,r\n"42","1.5"\n" 42","1.5 "\n',
  "quoted-empty.csv": 'a,b\n"",x\n,""\n',
  "single-column.csv": 'v\n1\n""\n\nx\n',
  "embedded.csv": 'a,b\n"x,y","line1\nline2"\n"say ""hi""","cr\rinside"\n',
  "ragged-more.csv": "a,b\n1,2\n3,4,5\n",
  "ragged-fewer.csv": "a,b\n1,2\n\n3\n",
  "text-after-quote.csv": 'a,b\n1,2\n"x"y,3\n',
  "whitespace-line.csv": "a,b\n1,2\n \n3,4\n",
  "unicode-case.csv": "É,é,x\n1,2,3\n",
  "renamed-collision.csv": "a,a_1,a,A\n1,2,3,4\n",
  "renamed-taken.csv": "a,a_1,a\n1,2,3\n",
  "numbers.csv":
    "i,r,t\n9223372036854775807,-2e3,+5\n-9223372036854775808,.5,007\n9223372036854775808,1e400,1_000\n",
};

function csvFiles(random: Random, count: number, delimiter: "," | "\t"): Record<string, string> {
  const ext = delimiter === "," ? "csv" : "tsv";
  const files: Record<string, string> = {};
  for (const [name, text] of Object.entries(CSV_FIXED)) {
    files[name.replace(/\.csv$/, `.${ext}`)] =
      delimiter === "," ? text : text.replaceAll(",", "\t");
  }
  for (let i = 0; i < count; i++) {
    const width = 1 + int(random, 6);
    const header = Array.from({ length: width }, () => pick(random, CSV_NAMES));
    const records = [header];
    const rows = chance(random, 0.1) ? 0 : int(random, 9);
    for (let r = 0; r < rows; r++) {
      records.push(Array.from({ length: width }, () => pick(random, CSV_FIELDS)));
    }
    const options: CsvOptions = {
      delimiter,
      eol: pick(random, ["\n", "\n", "\r\n", "\r\n", "\r", "mixed"]),
      blankLines: chance(random, 0.2),
      finalEol: chance(random, 0.7),
      bom: chance(random, 0.15),
    };
    files[`gen-${String(i).padStart(3, "0")}.${ext}`] = csvText(records, options, random);
  }
  return files;
}

/**
 * Files the rules make an error that Python's csv module reads anyway: a quote inside an
 * unquoted field (csv accepts it even in strict mode), and a quote left open at the end (csv
 * names the file's last line; the rules only say "naming the line"). The line dirq must name.
 */
const CSV_RULE_ERRORS: Record<string, { text: string; lines: number[] }> = {
  "bare-quote.csv": { text: 'a,b\n1,2\nx"y,3\n', lines: [3] },
  "open-quote.csv": { text: 'a,b\n1,2\n"open,3\n4,5\n', lines: [3, 4, 5] },
};

// ---------------------------------------------------------------------------------------------
// YAML

const YAML_SCALARS = [
  ...["yes", "no", "Yes", "NO", "on", "off", "On", "true", "False", "TRUE"],
  ...["~", "null", "Null", "", "0", "-0", "42", "017", "0o17", "0x1F", "0b101", "1_000"],
  ...["190:20:30", "+12", "3.0", "-3.0", "1.0e+5", "6.8523015e+5"],
  ...["685.230_15e+03", "190:20:30.15", ".5", "1."],
  ...["9223372036854775807", "-9223372036854775808", "9223372036854775808"],
  ...["9007199254740993", "123456789012345678901234567890"],
  ...["2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5"],
  ...["2001-12-15T02:59:43.1Z", "2002-12-14 21:59:43", "2001-12-14T21:59:43+01:00"],
  ...["plain text", "text with # not a comment", "é", "😀 emoji", "e\u0301", "日本語"],
  ...['"double \\"quoted\\" \\u00e9 \\U0001F600 \\n end"', "'single ''quoted'''"],
  ...['""', "''", '"yes"', "'2001-12-14'", '"123"', '"3.0"', "'~'", '"\\t\\x41"'],
];

/** Only as a row's own value: inside nested JSON text there is no infinity or NaN. */
const YAML_TOP_SCALARS = [...YAML_SCALARS, ".inf", "-.Inf", ".NaN"];

const YAML_FLOWS = [
  '[1, 2.0, yes, "x", null, [a, b]]',
  "[]",
  "{}",
  "{a: 1, b: [x, z], c: 2001-12-14}",
  "[9223372036854775807, 9007199254740993, 1.0]",
  "[{k: v}, {k: 3.0}]",
];

const YAML_BLOCKS = [
  "|\n  line one\n  line two\n",
  "|-\n  stripped\n  end\n",
  ">\n  folded\n  text\n\n  next paragraph\n",
  ">-\n  folded\n  stripped\n",
  "|+\n  kept\n\n",
];

const YAML_KEYS = [
  "id",
  "title",
  "tags",
  "num",
  "x y",
  '"with: colon"',
  "'ключ'",
  "emoji😀",
  "Ünïcode",
  "a.b",
  "'123'",
  "Count",
  "value",
];

/** A YAML mapping's lines at `indent`, keys unique; `top`: a row's own mapping. */
function yamlMapping(
  random: Random,
  indent: string,
  depth: number,
  anchors: string[],
  top = false,
): string {
  const keys = [...YAML_KEYS].sort(() => random() - 0.5).slice(0, 1 + int(random, 5));
  let out = "";
  for (const key of keys) {
    out += `${indent}${key}:${yamlValue(random, indent, depth, anchors, top)}`;
  }
  return out;
}

/** After `key:`: a scalar, a flow collection, a block scalar, an alias or a nested block. */
function yamlValue(
  random: Random,
  indent: string,
  depth: number,
  anchors: string[],
  top: boolean,
): string {
  const roll = random();
  if (roll < 0.08 && anchors.length > 0) return ` *${pick(random, anchors)}\n`;
  if (roll < 0.16) return ` ${pick(random, YAML_FLOWS)}\n`;
  if (roll < 0.22) {
    const block = pick(random, YAML_BLOCKS);
    return ` ${block.replaceAll("\n  ", `\n${indent}  `)}`;
  }
  if (depth > 0 && roll < 0.32) {
    // Unique: PyYAML refuses an anchor defined twice (YAML 1.2 lets the later one win).
    const anchor = `m${anchors.length}_${depth}`;
    const named = chance(random, 0.4);
    const body = yamlMapping(random, `${indent}  `, depth - 1, anchors);
    if (named) anchors.push(anchor);
    return `${named ? ` &${anchor}` : ""}\n${body}`;
  }
  if (depth > 0 && roll < 0.4) {
    let out = "\n";
    for (let i = 0; i < 1 + int(random, 3); i++) {
      out += `${indent}  - ${pick(random, YAML_SCALARS)}\n`;
    }
    return out;
  }
  const scalar = pick(random, top ? YAML_TOP_SCALARS : YAML_SCALARS);
  return scalar === "" ? "\n" : ` ${scalar}\n`;
}

/** One YAML document: a mapping (one row) or a sequence of mappings, with merge keys. */
function yamlDocument(random: Random): string {
  const anchors: string[] = [];
  if (chance(random, 0.45)) return yamlMapping(random, "", 2, anchors, true);
  const items = int(random, 5);
  let out = "";
  const rowAnchors: string[] = [];
  for (let i = 0; i < items; i++) {
    if (chance(random, 0.15)) {
      out += `- {${[...YAML_KEYS]
        .sort(() => random() - 0.5)
        .slice(0, 3)
        .map((key) => `${key}: ${pick(random, ["1", "x", "3.0", "yes", "~", "2001-12-14"])}`)
        .join(", ")}}\n`;
      continue;
    }
    const anchor = chance(random, 0.4) ? `row${i}` : null;
    let body = yamlMapping(random, "  ", 1, anchors, true);
    if (rowAnchors.length > 0 && chance(random, 0.5)) {
      // A merge key: the anchored rows' keys, overridden by this row's own.
      const merged =
        chance(random, 0.5) || rowAnchors.length === 1
          ? `*${pick(random, rowAnchors)}`
          : `[${rowAnchors.map((a) => `*${a}`).join(", ")}]`;
      body = `  <<: ${merged}\n${body}`;
    }
    out += `-${anchor === null ? "" : ` &${anchor}`}\n${body}`;
    if (anchor !== null) rowAnchors.push(anchor);
  }
  return out === "" ? "[]\n" : out;
}

const YAML_FIXED: Record<string, string> = {
  "booleans.yaml": "a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: n\ng: True\n",
  "y-n-keys.yaml": "y: 1\nn: 2\nyes: 3\n",
  "float-like-strings.yaml": "a: e2\nb: .\nc: E10\nd: .e3\ne2: x\nf: +.5\n",
  "numbers.yaml":
    "oct: 017\noct2: 0o17\nhex: 0x1F\nsexa: 190:20:30\nunder: 1_000\nf: 3.0\ne: 1e5\ne2: 1.0e+5\n" +
    "big: 9223372036854775807\nover: 9223372036854775808\nsafe: 9007199254740993\n" +
    "inf: .inf\nninf: -.Inf\nnan: .NaN\nplus: +12\n",
  "dates.yaml":
    "d: 2001-12-14\nt: 2001-12-14t21:59:43.10-05:00\ns: 2001-12-14 21:59:43.10 -5\n" +
    "z: 2001-12-15T02:59:43.1Z\nlocal: 2002-12-14 21:59:43\nlist: [2001-12-14, 2001-12-14T21:59:43Z]\n",
  "merge.yaml":
    "- &base\n  a: 1\n  b: two\n- <<: *base\n  c: 3\n- <<: [*base, {d: 4}]\n  a: override\n",
  "alias-scalar.yaml": "x: &v 42\ny: *v\nz: &l [1, 2]\nw: *l\n",
  "duplicate-key.yaml": "a: 1\nb: 2\na: 3\n",
  "ascii-case-keys.yaml": "Key: 1\nother: x\nKEY: 2\nÉ: 3\né: 4\n",
  "bom.yaml": `${BOM}a: 1\nb: é\n`,
  "crlf.yaml": "a: 1\r\nb: |\r\n  x\r\n  y\r\nc: [1, 2]\r\n",
  "deep.yaml": `deep: ${"[".repeat(40)}1${"]".repeat(40)}\n`,
  "empty-list.yaml": "[]\n",
  "empty-mapping.yaml": "{}\n",
  "scalar.yaml": "just text\n",
  "list-of-scalars.yaml": "- 1\n- 2\n",
  "bad-indent.yaml": "a: 1\n b: 2\n",
  "unicode.yaml": "'😀': 𝄞\n\"e\\u0301\": é\n日本: 語\n",
  "quoted.yaml": "a: \"3.0\"\nb: '042'\nc: \"\\U0001F600\"\nd: 'it''s'\n",
  // Keys that are collections: PyYAML refuses them (unhashable), so dirq skips the file. Seen
  // in real workflow templates (actions/starter-workflows: `group_id: {{ groupId }}`).
  "template-key.yaml": "name: x\nwith:\n  group_id: {{ groupId }}\n",
  "list-key.yaml": "? [a, b]\n: c\n",
  "alias-map-key.yaml": "a: &m {x: 1}\n*m : 2\n",
  // Explicit tags, constructed as PyYAML's safe_load constructs them.
  "explicit-tags.yaml":
    "f: !!float 1\ng: !!float 1_0\nh: !!float -.INF\ni: !!int '3'\nj: !!int 0x1F\n" +
    "k: !!int 1:30\nl: !!str 3\nm: !!bool YES\nn: !!null ''\no: !!timestamp 2024-1-5\n" +
    "p: !!str yes\nq: !!float 1e5\nr: !!map {a: 1}\ns: !!seq [1]\n",
  "bad-int-tag.yaml": "a: !!int x\n",
  "bad-float-tag.yaml": "a: !!float 0x10\n",
  "bad-bool-tag.yaml": "a: !!bool y\n",
  "bad-timestamp-tag.yaml": "a: !!timestamp 2024-01-05T10\n",
  "local-tag.yaml": "a: !Ref x\n",
  "unknown-tag.yaml": "a: !!foo 1\n",
  "binary.yaml": "a: !!binary R0lGODlh\nb: !!binary |\n  R0lG\n  ODlh\nc: [!!binary AAE=]\n",
  "bad-binary.yaml": "a: !!binary R0l\n",
  "timestamps.yaml":
    "a: 2024-1-5\nb: 2024-1-5 1:02:03\nc: 2024-01-05 10:00:00 +5\nd: 2024-01-05T10:00:00.\n" +
    "e: 2024-01-05 10:00:00 +5:3\nf: 2024-01-05T10:00:00+0530\n",
  "invalid-date.yaml": "a: 2024-02-30\n",
  "set.yaml": "--- !!set\n? a\n? b\n",
  "omap.yaml": "--- !!omap\n- a: 1\n- b: 2\n",
  "pairs.yaml": "--- !!pairs\n- a: 1\n- b: 2\n",
  "nested-pairs.yaml": "a: !!omap [x: 1, y: 2]\nb: !!pairs [x: 1, x: 2]\n",
  // Directives: each document's own; what PyYAML refuses is the file's error.
  "yaml-1-2.yaml": "%YAML 1.2\n---\nflag: yes\nn: 017\nt: 20:03:20\n",
  "yaml-2-0.yaml": "%YAML 2.0\n---\na: 1\n",
  "directive-no-document.yaml": "a: 1\n...\n%YAML 1.1\n",
  "directive-twice.yaml": "%YAML 1.1\n%YAML 1.1\n---\na: 1\n",
  "tag-handle-inside.yaml": "%TAG !e! tag:yaml.org,2002:\n---\na: !e!int '1'\n",
  "tag-handle-outside.yaml":
    "%TAG !e! tag:yaml.org,2002:\n---\na: !e!int '1'\n---\nb: !e!int '2'\n",
};

function yamlFiles(random: Random, count: number): Record<string, string> {
  const files: Record<string, string> = { ...YAML_FIXED };
  for (let i = 0; i < count; i++) {
    let text = yamlDocument(random);
    if (chance(random, 0.15)) text = text.replaceAll("\n", "\r\n");
    if (chance(random, 0.1)) text = BOM + text;
    const ext = chance(random, 0.3) ? "yml" : "yaml";
    files[`gen-${String(i).padStart(3, "0")}.${ext}`] = text;
  }
  return files;
}

// ---------------------------------------------------------------------------------------------
// TOML

const TOML_VALUES = [
  ...["42", "-0", "+17", "0xDEADBEEF", "0o755", "0b1101", "1_000_000"],
  ...["9223372036854775807", "-9223372036854775808", "9007199254740993"],
  ...["3.0", "-0.0", "+1.5", "1e5", "6.626e-34", "1_000.5"],
  ...["true", "false", '"basic \\"q\\" \\u00e9 \\U0001F600 \\t"', "'literal \\no escape'"],
  ...['"""\nmulti\nline \\\n   continued"""', "'''\nraw\nlines'''", '"😀 e\u0301 日本"'],
  ...["1979-05-27T07:32:00Z", "1979-05-27T00:32:00-07:00", "1979-05-27T00:32:00.999999-07:00"],
  ...["1979-05-27 07:32:00Z", "1979-05-27T07:32:00", "1979-05-27T00:32:00.5", "1979-05-27"],
  ...["07:32:00", "00:32:00.999999", "1979-05-27T07:32:00.123456789Z"],
  ...["[1, 2, 3]", "[\"a\", 'b']", '[1, "mixed", 2.0, [true]]', "[]", '{ x = 1, y = "two" }'],
  ...["{}", "[ { a = 1 }, { b = 2.0 } ]", "[1979-05-27, 07:32:00]"],
];

/** Only as a row's own value: inside nested JSON text there is no infinity or NaN. */
const TOML_TOP_VALUES = [...TOML_VALUES, "inf", "-inf", "nan"];

const TOML_KEYS = ["id", "title", "n", '"x y"', '"ключ"', '"😀"', "Count", "tags", "value", "v2"];

function tomlPairs(random: Random, used: Set<string>, count: number, top = false): string {
  let out = "";
  for (let i = 0; i < count; i++) {
    const key = pick(random, TOML_KEYS);
    if (used.has(key)) continue;
    used.add(key);
    out += `${key} = ${pick(random, top ? TOML_TOP_VALUES : TOML_VALUES)}\n`;
  }
  return out;
}

function tomlDocument(random: Random, tables = true): string {
  let out = tomlPairs(random, new Set(), int(random, 6), true);
  if (chance(random, 0.3)) out += `dotted.a = 1\ndotted.b = "two"\n`;
  if (!tables) return out;
  if (chance(random, 0.4)) out += `\n[server]\n${tomlPairs(random, new Set(), 1 + int(random, 3))}`;
  if (chance(random, 0.3)) out += `\n["quoted table".sub]\n${tomlPairs(random, new Set(), 2)}`;
  if (chance(random, 0.4)) {
    for (let i = 0; i < 1 + int(random, 3); i++) {
      out += `\n[[products]]\n${tomlPairs(random, new Set(), int(random, 3))}`;
    }
  }
  return out;
}

const TOML_FIXED: Record<string, string> = {
  "empty.toml": "",
  "dates.toml":
    "odt = 1979-05-27T07:32:00Z\nodt2 = 1979-05-27T00:32:00-07:00\nodt3 = 1979-05-27T00:32:00.999999-07:00\n" +
    "space = 1979-05-27 07:32:00Z\nldt = 1979-05-27T07:32:00\nldt2 = 1979-05-27T00:32:00.5\n" +
    "ld = 1979-05-27\nlt = 07:32:00\nlt2 = 00:32:00.999999\nnano = 1979-05-27T07:32:00.123456789Z\n",
  "numbers.toml":
    "f = 3.0\nz = -0.0\ne = 1e5\ni = 9223372036854775807\nmin = -9223372036854775808\n" +
    "safe = 9007199254740993\nhex = 0xDEADBEEF\ninf = inf\nnan = nan\n",
  "array-of-tables.toml":
    'title = "x"\n[[fruit]]\nname = "apple"\n[fruit.physical]\ncolor = "red"\n[[fruit]]\nname = "banana"\n',
  "bom.toml": `${BOM}a = 1\n`,
  "crlf.toml": 'a = 1\r\nb = "x"\r\n[t]\r\nc = 2.0\r\n',
  "duplicate-key.toml": "a = 1\na = 2\n",
  "bad.toml": "a = \n",
  "big-over-int64.toml": "a = 9223372036854775808\n",
};

function tomlFiles(random: Random, count: number): Record<string, string> {
  const files: Record<string, string> = { ...TOML_FIXED };
  for (let i = 0; i < count; i++) {
    files[`gen-${String(i).padStart(3, "0")}.toml`] =
      (chance(random, 0.1) ? BOM : "") + tomlDocument(random);
  }
  return files;
}

// ---------------------------------------------------------------------------------------------
// Markdown

const BODY_LINES = [
  "# Title",
  "",
  "Some text with ümlaut and 😀 and e\u0301.",
  "---",
  "+++",
  "```",
  "code: not front matter",
  "- item",
  "> quote",
  "trailing spaces   ",
  "日本語の段落。",
];

function markdownBody(random: Random): string {
  return Array.from({ length: int(random, 6) }, () => pick(random, BODY_LINES)).join("\n");
}

const MARKDOWN_FIXED: Record<string, string> = {
  "empty.md": "",
  "no-front-matter.md": "# Hello\n\nText.\n",
  "front-only.md": "---\ntitle: x\n---",
  "front-only-eol.md": "---\ntitle: x\n---\n",
  "empty-front.md": "---\n---\nbody\n",
  "crlf.md": "---\r\ntitle: CRLF\r\nn: 3.0\r\n---\r\nline\r\n",
  "bom.md": `${BOM}---\ntitle: BOM\n---\nx\n`,
  "toml.md": '+++\ntitle = "T"\ndate = 1979-05-27\n+++\nbody\n',
  "rule-in-body.md": "---\na: 1\n---\ntext\n---\nmore\n",
  "not-at-top.md": "\n---\na: 1\n---\n",
  "yaml-dates.md": "---\ndate: 2001-12-14\nwhen: 2001-12-14t21:59:43.10-05:00\ndraft: no\n---\n",
  "list-front.md": "---\n- a\n- b\n---\nbody\n",
  // A Hugo archetype (gohugoio/hugoDocs): a template, not YAML Python can read.
  "archetype.md": '---\ntitle: {{ replace .File.ContentBaseName "-" " " }}\ndraft: true\n---\n',
};

function markdownFiles(random: Random, count: number): Record<string, string> {
  const files: Record<string, string> = { ...MARKDOWN_FIXED };
  for (let i = 0; i < count; i++) {
    const roll = random();
    let text: string;
    if (roll < 0.25) text = markdownBody(random);
    else if (roll < 0.75) {
      text = `---\n${yamlMapping(random, "", 1, [], true)}---\n${markdownBody(random)}`;
    } else {
      text = `+++\n${tomlDocument(random, false)}+++\n${markdownBody(random)}`;
    }
    if (chance(random, 0.5)) text += "\n";
    // CRLF line ends, except in TOML front matter with a multi-line string: smol-toml keeps a
    // CRLF inside one, tomllib makes it LF (a known difference, documented, asserted in the
    // "known differences" test below rather than normalized away here).
    const multiLineToml = text.startsWith("+++") && /'''|"""/.test(text);
    if (chance(random, 0.15) && !multiLineToml) text = text.replaceAll("\n", "\r\n");
    if (chance(random, 0.1)) text = BOM + text;
    files[`gen-${String(i).padStart(3, "0")}.${chance(random, 0.2) ? "markdown" : "md"}`] = text;
  }
  return files;
}

// ---------------------------------------------------------------------------------------------
// Files larger than dirq's 4 MiB read piece (JSON Lines and CSV are read a piece at a time, each
// piece cut between two records): records straddle the cuts, quoted fields hold line breaks,
// and an error past the first piece must still name its line.

const LARGE_BYTES = 5 << 20;

/** Long text, so that a large file has a few thousand rows, not hundreds of thousands. */
function filler(random: Random): string {
  return Array.from({ length: 40 }, () => pick(random, STRINGS)).join(" ");
}

function largeJsonl(random: Random): string {
  const style = { indent: "", eol: "\n", escapeUnicode: false };
  const lines: string[] = [];
  let size = 0;
  while (size < LARGE_BYTES) {
    const eol = chance(random, 0.3) ? "\r\n" : "\n";
    const object = jsonObject(random, 2, true);
    object.pairs.push(["filler", filler(random)]);
    const line = chance(random, 0.05) ? "" : jsonText(object, style, random);
    lines.push(line + eol);
    size += Buffer.byteLength(line) + eol.length;
  }
  return `${lines.join("")}{"unterminated": `;
}

/** `value` with each object's repeated keys left out (the first stands). */
function uniqueKeys(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(uniqueKeys);
  if (value === null || typeof value !== "object" || !("pairs" in value)) return value;
  const seen = new Set<string>();
  const pairs = value.pairs.filter(([key]) => !seen.has(key) && seen.add(key) !== undefined);
  return { pairs: pairs.map(([key, item]): Pair => [key, uniqueKeys(item)]) };
}

/**
 * A JSON array larger than a piece (read element by element); with `error`, cut short at a
 * line boundary in its second half (read whole for its error). The cut file's objects repeat
 * no key: dirq's syntax error would name a repeated key before the real error (its position
 * comes from lossless-json, which refuses repeated keys), where Python names the real one.
 */
function largeJson(random: Random, error: boolean): string {
  const style = jsonStyle(random);
  const items: string[] = [];
  for (let size = 0; size < LARGE_BYTES;) {
    const object = jsonObject(random, 2, true);
    object.pairs.push(["filler", filler(random)]);
    const text = jsonText(error ? uniqueKeys(object) : object, style, random, 1);
    items.push(text);
    size += Buffer.byteLength(text);
  }
  const text = `${chance(random, 0.5) ? BOM : ""}[${style.eol}${items.join(`,${style.eol}`)}${style.eol}]${style.eol}`;
  if (!error) return text;
  const cut = text.indexOf("\n", Math.floor(text.length / 2 + random() * (text.length / 3)));
  return text.slice(0, cut + 1);
}

function largeCsv(random: Random, error: boolean): string {
  const header = ["id", "text", "n", "x y"];
  const records: string[][] = [header];
  let size = 0;
  for (let i = 0; size < LARGE_BYTES; i++) {
    const record = [String(i), pick(random, CSV_FIELDS), pick(random, CSV_FIELDS), filler(random)];
    records.push(record);
    size += record.join(",").length + 6;
  }
  if (error) records.push(["1", "2", "3", "4", "5"]);
  return csvText(
    records,
    { delimiter: ",", eol: "mixed", blankLines: true, finalEol: true, bom: true },
    random,
  );
}

// ---------------------------------------------------------------------------------------------
// The tree and the runs

const FOLDERS: Record<Exclude<Format, "auto">, string> = {
  json: "json",
  jsonl: "jsonl",
  csv: "csv",
  tsv: "tsv",
  yaml: "yaml",
  toml: "toml",
  markdown: "md",
};

function writeFiles(root: string, folder: string, files: Record<string, string>): string[] {
  const paths: string[] = [];
  for (const [name, content] of Object.entries(files)) {
    const path = `data/${folder}/${name}`;
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
    paths.push(path);
  }
  return paths;
}

/** Files of one format, or of several for `auto`, by folder. */
function generate(root: string, random: Random): Record<Format, string[]> {
  const paths = {
    json: writeFiles(root, "json", {
      ...jsonFiles(random, 120),
      "large.json": largeJson(random, false),
      "large-error.json": largeJson(random, true),
    }),
    jsonl: writeFiles(root, "jsonl", {
      ...jsonlFiles(random, 80),
      "large.jsonl": largeJsonl(random),
    }),
    csv: writeFiles(root, "csv", {
      ...csvFiles(random, 150, ","),
      "large.csv": largeCsv(random, false),
      "large-error.csv": largeCsv(random, true),
    }),
    tsv: writeFiles(root, "tsv", csvFiles(random, 60, "\t")),
    yaml: writeFiles(root, "yaml", yamlFiles(random, 120)),
    toml: writeFiles(root, "toml", tomlFiles(random, 80)),
    markdown: writeFiles(root, "md", markdownFiles(random, 80)),
    auto: [] as string[],
  };
  // auto: a few files of every format under every extension the rule names, and one with an
  // extension no format has (that file's error).
  const auto: Record<string, string> = { "notes.txt": "not a data file\n" };
  const sources: [Exclude<Format, "auto">, string[]][] = [
    ["json", ["json"]],
    ["jsonl", ["jsonl", "ndjson"]],
    ["csv", ["csv"]],
    ["tsv", ["tsv"]],
    ["yaml", ["yaml", "yml"]],
    ["toml", ["toml"]],
    ["markdown", ["md", "markdown"]],
  ];
  for (const [format, extensions] of sources) {
    const generated = paths[format].filter((path) => path.includes("/gen-"));
    extensions.forEach((ext, e) => {
      for (let i = 0; i < 3; i++) {
        const source = generated[e * 3 + i] as string;
        auto[`${format}-${e}-${i}.${ext}`] = readFileSync(join(root, source), "utf8");
      }
    });
  }
  paths.auto = writeFiles(root, "auto", auto);
  return paths;
}

function report(root: string, label: string, disagreements: readonly Disagreement[]): string {
  return `${label} (seed ${SEED}, tree ${root}; DIRQ_TEST_SEED=${SEED} DIRQ_TEST_KEEP=1 replays and keeps it):\n${describeDisagreements(root, disagreements)}`;
}

const LINE_FORMATS = new Set<Format>(["json", "jsonl", "csv", "tsv"]);

describe(`built-in formats read what Python's parsers read (seed ${SEED})`, () => {
  const missing = pythonReferenceMissing();
  const root = mkdtempSync(join(tmpdir(), "dirq-formats-"));
  const random = seededRandom(SEED);
  const paths = generate(root, random);
  const answers = new Map<Format, DirqAnswer>();
  const references = new Map<Format, Map<string, ReferenceFile>>();
  after(() => process.env.DIRQ_TEST_KEEP || rmSync(root, { recursive: true, force: true }));

  const folderOf = (format: Format) => (format === "auto" ? "auto" : FOLDERS[format]);

  const answerFor = async (format: Format): Promise<DirqAnswer> => {
    const cached = answers.get(format);
    if (cached !== undefined) return cached;
    const answer = await dirqAnswer(
      root,
      `'./data/${folderOf(format)}/*'`,
      ["--parse", format],
      paths[format],
    );
    answers.set(format, answer);
    return answer;
  };

  const referenceFor = (format: Format) => {
    let reference = references.get(format);
    if (reference === undefined) {
      reference = pythonReference(root, format, paths[format]);
      references.set(format, reference);
    }
    return reference;
  };

  for (const format of [
    "json",
    "jsonl",
    "csv",
    "tsv",
    "yaml",
    "toml",
    "markdown",
    "auto",
  ] as const) {
    it(`${format}: every row, value and type as Python reads them`, { skip: missing }, async () => {
      const reference = referenceFor(format);
      const answer = await answerFor(format);
      const failing = [...reference.values()].filter((file) => file.error !== undefined);
      const disagreements = compareAnswer(reference, answer, {
        checkLines: LINE_FORMATS.has(format),
      });
      assert.deepEqual(disagreements, [], report(root, `--parse ${format}`, disagreements));
      // Exit 23 exactly when some file could not be read; the others' rows stand.
      assert.equal(answer.code, failing.length > 0 ? 23 : 0, answer.stderr);
      assert.ok(
        [...reference.values()].some((file) => (file.rows?.length ?? 0) > 0),
        "the generated files hold rows",
      );
    });
  }

  it(
    "yaml, markdown: a %YAML 1.2 file changes nothing in the files read after it",
    { skip: missing },
    async () => {
      const values = "flag: yes\nswitch: on\nn: 017\nt: 20:03:20\n";
      const answers: Map<string, string>[] = [];
      // The directive's file read first (a.yaml), then last (z.yaml).
      for (const name of ["a", "z"]) {
        const files: Record<string, string> = { [`${name}.yaml`]: `%YAML 1.2\n---\n${values}` };
        for (let i = 0; i < 300; i++) {
          const text = i % 3 === 0 ? `---\n${values}draft: yes\n---\n# ${i}\n` : values;
          files[`m-${String(i).padStart(3, "0")}.${i % 3 === 0 ? "md" : "yaml"}`] = text;
        }
        const folder = `yaml-order-${name}`;
        const written = writeFiles(root, folder, files);
        const answer = await dirqAnswer(root, `'./data/${folder}/*'`, ["--parse", "auto"], written);
        const disagreements = compareAnswer(pythonReference(root, "auto", written), answer, {
          checkLines: false,
        });
        assert.deepEqual(disagreements, [], report(root, `${name}.yaml`, disagreements));
        assert.equal(answer.code, 0, answer.stderr);
        const rows = [...answer.rows].filter(([path]) => path.includes("/m-"));
        assert.equal(rows.length, 300);
        answers.push(
          new Map(
            rows.map(([path, row]) => [path.slice(path.lastIndexOf("/")), JSON.stringify(row)]),
          ),
        );
      }
      const [first, last] = answers as [Map<string, string>, Map<string, string>];
      const differing = [...first].filter(([name, row]) => last.get(name) !== row);
      assert.deepEqual(differing.slice(0, 3), [], `${differing.length} files read differently`);
    },
  );

  it("csv: the files the rules refuse that Python's csv reads anyway", async () => {
    const files = Object.fromEntries(
      Object.entries(CSV_RULE_ERRORS).map(([name, { text }]) => [name, text]),
    );
    const written = writeFiles(root, "csv-rule-errors", files);
    const answer = await dirqAnswer(
      root,
      "'./data/csv-rule-errors/*'",
      ["--parse", "csv"],
      written,
    );
    const problems: string[] = [];
    for (const [name, { lines }] of Object.entries(CSV_RULE_ERRORS)) {
      const path = `data/csv-rule-errors/${name}`;
      const reason = answer.skipped.get(path);
      const named = /\bline (\d+)\b/.exec(reason ?? "");
      if (reason === undefined) {
        problems.push(`${path}: not skipped; rows ${JSON.stringify(answer.rows.get(path))}`);
      } else if (named === null || !lines.includes(Number(named[1]))) {
        problems.push(`${path}: reason ${JSON.stringify(reason)} names none of lines ${lines}`);
      }
    }
    assert.deepEqual(problems, []);
    assert.equal(answer.code, 23);
  });

  it(
    "json, jsonl: every row, value and type as DuckDB's read_json_objects reads them",
    { skip: missing },
    async () => {
      const connection = await duckdbConnection();
      const disagreements: Disagreement[] = [];
      for (const format of ["json", "jsonl"] as const) {
        const python = referenceFor(format);
        const duck = new Map<string, ReferenceFile>();
        for (const [path, file] of python) {
          // Only files both parsers read: DuckDB's errors are not the rules' errors.
          if (file.error !== undefined) continue;
          try {
            duck.set(path, {
              path,
              rows: await duckdbJsonRows(connection, join(root, path), format),
            });
          } catch (error) {
            disagreements.push({
              path,
              what: `DuckDB cannot read a file Python reads: ${(error as Error).message.split("\n")[0]}`,
            });
          }
        }
        disagreements.push(
          ...compareAnswer(duck, await answerFor(format), { subset: true }).map((d) => ({
            ...d,
            what: d.what.replaceAll("python", "duckdb"),
          })),
        );
      }
      assert.deepEqual(disagreements, [], report(root, "DuckDB JSON", disagreements));
    },
  );

  it("csv, tsv: every field as DuckDB's read_csv reads it", { skip: missing }, async () => {
    const connection = await duckdbConnection();
    const disagreements: Disagreement[] = [];
    let compared = 0;
    for (const format of ["csv", "tsv"] as const) {
      const python = referenceFor(format);
      const duck = new Map<string, ReferenceFile>();
      for (const [path, file] of python) {
        if (file.error !== undefined || (file.columns ?? []).length === 0) continue;
        const text = readFileSync(join(root, path), "utf8").replace(/^\uFEFF/, "");
        // DuckDB reads one line ending per file (a file that mixes them is a dialect error
        // there), and in a one-column file reads a completely empty line as a record (a NULL
        // field), where the rules (and Python's csv) skip it: those files are Python's alone.
        const endings = new Set(text.match(/\r\n|\r|\n/g) ?? []);
        if (endings.size > 1) continue;
        if (file.columns?.length === 1 && /(?:^|\r\n|\r|\n)(?:\r\n|\r|\n)/.test(text)) continue;
        try {
          const { columns, rows } = await duckdbCsvRows(
            connection,
            join(root, path),
            format === "csv" ? "," : "\t",
            (file.columns ?? []).length,
          );
          duck.set(path, { path, columns, rows });
          compared++;
        } catch (error) {
          disagreements.push({
            path,
            what: `DuckDB cannot read a file Python reads: ${(error as Error).message.split("\n")[0]}`,
          });
        }
      }
      disagreements.push(
        ...compareAnswer(duck, await answerFor(format), { subset: true }).map((d) => ({
          ...d,
          what: d.what.replaceAll("python", "duckdb"),
        })),
      );
    }
    assert.deepEqual(disagreements, [], report(root, "DuckDB CSV", disagreements));
    assert.ok(compared >= 60, `only ${compared} files fit DuckDB's dialect`);
  });

  it("each = a.b: a config table reads the rows at that path", { skip: missing }, async () => {
    const eachJson: Record<string, string> = {
      "array.json": '{"a": {"b": [{"x": 1}, {"x": 2.0, "y": "é"}]}, "other": 1}',
      "object.json": '{"a": {"b": {"x": 9223372036854775807}}}',
      "missing.json": '{"a": {"c": []}}',
      "scalar.json": '{"a": {"b": 3}}',
      "array-of-scalars.json": '{"a": {"b": [1, 2]}}',
      "through-array.json": '{"a": [{"b": [{"x": 1}]}]}',
      "dotted-key.json": '{"a.b": [{"x": 1}]}',
      "empty.json": '{"a": {"b": []}}',
      "top-array.json": '[{"a": {"b": [{"x": 1}]}}]',
    };
    const eachYaml: Record<string, string> = {
      "rows.yaml": "a:\n  b:\n    - x: 1\n      z: yes\n    - x: 2001-12-14\n",
      "merge.yaml": "base: &b {x: 1}\na:\n  b:\n    - <<: *b\n      w: 2\n",
      "missing.yaml": "a: {}\n",
    };
    const eachToml: Record<string, string> = {
      "tables.toml": "[[a.b]]\nx = 1\n[[a.b]]\nx = 2.0\ny = 1979-05-27\n",
      "table.toml": "[a.b]\nx = 3\n",
      "missing.toml": "a = 1\n",
    };
    const written = {
      json: writeFiles(root, "each-json", eachJson),
      yaml: writeFiles(root, "each-yaml", eachYaml),
      toml: writeFiles(root, "each-toml", eachToml),
    };
    const disagreements: Disagreement[] = [];
    for (const format of ["json", "yaml", "toml"] as const) {
      writeFileSync(
        join(root, `each-${format}.toml`),
        `[[table]]\nname = "each_${format}"\nglob = "data/each-${format}/*"\nformat = "${format}"\neach = "a.b"\n`,
      );
      const reference = pythonReference(root, format, written[format], "a.b");
      const answer = await dirqAnswer(
        root,
        `each_${format}`,
        ["-c", `each-${format}.toml`],
        written[format],
      );
      disagreements.push(...compareAnswer(reference, answer));
    }
    assert.deepEqual(disagreements, [], report(root, "each", disagreements));
  });

  it("toml: known differences from tomllib, documented (docs/formats.md)", async () => {
    // Known difference, documented: these files are kept out of the random pools, and dirq's
    // current reading is asserted here, so that a change on either side is seen. smol-toml
    // keeps a CRLF inside a multi-line string where tomllib makes it LF (also in Markdown's
    // TOML front matter). TOML 1.1 syntax and dates that do not exist are refused as tomllib
    // refuses them (test/unit/toml-rows.test.ts, test/diff-toml-test.test.ts).
    const files: Record<string, { text: string; dirq: Record<string, unknown> }> = {
      "crlf-multi-line.toml": {
        text: "v = '''\r\nraw\r\nlines'''\r\nw = \"\"\"\r\na\r\nb\"\"\"\r\n",
        dirq: { v: "raw\r\nlines", w: "a\r\nb" },
      },
    };
    const written = writeFiles(
      root,
      "toml-known",
      Object.fromEntries(Object.entries(files).map(([name, { text }]) => [name, text])),
    );
    for (const [i, [name, { dirq }]] of Object.entries(files).entries()) {
      const result = await runDirq(
        [`SELECT * FROM './${written[i]}'`, "--parse", "toml", "--format", "json"],
        { cwd: root },
      );
      assert.equal(result.code, 0, `${name}: ${result.stderr}`);
      assert.deepEqual(JSON.parse(result.stdout), [dirq], name);
    }
    const markdown = writeFiles(root, "md-known", {
      "crlf-toml-front.md": "+++\r\nv = '''\r\nraw\r\nlines'''\r\n+++\r\nbody\r\n",
    });
    const result = await runDirq(
      [`SELECT * FROM './${markdown[0]}'`, "--parse", "markdown", "--format", "json"],
      { cwd: root },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), [{ v: "raw\r\nlines", body: "body\r\n" }]);
    if (!missing) {
      // Python's reading, for the record: each of these is a difference, not an agreement.
      const python = pythonReference(root, "toml", written);
      for (const [i, name] of Object.keys(files).entries()) {
        const file = python.get(written[i] as string);
        const agrees =
          file?.error === undefined &&
          JSON.stringify(file?.rows) ===
            JSON.stringify([
              Object.entries(files[name]?.dirq ?? {}).map(([k, v]) => [k, ["text", v]]),
            ]);
        assert.ok(!agrees, `${name}: tomllib now reads it as dirq does; move it to the pools`);
      }
    }
  });

  it("the hidden columns are selectable by name, not part of SELECT *", async () => {
    const result = await runDirq(
      [
        "SELECT *, _dirq_file_path, _dirq_row_index FROM './data/json/duplicate-key.json'",
        "--parse",
        "json",
        "--format",
        "json",
      ],
      { cwd: root },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      result.stdout,
      '[{"a":3,"b":2,"_dirq_file_path":"data/json/duplicate-key.json","_dirq_row_index":0}]\n',
    );
  });
});
