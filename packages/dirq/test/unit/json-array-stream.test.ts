/**
 * The streamed JSON array reader against the whole-file JSON reader (`jsonRows`), on seeded
 * arrays with the cases that trip a byte scanner (escaped quotes and backslashes, brackets and
 * commas inside strings, unicode, integers past 2^53, whole-valued REALs, deep nesting, CRLF,
 * a byte-order mark), read in pieces of many sizes, and on every prefix cut at a line boundary
 * and on seeded corruptions: the same rows (values and types) where the whole reader reads the
 * file, and the same error, word for word, where it refuses it. Only a file that is not an
 * array is given up on (`NotStreamable`: the caller reads it whole).
 *
 * Seeded: DIRQ_TEST_SEED replays a run.
 */
import assert from "node:assert/strict";
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { HookRow } from "../../src/parse/hook-rows.js";
import { RowsError } from "../../src/parse/formats/document-rows.js";
import { NotStreamable, readJsonArrayPieces } from "../../src/parse/formats/json-array-stream.js";
import { jsonRows } from "../../src/parse/formats/json-rows.js";
import { PIECE_BYTES, readFileRows } from "../../src/parse/formats/read-file-rows.js";
import { harnessSeed, seededRandom } from "../differential.js";

const SEED = harnessSeed(6969);
const dir = mkdtempSync(join(tmpdir(), "dirq-json-array-stream-"));
after(() => rmSync(dir, { recursive: true, force: true }));

type Random = () => number;
const int = (random: Random, n: number) => Math.floor(random() * n);

const STRINGS = [
  "",
  "plain",
  'say "hi"',
  "back\\slash\\",
  "ends in backslash \\",
  "comma, [bracket] {brace}",
  '"],[{"',
  "line\nbreak\r\n",
  "emoji 😀 astral 𝄞",
  "e\u0301 combining",
  "\u0000 nul and \u001f",
  "private \uE000 use",
];
const NUMBERS = [
  "0",
  "-0",
  "3",
  "-12",
  "9007199254740993",
  "-9223372036854775808",
  "9223372036854775808",
  "3.0",
  "2.50",
  "1e5",
  "-0.0",
  "1.5e-7",
  "123456789012345678901234567890",
];

function value(random: Random, depth: number): string {
  const kind = int(random, depth > 3 ? 4 : 6);
  if (kind === 0) return JSON.stringify(STRINGS[int(random, STRINGS.length)]);
  if (kind === 1) return NUMBERS[int(random, NUMBERS.length)] as string;
  if (kind === 2) return ["true", "false", "null"][int(random, 3)] as string;
  if (kind === 3) return `"\\u00e9\\"\\\\${int(random, 100)}"`;
  if (kind === 4) {
    const items = Array.from({ length: int(random, 4) }, () => value(random, depth + 1));
    return `[${items.join(", ")}]`;
  }
  return object(random, depth + 1);
}

function object(random: Random, depth: number): string {
  const keys = 1 + int(random, 5);
  const fields = Array.from({ length: keys }, (_, i) => {
    const key =
      i === 0 ? "id" : JSON.stringify(`${STRINGS[int(random, STRINGS.length)] ?? ""}${i}`);
    return `${key}:${random() < 0.3 ? " " : ""}${value(random, depth)}`;
  });
  return `{${fields.join(",")}}`;
}

const SPACES = ["", " ", "\n", "\r\n", "\n  ", "\t"];

/** A seeded array of objects, spaced as people and programs write them. */
function arrayText(random: Random, elements: number): string {
  const space = () => SPACES[int(random, SPACES.length)] as string;
  const items = Array.from({ length: elements }, () => `${space()}${object(random, 0)}${space()}`);
  const bom = random() < 0.1 ? "\uFEFF" : "";
  return `${bom}${space()}[${items.join(",\n")}${space()}]${space()}`;
}

function writeFile(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** The whole-file reader's rows, or its error. */
function wholeRows(text: string): HookRow[] | RowsError {
  const rows: HookRow[] = [];
  try {
    jsonRows(text.startsWith("\uFEFF") ? text.slice(1) : text, null, rows);
    return rows;
  } catch (error) {
    if (error instanceof RowsError) return error;
    throw error;
  }
}

/** The whole reader's error for a file's bytes (not all UTF-8, maybe), as readFileRows gives it. */
function wholeBytesError(bytes: Buffer): RowsError | null {
  const path = join(dir, "whole-bytes.json");
  writeFileSync(path, bytes);
  try {
    // Under a piece, readFileRows reads a JSON file whole.
    readFileRows("json", null, path, "whole-bytes.json", () => {});
    return null;
  } catch (error) {
    if (error instanceof RowsError) return error;
    throw error;
  }
}

/** The streamed reader's rows at `pieceBytes`, its error, or that it gave up. */
function streamedRows(path: string, pieceBytes: number): HookRow[] | NotStreamable | RowsError {
  const rows: HookRow[] = [];
  const fd = openSync(path, "r");
  try {
    readJsonArrayPieces(fd, pieceBytes, (batch) => rows.push(...batch));
    return rows;
  } catch (error) {
    if (error instanceof NotStreamable || error instanceof RowsError) return error;
    throw error;
  } finally {
    closeSync(fd);
  }
}

/** Whether `text` opens an array (after a byte-order mark and spaces). */
const opensArray = (text: string) => /^\uFEFF?[ \t\r\n]*\[/.test(text);

/** Same rows where the whole reader reads `text`; its very error where it refuses it. */
function assertAgrees(text: string, pieceBytes: number, what: string): void {
  const path = writeFile("agree.json", text);
  const whole = wholeRows(text);
  const streamed = streamedRows(path, pieceBytes);
  if (whole instanceof RowsError) {
    if (streamed instanceof NotStreamable && !opensArray(text)) return;
    assert.ok(
      streamed instanceof RowsError,
      `${what}: read rows where JSON refuses: ${whole.message}`,
    );
    assert.equal(streamed.message, whole.message, what);
  } else {
    assert.ok(Array.isArray(streamed), `${what}: refused (${(streamed as Error).message})`);
    assert.deepStrictEqual(streamed, whole, what);
  }
}

describe(`the streamed JSON array reader reads what the whole-file reader reads (seed ${SEED})`, () => {
  test("seeded arrays, in pieces of many sizes", () => {
    const random = seededRandom(SEED);
    for (let file = 0; file < 60; file++) {
      const text = arrayText(random, int(random, 40));
      for (const pieceBytes of [1, 2, 7, 64, 1000, 1 << 16]) {
        assertAgrees(text, pieceBytes, `file ${file}, pieces of ${pieceBytes} bytes`);
      }
    }
  });

  test("every prefix cut at a line boundary, and seeded corruptions", () => {
    const random = seededRandom(SEED + 1);
    for (let file = 0; file < 8; file++) {
      const text = arrayText(random, 30);
      for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) {
        assertAgrees(text.slice(0, at + 1), 1 + int(random, 200), `file ${file} cut at ${at}`);
      }
      const bytes = ["]", "[", "}", "{", ",", '"', "\\", "x", " "];
      for (let k = 0; k < 40; k++) {
        const at = int(random, text.length);
        const broken = `${text.slice(0, at)}${bytes[int(random, bytes.length)]}${text.slice(at + 1)}`;
        assertAgrees(broken, 1 + int(random, 200), `file ${file} changed at ${at}`);
      }
    }
  });

  test("what is not an array is left to the whole reader; an array's errors are its own", () => {
    for (const text of ['{"a": 1}', "  ", "x[]"]) {
      assert.ok(streamedRows(writeFile("other.json", text), 4) instanceof NotStreamable, text);
    }
    for (const text of ["[1, 2]", "[{}, 3]", "[{},]", "[,{}]", "[{} {}]", "[{}] x", "[{}, [1,]]"]) {
      assertAgrees(text, 4, text);
    }
    const deep = `[${"[".repeat(600)}${"]".repeat(600)}]`;
    assertAgrees(deep, 64, "600 levels");
    assertAgrees(`[{}, {"a": 1}, ${deep}, x]`, 64, "600 levels before a syntax error");
    assertAgrees(`[{"a": 1, "a": 2}, {}, 3, x]`, 5, "a key twice, an integer, then a syntax error");
    assert.deepStrictEqual(streamedRows(writeFile("empty.json", " [ ] \n"), 2), []);
  });

  test("an element that is no row is named after the rest is checked", () => {
    const random = seededRandom(SEED + 3);
    for (let file = 0; file < 20; file++) {
      const items = Array.from({ length: 20 + int(random, 30) }, () => object(random, 0));
      items[int(random, items.length)] = ["3", "null", '"text"', "[1]", "true"][
        int(random, 5)
      ] as string;
      if (random() < 0.5) {
        const at = int(random, items.length);
        items[at] = ["{", "}", "x", '{"a" 1}', "\u00ff\u0000"][int(random, 5)] as string;
      }
      if (random() < 0.3) {
        const bytes = Buffer.from(`[${items.join(",\n")}]`);
        bytes[int(random, bytes.length)] = 0xff;
        const path = join(dir, "bytes.json");
        writeFileSync(path, bytes);
        const whole = wholeBytesError(bytes);
        const streamed = streamedRows(path, 1 + int(random, 300));
        assert.ok(streamed instanceof RowsError && whole !== null, `file ${file}: not refused`);
        assert.equal(streamed.message, whole.message, `file ${file}`);
        continue;
      }
      assertAgrees(`[${items.join(",\n")}]`, 1 + int(random, 300), `file ${file}`);
    }
  });

  test("a file larger than a piece: readFileRows gives today's rows and today's errors", () => {
    const random = seededRandom(SEED + 2);
    const text = arrayText(random, 3);
    const big = `[${Array.from({ length: Math.ceil((2 * PIECE_BYTES) / text.length) }, () => text.trim().slice(1, -1)).join(",")}]`;
    const read = (name: string, content: string) => {
      const rows: HookRow[] = [];
      const path = writeFile(name, content);
      try {
        readFileRows("json", null, path, name, (batch) => rows.push(...batch));
        return rows;
      } catch (error) {
        return error as Error;
      }
    };
    assert.deepStrictEqual(read("big.json", big), wholeRows(big));
    for (const cut of [big.length - 1, big.lastIndexOf(","), Math.floor(big.length / 2)]) {
      const truncated = big.slice(0, cut);
      const error = read("cut.json", truncated);
      assert.ok(error instanceof RowsError);
      assert.equal(error.message, (wholeRows(truncated) as RowsError).message);
    }
  });
});
