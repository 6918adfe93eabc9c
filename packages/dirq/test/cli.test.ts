import assert from "node:assert/strict";
import { chmodSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  assertNoStackTrace,
  assertUserError,
  makeTree,
  parseRows,
  pathsOf,
  removeTree,
  runDirq,
  runOk,
} from "./helpers.js";

const root = makeTree({
  ".gitignore": "*.log\n",
  "a.md": "hello\n",
  "b.log": "log",
  "docs/c.md": "c",
});
after(() => removeTree(root));

const manifest = JSON.parse(
  readFileSync(new URL("../../package.json", import.meta.url), "utf8"),
) as { version: string };

describe('dirq query "<sql>" is dirq "<sql>"', { concurrency: true }, () => {
  const cases: string[][] = [
    ["SELECT * FROM './' ORDER BY path"],
    ["SELECT path, size FROM './**/*.md' ORDER BY path", "--format", "table"],
    ["SELECT path FROM './' ORDER BY path", "--no-ignore"],
    ["SELECT * FROM files"],
  ];
  for (const args of cases) {
    it(JSON.stringify(args), async () => {
      const [explicit, implicit] = await Promise.all([
        runDirq(["query", ...args], { cwd: root }),
        runDirq(args, { cwd: root }),
      ]);
      assert.deepEqual(implicit, explicit);
      assertNoStackTrace(explicit.stderr);
    });
  }

  it("flags may also sit between 'query' and the SQL", async () => {
    const sql = "SELECT path FROM './' ORDER BY path";
    const before = await runOk(root, ["query", "--no-ignore", "--format", "json", sql]);
    const afterSql = await runOk(root, ["query", sql, "--no-ignore", "--format", "json"]);
    assert.equal(before, afterSql);
    assert.deepEqual(pathsOf(parseRows(before)), [".gitignore", "a.md", "b.log", "docs/c.md"]);
  });
});

describe("version and help", { concurrency: true }, () => {
  it("--version prints the version from package.json", async () => {
    assert.equal(await runOk(root, ["--version"]), `${manifest.version}\n`);
  });

  it("--help prints usage and exits 0", async () => {
    const stdout = await runOk(root, ["--help"]);
    assert.match(stdout, /usage/i);
    assert.match(stdout, /dirq query/);
    assert.match(stdout, /--format/);
    assert.match(stdout, /--no-ignore/);
    assert.match(stdout, /--no-plugin/);
  });
});

describe("usage errors", { concurrency: true }, () => {
  const unknown: string[][] = [
    ["--bogus"],
    ["SELECT 1", "--bogus"],
    ["query", "SELECT 1", "--bogus"],
    ["SELECT 1", "--bogus=1"],
  ];
  for (const args of unknown) {
    it(`unknown flag: ${JSON.stringify(args)}`, async () => {
      assertUserError(await runDirq(args, { cwd: root }), "--bogus");
    });
  }

  const misplaced: [string, string[]][] = [
    ["--no-ignore", ["--no-ignore", "query", "SELECT 1"]],
    ["-c", ["-c", "x.toml", "query", "SELECT 1"]],
    ["--format", ["--format", "json", "query", "SELECT 1"]],
    ["--format", ["--format=json", "query", "SELECT 1"]],
    ["--persist", ["--persist", "query", "SELECT 1"]],
    ["--on-file", ["--on-file", "cat {path}", "query", "SELECT 1"]],
    ["--extension", ["--extension", "x.so", "query", "SELECT 1"]],
  ];
  for (const [flag, args] of misplaced) {
    it(`a mode flag before the subcommand is a hard error: ${JSON.stringify(args)}`, async () => {
      assertUserError(await runDirq(args, { cwd: root }), flag);
    });
  }

  it("'dirq query' with no SQL is a usage error", async () => {
    assertUserError(await runDirq(["query"], { cwd: root }), /SQL/);
  });

  it("an unquoted statement (extra arguments) is a usage error naming the first extra", async () => {
    assertUserError(await runDirq(["SELECT", "1"], { cwd: root }), "'1'");
  });
});

describe("SQL errors", { concurrency: true }, () => {
  const errors: [string, string][] = [
    ["SELECT 1 FROM WHERE", 'near "WHERE": syntax error'],
    ["SELECT * FROM './' WHERE", "incomplete input"],
    ["SELECT nope FROM './'", "no such column: nope"],
    ["SELECT nofunc(1)", "no such function: nofunc"],
    ["SELECT * FROM missing_table", "no such table: missing_table"],
    ["SELECT abs(-9223372036854775808)", "integer overflow"],
  ];
  for (const [sql, message] of errors) {
    it(`${sql} → dirq: ${message}`, async () => {
      const diagnostic = assertUserError(await runDirq([sql], { cwd: root }), message);
      assert.equal(diagnostic, message);
    });
  }

  it("a misspelled keyword gets SQLite's syntax error", async () => {
    assertUserError(await runDirq(["SELEC 1"], { cwd: root }), "syntax error");
  });
});

describe("partial scan", () => {
  const isRoot = process.getuid?.() === 0;
  it(
    "an unreadable folder: the other rows stand, the folder is named on stderr, exit 23",
    { skip: isRoot ? "running as root: permissions do not stop reading a folder" : false },
    async () => {
      const tree = makeTree({ "ok.txt": "1", "locked/hidden.txt": "2" });
      chmodSync(join(tree, "locked"), 0o000);
      try {
        const result = await runDirq(["SELECT path FROM './' ORDER BY path"], { cwd: tree });
        assert.equal(result.code, 23, result.stderr);
        assert.deepEqual(pathsOf(parseRows(result.stdout)), ["ok.txt"]);
        assert.match(result.stderr, /^dirq: .*locked/m);
        assertNoStackTrace(result.stderr);
      } finally {
        chmodSync(join(tree, "locked"), 0o755);
        removeTree(tree);
      }
    },
  );
});
