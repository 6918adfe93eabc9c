import assert from "node:assert/strict";
import { statSync, symlinkSync, truncateSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  assertUserError,
  makeTree,
  parseRows,
  pathsByTable,
  pathsOf,
  queryJson,
  removeTree,
  runDirq,
  runOk,
} from "./helpers.js";

/** The main tree: plain files, dot-files, odd names, nested folders. */
const root = makeTree({
  ".env": "A=1\n",
  ".config/settings.json": "{}",
  ".hidden.md": "hidden",
  Makefile: "all:\n",
  "UPPER.TXT": "UP",
  "a.md": "hello\n",
  "archive.tar.gz": "gz",
  "b.md": "bb",
  "c.md": "ccc",
  "dir with space/ü ñ.txt": "ü",
  "docs/.draft.md": "draft",
  "docs/guide.md": "# Guide\n",
  "docs/sub/deep.MD": "deep",
  "docs/sub/x.txt": "x",
  "file.": "dot at end",
  "it's.txt": "quote",
  "notes.txt": "notes",
  "src/index.ts": "export {};\n",
  "src/util.ts": "export const x = 1;\n",
  "empty/": "",
});

/** Every file of the main tree, sorted as SQLite's BINARY collation sorts them. */
const ALL_FILES = [
  ".config/settings.json",
  ".env",
  ".hidden.md",
  "Makefile",
  "UPPER.TXT",
  "a.md",
  "archive.tar.gz",
  "b.md",
  "c.md",
  "dir with space/ü ñ.txt",
  "docs/.draft.md",
  "docs/guide.md",
  "docs/sub/deep.MD",
  "docs/sub/x.txt",
  "file.",
  "it's.txt",
  "notes.txt",
  "src/index.ts",
  "src/util.ts",
];

const COLUMNS = ["path", "basename", "dir", "ext", "size", "mtime", "ctime"];

/** A second tree for symlinks, a big sparse file and names that differ only in case. */
const linkRoot = makeTree({
  "real.txt": "12345",
  "sub/inner.txt": "inner",
  "Case.md": "upper",
  "case.md": "lower!",
});
/** A folder outside both roots that a symlink points at. */
const outside = makeTree({ "secret.txt": "top secret" });

before(() => {
  utimesSync(join(root, "a.md"), 1_000_000_000, 1_700_000_000.999);
  utimesSync(join(root, "b.md"), 1_000_000_000, 1_234_567_890);
  utimesSync(join(root, "c.md"), 1_000_000_000, 4_102_444_800.5);
  utimesSync(join(root, "docs/sub/deep.MD"), 1_000_000_000, 1_600_000_000.75);
  symlinkSync("real.txt", join(linkRoot, "link.txt"));
  symlinkSync("sub", join(linkRoot, "linkdir"));
  symlinkSync(outside, join(linkRoot, "out"));
  symlinkSync("missing-target.txt", join(linkRoot, "broken.txt"));
  writeFileSync(join(linkRoot, "big.bin"), "");
  truncateSync(join(linkRoot, "big.bin"), 5 * 2 ** 30);
});

after(() => {
  removeTree(root);
  removeTree(linkRoot);
  removeTree(outside);
});

async function paths(
  cwd: string,
  table: string,
  extra: readonly string[] = [],
): Promise<unknown[]> {
  return pathsOf(await queryJson(cwd, `SELECT path FROM ${table} ORDER BY path`, extra));
}

const floorSeconds = (ms: number) => Math.floor(ms / 1000);

describe("path-table columns", { concurrency: true }, () => {
  it("has exactly the seven stat columns, in order, for SELECT *", async () => {
    const rows = await queryJson(root, "SELECT * FROM './docs/sub/deep.MD'");
    assert.equal(rows.length, 1);
    assert.deepEqual(Object.keys(rows[0] ?? {}), COLUMNS);
    const stats = statSync(join(root, "docs/sub/deep.MD"));
    assert.deepEqual(rows[0], {
      path: "docs/sub/deep.MD",
      basename: "deep.MD",
      dir: "docs/sub",
      ext: "MD",
      size: 4,
      mtime: 1_600_000_000,
      ctime: floorSeconds(stats.ctimeMs),
    });
  });

  it("path is relative, '/'-separated, with no leading './'", async () => {
    const listed = await paths(root, "'./'");
    assert.deepEqual(listed, ALL_FILES);
    for (const path of listed as string[]) {
      assert.ok(!path.startsWith("./") && !path.startsWith("/"), path);
      assert.ok(!path.includes("\\"), path);
    }
  });

  it("basename is the file name and dir the parent ('' at the root)", async () => {
    const rows = await queryJson(root, "SELECT path, basename, dir FROM './' ORDER BY path");
    for (const row of rows) {
      const path = row.path as string;
      const slash = path.lastIndexOf("/");
      assert.equal(row.basename, path.slice(slash + 1), path);
      assert.equal(row.dir, slash === -1 ? "" : path.slice(0, slash), path);
    }
    const atRoot = rows.filter((row) => row.dir === "").map((row) => row.path);
    assert.deepEqual(atRoot, [
      ".env",
      ".hidden.md",
      "Makefile",
      "UPPER.TXT",
      "a.md",
      "archive.tar.gz",
      "b.md",
      "c.md",
      "file.",
      "it's.txt",
      "notes.txt",
    ]);
  });

  it("ext is the last extension without the dot, case kept, NULL when there is none", async () => {
    const rows = await queryJson(root, "SELECT basename, ext FROM './' ORDER BY path");
    const ext = Object.fromEntries(rows.map((row) => [row.basename, row.ext]));
    assert.deepEqual(ext, {
      "settings.json": "json",
      ".env": null,
      ".hidden.md": "md",
      Makefile: null,
      "UPPER.TXT": "TXT",
      "a.md": "md",
      "archive.tar.gz": "gz",
      "b.md": "md",
      "c.md": "md",
      "ü ñ.txt": "txt",
      ".draft.md": "md",
      "guide.md": "md",
      "deep.MD": "MD",
      "x.txt": "txt",
      "file.": null,
      "it's.txt": "txt",
      "notes.txt": "txt",
      "index.ts": "ts",
      "util.ts": "ts",
    });
  });

  it("NULL ext is a real SQL NULL (IS NULL, typeof)", async () => {
    const rows = await queryJson(
      root,
      "SELECT path, typeof(ext) AS t FROM './' WHERE ext IS NULL ORDER BY path",
    );
    assert.deepEqual(rows, [
      { path: ".env", t: "null" },
      { path: "Makefile", t: "null" },
      { path: "file.", t: "null" },
    ]);
  });

  it("column types: TEXT path/basename/dir, TEXT or NULL ext, INTEGER size/mtime/ctime", async () => {
    const rows = await queryJson(
      root,
      "SELECT DISTINCT typeof(path) AS p, typeof(basename) AS b, typeof(dir) AS d, " +
        "typeof(size) AS s, typeof(mtime) AS m, typeof(ctime) AS c FROM './'",
    );
    assert.deepEqual(rows, [
      { p: "text", b: "text", d: "text", s: "integer", m: "integer", c: "integer" },
    ]);
    const ext = await queryJson(root, "SELECT DISTINCT typeof(ext) AS t FROM './' ORDER BY t");
    assert.deepEqual(ext, [{ t: "null" }, { t: "text" }]);
    // STRICT: SQLite itself enforces these types (the server's JSON writer relies on it).
    const strict = await queryJson(root, "SELECT strict FROM pragma_table_list('./')");
    assert.deepEqual(strict, [{ strict: 1 }]);
  });

  it("size is the byte size of every file (multi-byte text counted in bytes)", async () => {
    const rows = await queryJson(root, "SELECT path, size FROM './' ORDER BY path");
    assert.equal(rows.length, ALL_FILES.length);
    for (const row of rows) {
      assert.equal(row.size, statSync(join(root, row.path as string)).size, row.path as string);
    }
    const unicode = rows.find((row) => row.path === "dir with space/ü ñ.txt");
    assert.equal(unicode?.size, 2);
  });

  it("size of a file over 4 GiB is the exact INTEGER", async () => {
    const stdout = await runOk(linkRoot, [
      "SELECT size, typeof(size) AS t, size = 5368709120 AS exact FROM './big.bin'",
    ]);
    assert.equal(stdout, '[{"size":5368709120,"t":"integer","exact":1}]\n');
  });

  it("mtime is INTEGER Unix seconds, floored", async () => {
    const rows = await queryJson(
      root,
      "SELECT path, mtime, typeof(mtime) AS t FROM './' WHERE path IN ('a.md', 'b.md', 'c.md') ORDER BY path",
    );
    assert.deepEqual(rows, [
      { path: "a.md", mtime: 1_700_000_000, t: "integer" },
      { path: "b.md", mtime: 1_234_567_890, t: "integer" },
      { path: "c.md", mtime: 4_102_444_800, t: "integer" },
    ]);
  });

  it("mtime and ctime match the file system for every file", async () => {
    const rows = await queryJson(root, "SELECT path, mtime, ctime FROM './' ORDER BY path");
    for (const row of rows) {
      const stats = statSync(join(root, row.path as string));
      assert.equal(row.mtime, floorSeconds(stats.mtimeMs), `mtime of ${row.path}`);
      assert.equal(row.ctime, floorSeconds(stats.ctimeMs), `ctime of ${row.path}`);
    }
  });

  it("stat columns filter and sort as numbers", async () => {
    const rows = await queryJson(
      root,
      "SELECT path FROM './*.md' WHERE mtime < 1700000001 AND size >= 2 ORDER BY mtime DESC",
    );
    assert.deepEqual(pathsOf(rows), ["a.md", "b.md"]);
  });

  it("names with spaces, non-ASCII letters and quotes", async () => {
    assert.deepEqual(await paths(root, "'./it''s.txt'"), ["it's.txt"]);
    assert.deepEqual(await paths(root, "'./dir with space'"), ["dir with space/ü ñ.txt"]);
    const rows = await queryJson(root, "SELECT basename, dir FROM './dir with space/ü ñ.txt'");
    assert.deepEqual(rows, [{ basename: "ü ñ.txt", dir: "dir with space" }]);
  });
});

describe("path-table names and globs", { concurrency: true }, () => {
  it("'./' and '.' are every file at any depth, dot-files included", async () => {
    const got = await pathsByTable(root, ["'./'", "'.'"]);
    assert.deepEqual(got["'./'"], ALL_FILES);
    assert.deepEqual(got["'.'"], ALL_FILES);
  });

  it("the name may be quoted with ', \", ` or []", async () => {
    const got = await pathsByTable(root, ['"./"', "`./`", "[./]"]);
    assert.deepEqual(got, { '"./"': ALL_FILES, "`./`": ALL_FILES, "[./]": ALL_FILES });
  });

  it("a directory path ('./docs', './docs/') is every file under it, dot-files included", async () => {
    const expected = ["docs/.draft.md", "docs/guide.md", "docs/sub/deep.MD", "docs/sub/x.txt"];
    const got = await pathsByTable(root, ["'./docs'", "'./docs/'", "'./.config'", "'./docs/sub'"]);
    assert.deepEqual(got, {
      "'./docs'": expected,
      "'./docs/'": expected,
      "'./.config'": [".config/settings.json"],
      "'./docs/sub'": ["docs/sub/deep.MD", "docs/sub/x.txt"],
    });
  });

  it("an empty directory is an empty table, and stderr says so", async () => {
    const result = await runDirq(["SELECT * FROM './empty'"], { cwd: root });
    assert.deepEqual(result, {
      code: 0,
      stdout: "[]\n",
      stderr: "dirq: path-table './empty' is empty: no file matches it\n",
    });
  });

  it("a path naming a file is that one file", async () => {
    const got = await pathsByTable(root, ["'./a.md'", "'./docs/sub/x.txt'", "'./.env'"]);
    assert.deepEqual(got, {
      "'./a.md'": ["a.md"],
      "'./docs/sub/x.txt'": ["docs/sub/x.txt"],
      "'./.env'": [".env"],
    });
  });

  it("'..' segments that stay inside the root are allowed", async () => {
    const got = await pathsByTable(root, ["'./docs/../a.md'", "'./docs/sub/../../src'"]);
    assert.deepEqual(got, {
      "'./docs/../a.md'": ["a.md"],
      "'./docs/sub/../../src'": ["src/index.ts", "src/util.ts"],
    });
  });

  it("* stays inside one segment and skips dot-files", async () => {
    const got = await pathsByTable(root, ["'./*.md'", "'./*'", "'./*/*.ts'", "'./docs/*'"]);
    assert.deepEqual(got, {
      "'./*.md'": ["a.md", "b.md", "c.md"],
      "'./*'": [
        "Makefile",
        "UPPER.TXT",
        "a.md",
        "archive.tar.gz",
        "b.md",
        "c.md",
        "file.",
        "it's.txt",
        "notes.txt",
      ],
      "'./*/*.ts'": ["src/index.ts", "src/util.ts"],
      "'./docs/*'": ["docs/guide.md"],
    });
  });

  it("? matches one character inside a segment, never '/'", async () => {
    const got = await pathsByTable(root, ["'./?.md'", "'./docs?guide.md'", "'./src/????.ts'"]);
    assert.deepEqual(got, {
      "'./?.md'": ["a.md", "b.md", "c.md"],
      "'./docs?guide.md'": [],
      "'./src/????.ts'": ["src/util.ts"],
    });
  });

  it("** crosses directories but skips dot-files and dot-directories", async () => {
    const got = await pathsByTable(root, [
      "'./**/*.md'",
      "'./**'",
      "'./docs/**'",
      "'./**/*.json'",
      "'./**/sub/*'",
    ]);
    assert.deepEqual(got, {
      "'./**/*.md'": ["a.md", "b.md", "c.md", "docs/guide.md"],
      "'./**'": [
        "Makefile",
        "UPPER.TXT",
        "a.md",
        "archive.tar.gz",
        "b.md",
        "c.md",
        "dir with space/ü ñ.txt",
        "docs/guide.md",
        "docs/sub/deep.MD",
        "docs/sub/x.txt",
        "file.",
        "it's.txt",
        "notes.txt",
        "src/index.ts",
        "src/util.ts",
      ],
      "'./docs/**'": ["docs/guide.md", "docs/sub/deep.MD", "docs/sub/x.txt"],
      "'./**/*.json'": [],
      "'./**/sub/*'": ["docs/sub/deep.MD", "docs/sub/x.txt"],
    });
  });

  it("globs are case-sensitive", async () => {
    const got = await pathsByTable(root, ["'./**/*.MD'", "'./*.TXT'"]);
    assert.deepEqual(got, { "'./**/*.MD'": ["docs/sub/deep.MD"], "'./*.TXT'": ["UPPER.TXT"] });
  });

  it("a glob that spells the dot matches dot-files", async () => {
    const got = await pathsByTable(root, [
      "'./.*'",
      "'./**/.*.md'",
      "'./.config/*'",
      "'./docs/.*'",
    ]);
    assert.deepEqual(got, {
      "'./.*'": [".env", ".hidden.md"],
      "'./**/.*.md'": [".hidden.md", "docs/.draft.md"],
      "'./.config/*'": [".config/settings.json"],
      "'./docs/.*'": ["docs/.draft.md"],
    });
  });

  it("[abc] matches one character of the set", async () => {
    const got = await pathsByTable(root, ["'./[ab].md'", "'./[a-b].md'", "'./src/[u]*'"]);
    assert.deepEqual(got, {
      "'./[ab].md'": ["a.md", "b.md"],
      "'./[a-b].md'": ["a.md", "b.md"],
      "'./src/[u]*'": ["src/util.ts"],
    });
  });

  it("[!a] matches one character not in the set", async () => {
    const got = await pathsByTable(root, ["'./[!a].md'", "'./src/[!u]*'"]);
    assert.deepEqual(got, {
      "'./[!a].md'": ["b.md", "c.md"],
      "'./src/[!u]*'": ["src/index.ts"],
    });
  });

  it("{a,b} braces choose between alternatives, also across folders", async () => {
    const got = await pathsByTable(root, [
      "'./{a,c}.md'",
      "'./{docs,src}/*'",
      "'./**/*.{ts,json}'",
    ]);
    assert.deepEqual(got, {
      "'./{a,c}.md'": ["a.md", "c.md"],
      "'./{docs,src}/*'": ["docs/guide.md", "src/index.ts", "src/util.ts"],
      "'./**/*.{ts,json}'": ["src/index.ts", "src/util.ts"],
    });
  });

  it("a glob that matches nothing is an empty table, exit 0, and stderr says so", async () => {
    for (const [sql, stdout, table] of [
      ["SELECT * FROM './*.xyz'", "[]\n", "./*.xyz"],
      ["SELECT count(*) AS n FROM './**/*.xyz'", '[{"n":0}]\n', "./**/*.xyz"],
    ]) {
      const result = await runDirq([sql as string], { cwd: root });
      assert.deepEqual(result, {
        code: 0,
        stdout,
        stderr: `dirq: path-table '${table}' is empty: no file matches it\n`,
      });
    }
  });

  it("a glob under a folder that does not exist is an empty table, not a partial scan", async () => {
    // docs/path-tables.md: "a glob that matches nothing is an empty table".
    const result = await runDirq(["SELECT * FROM './nope/*.md'"], { cwd: root });
    assert.deepEqual(result, {
      code: 0,
      stdout: "[]\n",
      stderr: "dirq: path-table './nope/*.md' is empty: no file matches it\n",
    });
  });
});

describe("several path-tables in one statement", { concurrency: true }, () => {
  it("scalar subqueries over different path-tables", async () => {
    const rows = await queryJson(
      root,
      "SELECT (SELECT count(*) FROM './docs') AS docs, (SELECT count(*) FROM './*.md') AS md, " +
        "(SELECT count(*) FROM './') AS total",
    );
    assert.deepEqual(rows, [{ docs: 4, md: 3, total: ALL_FILES.length }]);
  });

  it("a join of two path-tables", async () => {
    const rows = await queryJson(
      root,
      "SELECT d.path, r.size FROM './docs/**' AS d JOIN './' AS r ON r.path = d.path ORDER BY d.path",
    );
    assert.deepEqual(rows, [
      { path: "docs/guide.md", size: 8 },
      { path: "docs/sub/deep.MD", size: 4 },
      { path: "docs/sub/x.txt", size: 1 },
    ]);
  });

  it("the same path-table twice, one side reading only names, the other stat columns", async () => {
    const rows = await queryJson(
      root,
      "SELECT x.path, y.size, y.mtime FROM './' x JOIN './' y ON x.path = y.path WHERE x.basename = 'b.md'",
    );
    assert.deepEqual(rows, [{ path: "b.md", size: 2, mtime: 1_234_567_890 }]);
  });

  it("IN (subquery) and EXISTS", async () => {
    const rows = await queryJson(
      root,
      "SELECT path FROM './' WHERE basename IN (SELECT basename FROM './src/*') ORDER BY path",
    );
    assert.deepEqual(pathsOf(rows), ["src/index.ts", "src/util.ts"]);
    const exists = await queryJson(
      root,
      "SELECT EXISTS (SELECT 1 FROM './**/*.ts') AS ts, EXISTS (SELECT 1 FROM './**/*.rs') AS rs",
    );
    assert.deepEqual(exists, [{ ts: 1, rs: 0 }]);
  });

  it("a CTE over a path-table, with aggregates", async () => {
    const rows = await queryJson(
      root,
      "WITH md AS (SELECT path, size FROM './**/*.md') SELECT count(*) AS n, sum(size) AS total FROM md",
    );
    assert.deepEqual(rows, [{ n: 4, total: 6 + 2 + 3 + 8 }]);
  });

  it("UNION ALL of path-tables and table aliases without AS", async () => {
    const rows = await queryJson(
      root,
      "SELECT f.basename AS name FROM './a.md' f UNION ALL SELECT g.basename FROM './src/util.ts' g",
    );
    assert.deepEqual(rows, [{ name: "a.md" }, { name: "util.ts" }]);
  });

  it("GROUP BY ext over the whole root", async () => {
    const rows = await queryJson(
      root,
      "SELECT ext, count(*) AS n FROM './' GROUP BY ext ORDER BY ext",
    );
    assert.deepEqual(rows, [
      { ext: null, n: 3 },
      { ext: "MD", n: 1 },
      { ext: "TXT", n: 1 },
      { ext: "gz", n: 1 },
      { ext: "json", n: 1 },
      { ext: "md", n: 6 },
      { ext: "ts", n: 2 },
      { ext: "txt", n: 4 },
    ]);
  });

  it("path-tables whose names differ only in case are different tables", async () => {
    const rows = await queryJson(
      linkRoot,
      "SELECT (SELECT path FROM './Case.md') AS upper, (SELECT path FROM './case.md') AS lower",
    );
    assert.deepEqual(rows, [{ upper: "Case.md", lower: "case.md" }]);
  });

  it("a column qualified by a case variant's name reads that variant, and no column name shows its internal name", async () => {
    const qualified = await runOk(linkRoot, [
      `SELECT "./case.md".path, './case.md'.size, "./Case.md".path AS upper FROM './Case.md', './case.md'`,
      "--format",
      "json",
    ]);
    assert.equal(qualified, '[{"path":"case.md","size":6,"upper":"Case.md"}]\n');
    // SQLite names an unaliased expression by its text, which the rewrite changed.
    const named = await runOk(linkRoot, [
      `WITH x AS (SELECT * FROM './Case.md') SELECT (SELECT path FROM './case.md'), [./case.md].path || '!' FROM x, [./case.md]`,
      "--format",
      "json",
    ]);
    assert.equal(
      named,
      `[{"(SELECT path FROM './case.md')":"case.md","[./case.md].path || '!'":"case.md!"}]\n`,
    );
    // In the REPL the first spelling stays in use: a later statement's variant is rewritten.
    const repl = await runDirq(["repl", "--format", "json"], {
      cwd: linkRoot,
      input: `SELECT path FROM './Case.md';\nSELECT "./case.md".path, (SELECT size FROM './case.md') FROM './case.md';\n`,
    });
    assert.equal(repl.code, 0, repl.stderr);
    assert.doesNotMatch(repl.stdout + repl.stderr, /\u2051/);
    assert.match(repl.stdout, /"path":"case\.md","\(SELECT size FROM '\.\/case\.md'\)":6/);
  });

  it("globs whose names differ only in case are different tables", async () => {
    const rows = await queryJson(
      root,
      "SELECT (SELECT count(*) FROM './**/*.md') AS lower, (SELECT count(*) FROM './**/*.MD') AS upper",
    );
    assert.deepEqual(rows, [{ lower: 4, upper: 1 }]);
  });
});

describe("symlinks", { concurrency: true }, () => {
  it("a symlinked file is listed, with its target's size; symlinked dirs are not followed", async () => {
    const rows = await queryJson(linkRoot, "SELECT path, size FROM './' ORDER BY path");
    assert.deepEqual(rows, [
      { path: "Case.md", size: 5 },
      { path: "big.bin", size: 5 * 2 ** 30 },
      { path: "case.md", size: 6 },
      { path: "link.txt", size: 5 },
      { path: "real.txt", size: 5 },
      { path: "sub/inner.txt", size: 5 },
    ]);
  });

  it("globs do not follow symlinked directories either", async () => {
    assert.deepEqual(await paths(linkRoot, "'./**/*.txt'"), [
      "link.txt",
      "real.txt",
      "sub/inner.txt",
    ]);
    assert.deepEqual(await paths(linkRoot, "'./*/*.txt'"), ["sub/inner.txt"]);
  });

  it("a symlinked file can be named directly", async () => {
    const rows = await queryJson(linkRoot, "SELECT path, basename, size FROM './link.txt'");
    assert.deepEqual(rows, [{ path: "link.txt", basename: "link.txt", size: 5 }]);
  });

  it("a dangling symlink is not a file and does not fail the scan", async () => {
    const stdout = await runOk(linkRoot, ["SELECT path FROM './' WHERE path LIKE 'broken%'"]);
    assert.equal(stdout, "[]\n");
  });

  /** Either an error or rows; in both cases nothing through or about the symlinked dir. */
  async function assertNotFollowed(table: string, forbidden: RegExp): Promise<void> {
    const result = await runDirq([`SELECT path FROM ${table}`], { cwd: linkRoot });
    if (result.code === 0) {
      const listed = pathsOf(parseRows(result.stdout)) as string[];
      assert.deepEqual(
        listed.filter((path) => forbidden.test(path)),
        [],
        `${table} listed ${listed.join(", ")}`,
      );
    } else {
      assertUserError(result);
    }
  }

  it("naming a symlinked directory does not list it as a file", async () => {
    await assertNotFollowed("'./linkdir'", /^linkdir/);
  });

  it("a path through a symlinked directory is not followed", async () => {
    await assertNotFollowed("'./linkdir/*'", /^linkdir/);
    await assertNotFollowed("'./linkdir/inner.txt'", /^linkdir/);
  });

  it("a symlink to a folder outside the root never exposes files outside the root", async () => {
    await assertNotFollowed("'./out'", /^out/);
    await assertNotFollowed("'./out/*'", /^out/);
    await assertNotFollowed("'./out/secret.txt'", /^out/);
    await assertNotFollowed("'./out/**'", /^out/);
  });
});

describe("path-table errors", { concurrency: true }, () => {
  const outsideNames = [
    "'../x'",
    "'..'",
    "'./..'",
    "'../*.md'",
    "'/etc'",
    "'/'",
    "'~/x'",
    "'~'",
    "'./a/../../x'",
    "'./docs/../../x'",
  ];
  for (const table of outsideNames) {
    it(`FROM ${table} is outside the root`, async () => {
      const result = await runDirq([`SELECT * FROM ${table}`], { cwd: root });
      assertUserError(result, "outside the root");
    });
  }

  it("an absolute path to a file inside the root is still outside the root", async () => {
    const result = await runDirq([`SELECT * FROM '${join(root, "a.md")}'`], { cwd: root });
    assertUserError(result, "outside the root");
  });

  it("the outside-the-root diagnostic names the table as written", async () => {
    const result = await runDirq(["SELECT * FROM './a/../../x'"], { cwd: root });
    assertUserError(result, "'./a/../../x'");
  });

  it("a bare glob suggests the './' form", async () => {
    assertUserError(await runDirq(["SELECT * FROM '*.md'"], { cwd: root }), "'./*.md'");
    assertUserError(await runDirq(["SELECT * FROM 'docs/*.md'"], { cwd: root }), "'./docs/*.md'");
    assertUserError(await runDirq(["SELECT * FROM '**/*.ts'"], { cwd: root }), "'./**/*.ts'");
  });

  it("a missing file or folder is an error naming it", async () => {
    assertUserError(
      await runDirq(["SELECT * FROM './missing.txt'"], { cwd: root }),
      "./missing.txt",
    );
    assertUserError(
      await runDirq(["SELECT * FROM './no/such/dir/'"], { cwd: root }),
      "./no/such/dir/",
    );
  });

  it("a name without './' is an ordinary table name", async () => {
    assertUserError(await runDirq(["SELECT * FROM 'a.md'"], { cwd: root }), "no such table: a.md");
    assertUserError(await runDirq(["SELECT * FROM docs"], { cwd: root }), "no such table: docs");
  });

  it("FROM files fails with a message pointing at FROM './'", async () => {
    for (const sql of [
      "SELECT * FROM files",
      "SELECT path FROM FILES WHERE size > 0",
      'SELECT count(*) FROM "files"',
    ]) {
      const message = assertUserError(await runDirq([sql], { cwd: root }), "files");
      assert.ok(message.includes("FROM './'"), `${sql}: ${message}`);
    }
  });
});
