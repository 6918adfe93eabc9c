import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, describe, it } from "node:test";
import { harnessSeed, seededRandom } from "./differential.js";
import { assertUserError, makeTree, python3, removeTree, runDirq, runOk } from "./helpers.js";
import { seededRows } from "./seeded-rows.js";

/*
 * `--format csv` for one-shot queries and the REPL, checked against references: Python's csv
 * module reads back the values of dirq's JSON answer, the sqlite3 shell writes the same bytes
 * (`sqlite3 -csv -header`, as the web console's export does) where its output is defined the
 * same way (no REAL, whose digits it writes its own way, and no BLOB, which it writes raw).
 */

const root = makeTree({
  "a,b.txt": "1",
  'say "hi".txt': "22",
  "two\nlines.txt": "333",
  " lead.txt": "",
  "ü 漢字.txt": "4444",
  "plain.txt": "55555",
});
after(() => removeTree(root));

const seed = harnessSeed(6302);

/**
 * Reads each case's CSV with Python's csv module and compares every field with the value of
 * the JSON answer (keys kept in order, repeats too): NULL is an empty field (`None` where
 * the module can tell an unquoted empty field, Python 3.12 on), integers their exact digits,
 * REALs the same number. Prints the differences as JSON.
 */
const PYTHON_COMPARE = `
import csv, io, json, sys

NOTNULL = getattr(csv, "QUOTE_NOTNULL", None)

def records(text):
    source = io.StringIO(text, newline="")
    reader = csv.reader(source) if NOTNULL is None else csv.reader(source, quoting=NOTNULL)
    return list(reader)

def same(field, value):
    if value is None:
        return field == ("" if NOTNULL is None else None)
    if isinstance(value, float):
        return field is not None and float(field) == value
    return field == str(value)

problems = []
for case in json.load(sys.stdin):
    got = records(case["csv"])
    rows = json.loads(case["json"], object_pairs_hook=lambda pairs: pairs)
    header = [name for name, _ in rows[0]]
    if got[0] != header:
        problems.append({"sql": case["sql"], "header": got[0], "expected": header})
    if len(got) != len(rows) + 1:
        problems.append({"sql": case["sql"], "records": len(got), "rows": len(rows)})
    for fields, row in zip(got[1:], rows):
        for field, (name, value) in zip(fields, row):
            if not same(field, value):
                problems.append({"sql": case["sql"], "column": name, "field": field, "value": repr(value)})
print(json.dumps(problems))
`;

interface Case {
  sql: string;
  csv: string;
  json: string;
}

/** Runs each statement with `--format csv` and `--format json`, a few processes at a time. */
async function answers(statements: readonly string[]): Promise<Case[]> {
  const cases: Case[] = [];
  for (let at = 0; at < statements.length; at += 2) {
    const batch = statements.slice(at, at + 2);
    cases.push(
      ...(await Promise.all(
        batch.map(async (sql) => ({
          sql,
          csv: await runOk(root, ["--format", "csv", sql]),
          json: await runOk(root, ["--format", "json", sql]),
        })),
      )),
    );
  }
  return cases;
}

function pythonProblems(cases: readonly Case[]): unknown[] {
  const result = spawnSync(python3(), ["-c", PYTHON_COMPARE], {
    input: JSON.stringify(cases),
    encoding: "utf8",
  });
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout) as unknown[];
}

function noSqlite3(): string | false {
  return spawnSync("sqlite3", ["-version"]).status === 0
    ? false
    : "the sqlite3 shell is not installed";
}

describe("--format csv", () => {
  const random = seededRandom(seed);
  const statements = Array.from({ length: 12 }, () =>
    seededRows(random, 1 + Math.floor(random() * 8), { reals: true, edges: true }),
  );
  let oneShot: Case[] = [];

  it("Python's csv module reads back the JSON answer's values (seeded statements)", async () => {
    oneShot = await answers(statements);
    assert.deepEqual(pythonProblems(oneShot), [], `seed ${seed}`);
  });

  it("the REPL writes each statement's CSV as the one-shot query does", async () => {
    if (oneShot.length === 0) oneShot = await answers(statements);
    const result = await runDirq(["--format", "csv"], {
      cwd: root,
      input: `${statements.join("\n")}\n`,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, "");
    assert.equal(result.stdout, oneShot.map((answer) => answer.csv).join(""));
  });

  it(
    "writes the bytes of sqlite3 -csv -header (seeded statements)",
    { skip: noSqlite3() },
    async () => {
      const shellRandom = seededRandom(seed + 1);
      for (let round = 0; round < 8; round++) {
        const sql = seededRows(shellRandom, 1 + Math.floor(shellRandom() * 5));
        const shell = spawnSync("sqlite3", ["-csv", "-header", ":memory:", sql], {
          encoding: "utf8",
        });
        assert.equal(shell.status, 0, shell.stderr);
        assert.equal(await runOk(root, [sql, "--format", "csv"]), shell.stdout, sql);
      }
    },
  );

  it("spells NULL, empty text, quotes, spaces, numbers and BLOBs as the console does", async () => {
    const sql =
      "SELECT NULL AS n, '' AS e, 'x,y' AS c, ' lead' AS s, 'say \"hi\"' AS q, 7 AS i, " +
      "9223372036854775807 AS big, 2.5 AS r, 2.0 AS whole, x'00ff' AS b, 'ü' AS u";
    assert.equal(
      await runOk(root, [sql, "--format", "csv"]),
      'n,e,c,s,q,i,big,r,whole,b,u\n,"","x,y"," lead","say ""hi""",7,9223372036854775807,2.5,2,00ff,"ü"\n',
    );
  });

  it("a result without rows is its header line", async () => {
    assert.equal(await runOk(root, ["SELECT 1 AS a, 2 AS b WHERE 0", "--format", "csv"]), "a,b\n");
  });

  it("file names with commas, quotes and line breaks read back as the JSON answer has them", async () => {
    const cases = await answers(["SELECT path, size FROM './' ORDER BY path"]);
    assert.deepEqual(pythonProblems(cases), []);
    assert.equal(cases[0]?.csv.split("\n")[0], "path,size");
  });

  it("a large answer held in a temporary file is the same CSV", async () => {
    const sql =
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) " +
      "SELECT i, 'row ' || i AS label, i * 0.5 AS half FROM n";
    const [held, spilled] = await Promise.all([
      runOk(root, [sql, "--format", "csv"]),
      runOk(root, [sql, "--format", "csv"], { DIRQ_SPILL_BYTES: "0" }),
    ]);
    assert.equal(spilled, held);
    const lines = held.split("\n");
    assert.equal(lines.length, 20002);
    assert.equal(lines[20000], '20000,"row 20000",10000');
  });

  it("an unknown format names csv among the choices", async () => {
    assertUserError(
      await runDirq(["SELECT 1", "--format", "xml"], { cwd: root }),
      "invalid --format 'xml': expected auto, table, json or csv",
    );
  });
});
