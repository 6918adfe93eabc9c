import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fieldValue, headerNames } from "../../src/parse/formats/csv-rows.js";
import { RowsError } from "../../src/parse/formats/document-rows.js";
import { formatOfPath } from "../../src/parse/formats/format-names.js";
import { splitFrontMatter } from "../../src/parse/formats/markdown-rows.js";
import { isoText } from "../../src/parse/formats/plain-values.js";
import {
  lastRecordEnd,
  PIECE_BYTES,
  readFileRows,
} from "../../src/parse/formats/read-file-rows.js";
import { timestampText } from "../../src/parse/formats/yaml-tags.js";
import type { FormatName } from "../../src/parse/formats/format-names.js";
import type { HookRow } from "../../src/parse/hook-rows.js";

const dir = mkdtempSync(join(tmpdir(), "dirq-formats-unit-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Every row of a file, and how many times rows were handed over (pieces with rows). */
function read(format: FormatName, text: string | Buffer, each: string | null = null) {
  const name = `f${Math.random().toString(36).slice(2)}.${format === "markdown" ? "md" : format}`;
  writeFileSync(join(dir, name), text);
  const rows: HookRow[] = [];
  let batches = 0;
  readFileRows(format, each, join(dir, name), name, (batch) => {
    batches++;
    rows.push(...batch);
  });
  return { rows: rows.map((row) => Object.fromEntries(row)), batches };
}

function failure(format: FormatName, text: string | Buffer, each: string | null = null): string {
  try {
    read(format, text, each);
  } catch (error) {
    assert.ok(error instanceof RowsError, String(error));
    return error.message;
  }
  assert.fail("expected the file to fail");
}

describe("CSV fields", () => {
  test("number literals as JSON writes them; everything else stays text", () => {
    assert.equal(fieldValue(""), null);
    assert.equal(fieldValue("42"), 42n);
    assert.equal(fieldValue("-0"), 0n);
    assert.equal(fieldValue("9223372036854775807"), 9223372036854775807n);
    assert.equal(fieldValue("9223372036854775808"), 9223372036854775808);
    assert.equal(fieldValue("1.5"), 1.5);
    assert.equal(fieldValue(".5"), 0.5);
    assert.equal(fieldValue("1e3"), 1000);
    assert.equal(fieldValue("1e999"), Infinity);
    for (const text of ["007", "+5", "1,000", " 42", "42 ", "-", ".", "0x10", "NaN", "inf"]) {
      assert.equal(fieldValue(text), text, text);
    }
  });

  test("typed without regular expressions, as the rules' regular expressions type them", () => {
    const integer = /^-?(?:0|[1-9]\d*)$/;
    const real = /^-?(?:(?:0|[1-9]\d*)(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;
    const alphabet = ["0", "1", "9", "-", "+", ".", "e", "E", "x", " ", "٣"];
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let n = 0; n < 20_000; n++) {
      let text = "";
      for (let length = Math.floor(random() * 7); length > 0; length--) {
        text += alphabet[Math.floor(random() * alphabet.length)];
      }
      let expected: unknown = text;
      if (text === "") expected = null;
      else if (integer.test(text)) expected = BigInt(text);
      else if (real.test(text)) expected = Number(text);
      assert.equal(fieldValue(text), expected, JSON.stringify(text));
    }
  });

  test("header names: empty ones by position, repeats numbered as DuckDB does", () => {
    assert.deepEqual(headerNames(["a", "", "A", "a", "a_1"]), [
      "a",
      "column1",
      "A_1",
      "a_2",
      "a_1_1",
    ]);
  });
});

describe("pieces of a large file", () => {
  test("a record end is a newline outside quotes", () => {
    assert.equal(lastRecordEnd(Buffer.from('a,b\n1,"x\ny"\n2,'), true), 12);
    assert.equal(lastRecordEnd(Buffer.from('a,b\n1,"x\ny'), true), 4);
    assert.equal(lastRecordEnd(Buffer.from('"x\ny'), true), -1);
    assert.equal(lastRecordEnd(Buffer.from("a\nb"), false), 2);
  });

  test("CSV with quoted newlines across piece boundaries reads as one piece would", () => {
    const lines = ["id,text,n"];
    for (let i = 0, length = 0; length < PIECE_BYTES * 3; i++) {
      const line = `${i},"line one\nline ""two"", and, commas${"x".repeat(i % 97)}",${i * 3}`;
      lines.push(line);
      length += line.length + 2;
    }
    const text = `${lines.join("\r\n")}\r\n`;
    const { rows, batches } = read("csv", text);
    assert.ok(batches > 1, `read in ${batches} pieces`);
    assert.equal(rows.length, lines.length - 1);
    rows.forEach((row, i) => {
      assert.equal(row.id, BigInt(i));
      assert.equal(row.text, `line one\nline "two", and, commas${"x".repeat(i % 97)}`);
      assert.equal(row.n, BigInt(i * 3));
    });
  });

  test("a bad record deep in a large file is named by its line", () => {
    const lines = ["a,b"];
    while (lines.length * 14 < PIECE_BYTES * 2) lines.push('1,"two\nlines"');
    const bad = lines.length * 2; // each record above takes two lines
    lines.push("1,2,3");
    assert.equal(
      failure("csv", `${lines.join("\n")}\n`),
      `line ${bad}: 3 fields, but the header has 2`,
    );
  });

  test("JSON Lines in pieces: line numbers run on; a last line without newline waits", () => {
    const lines: string[] = [];
    while (lines.length * 70 < PIECE_BYTES * 2.5) {
      lines.push(JSON.stringify({ i: lines.length, s: "é".repeat(50) }));
    }
    const { rows, batches } = read("jsonl", `\uFEFF${lines.join("\n")}\n{"i": -1`);
    assert.ok(batches > 1);
    assert.equal(rows.length, lines.length);
    assert.equal(rows.at(-1)?.i, BigInt(lines.length - 1));
    const message = failure("jsonl", `${lines.join("\n")}\n{"i": }\n`);
    assert.match(message, new RegExp(`^line ${lines.length + 1}, column 7: `));
  });

  test("invalid UTF-8 is named by its line", () => {
    assert.equal(
      failure(
        "jsonl",
        Buffer.concat([Buffer.from('{"a":1}\n{"a":"'), Buffer.from([0xff]), Buffer.from('"}\n')]),
      ),
      "line 2: not valid UTF-8 (dirq reads text files as UTF-8)",
    );
  });
});

describe("documents", () => {
  test("each follows keys and array positions, and says where it stops", () => {
    const doc = JSON.stringify({ data: { pages: [{ items: [{ k: 1 }, { k: 2 }] }] } });
    assert.deepEqual(read("json", doc, "data.pages.0.items").rows, [{ k: 1n }, { k: 2n }]);
    assert.equal(failure("json", doc, "data.rows"), "each 'data.rows': 'data' has no key 'rows'");
    assert.equal(
      failure("json", doc, "data.pages.1"),
      "each 'data.pages.1': 'data.pages' has no item 1",
    );
    assert.match(
      failure("json", JSON.stringify({ a: 5 }), "a"),
      /^each 'a' holds a number, expected/,
    );
    assert.match(failure("json", "[1, 2]"), /^item 0 of the array is a number, expected an object/);
    assert.match(failure("json", '"text"'), /^the file holds a string/);
  });

  test("JSON: duplicate keys keep the last; an empty file is an error; syntax errors name the line", () => {
    assert.deepEqual(read("json", '{"a": 1, "a": 2}').rows, [{ a: 2n }]);
    assert.equal(failure("json", " \n"), "the file is empty: a JSON file holds one JSON text");
    assert.equal(
      failure("json", '{\n  "a": NaN\n}'),
      "line 2, column 8: Object value expected after ':' (not valid JSON)",
    );
  });

  test("YAML 1.1 as PyYAML reads it; dates keep their text", () => {
    const { rows } = read(
      "yaml",
      "a: yes\nb: 017\nc: 3.0\nd: 2001-12-14 21:59:43.10 -5\ne: 2024-01-05\n---\na: no\n",
    );
    assert.deepEqual(rows, [
      { a: 1n, b: 15n, c: 3, d: "2001-12-14T21:59:43.10-05:00", e: "2024-01-05" },
      { a: 0n },
    ]);
    assert.equal(timestampText("2001-12-14t21:59:43Z"), "2001-12-14T21:59:43Z");
  });

  test("YAML: each file read on its own; a %YAML 1.2 line changes no other file", () => {
    const values = "flag: yes\nswitch: on\nn: 017\nt: 20:03:20\n";
    const expected = { flag: 1n, switch: 1n, n: 15n, t: 72200n };
    // PyYAML reads a %YAML 1.2 document as YAML 1.1 too.
    assert.deepEqual(read("yaml", `%YAML 1.2\n---\n${values}`).rows, [expected]);
    assert.deepEqual(read("yaml", values).rows, [expected]);
    assert.deepEqual(read("markdown", `---\n${values}draft: yes\n---\nx\n`).rows, [
      { ...expected, draft: 1n, body: "x\n" },
    ]);
    // A %TAG handle holds for its own document only.
    assert.deepEqual(read("yaml", "%TAG !e! tag:yaml.org,2002:\n---\na: !e!int '1'\n").rows, [
      { a: 1n },
    ]);
  });

  test("YAML explicit tags resolve as PyYAML's safe_load constructs them", () => {
    const { rows } = read(
      "yaml",
      "f: !!float 1\ng: !!float -.INF\nh: !!float 1:30.5\ni: !!int '3'\nj: !!int -0x1F\n" +
        "k: !!int 017\nl: !!str 3\nm: !!bool YES\nn: !!null x\no: !!timestamp 2024-1-5\n" +
        "p: 2024-1-5\nq: !!float 1e5\nr: 2024-1-5 1:02:03\ns: 2024-01-05T10:00:00.\n",
    );
    assert.deepEqual(rows, [
      {
        ...{ f: 1, g: -Infinity, h: 90.5, i: 3n, j: -31n, k: 15n, l: "3", m: 1n, n: null },
        ...{ o: "2024-01-05", p: "2024-1-5", q: 100000, r: "2024-01-05T01:02:03" },
        s: "2024-01-05T10:00:00",
      },
    ]);
    for (const [text, reason] of [
      ["a: !!int x\n", /line 1, column 4: !!int "x": not an integer/],
      ["a: !!float 0x10\n", /!!float "0x10": not a number/],
      ["a: !!bool y\n", /!!bool "y": not a boolean/],
      ["a: !!timestamp 2024-01-05T10\n", /!!timestamp "2024-01-05T10": not a date/],
      ["a: 2024-02-30\n", /line 1, column 4: 2024-02-30 is not a date: day is out of range/],
      ["a: !Ref x\n", /line 1, column 4: the tag !Ref is not one Python's yaml.safe_load reads/],
      ["a: !!binary R0l\n", /!!binary holds text that is not base64/],
    ] as const) {
      assert.match(failure("yaml", text), reason, text);
    }
    assert.equal(timestampText("2024-1-5"), "2024-01-05");
    assert.equal(timestampText("2024-01-05 10:00:00 +5:3"), null);
  });

  test("YAML !!binary is a BLOB, its hex inside nested JSON text", () => {
    const { rows } = read("yaml", "a: !!binary |\n  R0lG\n  ODlh\nb: [!!binary AAE=]\n");
    assert.deepEqual(rows, [{ a: Buffer.from("GIF89a"), b: '["0001"]' }]);
  });

  test("YAML !!set, !!omap, !!pairs: not rows at the top; lists inside a value", () => {
    for (const tag of ["set", "omap", "pairs"]) {
      const text = tag === "set" ? "--- !!set\n? a\n? b\n" : `--- !!${tag}\n- a: 1\n- b: 2\n`;
      assert.match(
        failure("yaml", text),
        new RegExp(`^line 2, column 1: the document is a !!${tag}, not rows`),
      );
    }
    const { rows } = read(
      "yaml",
      "a: !!omap [x: 1, y: 2]\nb: !!pairs [x: 1, x: 2]\nc: !!set {q, p}\n",
    );
    assert.deepEqual(rows, [{ a: '[["x",1],["y",2]]', b: '[["x",1],["x",2]]', c: '["q","p"]' }]);
  });

  test("YAML directives PyYAML refuses are the file's error, naming the line", () => {
    for (const [text, reason] of [
      ["%YAML 1.1\n", /^line 1, column 1: a directive with no document after it/],
      ["a: 1\n...\n%YAML 1.1\n", /^line 3, column 1: a directive with no document after it/],
      ["%YAML 1.1\n%YAML 1.1\n---\na: 1\n", /^line 2, column 1: a second %YAML directive/],
      ["%YAML 2.0\n---\na: 1\n", /^line 1, column 1: %YAML 2.0: only YAML 1.x/],
      [
        "%TAG !e! tag:yaml.org,2002:\n---\na: !e!int '1'\n---\nb: !e!int '2'\n",
        /^line 5, column 4: the tag handle !e! is not declared for this document/,
      ],
    ] as const) {
      assert.match(failure("yaml", text), reason, text);
    }
  });

  test("TOML dates as ISO text; nested values as JSON text with exact integers", () => {
    const { rows } = read(
      "toml",
      "d = 1979-05-27T07:32:00Z\nl = 1979-05-27\nbig = 9007199254740993\n[t]\nx = [1, 2.5]\n",
    );
    assert.deepEqual(rows, [
      { d: "1979-05-27T07:32:00Z", l: "1979-05-27", big: 9007199254740993n, t: '{"x":[1,2.5]}' },
    ]);
    assert.equal(isoText(new Date(Date.UTC(2020, 0, 1, 0, 0, 0, 5))), "2020-01-01T00:00:00.005Z");
  });

  test("Markdown front matter: YAML or TOML at the very top, else only body", () => {
    assert.deepEqual(splitFrontMatter("---\r\na: 1\r\n---\r\nbody\n"), {
      kind: "yaml",
      text: "a: 1\r\n",
      body: "body\n",
    });
    assert.equal(splitFrontMatter("---\nno end\n"), null);
    assert.equal(splitFrontMatter("text\n---\na: 1\n---\n"), null);
    assert.deepEqual(read("markdown", "+++\ntitle = 'x'\n+++\n# hi\n").rows, [
      { title: "x", body: "# hi\n" },
    ]);
    assert.deepEqual(read("markdown", "---\n---\n").rows, [{ body: "" }]);
    assert.match(failure("markdown", "---\n- a\n---\n"), /front matter holds a list/);
    assert.match(failure("markdown", "---\nBody: x\n---\n"), /key 'Body'/);
    assert.match(failure("markdown", "---\na: [\n---\n"), /^line 3, /);
  });

  test("auto picks by extension, case ignored", () => {
    assert.equal(formatOfPath("a/b.JSON"), "json");
    assert.equal(formatOfPath("x.ndjson"), "jsonl");
    assert.equal(formatOfPath(".yml"), null);
    assert.equal(formatOfPath("README"), null);
  });
});
