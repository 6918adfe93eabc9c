import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { symlinkSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { makeTree, parseRows, pathsByTable, pathsOf, removeTree, runDirq } from "./helpers.js";

const root = makeTree({
  ".gitignore": "*.log\n!keep.log\nbuild/\n!build/keep.js\n/rootonly.txt\n",
  "a.log": "",
  "keep.log": "",
  "top.tmp": "",
  "build/out.js": "",
  "build/keep.js": "",
  "docs/build": "a file named build, not a folder",
  "rootonly.txt": "",
  "secret.txt": "",
  "src/.gitignore": "*.tmp\n!important.log\n",
  "src/main.ts": "",
  "src/err.log": "",
  "src/important.log": "",
  "src/t.tmp": "",
  "src/rootonly.txt": "",
  "src/build/x.js": "",
  "src/deep/.gitignore": "deep.log\nv2.ts\n",
  "src/deep/deep.log": "",
  "src/deep/u.tmp": "",
  "src/deep/v.ts": "",
  "src/deep/v2.ts": "",
  "src/v2.ts": "",
  ".git/info/exclude": "secret.txt\n",
  ".git/HEAD": "ref: refs/heads/main\n",
  ".git/objects/ab/cdef": "",
  "node_modules/x/index.js": "",
  "node_modules/.bin/tool": "",
  "src/node_modules/y.js": "",
  "docs/node_modules/z/readme.md": "",
});
after(() => removeTree(root));

/** What `.gitignore` and `.git/info/exclude` leave visible. */
const VISIBLE = [
  ".gitignore",
  "docs/build",
  "keep.log",
  "src/.gitignore",
  "src/deep/.gitignore",
  "src/deep/v.ts",
  "src/important.log",
  "src/main.ts",
  "src/rootonly.txt",
  "src/v2.ts",
  "top.tmp",
];

/** With `--no-ignore`: everything but the built-in skips (`node_modules`, `.git`). */
const ALL_BUT_BUILT_INS = [
  ".gitignore",
  "a.log",
  "build/keep.js",
  "build/out.js",
  "docs/build",
  "keep.log",
  "rootonly.txt",
  "secret.txt",
  "src/.gitignore",
  "src/build/x.js",
  "src/deep/.gitignore",
  "src/deep/deep.log",
  "src/deep/u.tmp",
  "src/deep/v.ts",
  "src/deep/v2.ts",
  "src/err.log",
  "src/important.log",
  "src/main.ts",
  "src/rootonly.txt",
  "src/t.tmp",
  "src/v2.ts",
  "top.tmp",
];

describe(".gitignore rules", { concurrency: true }, () => {
  it("'./' respects .gitignore at every level and .git/info/exclude", async () => {
    const got = await pathsByTable(root, ["'./'"]);
    assert.deepEqual(got["'./'"], VISIBLE);
  });

  it("--no-ignore lists what .gitignore hides, but never node_modules or .git", async () => {
    const got = await pathsByTable(root, ["'./'"], ["--no-ignore"]);
    assert.deepEqual(got["'./'"], ALL_BUT_BUILT_INS);
  });

  it("the rules, one by one", async () => {
    const listed = new Set((await pathsByTable(root, ["'./'"]))["'./'"]);
    const hidden = (path: string) => assert.ok(!listed.has(path), `${path} should be ignored`);
    const shown = (path: string) => assert.ok(listed.has(path), `${path} should be listed`);
    // `*.log` with the negation `!keep.log`
    hidden("a.log");
    shown("keep.log");
    // a directory pattern `build/` at any depth, not a file named build
    hidden("build/out.js");
    hidden("src/build/x.js");
    shown("docs/build");
    // a file inside an ignored folder cannot be re-included (`!build/keep.js`), as in git
    hidden("build/keep.js");
    // anchored `/rootonly.txt` only at the root
    hidden("rootonly.txt");
    shown("src/rootonly.txt");
    // `.git/info/exclude`
    hidden("secret.txt");
    // a nested .gitignore applies below its folder only, and its negation wins over the root
    hidden("src/t.tmp");
    hidden("src/deep/u.tmp");
    shown("top.tmp");
    shown("src/important.log");
    hidden("src/err.log");
    // the deepest .gitignore
    hidden("src/deep/deep.log");
    hidden("src/deep/v2.ts");
    shown("src/v2.ts");
  });

  it("globs respect the rules, including those of folders above the glob's base", async () => {
    const tables = ["'./**/*.log'", "'./src/*'", "'./src/deep/*'", "'./**/*.js'", "'./*.tmp'"];
    const got = await pathsByTable(root, tables);
    assert.deepEqual(got, {
      "'./**/*.log'": ["keep.log", "src/important.log"],
      "'./src/*'": ["src/important.log", "src/main.ts", "src/rootonly.txt", "src/v2.ts"],
      "'./src/deep/*'": ["src/deep/v.ts"],
      "'./**/*.js'": [],
      "'./*.tmp'": ["top.tmp"],
    });
    const noIgnore = await pathsByTable(root, tables, ["--no-ignore"]);
    assert.deepEqual(noIgnore, {
      "'./**/*.log'": [
        "a.log",
        "keep.log",
        "src/deep/deep.log",
        "src/err.log",
        "src/important.log",
      ],
      "'./src/*'": [
        "src/err.log",
        "src/important.log",
        "src/main.ts",
        "src/rootonly.txt",
        "src/t.tmp",
        "src/v2.ts",
      ],
      "'./src/deep/*'": ["src/deep/deep.log", "src/deep/u.tmp", "src/deep/v.ts", "src/deep/v2.ts"],
      "'./**/*.js'": ["build/keep.js", "build/out.js", "src/build/x.js"],
      "'./*.tmp'": ["top.tmp"],
    });
  });

  it("a path-table naming an ignored file or folder is empty, and full with --no-ignore", async () => {
    const tables = [
      "'./a.log'",
      "'./build'",
      "'./build/keep.js'",
      "'./src/t.tmp'",
      "'./secret.txt'",
    ];
    const got = await pathsByTable(root, tables);
    for (const table of tables) assert.deepEqual(got[table], [], table);
    const noIgnore = await pathsByTable(root, tables, ["--no-ignore"]);
    assert.deepEqual(noIgnore, {
      "'./a.log'": ["a.log"],
      "'./build'": ["build/keep.js", "build/out.js"],
      "'./build/keep.js'": ["build/keep.js"],
      "'./src/t.tmp'": ["src/t.tmp"],
      "'./secret.txt'": ["secret.txt"],
    });
  });

  it("node_modules and .git are skipped even when named, even with --no-ignore", async () => {
    const tables = [
      "'./node_modules'",
      "'./node_modules/x/index.js'",
      "'./src/node_modules/y.js'",
      "'./.git'",
      "'./.git/HEAD'",
      "'./**/index.js'",
      "'./**/node_modules/**'",
      "'./.git/**'",
      "'./docs'",
    ];
    for (const extra of [[], ["--no-ignore"]]) {
      const got = await pathsByTable(root, tables, extra);
      assert.deepEqual(
        got,
        {
          "'./node_modules'": [],
          "'./node_modules/x/index.js'": [],
          "'./src/node_modules/y.js'": [],
          "'./.git'": [],
          "'./.git/HEAD'": [],
          "'./**/index.js'": [],
          "'./**/node_modules/**'": [],
          "'./.git/**'": [],
          "'./docs'": ["docs/build"],
        },
        `with ${JSON.stringify(extra)}`,
      );
    }
  });

  it(".git/info/exclude is weaker than the root .gitignore", async () => {
    const tree = makeTree({
      ".git/info/exclude": "*.secret\n",
      ".gitignore": "!keep.secret\n",
      "a.secret": "",
      "keep.secret": "",
    });
    try {
      const got = await pathsByTable(tree, ["'./*.secret'"]);
      assert.deepEqual(got["'./*.secret'"], ["keep.secret"]);
    } finally {
      removeTree(tree);
    }
  });

  it("a .gitignore above the root is not read", async () => {
    const tree = makeTree({ ".gitignore": "*.md\n", "inner/a.md": "", "b.md": "" });
    try {
      const inner = await pathsByTable(`${tree}/inner`, ["'./'"]);
      assert.deepEqual(inner["'./'"], ["a.md"]);
      const outer = await pathsByTable(tree, ["'./'"]);
      assert.deepEqual(outer["'./'"], [".gitignore"]);
    } finally {
      removeTree(tree);
    }
  });

  it("an unreadable .gitignore is warned of (exit 23) as git warns; the rest is listed", async () => {
    // Tests may run as root, whom chmod 000 does not stop: a symlink loop is unreadable to
    // anyone. git 2.39 says "warning: unable to access 'sub/.gitignore': Too many levels of
    // symbolic links" and lists the rest; a .gitignore that is a folder it passes over silently.
    const tree = makeTree({
      ".gitignore": "*.log\n",
      "a.log": "",
      "b.txt": "",
      "sub/c.txt": "",
      "dir/.gitignore/x": "",
      "dir/d.txt": "",
    });
    try {
      symlinkSync(".gitignore", join(tree, "sub/.gitignore"));
      const result = await runDirq(["SELECT path FROM './'", "--format", "json"], { cwd: tree });
      assert.equal(result.code, 23, result.stderr);
      assert.deepEqual(pathsOf(parseRows(result.stdout)), [
        ".gitignore",
        "b.txt",
        "dir/.gitignore/x",
        "dir/d.txt",
        "sub/c.txt",
      ]);
      assert.match(
        result.stderr,
        /^dirq: skipped sub\/\.gitignore: cannot read it \(ELOOP: [^)]*\), so its patterns do not apply$/m,
      );
      assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
    } finally {
      removeTree(tree);
    }
  });

  it(
    "a .gitignore that is a FIFO is warned of and not read, so nothing hangs (git's read would wait for a writer)",
    { timeout: 60_000 },
    async () => {
      const tree = makeTree({
        ".gitignore": "*.log\n",
        "a.log": "",
        "sub/b.txt": "",
        "sub/c.log": "",
      });
      try {
        execFileSync("mkfifo", [join(tree, "sub/.gitignore")]);
        const result = await runDirq(["SELECT path FROM './'", "--format", "json"], { cwd: tree });
        assert.equal(result.code, 23, result.stderr);
        assert.deepEqual(pathsOf(parseRows(result.stdout)), [".gitignore", "sub/b.txt"]);
        assert.equal(
          result.stderr.trim(),
          "dirq: skipped sub/.gitignore: it is a FIFO, not a regular file, so it is not read and its patterns do not apply",
        );
      } finally {
        removeTree(tree);
      }
    },
  );

  it("--no-ignore works after 'query \"<sql>\"' and between 'query' and the SQL", async () => {
    const sql = "SELECT path FROM './' WHERE path = 'a.log'";
    for (const args of [
      [sql, "--no-ignore"],
      ["query", sql, "--no-ignore"],
      ["query", "--no-ignore", sql],
    ]) {
      const result = await runDirq(args, { cwd: root });
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(pathsOf(parseRows(result.stdout)), ["a.log"], JSON.stringify(args));
    }
  });
});
