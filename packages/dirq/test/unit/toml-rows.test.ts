import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { RowsError } from "../../src/parse/formats/document-rows.js";
import { tomlTable } from "../../src/parse/formats/toml-rows.js";
import { python3 } from "../helpers.js";

/** Texts where smol-toml alone and Python's tomllib disagreed on whether they are TOML. */
const CASES = [
  "d = 2100-02-29",
  "d = 2024-02-29",
  "d = 2023-02-30T10:00:00Z",
  "d = 2023-04-31 10:00:00",
  "d = 1979-05-27T07:32:00-08:00",
  'a = ["2100-02-29", 2024-12-31]',
  "a = [2021-13-01]",
  's = "2100-02-29"',
  "s = '''\n2100-02-29\n'''",
  "# 2100-02-29\nd = 2024-01-05",
  "2100-02-29 = 1",
  "\uFEFFa = 1",
  // TOML 1.1, which smol-toml reads and TOML 1.0 (tomllib) does not; and 1.0 texts beside them.
  "tm = 07:32",
  "d = 1979-05-27T07:32Z",
  "d = 1979-05-27 07:32:00.5+05:30",
  's = "\\e[0m"',
  's = "\\x41"',
  's = """\na\\x41"""',
  "s = '\\x41'",
  's = "\\\\x41"',
  '"k\\x41" = 1',
  "t = { a = 1, }",
  "t = { a = 1,\n b = 2 }",
  "t = { a = 1 # note\n}",
  "t = { a = [\n1,\n2,\n] }",
  "a = [1, 2,]",
  't = { s = """\nx""" }',
  "[t]\na = 1\n[[u]]\nb = { c = 2 }",
];

/** Whether tomllib reads each text (true) or refuses it (false). */
function tomllibReads(texts: readonly string[]): boolean[] {
  const script =
    "import json, sys, tomllib\n" +
    "out = []\n" +
    "for text in json.load(sys.stdin):\n" +
    "    try:\n" +
    "        tomllib.loads(text); out.append(True)\n" +
    "    except Exception:\n" +
    "        out.append(False)\n" +
    "print(json.dumps(out))\n";
  const run = spawnSync(python3(), ["-c", script], {
    input: JSON.stringify(texts),
    encoding: "utf8",
  });
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout) as boolean[];
}

function dirqReads(text: string): boolean {
  try {
    tomlTable(text);
    return true;
  } catch (error) {
    assert.ok(error instanceof RowsError, String(error));
    return false;
  }
}

describe("TOML read as tomllib reads it", () => {
  it("dates that do not exist, a second byte-order mark and TOML 1.1 are refused; others read", () => {
    // dirq strips the file's first byte-order mark before the parser; tomllib gets none.
    const reference = tomllibReads(CASES.map((text) => text.replace(/^\uFEFF/, "\uFEFF\uFEFF")));
    assert.deepEqual(
      CASES.map((text) => dirqReads(text)),
      reference,
      CASES.join("\n---\n"),
    );
  });

  it("the refusal names the line and the date", () => {
    assert.throws(
      () => tomlTable("a = 1\nb = 2\nd = 2100-02-29"),
      /^Error: line 3: 2100-02-29 is not a date \(not valid TOML\)$/,
    );
    assert.throws(() => tomlTable("\uFEFFa = 1"), /a second byte-order mark/);
    assert.throws(
      () => tomlTable("a = 1\ntm = 07:32"),
      /^Error: line 2: the time 07:32 has no seconds, not valid TOML 1\.0, which dirq reads, as Python's tomllib \(write 07:32:00\)$/,
    );
    assert.throws(
      () => tomlTable('a = 1\ns = """\n\\e"""'),
      /^Error: line 3: the escape \\e is TOML 1\.1/,
    );
    assert.throws(
      () => tomlTable("t = { a = 1,\n b = 2 }"),
      /^Error: line 1: a line break inside an inline table/,
    );
    assert.throws(
      () => tomlTable("\nt = { a = 1, }"),
      /^Error: line 2: a comma after an inline table's last value/,
    );
  });
});
