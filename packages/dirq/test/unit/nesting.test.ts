import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { FormatName } from "../../src/parse/formats/format-names.js";
import { MAX_NESTING } from "../../src/parse/formats/nesting.js";
import { readFileRows } from "../../src/parse/formats/read-file-rows.js";
import { tempTree } from "../helpers.js";

const dir = tempTree({});

/** The rows of a file, or its error's message. */
function read(format: FormatName, name: string, text: string): number | string {
  writeFileSync(join(dir, name), text);
  let rows = 0;
  try {
    readFileRows(format, null, join(dir, name), name, (batch) => (rows += batch.length));
  } catch (error) {
    return (error as Error).message;
  }
  return rows;
}

const nested = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;
const LIMIT = `nested deeper than ${MAX_NESTING} levels (dirq's limit for arrays and objects)`;

describe("nesting deeper than the limit is the file's error, naming the limit", () => {
  it("JSON and JSON Lines: up to the limit reads; one level more names the line", () => {
    assert.equal(read("json", "a.json", `{"x": ${nested(MAX_NESTING - 1)}}`), 1);
    assert.equal(read("json", "b.json", `{\n"x": ${nested(MAX_NESTING)}}`), `line 2: ${LIMIT}`);
    assert.equal(read("json", "c.json", `{"x": ${nested(100_000)}}`), `line 1: ${LIMIT}`);
    const lines = `{"a": 1}\n{"x": ${nested(MAX_NESTING)}}\n`;
    assert.equal(read("jsonl", "d.jsonl", lines), `line 2: ${LIMIT}`);
  });

  it("brackets inside strings do not count", () => {
    const text = `{"x": "${"[".repeat(2 * MAX_NESTING)}"}`;
    assert.equal(read("json", "e.json", text), 1);
  });

  it("YAML: flow collections count; quoted strings and comments do not", () => {
    assert.equal(read("yaml", "a.yaml", `x: ${nested(MAX_NESTING)}\n`), 1);
    assert.equal(
      read("yaml", "b.yaml", `a: 1\nx: ${nested(MAX_NESTING + 1)}\n`),
      `line 2: ${LIMIT}`,
    );
    const brackets = "[".repeat(2 * MAX_NESTING);
    const text = `a: '${brackets}'\nb: "${brackets}"\n# ${brackets}\nc: it's\n`;
    assert.equal(read("yaml", "c.yaml", text), 1);
  });
});
