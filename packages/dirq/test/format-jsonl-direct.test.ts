/**
 * A one-shot statement over JSON Lines read straight from the files (`query/direct-jsonl.ts`)
 * against the same statement over the table filled first (`DIRQ_DIRECT_READS=0`), end to end:
 * the same stdout byte for byte, the same stderr and exit status. Seeded files with values of
 * every type (integers past 2^53 and 64 bits, `-0`, escapes, unicode, nested values under keys
 * the statement does not name), keys spelled in other cases, blank lines, CRLF, a byte-order
 * mark, an unterminated last line, a small file cut at every line boundary (a file per cut),
 * files larger than the native reader's 4 MiB pieces (a line longer than one), and files with a
 * bad line (that file's rows gone, the others' standing, the file named, exit 23). Where the
 * direct read must answer, `DIRQ_DIRECT_READS=only` proves it did.
 *
 * Seeded: DIRQ_TEST_SEED replays a run.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { harnessSeed, pick, seededRandom } from "./differential.js";
import { runDirq, tempTree } from "./helpers.js";

const SEED = harnessSeed(6969);

const VALUES = [
  "0",
  "-0",
  "17",
  "-9007199254740993",
  "9223372036854775807",
  "9223372036854775808",
  "123456789012345678901234567890",
  "3.0",
  "2.50",
  "1e5",
  "1.5e-7",
  "true",
  "false",
  "null",
  '"plain"',
  '""',
  '"tab\\t \\"quoted\\" back\\\\slash"',
  '"\\u00e9\\u20ac \\ud83d\\ude00"',
  '"raw ünï 😀 ✓"',
  '"12"',
];
/** Keys the statements name (in other cases too) and keys they do not (nested values there). */
const KEYS = ['"a"', '"A"', '"b"', '"city"', '"other"', '"_dirq_x"'];
const NESTED = ['{"in": [1, {"deep": true}]}', "[1, 2.0, 9007199254740993]", "{}", "[]"];

function line(random: () => number, spelled: boolean): string {
  const count = Math.floor(random() * 5);
  const pairs = new Map<string, string>();
  for (let i = 0; i < count; i++) {
    let key = pick(random, KEYS);
    if (!spelled && key === '"A"') key = '"a"';
    if (pairs.has(key.toLowerCase()) || pairs.has(key.toUpperCase())) continue;
    const value = key === '"other"' && random() < 0.5 ? pick(random, NESTED) : pick(random, VALUES);
    pairs.set(key, value);
  }
  const body = [...pairs]
    .map(([key, value]) => `${key}: ${value}`)
    .join(random() < 0.5 ? ", " : ",");
  return `${random() < 0.2 ? " " : ""}{${body}}`;
}

function fileText(random: () => number, lines: number, spelled: boolean): string {
  const eol = random() < 0.3 ? "\r\n" : "\n";
  const all = Array.from({ length: lines }, () => (random() < 0.08 ? "" : line(random, spelled)));
  const bom = random() < 0.2 ? "\uFEFF" : "";
  const unterminated = random() < 0.3 ? '{"a": 99, "b' : "";
  return bom + all.map((text) => text + eol).join("") + unterminated;
}

/** A tree per seed: folders a statement reads whole. */
function tree(seed: number): Record<string, string> {
  const random = seededRandom(seed);
  const files: Record<string, string> = {};
  // `ok`: every key spelled as the statements spell it (the direct read answers).
  for (let f = 0; f < 4; f++) files[`ok/f${f}.jsonl`] = fileText(random, 40, false);
  // `spelled`: a key first spelled `A` in some files (the filled table's column is `A`).
  for (let f = 0; f < 3; f++) files[`spelled/f${f}.jsonl`] = fileText(random, 30, true);
  const lines = Array.from({ length: 14 }, () => line(random, false));
  for (let k = 0; k <= lines.length; k++) {
    const cut = lines.slice(0, k).join("\n") + (k === lines.length ? "" : "\n");
    files[`cuts/cut${String(k).padStart(2, "0")}.jsonl`] = cut;
  }
  // `bad`: one file with a line that is not JSON, one with a string that is not UTF-8's.
  files["bad/f0.jsonl"] = fileText(random, 20, false);
  files["bad/f1.jsonl"] = `${fileText(random, 10, false)}{"a": 1,}\n{"a": 2}\n`;
  files["bad/f2.jsonl"] = fileText(random, 20, false);
  return files;
}

/** Lines past the native reader's 4 MiB pieces, and one line longer than a piece. */
function bigTree(seed: number): Record<string, string> {
  const random = seededRandom(seed);
  const lines: string[] = [];
  for (let size = 0; size < 9 << 20;) {
    const text = `{"a": ${Math.floor(random() * 1e6)}, "b": "${"n".repeat(Math.floor(random() * 300))}", "city": "c${Math.floor(random() * 20)}"}`;
    lines.push(text);
    size += text.length + 1;
  }
  lines.splice(lines.length >> 1, 0, `{"a": -1, "b": "${"long ".repeat(1_100_000)}"}`);
  const text = `${lines.join("\n")}\n`;
  return { "big/one.jsonl": text, "big/two.jsonl": text.slice(0, text.length >> 1) };
}

const STATEMENTS = [
  (from: string) =>
    `SELECT _dirq_file_path, _dirq_row_index, a, typeof(a), b, typeof(b) FROM '${from}' ORDER BY 1, 2`,
  (from: string) => `SELECT a, b, city FROM '${from}'`,
  (from: string) => `SELECT count(*), sum(a), total(b), max(length(b)) FROM '${from}'`,
  (from: string) => `SELECT city, count(*), sum(a) FROM '${from}' GROUP BY city ORDER BY 1`,
  (from: string) => `SELECT t.a FROM '${from}' AS t WHERE t.b IS NOT NULL ORDER BY 1 LIMIT 7`,
];

/**
 * Runs `sql` over the filled table and read directly, and asserts the same stdout, stderr and
 * exit status. Where `directMustAnswer` says so of the filled run, the direct read runs as
 * `only` (it must answer, or exit 1), which also proves what the fallback's run would.
 */
async function both(
  root: string,
  sql: string,
  env: Record<string, string> = {},
  args: string[] = [],
  directMustAnswer: (filled: { code: number | null }) => boolean = () => false,
) {
  const run = (direct: string) =>
    runDirq([sql, "--parse", "jsonl", ...args], {
      cwd: root,
      env: { ...env, DIRQ_DIRECT_READS: direct },
    });
  const filled = await run("0");
  const direct = await run(directMustAnswer(filled) ? "only" : "1");
  assert.equal(direct.stdout, filled.stdout, sql);
  assert.equal(direct.stderr, filled.stderr, sql);
  assert.equal(direct.code, filled.code, sql);
  return { filled, only: () => run("only") };
}

/** The native reader's ranges a few lines long, parsed on three threads. */
const THREADED = { DIRQ_JSONL_THREADS: "3", DIRQ_JSONL_RANGE_BYTES: "40" };

for (const seed of [SEED, SEED + 1]) {
  describe(`one-shot JSON Lines read directly give the filled table's answer (seed ${seed})`, () => {
    const root = tempTree(tree(seed));

    it("every statement, every folder, as JSON and CSV", async () => {
      for (const folder of ["./ok", "./cuts", "./spelled"]) {
        for (const statement of STATEMENTS) {
          const sql = statement(folder);
          // Every file read to its end and every column a key of some file (a folder of few
          // lines may lack one: "no such column" both ways): the direct read answers.
          await both(
            root,
            sql,
            {},
            [],
            (filled) => folder !== "./spelled" && filled.code === 0 && !/LIMIT/.test(sql),
          );
          if (statement === STATEMENTS[0] || statement === STATEMENTS[3]) {
            await both(root, sql, THREADED, ["--format", "csv"]);
          }
        }
      }
    });

    it("a file with a bad line: its rows gone, the others standing, exit 23", async () => {
      for (const statement of STATEMENTS) {
        const { filled, only } = await both(root, statement("./bad"), THREADED);
        assert.equal(filled.code, 23, filled.stderr);
        assert.match(filled.stderr, /bad\/f1\.jsonl/);
        assert.equal((await only()).code, 1);
      }
    });

    it("a column no file has, every column, a table named twice or scanned twice", async () => {
      for (const sql of [
        "SELECT nothing FROM './ok'",
        "SELECT * FROM './ok'",
        "SELECT count(*) FROM './ok' WHERE a IN (SELECT a FROM './ok')",
        "SELECT rowid, a FROM './ok' ORDER BY 1",
        // Scanned once per outer row: the direct read stops at the second scan.
        "SELECT v.column1, (SELECT count(*) FROM './ok' WHERE a = v.column1) FROM (VALUES (0), (17), ('plain')) AS v",
      ]) {
        await both(root, sql);
      }
    });
  });
}

describe("JSON Lines larger than the native reader's pieces, read directly", () => {
  const root = tempTree(bigTree(SEED));

  it("the filled table's answer, on one thread and on four", async () => {
    for (const statement of STATEMENTS) {
      const sql = statement("./big");
      for (const env of [{ DIRQ_JSONL_THREADS: "0" }, { DIRQ_JSONL_THREADS: "3" }]) {
        const { filled } = await both(root, sql, env, [], () => !/LIMIT/.test(sql));
        assert.equal(filled.code, 0, filled.stderr);
      }
    }
  });
});

describe("an answer past the bound held in memory", () => {
  const root = tempTree(tree(SEED));

  it("is dropped, and the filled table's is given", async () => {
    const sql = STATEMENTS[1]?.("./ok") ?? "";
    const small = { DIRQ_DIRECT_HELD_BYTES: "2000" };
    const { filled, only } = await both(root, sql, small);
    assert.equal(filled.code, 0, filled.stderr);
    assert.ok(filled.stdout.length > 4000);
    assert.equal((await only()).code, 1);
  });
});

describe("the reader of whole files is dirq's own", () => {
  const root = tempTree({ "secret.jsonl": '{"a": 1}\n' });

  it("a statement that names it is refused before it runs", async () => {
    for (const sql of [
      `SELECT * FROM dirq_jsonl_file('${root}/secret.jsonl', 'a', 'a', 0, 'guess')`,
      "SELECT dirq_jsonl_file_arm('guess', 1)",
      "SELECT dirq_jsonl_file_report()",
    ]) {
      const run = await runDirq([sql, "--parse", "jsonl"], { cwd: root });
      assert.equal(run.code, 1, sql);
      assert.match(run.stderr, /internal to dirq/, sql);
      assert.equal(run.stdout, "", sql);
    }
  });
});
