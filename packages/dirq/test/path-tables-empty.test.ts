/**
 * A path-table that lists no file (a typo, an ignored folder, an always-skipped folder, the
 * dot-name rule) answers no rows, exit 0, and says why in one stderr line; with `--parse`, a
 * table no file has shaped accepts the columns a statement names. `--parse auto`
 * tells files no format reads once per extension. Git (`check-ignore -v`) and bash (globstar)
 * are the references for what is ignored and what a glob matches.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { reference } from "./differential.js";
import { makeTree, removeTree, runDirq, type RunResult } from "./helpers.js";

const home = mkdtempSync(join(tmpdir(), "dirq-empty-home-"));
/** Git without the user's or the system's configuration (no global excludes file). */
const GIT_ENV = {
  HOME: home,
  XDG_CONFIG_HOME: join(home, ".config"),
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
};

const root = makeTree({
  ".gitignore": "build/\n*.tmp\n",
  "posts/a.json": '{"title":"a"}',
  "posts/b.json": '{"title":"b"}',
  "node_modules/pkg/package.json": '{"name":"pkg"}',
  "build/out.json": '{"title":"built"}',
  "sub/.gitignore": "*.log\n!keep.log\n",
  "sub/drop.log": "x",
  "sub/keep.log": "x",
  "notes/scratch.tmp": "x",
  "drafts/a.md": "# draft\n",
  "hidden/.env": "A=1\n",
  "empty/": "",
  "dirq.toml": '[dirq]\nignore = ["drafts/**"]\n',
});

/** `git check-ignore -v` of a path: `<source>:<line>:<pattern>`. */
function gitRule(path: string): string {
  const line = reference("git", ["check-ignore", "-v", path], { cwd: root, env: GIT_ENV });
  return line.split("\t")[0] as string;
}

/** What bash (globstar, no dotglob, nullglob) expands a path-table's glob to. */
function bashGlob(pattern: string): string[] {
  const script = `shopt -s globstar nullglob; for f in ${pattern}; do printf '%s\\n' "$f"; done`;
  return reference("bash", ["-c", script], { cwd: root })
    .split("\n")
    .filter((line) => line !== "");
}

before(() => {
  reference("git", ["init", "-q"], { cwd: root, env: GIT_ENV });
  mkdirSync(join(root, "pipes"));
  execFileSync("mkfifo", [join(root, "pipes/fifo")]);
});

after(() => {
  removeTree(root);
  rmSync(home, { recursive: true, force: true });
});

function query(sql: string, extra: readonly string[] = []): Promise<RunResult> {
  return runDirq([sql, "--format", "json", ...extra], { cwd: root });
}

/** An empty answer, exit 0, and exactly one stderr line: the path and why it is empty. */
function assertEmpty(result: RunResult, table: string, why: RegExp): void {
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, "[]\n");
  const lines = result.stderr.split("\n").filter((line) => line !== "");
  assert.equal(lines.length, 1, result.stderr);
  const prefix = `dirq: path-table '${table}' is empty: `;
  assert.ok(lines[0]?.startsWith(prefix), result.stderr);
  assert.match(lines[0]?.slice(prefix.length) ?? "", why);
  assert.doesNotMatch(result.stderr, /no such column/);
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

for (const parse of [["--parse", "json"], []]) {
  const mode = parse.length === 0 ? "plain path-tables" : "--parse json";
  const column = parse.length === 0 ? "path" : "title";

  describe(`a path-table that lists no file (${mode})`, { concurrency: true }, () => {
    it("a glob with a typo: no file matches it", async () => {
      assert.deepEqual(bashGlob("./postz/*.json"), []);
      const result = await query(`SELECT ${column} FROM './postz/*.json'`, parse);
      assertEmpty(result, "./postz/*.json", /^no file matches it$/);
    });

    it("a glob into node_modules names the always-skipped folder", async () => {
      assert.deepEqual(bashGlob("./node_modules/*/package.json"), [
        "./node_modules/pkg/package.json",
      ]);
      const table = "./node_modules/*/package.json";
      const result = await query(`SELECT ${column} FROM '${table}'`, parse);
      assertEmpty(
        result,
        table,
        /^node_modules\/pkg\/package\.json matches it but is inside node_modules\/, a folder dirq always skips \(also with --no-ignore\)$/,
      );
      // The rule holds with --no-ignore too, and says the same.
      const again = await query(`SELECT ${column} FROM '${table}'`, [...parse, "--no-ignore"]);
      assert.equal(again.stderr, result.stderr);
    });

    it("a glob into a .gitignored folder names the file and pattern as git does", async () => {
      assert.deepEqual(bashGlob("./build/*.json"), ["./build/out.json"]);
      const rule = gitRule("build/out.json");
      assert.equal(rule, ".gitignore:1:build/");
      const result = await query(`SELECT ${column} FROM './build/*.json'`, parse);
      assertEmpty(
        result,
        "./build/*.json",
        new RegExp(
          `^build/out\\.json matches it but is ignored: its folder build/ matches ${escape(rule)}\\. Use --no-ignore to list ignored files$`,
        ),
      );
      // With --no-ignore the file is listed, and nothing is said.
      const listed = await query(`SELECT ${column} FROM './build/*.json'`, [
        ...parse,
        "--no-ignore",
      ]);
      assert.equal(listed.code, 0, listed.stderr);
      assert.equal(listed.stderr, "");
      assert.equal((JSON.parse(listed.stdout) as unknown[]).length, 1);
    });
  });
}

describe("why a path-table is empty, against git and bash", { concurrency: true }, () => {
  it("a file a deeper .gitignore ignores: that file, its line and pattern", async () => {
    const rule = gitRule("sub/drop.log");
    assert.equal(rule, "sub/.gitignore:1:*.log");
    const result = await query("SELECT path FROM './sub/drop.log'");
    assertEmpty(result, "./sub/drop.log", new RegExp(`is ignored by ${escape(rule)}\\.`));
  });

  it("a pattern of the root's .gitignore that is not the first line", async () => {
    const rule = gitRule("notes/scratch.tmp");
    assert.equal(rule, ".gitignore:2:*.tmp");
    const result = await query("SELECT path FROM './notes/**'");
    assertEmpty(
      result,
      "./notes/**",
      new RegExp(`^notes/scratch\\.tmp matches it but is ignored by ${escape(rule)}\\.`),
    );
  });

  it("a directory path whose folder is ignored", async () => {
    const result = await query("SELECT count(*) AS n FROM './build'");
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, '[{"n":0}]\n');
    assert.match(result.stderr, /^dirq: path-table '\.\/build' is empty: build\/out\.json/);
  });

  it("a config ignore pattern, which --no-ignore does not undo", async () => {
    const result = await query("SELECT path FROM './drafts/*.md'", ["-c", "dirq.toml"]);
    assertEmpty(
      result,
      "./drafts/*.md",
      /^drafts\/a\.md matches it but is ignored by the ignore pattern 'drafts\/\*\*' of the config, which always applies$/,
    );
  });

  it("the dot-name rule: '*' never matches a name that starts with '.'", async () => {
    assert.deepEqual(bashGlob("./hidden/*"), []);
    assert.deepEqual(bashGlob("./hidden/.*"), ["./hidden/.env"]);
    const result = await query("SELECT path FROM './hidden/*'");
    assertEmpty(result, "./hidden/*", /^hidden\/\.env would match it, but '\*', '\?' and '\*\*'/);
  });

  it("a FIFO is not a regular file", async () => {
    const result = await query("SELECT path FROM './pipes/*'");
    assertEmpty(result, "./pipes/*", /^pipes\/fifo matches it but is not a regular file/);
  });

  it("an empty folder: no file matches it", async () => {
    const result = await query("SELECT path FROM './empty'");
    assertEmpty(result, "./empty", /^no file matches it$/);
  });

  it("a path-table that lists files says nothing", async () => {
    const result = await query("SELECT title FROM './posts/*.json' ORDER BY title", [
      "--parse",
      "json",
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, '[{"title":"a"},{"title":"b"}]\n');
    assert.equal(result.stderr, "");
  });
});

describe("a parsed table no file has shaped accepts any column", { concurrency: true }, () => {
  const parse = ["--parse", "json"];

  it("SELECT * and columns named in WHERE, ORDER BY and through an alias", async () => {
    for (const sql of [
      "SELECT * FROM './postz/*.json'",
      "SELECT p.title, p.author FROM './postz/*.json' AS p WHERE p.words > 3 ORDER BY p.date",
      "SELECT count(*) AS n, max(words) AS most FROM './postz/*.json'",
    ]) {
      const result = await query(sql, parse);
      assert.equal(result.code, 0, `${sql}: ${result.stderr}`);
      assert.ok(result.stderr.startsWith("dirq: path-table './postz/*.json' is empty"), sql);
    }
  });

  it("joined with a table that has rows: the empty one answers none of its own", async () => {
    const sql =
      "SELECT p.title, q.title AS other FROM './posts/*.json' p LEFT JOIN './postz/*.json' q ON q.title = p.title ORDER BY p.title";
    const result = await query(sql, parse);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, '[{"title":"a","other":null},{"title":"b","other":null}]\n');
  });

  it("a table with rows still refuses a column it does not have", async () => {
    const result = await query("SELECT titel FROM './posts/*.json'", parse);
    assert.equal(result.code, 1);
    assert.equal(result.stdout, "");
    assert.match(result.stderr, /^dirq: no such column: titel\n$/);
  });

  it("so does a config table with inferred columns and no file, silently", async () => {
    const config = '[[table]]\nname = "posts"\nglob = "postz/*.json"\nformat = "json"\n';
    const tree = makeTree({ "t.toml": config });
    try {
      const result = await runDirq(["SELECT title FROM posts", "-c", "t.toml"], { cwd: tree });
      assert.deepEqual(result, { code: 0, stdout: "[]\n", stderr: "" });
    } finally {
      removeTree(tree);
    }
  });

  it("a plain path-table still refuses a column it does not have", async () => {
    const result = await query("SELECT title FROM './postz/*.json'");
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^dirq: no such column: title\n$/);
  });
});

describe("the REPL says a path-table is empty on stderr", () => {
  it("once, for the statement that built it", async () => {
    const input = "SELECT title FROM './postz/*.json'\nSELECT title FROM './postz/*.json'\n";
    const result = await runDirq(["--parse", "json", "--format", "json"], { cwd: root, input });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, "[]\n[]\n");
    assert.equal(result.stderr, "dirq: path-table './postz/*.json' is empty: no file matches it\n");
  });
});

describe("--parse auto: files no format reads", () => {
  const files: Record<string, string> = { "docs/index.md": "# Home\n", "docs/data.json": "{}" };
  for (let i = 0; i < 12; i++) files[`docs/page${i}.html`] = "<p></p>";
  for (let i = 0; i < 5; i++) files[`docs/img/pic${i}.PNG`] = "png";
  files["docs/LICENSE"] = "MIT";
  files["docs/CNAME"] = "example.com";
  files["other/one.html"] = "<p></p>";
  const site = makeTree(files);
  after(() => removeTree(site));

  it("one line per extension, with the count and a hint; exit 23 (a partial scan)", async () => {
    const result = await runDirq(
      ["SELECT count(*) AS n FROM './docs'", "--parse", "auto", "--format", "json"],
      { cwd: site },
    );
    assert.equal(result.code, 23, result.stderr);
    assert.equal(result.stdout, '[{"n":2}]\n');
    const hint = "Use --on-file or a [[table]] with an on-file hook to read them";
    assert.deepEqual(result.stderr.split("\n").filter(Boolean).sort(), [
      `dirq: skipped 12 .html files under './docs': no built-in format reads .html files. ${hint}`,
      `dirq: skipped 2 files without an extension under './docs': no built-in format reads a file without an extension. ${hint}`,
      `dirq: skipped 5 .png files under './docs': no built-in format reads .png files. ${hint}`,
    ]);
  });

  it("a single such file is named", async () => {
    const result = await runDirq(["SELECT * FROM './other'", "--parse", "auto"], { cwd: site });
    assert.equal(result.code, 23, result.stderr);
    assert.equal(
      result.stderr,
      "dirq: skipped other/one.html: no built-in format reads .html files. Use --on-file or a [[table]] with an on-file hook to read it\n",
    );
  });
});
