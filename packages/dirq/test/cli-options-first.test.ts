import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { assertUserError, makeTree, parseRows, removeTree, runDirq, runOk } from "./helpers.js";

/*
 * Options before the SQL, where sqlite3, duckdb and psql users put them: `dirq -c x.toml
 * "<sql>"` is `dirq "<sql>" -c x.toml`, for every option a one-shot query takes. Each case runs
 * the built CLI both ways over a real tree and compares everything it printed.
 */

const root = makeTree({
  ".gitignore": "*.log\n",
  "a.md": "hello\n",
  "b.log": "log",
  "data/sales.csv": "id,zip\n1,007\n2,10115\n",
  "rows/x.json": '[{"a":1,"b":"one"}]',
  "tables.toml": '[[table]]\nname = "sales"\nglob = "data/*.csv"\nformat = "csv"\n',
});
after(() => removeTree(root));

/** Options, the SQL they go with, and whether the run succeeds. */
const CASES: [string[], string, boolean][] = [
  [["-c", "tables.toml"], "SELECT * FROM sales ORDER BY id", true],
  [["--config=tables.toml"], "SELECT * FROM sales ORDER BY id", true],
  [["--format", "json"], "SELECT path FROM './' ORDER BY path", true],
  [["--format", "table"], "SELECT path, size FROM './' ORDER BY path", true],
  [["--format=csv"], "SELECT path, size FROM './' ORDER BY path", true],
  [["--no-ignore"], "SELECT path FROM './' ORDER BY path", true],
  [["--parse", "csv"], "SELECT * FROM './data/sales.csv' ORDER BY id", true],
  [["--on-file", "cat {path}"], "SELECT * FROM './rows/*.json'", true],
  [["--on-file", "cat {path}", "--hook-timeout", "20"], "SELECT * FROM './rows/*.json'", true],
  [["-c", "tables.toml", "--format", "json", "--no-ignore"], "SELECT count(*) FROM sales", true],
  [["--extension", "./missing-extension.so"], "SELECT 1", false],
  [["--format", "yaml"], "SELECT 1", false],
];

describe("options before the SQL work as after it", { concurrency: true }, () => {
  for (const [options, sql, succeeds] of CASES) {
    it(`dirq ${options.join(" ")} "${sql}"`, async () => {
      const [before, afterSql] = await Promise.all([
        runDirq([...options, sql], { cwd: root }),
        runDirq([sql, ...options], { cwd: root }),
      ]);
      assert.deepEqual(before, afterSql);
      assert.equal(before.code, succeeds ? 0 : 1, before.stderr);
    });
  }

  it("options may sit on both sides of the SQL", async () => {
    const sql = "SELECT id, zip FROM sales ORDER BY id";
    const split = await runOk(root, ["-c", "tables.toml", sql, "--format", "json"]);
    assert.equal(split, await runOk(root, [sql, "-c", "tables.toml", "--format", "json"]));
    assert.deepEqual(parseRows(split), [
      { id: 1, zip: "007" },
      { id: 2, zip: 10115 },
    ]);
  });

  it("SQL that starts with a -- comment, or follows a bare --, is the SQL", async () => {
    const comment = "-- the answer\nSELECT 1 AS one";
    assert.equal(await runOk(root, ["--format", "json", comment]), '[{"one":1}]\n');
    assert.equal(await runOk(root, ["--format", "json", "--", "SELECT 1 AS one"]), '[{"one":1}]\n');
  });
});

describe("an option's value is never the SQL", { concurrency: true }, () => {
  it("a value with spaces after -c is the config file's name", async () => {
    const result = await runDirq(["-c", "SELECT 1", "SELECT 2"], { cwd: root });
    assertUserError(result, /SELECT 1.*not found/);
  });

  it("an --on-file command is the hook, and the statement after it the SQL", async () => {
    const stdout = await runOk(root, ["--on-file", "cat {path}", "SELECT b FROM './rows/x.json'"]);
    assert.deepEqual(parseRows(stdout), [{ b: "one" }]);
  });

  it("options alone, values with spaces included, still open the REPL", async () => {
    const result = await runDirq(["--on-file", "cat {path}", "--format", "json"], {
      cwd: root,
      input: "SELECT a FROM './rows/x.json'\n",
    });
    assert.deepEqual(result, { code: 0, stdout: '[{"a":1}]\n', stderr: "" });
  });

  it("a bare --persist before the SQL keeps the default cache; with a name, that file", async () => {
    const tree = makeTree({ "a.txt": "a" });
    try {
      const bare = await runOk(tree, ["--persist", "SELECT count(*) AS n FROM './'"]);
      assert.deepEqual(parseRows(bare), [{ n: 1 }]);
      assert.ok(existsSync(join(tree, ".dirq", "cache.db")), "the default cache");
      const named = await runOk(tree, ["--persist", "mine.db", "SELECT 1 AS one"]);
      assert.deepEqual(parseRows(named), [{ one: 1 }]);
      assert.ok(existsSync(join(tree, "mine.db")), "the named cache");
    } finally {
      removeTree(tree);
    }
  });
});

describe("options before a subcommand stay an error", { concurrency: true }, () => {
  const cases: [string, string[]][] = [
    ["-c", ["-c", "tables.toml", "query", "SELECT 1"]],
    ["--format", ["--format", "json", "query", "SELECT 1"]],
    ["--no-ignore", ["--no-ignore", "server"]],
    ["--parse", ["--parse", "csv", "repl"]],
    ["--persist", ["--persist=x.db", "init"]],
  ];
  for (const [flag, args] of cases) {
    it(`dirq ${args.join(" ")}`, async () => {
      assertUserError(await runDirq(args, { cwd: root }), `${flag} must come after the subcommand`);
    });
  }

  it("an unquoted statement after options names its first extra word", async () => {
    assertUserError(await runDirq(["--format", "json", "SELECT", "1"], { cwd: root }), "'1'");
  });
});
