/**
 * A one-shot statement over a path-table read by `--parse` loads only the columns it names:
 * differential against the same table loaded whole (`SELECT *`), on seeded JSON, JSON Lines
 * and CSV files whose keys vary from file to file and in case, one JSON array larger than a
 * piece (read element by element): every value and SQLite type of each named column is the
 * one the whole table holds, row for row, and `count(*)` counts the same rows.
 *
 * Seeded: DIRQ_TEST_SEED replays a run.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { harnessSeed, seededRandom } from "./differential.js";
import { parseRows, runDirq, runOk, tempTree } from "./helpers.js";

const SEED = harnessSeed(6970);

type Random = () => number;
const int = (random: Random, n: number) => Math.floor(random() * n);

const KEYS = ["id", "name", "Amount", "amount", "score", "ok", "tags", "note", "when"];
const VALUES: unknown[] = [
  0,
  -7,
  9007199254740993n,
  3.5,
  2.0,
  "text",
  "",
  'comma, and "quote"',
  "ünï 😀",
  true,
  false,
  null,
  [1, "a"],
  { nested: { deep: 1 } },
];

/** JSON text, integers past 2^53 written exactly. */
function json(value: unknown): string {
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "number" && Number.isInteger(value) && String(value) === "2") return "2.0";
  if (Array.isArray(value)) return `[${value.map(json).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${json(v)}`)
      .join(",")}}`;
  }
  return JSON.stringify(value);
}

function objectText(random: Random, id: number): string {
  const keys = KEYS.slice(1).filter(() => random() < 0.6);
  const pairs = keys.map(
    (key) => `${JSON.stringify(key)}:${json(VALUES[int(random, VALUES.length)])}`,
  );
  return `{"id":${id},${pairs.join(",")}}`.replace(",}", "}");
}

function csvField(random: Random): string {
  const value = VALUES[int(random, 9)];
  return `"${String(value).replaceAll('"', '""')}"`;
}

function tree(random: Random): Record<string, string> {
  const files: Record<string, string> = {};
  let id = 0;
  for (let f = 0; f < 12; f++) {
    const rows = Array.from({ length: 1 + int(random, 30) }, () => objectText(random, ++id));
    files[`data/jsonl/f${f}.jsonl`] = `${rows.join("\n")}\n`;
    files[`data/json/f${f}.json`] = `[${rows.join(",\n")}]`;
    const header = KEYS.filter(() => random() < 0.7);
    const records = rows.map(() => header.map(() => csvField(random)).join(","));
    files[`data/csv/f${f}.csv`] = `${header.join(",")}\n${records.join("\n")}\n`;
  }
  const large: string[] = [];
  for (let size = 0; size < 3 << 20;) {
    const text = objectText(random, ++id).replace("}", `,"pad":"${"x".repeat(int(random, 400))}"}`);
    large.push(text);
    size += text.length;
  }
  files["data/json/large.json"] = `[\n${large.join(",\n")}\n]\n`;
  return files;
}

/** `[file, index, value, type]` of every row, in file and row order. */
type Cells = [string, number, unknown, string][];

async function columnCells(root: string, folder: string, column: string): Promise<Cells> {
  const sql =
    `SELECT _dirq_file_path AS f, _dirq_row_index AS i, "${column}" AS v, typeof("${column}") AS t ` +
    `FROM './data/${folder}' ORDER BY f, i`;
  const rows = parseRows(await runOk(root, [sql, "--parse", folder, "--format", "json"]));
  return rows.map((row) => [row.f as string, row.i as number, row.v, row.t as string]);
}

describe(`a --parse table loads the columns its statement names (seed ${SEED})`, () => {
  const root = tempTree(tree(seededRandom(SEED)));

  for (const folder of ["jsonl", "json", "csv"]) {
    it(`${folder}: each named column holds what the whole table holds, row for row`, async () => {
      const all = `SELECT *, _dirq_file_path AS f, _dirq_row_index AS i FROM './data/${folder}' ORDER BY f, i`;
      const whole = parseRows(await runOk(root, [all, "--parse", folder, "--format", "json"]));
      const columns = Object.keys(whole[0] ?? {}).filter((key) => key !== "f" && key !== "i");
      assert.ok(columns.length >= 5, `columns: ${columns.join(", ")}`);
      const types = `SELECT ${columns.map((c) => `typeof("${c}")`).join(", ")} FROM './data/${folder}' ORDER BY _dirq_file_path, _dirq_row_index`;
      // typeof of every column read with every column loaded: `*` is not needed for that.
      const typed = parseRows(
        await runOk(root, [
          types.replace("SELECT ", "SELECT *, "),
          "--parse",
          folder,
          "--format",
          "json",
        ]),
      );
      for (const [c, column] of columns.entries()) {
        const expected = whole.map((row, r): Cells[number] => [
          row.f as string,
          row.i as number,
          row[column],
          typed[r]?.[`typeof("${column}")`] as string,
        ]);
        assert.deepEqual(
          await columnCells(root, folder, column),
          expected,
          `column ${c} ${column}`,
        );
      }
      const count = `SELECT count(*) AS n FROM './data/${folder}'`;
      const counted = parseRows(await runOk(root, [count, "--parse", folder, "--format", "json"]));
      assert.equal(counted[0]?.n, whole.length);
    });
  }

  it("a file of more keys than SQLite's columns is read when the statement names a few", async () => {
    const keys = Array.from({ length: 2100 }, (_, k) => `"k${k}":${k}`).join(",");
    const wide = tempTree({ "wide.jsonl": `{${keys}}\n{${keys}}\n` });
    const named = await runOk(wide, [
      "SELECT sum(k7), count(*) FROM './wide.jsonl'",
      "--parse",
      "jsonl",
      "--format",
      "json",
    ]);
    assert.deepEqual(parseRows(named), [{ "sum(k7)": 14, "count(*)": 2 }]);
    const whole = await runDirq(["SELECT * FROM './wide.jsonl'", "--parse", "jsonl"], {
      cwd: wide,
    });
    assert.equal(whole.code, 23);
    assert.match(whole.stderr, /past SQLite's 2000 columns/);
  });
});
