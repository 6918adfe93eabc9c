/**
 * End-to-end tests over the built CLI for what trying dirq on real trees turned up: nothing a
 * tree contains crashes a query, odd names and files are handled one way everywhere, output
 * is all or nothing, and every user-caused failure is one `dirq:` line.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  assertNoStackTrace,
  assertUserError,
  DIRQ_BIN,
  makeTree,
  parseRows,
  pathsOf,
  removeTree,
  runDirq,
  runOk,
  runOkEmpty,
} from "./helpers.js";
import { eventually } from "./server-support.js";

const paths = async (cwd: string, sql: string, ...args: string[]) =>
  pathsOf(parseRows(await runOk(cwd, [sql, ...args])));

/** A path-table that lists nothing: no rows, and one stderr line that says why. */
async function emptyBecause(cwd: string, sql: string): Promise<string> {
  const { stdout, stderr } = await runOkEmpty(cwd, [sql]);
  assert.equal(stdout, "[]\n");
  return stderr;
}

const NOT_A_FILE = "matches it but is not a regular file, nor a link to one inside the root";

describe("links that cannot be resolved are broken links, never a crash", () => {
  const root = makeTree({
    "a.txt": "a",
    f: "file",
    "sub/b.md": "b",
    ".gitignore": "ignored-loop\n",
  });
  after(() => removeTree(root));
  symlinkSync("self", join(root, "self"));
  symlinkSync("ignored-loop", join(root, "ignored-loop"));
  symlinkSync("f/x", join(root, "through-a-file"));
  symlinkSync("missing", join(root, "sub/dangling"));
  symlinkSync("/etc/hostname", join(root, "outside"));
  symlinkSync("a.txt", join(root, "inside"));

  it("lists the files and the link inside the root, nothing else", async () => {
    assert.deepEqual(await paths(root, "SELECT path FROM './' ORDER BY path"), [
      ".gitignore",
      "a.txt",
      "f",
      "inside",
      "sub/b.md",
    ]);
    const rows = parseRows(
      await runOk(root, ["SELECT path, size FROM './' WHERE path = 'inside'"]),
    );
    assert.deepEqual(rows, [{ path: "inside", size: 1 }]);
  });

  it("a glob that does not select the link still works", async () => {
    assert.deepEqual(await paths(root, "SELECT path FROM './**/*.md'"), ["sub/b.md"]);
  });

  it("naming the broken link or the outside link directly gives an empty table", async () => {
    for (const name of ["self", "outside"]) {
      assert.equal(
        await emptyBecause(root, `SELECT path, size FROM './${name}'`),
        `dirq: path-table './${name}' is empty: ${name} ${NOT_A_FILE}\n`,
      );
    }
  });
});

describe("FIFOs, sockets and devices are never rows and never opened", () => {
  const root = makeTree({ "a.txt": "a" });
  const server = createServer();
  after(() => {
    server.close();
    removeTree(root);
  });

  it("walked, named directly, and with a hook (which would hang on a FIFO)", async () => {
    assert.equal(spawnSync("mkfifo", [join(root, "pipe")]).status, 0);
    await new Promise<void>((resolve) => server.listen(join(root, "sock"), resolve));
    // A character device (what /dev/null is) where we may make one (root, CAP_MKNOD).
    const device = spawnSync("mknod", [join(root, "dev"), "c", "1", "3"]).status === 0;
    assert.deepEqual(await paths(root, "SELECT path FROM './' ORDER BY path"), ["a.txt"]);
    assert.deepEqual(await paths(root, "SELECT path, size FROM './'"), ["a.txt"]);
    for (const name of device ? ["pipe", "sock", "dev"] : ["pipe", "sock"]) {
      assert.equal(
        await emptyBecause(root, `SELECT path FROM './${name}'`),
        `dirq: path-table './${name}' is empty: ${name} ${NOT_A_FILE}\n`,
      );
    }
    const hooked = await runDirq(["SELECT * FROM './pipe'", "--on-file", "cat {path}"], {
      cwd: root,
    });
    assert.equal(hooked.code, 0, hooked.stderr);
    assert.equal(hooked.stdout, "[]\n");
  });
});

describe("names that are not valid UTF-8", () => {
  const root = makeTree({ "ok.txt": "ok" });
  after(() => removeTree(root));
  const raw = Buffer.concat([Buffer.from(root), Buffer.from("/bad-\xff-name", "latin1")]);
  writeFileSync(raw, "12345");

  it("are one row with U+FFFD, the same for every query, stat'ed through the raw name", async () => {
    const all = parseRows(await runOk(root, ["SELECT path, size FROM './' ORDER BY path"]));
    assert.deepEqual(all, [
      { path: "bad-\uFFFD-name", size: 5 },
      { path: "ok.txt", size: 2 },
    ]);
    const [count] = parseRows(await runOk(root, ["SELECT count(*) AS n FROM './'"]));
    assert.deepEqual(count, { n: 2 });
  });

  it("are skipped by a parsed table with a clear message (exit 23)", async () => {
    const result = await runDirq(["SELECT * FROM './'", "--on-file", "echo []"], { cwd: root });
    assert.equal(result.code, 23, result.stderr);
    assert.match(result.stderr, /^dirq: skipped bad-\uFFFD-name: its name is not valid UTF-8/m);
  });
});

describe("unreadable directories named as path-tables", () => {
  const root = makeTree({ "closed/a.txt": "a", "open/b.txt": "b" });
  after(() => {
    chmodSync(join(root, "closed"), 0o755);
    removeTree(root);
  });
  chmodSync(join(root, "closed"), 0);
  chmodSync(root, 0o755);
  // As root every directory is readable: run dirq as an unprivileged user when we are root.
  const asRoot = process.getuid?.() === 0;
  const setpriv = spawnSync("setpriv", ["--version"]).status === 0;
  const skip = asRoot && !setpriv ? "needs a non-root user (setpriv)" : false;

  function runUnprivileged(
    sql: string,
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const prefix = asRoot
      ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", process.execPath]
      : [process.execPath];
    const [command, ...args] = prefix as [string, ...string[]];
    return new Promise((resolve) => {
      const child = spawn(command, [...args, DIRQ_BIN, sql], {
        cwd: root,
        env: { ...process.env, DIRQ_PROGRESS: "never" },
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.on("close", (code) => resolve({ code, stdout, stderr }));
    });
  }

  for (const name of ["./", "./closed", "./closed/", "./closed/**", "./closed/*.txt"]) {
    it(`'${name}': a partial-scan report, not an internal error`, { skip }, async () => {
      const result = await runUnprivileged(`SELECT path FROM '${name}'`);
      assertNoStackTrace(result.stderr);
      assert.equal(result.code, 23, result.stderr);
      assert.match(result.stderr, /^dirq: skipped closed: /m);
      const rows = parseRows(result.stdout);
      assert.deepEqual(pathsOf(rows), name === "./" ? ["open/b.txt"] : []);
    });
  }
});

describe("user-caused failures are one dirq: line", () => {
  const root = makeTree({ "a.txt": "a", "docs/x.md": "x" });
  after(() => removeTree(root));

  for (const sql of ["SELECT ?", "SELECT ?1", "SELECT :name", "SELECT @name", "SELECT $name"]) {
    it(`bound parameters (${sql}) are a user error`, async () => {
      assertUserError(await runDirq([sql], { cwd: root }), /bound parameter/);
    });
  }

  it("stdout on a full disk (> /dev/full): one line, exit 1, no stack trace", () => {
    const result = spawnSync(
      "sh",
      ["-c", `"${process.execPath}" "${DIRQ_BIN}" "SELECT path FROM './'" > /dev/full`],
      { cwd: root, encoding: "utf8" },
    );
    assert.equal(result.status, 1);
    assert.match(result.stderr, /^dirq: cannot write the output: .*ENOSPC.*\n$/);
    assertNoStackTrace(result.stderr);
  });

  it("a hook printing thousands of keys: that file is skipped with a clear message", async () => {
    const tree = makeTree({ "a.json": '[{"k1":1}]', "wide.json": "" });
    try {
      const wide: Record<string, number> = {};
      for (let i = 0; i < 3000; i++) wide[`k${i}`] = i;
      writeFileSync(join(tree, "wide.json"), JSON.stringify([wide]));
      const result = await runDirq(["SELECT k1 FROM './*.json'", "--on-file", "cat {path}"], {
        cwd: tree,
      });
      assert.equal(result.code, 23, result.stderr);
      assert.deepEqual(parseRows(result.stdout), [{ k1: 1 }]);
      assert.match(
        result.stderr,
        /^dirq: skipped wide\.json: hook printed 2999 new keys, more than a table's 1998 columns/m,
      );
      assert.equal(result.stderr.split("\n").filter(Boolean).length, 1);
    } finally {
      removeTree(tree);
    }
  });

  it("a bare name that exists gets a hint to write './docs'", async () => {
    assertUserError(await runDirq(["SELECT * FROM 'docs'"], { cwd: root }), /FROM '\.\/docs'/);
    assertUserError(
      await runDirq(["SELECT * FROM nosuch"], { cwd: root }),
      /^no such table: nosuch$/,
    );
  });

  it("more than 64 path-tables: an error about the limit, naming no file", async () => {
    const sql = Array.from(
      { length: 70 },
      (_, i) => `SELECT ${i} FROM './a.txt' AS t${i}, './docs/x.md' AS u${i}`,
    )
      .map((part, i) => part.replace("'./a.txt'", `'./${"./".repeat(i)}a.txt'`))
      .join(" UNION ALL ");
    const message = assertUserError(await runDirq([sql], { cwd: root }), /at most 64 path-tables/);
    assert.doesNotMatch(message, /a\.txt|x\.md/);
  });
});

describe("output is all or nothing", () => {
  const root = makeTree({ "a.txt": "a" });
  after(() => removeTree(root));
  const many = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)";
  const endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)";

  it("malformed JSON in json() after rows began: nothing on stdout, exit 1", async () => {
    const result = await runDirq(
      [`${many} SELECT CASE WHEN x < 15000 THEN json('[1]') ELSE json('{bad') END AS v FROM c`],
      { cwd: root },
    );
    assertUserError(result, /malformed JSON/);
  });

  it("past the spill threshold the rows go through a temp file that is removed afterwards", async () => {
    const before = readdirSync(tmpdir()).filter((name) => name.startsWith("dirq-output-")).length;
    const env = { DIRQ_SPILL_BYTES: "1000" };
    const ok = await runDirq([`${many} SELECT x FROM c`], { cwd: root, env });
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal((JSON.parse(ok.stdout) as unknown[]).length, 20000);
    const failed = await runDirq(
      [`${many} SELECT CASE WHEN x < 19000 THEN x ELSE abs(-9223372036854775807 - 1) END FROM c`],
      { cwd: root, env },
    );
    assertUserError(failed, /integer overflow/);
    const afterwards = readdirSync(tmpdir()).filter((name) =>
      name.startsWith("dirq-output-"),
    ).length;
    assert.equal(afterwards, before);
  });

  it(
    "kill -9 while rows spill to the temp file leaves nothing in the temporary directory",
    {
      skip: process.platform !== "linux" && "reads /proc",
    },
    async () => {
      const temporary = mkdtempSync(join(tmpdir(), "dirq-spill-tmp-"));
      const child = spawn(process.execPath, [DIRQ_BIN, `${endless} SELECT x FROM c`], {
        cwd: root,
        env: {
          ...process.env,
          DIRQ_PROGRESS: "never",
          DIRQ_SPILL_BYTES: "1000",
          TMPDIR: temporary,
        },
        stdio: ["ignore", "ignore", "ignore"],
      });
      const closed = new Promise((resolve) => child.once("close", resolve));
      try {
        // The spill file is open, and its name and folder are gone, before the kill: the
        // microseconds between making the file and removing its name are not what this is
        // about (a loaded machine can stretch them to where a poll lands).
        const spilling = () => {
          try {
            const open = readdirSync(`/proc/${child.pid}/fd`).some((fd) => {
              const target = readlinkSync(`/proc/${child.pid}/fd/${fd}`);
              return target.startsWith(temporary) && target.endsWith(" (deleted)");
            });
            return open && readdirSync(temporary).length === 0;
          } catch {
            return false;
          }
        };
        await eventually(spilling, "the rows spilling to a temp file", 60_000);
        child.kill("SIGKILL");
        await closed;
        assert.deepEqual(readdirSync(temporary), []);
      } finally {
        child.kill("SIGKILL");
        rmSync(temporary, { recursive: true, force: true });
      }
    },
  );
});

describe("SQL analysis: every place a table name stands", () => {
  const root = makeTree({ "Case.md": "upper", "case.md": "lo", "x.json": '[{"a":1}]' });
  after(() => removeTree(root));
  writeFileSync(join(root, "new\nline.txt"), "nl");

  it("case variants in a comma join, CTEs and pragma arguments stay apart", async () => {
    const comma = parseRows(
      await runOk(root, ["SELECT a.size AS A, b.size AS b FROM './Case.md' a, './case.md' b"]),
    );
    assert.deepEqual(comma, [{ A: 5, b: 2 }]);
    const cte = parseRows(
      await runOk(root, [
        "WITH u AS (SELECT size FROM './Case.md'), l AS (SELECT size FROM './case.md') SELECT u.size AS U, l.size AS L FROM u, l",
      ]),
    );
    assert.deepEqual(cte, [{ U: 5, L: 2 }]);
    const pragma = parseRows(
      await runOk(root, [
        "SELECT (SELECT size FROM './Case.md') AS s, (SELECT count(*) FROM pragma_table_info('./case.md')) AS n",
      ]),
    );
    assert.deepEqual(pragma, [{ s: 5, n: 7 }]);
  });

  it("a path-table name with a newline can be queried", async () => {
    assert.deepEqual(await paths(root, "SELECT path FROM './new\nline.txt'"), ["new\nline.txt"]);
  });

  it("SELECT _dirq_file_path, * keeps the SELECT order", async () => {
    const out = await runOk(root, [
      "SELECT _dirq_file_path, * FROM './x.json'",
      "--on-file",
      "cat {path}",
    ]);
    assert.equal(out, '[{"_dirq_file_path":"x.json","a":1}]\n');
    const last = await runOk(root, [
      "SELECT *, _dirq_file_path FROM './x.json'",
      "--on-file",
      "cat {path}",
    ]);
    assert.equal(last, '[{"a":1,"_dirq_file_path":"x.json"}]\n');
  });

  it("an internal table cannot be described through a table-valued pragma's hidden argument", async () => {
    for (const sql of [
      "SELECT * FROM pragma_table_info WHERE arg = '_dirq'||'_meta'",
      "SELECT * FROM './x.json' JOIN pragma_table_xinfo p ON p.arg = '_dirq' || '_x'",
    ]) {
      assertUserError(await runDirq([sql], { cwd: root }), /needs its table name in parentheses/);
    }
  });
});

describe("hooks and diagnostics", () => {
  const root = makeTree({ "a{root}b.txt": "x" });
  after(() => removeTree(root));

  it("{root} inside a file's name is not expanded: substitution is one pass", async () => {
    const out = await runOk(root, [
      "SELECT * FROM './*.txt'",
      "--on-file",
      `node -e "console.log(JSON.stringify([{p: process.argv[1]}]))" {path}`,
    ]);
    assert.deepEqual(parseRows(out), [{ p: join(root, "a{root}b.txt") }]);
  });

  it("control characters from file names and hook stderr are escaped, one line per file", async () => {
    const tree = makeTree({});
    try {
      writeFileSync(join(tree, "evil\u001b[31m\nname.txt"), "x");
      const result = await runDirq(
        ["SELECT * FROM './'", "--on-file", `sh -c 'printf "line1\\nline2\\033[0m" >&2; exit 3'`],
        { cwd: tree },
      );
      assert.equal(result.code, 23, result.stderr);
      const lines = result.stderr.split("\n").filter(Boolean);
      assert.equal(lines.length, 1, result.stderr);
      assert.ok(lines[0]?.startsWith("dirq: skipped evil\\u{1b}[31m\\nname.txt: "), lines[0]);
      assert.match(lines[0] ?? "", /line1\\nline2\\u\{1b\}\[0m/);
      assert.doesNotMatch(result.stderr, /\u001b/);
    } finally {
      removeTree(tree);
    }
  });
});

describe("config checks name the file and the key", () => {
  const root = makeTree({
    "a.json": '{"x":1}',
    "drafts/d.json": '{"x":2}',
    "attach.toml": `[[table]]\nname = "t"\nglob = "*.json"\non-file = "cat {path}"\nddl = "ATTACH 'x.db' AS x"\n`,
    "table.toml": `[[table]]\nname = "t"\nglob = "*.json"\non-file = "cat {path}"\nddl = "CREATE TABLE side(a)"\n`,
    "vtab.toml": `[[table]]\nname = "t"\nglob = "*.json"\non-file = "cat {path}"\nddl = "CREATE VIRTUAL TABLE v USING csv(filename='x')"\n`,
    "glob.toml": `[[table]]\nname = "t"\nglob = "../*.json"\non-file = "cat {path}"\n`,
    "hook.toml": `[[table]]\nname = "t"\nglob = "*.json"\non-file = "cat 'unclosed {path}"\n`,
    "ignore.toml": `[dirq]\nignore = ["./drafts/**"]\n`,
  });
  after(() => removeTree(root));

  for (const [file, pattern] of [
    ["attach.toml", /^attach\.toml: table\[0\]\.ddl: 'ATTACH/],
    ["table.toml", /^table\.toml: table\[0\]\.ddl: 'CREATE TABLE side/],
    ["vtab.toml", /^vtab\.toml: table\[0\]\.ddl: virtual table module 'csv'/],
    ["glob.toml", /^glob\.toml: table\[0\]\.glob: .*outside the root/],
    ["hook.toml", /^hook\.toml: table\[0\]\.on-file: .*never closed/],
  ] as const) {
    it(`${file}: ${pattern}`, async () => {
      assertUserError(await runDirq(["SELECT 1", "-c", file], { cwd: root }), pattern);
      assert.ok(!existsSync(join(root, "x.db")), "nothing was created");
    });
  }

  it("config ignore with a leading ./ matches", async () => {
    assert.deepEqual(await paths(root, "SELECT path FROM './**/*.json'", "-c", "ignore.toml"), [
      "a.json",
    ]);
  });
});

describe("ignore rules: case, parent folders", () => {
  const repo = makeTree({
    ".gitignore": "build/\n*.LOG\n",
    "pkg/Build/keep.js": "",
    "pkg/build/out.js": "",
    "pkg/a.log": "",
    "pkg/b.LOG": "",
    "pkg/src/main.ts": "",
  });
  mkdirSync(join(repo, ".git"));
  after(() => removeTree(repo));

  it("in a subfolder of a repository, the repository's .gitignore applies, with case", async () => {
    assert.deepEqual(await paths(join(repo, "pkg"), "SELECT path FROM './' ORDER BY path"), [
      "Build/keep.js",
      "a.log",
      "src/main.ts",
    ]);
  });
});

describe("command line", () => {
  const root = makeTree({ "a.txt": "a" });
  after(() => removeTree(root));

  it("SQL that starts with a -- comment, and after a bare --", async () => {
    for (const args of [
      ["-- the files\nSELECT path FROM './'"],
      ["query", "-- the files\nSELECT path FROM './'", "--format", "json"],
      ["--", "SELECT path FROM './'"],
      ["query", "--", "-- c\nSELECT path FROM './'"],
    ]) {
      assert.deepEqual(
        pathsOf(parseRows(await runOk(root, args))),
        ["a.txt"],
        JSON.stringify(args),
      );
    }
  });

  it("--help after query and init prints that command's usage", async () => {
    assert.match(await runOk(root, ["query", "--help"]), /^Usage: dirq query/);
    assert.match(await runOk(root, ["init", "--help"]), /^Usage: dirq init/);
    assert.ok(!existsSync(join(root, ".dirq.toml")));
  });
});

describe("dirq init", () => {
  it("without data files writes the spec's hook table, and the config loads", async () => {
    const root = makeTree({ "a.txt": "" });
    try {
      await runOk(root, ["init"]);
      const text = readFileSync(join(root, ".dirq.toml"), "utf8");
      assert.match(text, /^glob = "\*\*\/\*\.jsonl"$/m);
      assert.match(text, /^schema = \{/m);
      assert.match(text, /^on-file = '''node -e /m);
      assert.deepEqual(
        parseRows(await runOk(root, ["SELECT count(*) AS n FROM records", "-c", ".dirq.toml"])),
        [{ n: 0 }],
      );
    } finally {
      removeTree(root);
    }
  });

  it("keys differing only in case give one column: the config loads", async () => {
    const root = makeTree({ "a.json": '{"Title":"x","title":"y","n":1}' });
    try {
      await runOk(root, ["init"]);
      assert.match(
        readFileSync(join(root, ".dirq.toml"), "utf8"),
        /^schema = \{ Title = "TEXT", n = "INTEGER" \}$/m,
      );
      await runOk(root, ["SELECT * FROM a", "-c", ".dirq.toml"]);
    } finally {
      removeTree(root);
    }
  });

  it("with --root, the try: line runs in that root", async () => {
    const root = makeTree({ "proj/a.json": '{"a":1}' });
    try {
      const out = await runOk(root, ["init", "--root", "proj"]);
      assert.match(
        out,
        /^try: cd .*proj && dirq query "SELECT \* FROM a LIMIT 5" -c \.dirq\.toml$/m,
      );
    } finally {
      removeTree(root);
    }
  });
});
