import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { after, describe, it } from "node:test";
import { seededRandom } from "./differential.js";
import {
  assertUserError,
  DIRQ_BIN,
  makeTree,
  python3,
  removeTree,
  runDirq,
  runInTerminal,
  runOk,
  runOkEmpty,
  scriptAvailable,
} from "./helpers.js";
import { jsonStatement } from "./json-statements.js";

const root = makeTree({ "a.md": "hello\n", "docs/b.md": "bb" });
after(() => removeTree(root));

const json = (sql: string) => runOk(root, [sql, "--format", "json"]);
const table = (sql: string) => runOk(root, [sql, "--format", "table"]);
/** Table output with trailing spaces of each line ignored. */
const tableLines = async (sql: string) =>
  (await table(sql)).split("\n").map((line) => line.trimEnd());

describe("JSON output", { concurrency: true }, () => {
  it("is compact, keys in SELECT order, one trailing newline", async () => {
    assert.equal(await json("SELECT 3 AS c, 1 AS a, 2 AS b"), '[{"c":3,"a":1,"b":2}]\n');
    assert.equal(
      await json("VALUES (1, 'x'), (2, 'y')"),
      '[{"column1":1,"column2":"x"},{"column1":2,"column2":"y"}]\n',
    );
  });

  it("a result with no rows is []", async () => {
    assert.equal(await json("SELECT 1 AS n WHERE 0"), "[]\n");
    const empty = await runOkEmpty(root, ["SELECT * FROM './*.none'", "--format", "json"]);
    assert.equal(empty.stdout, "[]\n");
  });

  it("a path-table row, byte for byte", async () => {
    assert.equal(
      await json("SELECT path, basename, dir, ext, size FROM './docs/b.md'"),
      '[{"path":"docs/b.md","basename":"b.md","dir":"docs","ext":"md","size":2}]\n',
    );
  });

  it("NULL is null; integers outside the safe range keep their exact digits", async () => {
    assert.equal(
      await json(
        "SELECT NULL AS z, 9223372036854775807 AS max, -9223372036854775808 AS min, " +
          "9007199254740993 AS above_safe, 0 AS zero, -1 AS neg",
      ),
      '[{"z":null,"max":9223372036854775807,"min":-9223372036854775808,' +
        '"above_safe":9007199254740993,"zero":0,"neg":-1}]\n',
    );
  });

  it("+/-Infinity and NaN become null", async () => {
    assert.equal(
      await json("SELECT 1e999 AS inf, -1e999 AS ninf, 1e999 - 1e999 AS nan, 1e308 * 10 AS over"),
      '[{"inf":null,"ninf":null,"nan":null,"over":null}]\n',
    );
  });

  it("REAL values are JSON numbers", async () => {
    const stdout = await json(
      "SELECT 2.5 AS r, -0.125 AS n, 1e-7 AS tiny, 1.5e300 AS huge, 1.0 AS one, 0.1 + 0.2 AS sum",
    );
    assert.ok(stdout.startsWith('[{"r":2.5,"n":-0.125,'), stdout);
    assert.deepEqual(JSON.parse(stdout), [
      { r: 2.5, n: -0.125, tiny: 1e-7, huge: 1.5e300, one: 1, sum: 0.1 + 0.2 },
    ]);
  });

  it("BLOB is a lowercase hex string", async () => {
    assert.equal(
      await json("SELECT x'ABff' AS b, x'' AS empty, zeroblob(3) AS z, x'0A1b2C' AS mixed"),
      '[{"b":"abff","empty":"","z":"000000","mixed":"0a1b2c"}]\n',
    );
  });

  it("TEXT is escaped as JSON (quotes, backslashes, control characters, non-ASCII)", async () => {
    const stdout = await json(
      `SELECT 'a"b\\c' || char(10) || char(9) || char(0) || char(27) || 'é😀' AS s, '' AS e`,
    );
    assert.ok(!stdout.slice(0, -1).includes("\n"), "no raw newline inside the JSON");
    assert.deepEqual(JSON.parse(stdout), [{ s: 'a"b\\c\n\t\u0000\u001bé😀', e: "" }]);
  });

  it("column names are JSON-escaped keys, expressions keep their text", async () => {
    assert.equal(
      await json('SELECT 1 AS "we""ird key", 1 + 1, upper(\'x\')'),
      '[{"we\\"ird key":1,"1 + 1":2,"upper(\'x\')":"X"}]\n',
    );
  });

  it("--format auto (and no --format) give JSON when stdout is a pipe", async () => {
    const sql = "SELECT path, size FROM './' ORDER BY path";
    const expected = await json(sql);
    assert.equal(await runOk(root, [sql]), expected);
    assert.equal(await runOk(root, [sql, "--format", "auto"]), expected);
    assert.equal(await runOk(root, [sql, "--format=auto"]), expected);
  });

  it("a million rows stream through a pipe as one valid JSON array", async () => {
    const result = await runDirq(
      [
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000) SELECT x FROM c",
      ],
      { cwd: root },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, "");
    assert.ok(result.stdout.endsWith("}]\n"));
    const rows = JSON.parse(result.stdout) as { x: number }[];
    assert.equal(rows.length, 1_000_000);
    assert.deepEqual(rows[0], { x: 1 });
    assert.deepEqual(rows[999_999], { x: 1_000_000 });
    assert.ok(rows.every((row, i) => row.x === i + 1));
  });

  it("a reader that goes away early (| head) is not an error", async () => {
    const child = spawn(
      process.execPath,
      [
        DIRQ_BIN,
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000) SELECT x FROM c",
      ],
      { cwd: root, env: { ...process.env, DIRQ_PROGRESS: "never" } },
    );
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.stdout.once("data", () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    assert.equal(code, 0, stderr);
    assert.equal(stderr, "");
  });

  it("two result columns with the same name both appear (docs/cli.md)", async () => {
    assert.equal(await json("SELECT 1 AS a, 2 AS a"), '[{"a":1,"a":2}]\n');
  });

  it("a runtime SQL error after rows began: exit 1, the diagnostic, nothing on stdout", async () => {
    const result = await runDirq(
      [
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000) " +
          "SELECT CASE WHEN x = 100000 THEN abs(-9223372036854775808) ELSE x END AS v FROM c",
      ],
      { cwd: root },
    );
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^dirq: integer overflow\n$/);
    assert.equal(result.stdout, "");
  });

  it("a runtime SQL error before the first row prints nothing on stdout", async () => {
    const result = await runDirq(["SELECT abs(-9223372036854775808) AS x"], { cwd: root });
    assertUserError(result, "integer overflow");
  });
});

describe("long JSON answers written by SQLite", { concurrency: true }, () => {
  // Past 64 rows SQLite writes the answer (DIRQ_FIRST_ANSWER_JS_ROWS=0: every answer it can);
  // the JS way (a bound no answer reaches) is the reference, byte for byte, exit code and
  // stderr included.
  const SQLITE_ALWAYS = { DIRQ_FIRST_ANSWER_JS_ROWS: "0" };
  const JS_ONLY = { DIRQ_FIRST_ANSWER_JS_ROWS: String(Number.MAX_SAFE_INTEGER) };
  const files: Record<string, string> = {};
  for (let i = 0; i < 150; i++) {
    files[`f${String(i).padStart(3, "0")}.${i % 2 === 0 ? "md" : "txt"}`] = "x".repeat(i);
  }
  files["sub/ü 漢字.md"] = "y";
  const many = makeTree(files);
  after(() => removeTree(many));

  async function assertSameAnswer(sql: string, env: Record<string, string> = {}): Promise<string> {
    const [ours, reference] = await Promise.all([
      runDirq([sql, "--format", "json"], { cwd: many, env }),
      runDirq([sql, "--format", "json"], { cwd: many, env: JS_ONLY }),
    ]);
    assert.equal(ours.stdout, reference.stdout, sql);
    assert.equal(ours.stderr, reference.stderr, sql);
    assert.equal(ours.code, reference.code, sql);
    return ours.stdout;
  }

  it("seeded statements with every kind of value: the JS way's bytes", async () => {
    const random = seededRandom(36);
    for (let i = 0; i < 12; i++) await assertSameAnswer(jsonStatement(random, i), SQLITE_ALWAYS);
  });

  it("path-tables past 64 rows, whole rows, globs, views of hidden columns", async () => {
    for (const sql of [
      "SELECT * FROM './' ORDER BY path DESC",
      "SELECT path FROM './**/*.md'",
      "SELECT path, size, size * 2 AS twice FROM './' WHERE size > 10",
      "SELECT ext, count(*) AS n FROM './' GROUP BY ext UNION ALL SELECT path, size FROM './'",
    ]) {
      const stdout = await assertSameAnswer(sql);
      assert.ok((JSON.parse(stdout) as unknown[]).length > 64, sql);
    }
  });

  it("a REAL or an error past the 64th row, and an answer over the memory bound, go the JS way", async () => {
    const ordered = "FROM './' ORDER BY path";
    // f100.md is the 101st row.
    await assertSameAnswer(`SELECT path, iif(path = 'f100.md', 0.5, 1) AS x ${ordered}`);
    await assertSameAnswer(`SELECT path, iif(path = 'f100.md', x'00ff', 1) AS x ${ordered}`);
    const error = await assertSameAnswer(
      `SELECT path, json(iif(path = 'f100.md', '{bad', '1')) AS j ${ordered}`,
    );
    assert.equal(error, "");
    // Held output spills to a file past DIRQ_SPILL_BYTES; SQLite's answer then must not be
    // held whole either.
    const spilled = await assertSameAnswer(`SELECT * ${ordered}`, { DIRQ_SPILL_BYTES: "2000" });
    assert.equal((JSON.parse(spilled) as unknown[]).length, 151);
  });
});

describe("table output", { concurrency: true }, () => {
  it("header, a rule of dashes, two-space columns, numbers right-aligned, NULL spelled out", async () => {
    const lines = await tableLines(
      "SELECT 1 AS n, 'abc' AS s, NULL AS z UNION ALL SELECT 12345, 'de', 'x'",
    );
    assert.deepEqual(lines, [
      "n      s    z",
      "-----  ---  ----",
      "    1  abc  NULL",
      "12345  de   x",
      "(2 rows)",
      "",
    ]);
  });

  it("line separators and bidi controls are escaped, not printed raw", async () => {
    const lines = await tableLines(
      "SELECT 'a' || char(0x2028) || 'b' || char(0x2029) || 'c' || char(0x202e) || 'd' || " +
        "char(0x2066) || 'e' || char(0x200f) || 'f' || char(0x061c) AS s",
    );
    assert.deepEqual(lines, [
      "s",
      "-".repeat(53),
      "a\\u{2028}b\\u{2029}c\\u{202e}d\\u{2066}e\\u{200f}f\\u{61c}",
      "(1 row)",
      "",
    ]);
  });

  it("(1 row) for one row, (0 rows) with header and rule for none", async () => {
    assert.deepEqual(await tableLines("SELECT 7 AS n"), ["n", "-", "7", "(1 row)", ""]);
    assert.deepEqual(await tableLines("SELECT 7 AS num WHERE 0"), ["num", "---", "(0 rows)", ""]);
  });

  it("REAL, negative and 64-bit integers are right-aligned numbers with exact digits", async () => {
    const lines = await tableLines(
      "SELECT 2.5 AS r, 9223372036854775807 AS big UNION ALL SELECT -10.25, -1",
    );
    assert.deepEqual(lines, [
      "r       big",
      "------  -------------------",
      "   2.5  9223372036854775807",
      "-10.25                   -1",
      "(2 rows)",
      "",
    ]);
  });

  it("+/-Infinity are spelled out and right-aligned", async () => {
    const lines = await tableLines("SELECT 1e999 AS i, -1e999 AS n UNION ALL SELECT 1.5, 2");
    assert.deepEqual(lines, [
      "i         n",
      "--------  ---------",
      "Infinity  -Infinity",
      "     1.5          2",
      "(2 rows)",
      "",
    ]);
  });

  it("BLOB as hex, empty strings empty, text left-aligned", async () => {
    const lines = await tableLines(
      "SELECT x'ABff' AS b, '' AS e, 'left' AS t UNION ALL SELECT x'01', 'xy', 'l'",
    );
    assert.deepEqual(lines, [
      "b     e   t",
      "----  --  ----",
      "abff      left",
      "01    xy  l",
      "(2 rows)",
      "",
    ]);
  });

  it("newline and tab are escaped as \\n and \\t, other control characters as \\u{…}", async () => {
    const lines = await tableLines(
      "SELECT 'a' || char(10) || 'b' || char(9) || 'c' || char(27) || char(0) || char(127) || char(13) AS v",
    );
    const cell = "a\\nb\\tc\\u{1b}\\u{0}\\u{7f}\\u{d}";
    assert.deepEqual(lines, ["v", "-".repeat(cell.length), cell, "(1 row)", ""]);
  });

  it("values up to 60 characters are kept; longer ones are cut to 60 ending in …", async () => {
    const stdout = await table(
      "SELECT printf('%.*c', 60, 'a') AS v UNION ALL SELECT printf('%.*c', 61, 'b') " +
        "UNION ALL SELECT printf('%.*c', 200, 'c') UNION ALL SELECT replace(printf('%.*c', 61, 'e'), 'e', 'é')",
    );
    const rows = stdout
      .split("\n")
      .slice(2, 6)
      .map((line) => line.trimEnd());
    assert.deepEqual(rows, [
      "a".repeat(60),
      `${"b".repeat(59)}…`,
      `${"c".repeat(59)}…`,
      `${"é".repeat(59)}…`,
    ]);
  });

  it("wide characters are aligned by display width", async () => {
    const lines = await tableLines("SELECT '日本' AS w, 1 AS n UNION ALL SELECT 'abcd', 22");
    assert.deepEqual(lines, ["w     n", "----  --", "日本   1", "abcd  22", "(2 rows)", ""]);
  });

  it("emoji and combining marks, in names and cells, are aligned by display width", async () => {
    // Text the quick measures leave to string-width, which is loaded for it.
    const lines = await tableLines(
      `SELECT '😀' AS "👍", 'a' || char(769) || 'b' AS c UNION ALL SELECT 'abc', 'x'`,
    );
    assert.deepEqual(lines, ["👍   c", "---  --", "😀   a\u0301b", "abc  x", "(2 rows)", ""]);
  });

  it("a path-table as a table", async () => {
    const lines = await tableLines("SELECT path, size, ext FROM './' ORDER BY path");
    assert.deepEqual(lines, [
      "path       size  ext",
      "---------  ----  ---",
      "a.md          6  md",
      "docs/b.md     2  md",
      "(2 rows)",
      "",
    ]);
  });
});

describe("a table larger than the longest string", () => {
  it("45,000 rows x 200 columns print whole, streamed (it used to fail: Invalid string length)", async () => {
    // One row of 60-character cells makes every line about 12,000 characters wide (NULLs are
    // padded to the column): some 555 million characters in all, more than V8's longest
    // string (2^29 - 24), while the rows held take little memory.
    const ROWS = 45_000;
    const COLUMNS = 200;
    const wide = "w".repeat(60);
    const select = Array.from(
      { length: COLUMNS },
      (_, i) => `CASE x WHEN 1 THEN '${wide}' END AS c${i + 1}`,
    ).join(", ");
    const sql = `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < ${ROWS}) SELECT ${select} FROM n`;
    const child = spawn(process.execPath, [DIRQ_BIN, sql, "--format", "table"], {
      cwd: root,
      env: { ...process.env, DIRQ_PROGRESS: "never" },
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    // Only the first and last lines are kept; the rest is counted.
    let bytes = 0;
    let lines = 0;
    let head = "";
    let tail = "";
    child.stdout.setEncoding("latin1").on("data", (chunk: string) => {
      bytes += chunk.length;
      for (let at = chunk.indexOf("\n"); at >= 0; at = chunk.indexOf("\n", at + 1)) lines++;
      if (head.length < 100_000) head += chunk.slice(0, 100_000);
      tail = (tail + chunk).slice(-40_000);
    });
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    assert.equal(code, 0, stderr);
    assert.equal(stderr, "");
    const padded = (text: string) => text.padEnd(60);
    const header = Array.from({ length: COLUMNS }, (_, i) => padded(`c${i + 1}`))
      .join("  ")
      .trimEnd();
    const rule = Array.from({ length: COLUMNS }, () => "-".repeat(60)).join("  ");
    const first = Array.from({ length: COLUMNS }, () => wide).join("  ");
    const other = Array.from({ length: COLUMNS }, () => padded("NULL"))
      .join("  ")
      .trimEnd();
    assert.ok(head.startsWith(`${header}\n${rule}\n${first}\n${other}\n`), head.slice(0, 200));
    assert.ok(tail.endsWith(`\n${other}\n(${ROWS} rows)\n`), tail.slice(-200));
    assert.equal(lines, ROWS + 3);
    const expected =
      header.length +
      rule.length +
      first.length +
      (ROWS - 1) * other.length +
      `(${ROWS} rows)`.length +
      lines;
    assert.equal(bytes, expected);
    assert.ok(bytes > 2 ** 29, `${bytes} characters: more than the longest string`);
  });
});

describe("--format", { concurrency: true }, () => {
  it("an invalid value is a usage error naming it", async () => {
    const result = await runDirq(["SELECT 1", "--format", "x"], { cwd: root });
    const message = assertUserError(result, "'x'");
    assert.match(message, /auto/);
    assert.match(message, /table/);
    assert.match(message, /json/);
  });

  it("a missing value is a usage error naming --format", async () => {
    assertUserError(await runDirq(["SELECT 1", "--format"], { cwd: root }), "--format");
  });

  it("--format=table works like --format table", async () => {
    assert.equal(
      await runOk(root, ["SELECT 1 AS n", "--format=table"]),
      await runOk(root, ["SELECT 1 AS n", "--format", "table"]),
    );
  });

  const hasScript = scriptAvailable();
  const noScript = hasScript ? false : "util-linux `script` cannot allocate a terminal here";

  it("auto gives a table when stdout is a terminal", { skip: noScript }, () => {
    const run = runInTerminal(root, ["SELECT 1 AS n, 'x' AS s"]);
    assert.equal(run.status, 0);
    assert.deepEqual(
      run.terminal.split("\r\n").map((line) => line.trimEnd()),
      ["n  s", "-  -", "1  x", "(1 row)", ""],
    );
  });

  it(
    "auto is keyed on stdout: a terminal stdin with a piped stdout gives JSON",
    { skip: noScript },
    () => {
      const run = runInTerminal(root, ["SELECT 1 AS n, 'x' AS s"], { pipeStdout: true });
      assert.equal(run.status, 0);
      assert.equal(run.terminal.replaceAll("\r\n", "\n"), '[{"n":1,"s":"x"}]\n');
    },
  );

  it("--format json on a terminal is still JSON", { skip: noScript }, () => {
    const run = runInTerminal(root, ["SELECT 1 AS n", "--format", "json"]);
    assert.equal(run.status, 0);
    assert.equal(run.terminal.replaceAll("\r\n", "\n"), '[{"n":1}]\n');
  });
});

describe("writing the answer to stdout", () => {
  // dirq writes a one-shot answer with synchronous writes to file descriptor 1 and makes
  // Node's stream only when a write would block: these hold whichever way it goes.
  const BIG =
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000) " +
    "SELECT i, 'some padding text' AS pad FROM n";
  const hasPython = spawnSync(python3(), ["--version"]).status === 0;

  it(
    "a non-blocking pipe that fills (EAGAIN) still gets the whole answer, in order",
    { skip: hasPython ? false : "python3 is needed to hand dirq a non-blocking pipe" },
    async () => {
      const expected = await json(BIG);
      assert.ok(expected.length > 1_000_000, "the answer is far bigger than a pipe's buffer");
      // python3 makes the pipe's write end non-blocking, then becomes dirq; the reader
      // starts a second late, so the pipe is full long before dirq is done.
      const setNonBlocking = `import os, sys; os.set_blocking(1, False); os.execv(sys.argv[1], sys.argv[1:])`;
      const result = spawnSync(
        "sh",
        [
          "-c",
          `'${python3()}' -c "${setNonBlocking}" "${process.execPath}" "${DIRQ_BIN}" "$0" --format json | (sleep 1; cat)`,
          BIG,
        ],
        { cwd: root, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
      );
      assert.equal(result.stderr, "");
      assert.equal(result.status, 0);
      assert.equal(result.stdout, expected);
    },
  );

  it("a reader that goes away (| head -c 20) ends dirq quietly with exit 0", () => {
    const result = spawnSync(
      "bash",
      [
        "-c",
        `"${process.execPath}" "${DIRQ_BIN}" "$0" --format json | head -c 20; exit "\${PIPESTATUS[0]}"`,
        BIG,
      ],
      { cwd: root, encoding: "utf8" },
    );
    assert.equal(result.stdout, '[{"i":1,"pad":"some ');
    assert.equal(result.stderr, "");
    assert.equal(result.status, 0);
  });
});
