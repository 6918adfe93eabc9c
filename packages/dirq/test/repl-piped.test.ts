import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import {
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { assertUserError, DIRQ_BIN, makeTree, removeTree, runDirq } from "./helpers.js";
import { eventually } from "./server-support.js";
import { descendants } from "./terminal.js";

const HOOK = `
import { readFileSync } from "node:fs";
const text = readFileSync(process.argv[2], "utf8");
if (text.startsWith("bad")) { console.error("cannot parse " + process.argv[2]); process.exit(3); }
console.log(JSON.stringify([{ word: text.trim(), length: text.trim().length }]));
`;

describe("REPL with piped input", () => {
  let root: string;

  before(() => {
    root = makeTree({
      "a.txt": "one",
      "b.md": "three",
      "notes/c.md": "seven",
      "notes/d.md": "bad file",
      "hook.mjs": HOOK,
    });
  });

  after(() => removeTree(root));

  it("sqlite3 and psql commands get a one-line hint naming the SQL; help prints a usage", async () => {
    const script = [
      ".tables",
      ".schema './'",
      "\\d",
      "\\d notes",
      ".mode box",
      ".quit",
      "\\q",
      "help",
      "SELECT 1 AS one",
      "",
    ].join("\n");
    const result = await runDirq([], { cwd: root, input: script });
    assert.equal(result.code, 0, result.stderr);
    assert.ok(result.stdout.startsWith("Statements are SQL (SQLite)"), result.stdout);
    assert.ok(result.stdout.endsWith('[{"one":1}]\n'), result.stdout);
    assert.deepEqual(result.stderr.trimEnd().split("\n"), [
      "dirq: .tables: there are no dot-commands; tables are listed in SQL: SELECT name FROM sqlite_master WHERE type IN ('table', 'view');",
      "dirq: .schema: there are no dot-commands; ask in SQL: SELECT sql FROM sqlite_master WHERE name = './'; or PRAGMA table_info('./');",
      "dirq: \\d: there are no backslash commands; tables are listed in SQL: SELECT name FROM sqlite_master WHERE type IN ('table', 'view');",
      "dirq: \\d: there are no backslash commands; ask in SQL: PRAGMA table_info('notes');",
      "dirq: .mode: there are no dot-commands; ask in SQL (SELECT name, sql FROM sqlite_master;), type help for more",
      "dirq: .quit: there are no dot-commands; leave with exit, quit or Ctrl-D",
      "dirq: \\q: there are no backslash commands; leave with exit, quit or Ctrl-D",
    ]);
  });

  it("runs one statement per line, prints each result in turn, exit 0 despite failures", async () => {
    const script = [
      "SELECT path FROM './*.md'",
      "",
      "-- a comment line is skipped",
      "SELECT nope FROM './'",
      "SELECT count(*) AS n FROM './notes';",
      "DELETE FROM './'",
      "SELECT 'a;b' AS s, NULL AS z",
      "",
    ].join("\n");
    const result = await runDirq([], { cwd: root, input: script });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, '[{"path":"b.md"}]\n[{"n":2}]\n[{"s":"a;b","z":null}]\n');
    const lines = result.stderr.trimEnd().split("\n");
    assert.equal(lines.length, 2, result.stderr);
    assert.equal(lines[0], "dirq: no such column: nope");
    assert.match(lines[1] ?? "", /^dirq: .*read-only/);
  });

  it("exit and quit (any case) end the session; nothing after them runs", async () => {
    for (const word of ["exit", "QUIT", "Exit;"]) {
      const result = await runDirq([], { cwd: root, input: `SELECT 1 AS x\n${word}\nSELECT 2\n` });
      assert.equal(result.code, 0);
      assert.equal(result.stdout, '[{"x":1}]\n', word);
      assert.equal(result.stderr, "");
    }
  });

  it("empty input: no banner, nothing printed, exit 0", async () => {
    const result = await runDirq([], { cwd: root, input: "" });
    assert.deepEqual(result, { code: 0, stdout: "", stderr: "" });
  });

  it("--format table applies (and auto is JSON when stdout is not a terminal)", async () => {
    const result = await runDirq(["--format", "table"], {
      cwd: root,
      input: "SELECT path, size FROM './' WHERE ext = 'txt'\n",
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, "path   size\n-----  ----\na.txt     3\n(1 row)\n");
  });

  it("--on-file parses every path-table; a failing file is named and the session goes on", async () => {
    const result = await runDirq(["--on-file", `${process.execPath} hook.mjs {path}`], {
      cwd: root,
      input: "SELECT word, length FROM './notes' ORDER BY word\nSELECT 5 AS five\n",
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, '[{"word":"seven","length":5}]\n[{"five":5}]\n');
    assert.match(
      result.stderr,
      /^dirq: skipped notes\/d\.md: hook exited with code 3: cannot parse/,
    );
  });

  it("--parse: each statement answers as a one-shot run of it does, whichever columns came before", async () => {
    const tree = makeTree({
      "data/d.csv": "id,city,amount,note\n1,Oslo,10,a\n2,Rome,20,b\n3,Oslo,30,\n",
      "data/e.jsonl": '{"a":1,"b":"x"}\n{"a":2,"b":"y","c":true}\n{"a":3,"d":[1]}\n',
    });
    // Each one names a column the ones before did not, reads them all, or asks the schema.
    const statements = [
      "SELECT sum(amount) AS s FROM './data/d.csv'",
      "SELECT city, count(*) AS n FROM './data/d.csv' WHERE amount > 15 GROUP BY city",
      "SELECT a FROM './data/e.jsonl' ORDER BY a",
      "SELECT b, c FROM './data/e.jsonl' WHERE a > 1 ORDER BY a",
      "SELECT d FROM './data/e.jsonl' WHERE d IS NOT NULL",
      "SELECT * FROM './data/d.csv' WHERE id = 2",
      "SELECT note, city FROM './data/d.csv' ORDER BY id",
      "SELECT name FROM pragma_table_info('./data/e.jsonl')",
    ];
    try {
      const repl = await runDirq(["--parse", "auto"], {
        cwd: tree,
        input: statements.map((sql) => `${sql};\n`).join(""),
      });
      assert.equal(repl.code, 0, repl.stderr);
      const oneShot: string[] = [];
      for (const sql of statements) {
        const result = await runDirq([sql, "--parse", "auto"], { cwd: tree });
        assert.equal(result.code, 0, result.stderr);
        oneShot.push(result.stdout);
      }
      assert.equal(repl.stdout, oneShot.join(""));
      assert.ok(
        repl.stdout.includes('[{"b":"y","c":1},{"b":null,"c":null}]\n[{"d":"[1]"}]\n'),
        repl.stdout,
      );
    } finally {
      removeTree(tree);
    }
  });

  it("--no-ignore applies", async () => {
    writeFileSync(join(root, ".gitignore"), "a.txt\n");
    try {
      const sql = "SELECT count(*) AS n FROM './' WHERE path = 'a.txt'\n";
      const ignored = await runDirq([], { cwd: root, input: sql });
      const all = await runDirq(["--no-ignore"], { cwd: root, input: sql });
      assert.equal(ignored.stdout, '[{"n":0}]\n');
      assert.equal(all.stdout, '[{"n":1}]\n');
    } finally {
      writeFileSync(join(root, ".gitignore"), "");
    }
  });

  it("config tables are built before the first statement; skipped files are named once", async () => {
    const config = join(root, "repl.toml");
    writeFileSync(
      config,
      `[[table]]\nname = "notes"\nglob = "notes/*.md"\non-file = ${JSON.stringify(`${process.execPath} hook.mjs {path}`)}\n`,
    );
    const result = await runDirq(["-c", config], {
      cwd: root,
      input: "SELECT word FROM notes\nSELECT count(*) AS n FROM notes\n",
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, '[{"word":"seven"}]\n[{"n":1}]\n');
    const skipped = result.stderr.split("\n").filter((line) => line.startsWith("dirq: skipped"));
    assert.equal(skipped.length, 1, result.stderr);
    assert.match(skipped[0] ?? "", /notes\/d\.md/);
  });

  it("a config that cannot load: reported once, exit 1, nothing executed", async () => {
    const config = join(root, "broken.toml");
    writeFileSync(config, "[[table]\nname = \n");
    const result = await runDirq(["-c", config], { cwd: root, input: "SELECT 1\n" });
    assertUserError(result, "broken.toml");
    assert.equal(result.stderr.split("\n").filter(Boolean).length, 1, result.stderr);
  });

  it("a missing config and an --on-file that cannot start: exit 1, nothing executed", async () => {
    assertUserError(
      await runDirq(["-c", "missing.toml"], { cwd: root, input: "SELECT 1\n" }),
      "missing.toml",
    );
    assertUserError(
      await runDirq(["--on-file", "no-such-program-dirq {path}"], {
        cwd: root,
        input: "SELECT 1\n",
      }),
      "program 'no-such-program-dirq' not found",
    );
    assertUserError(
      await runDirq(["--on-file", "./hook.mjs {path}"], { cwd: root, input: "SELECT 1\n" }),
      "is not executable",
    );
  });

  it("stdin that cannot be read (a directory): exit 1, nothing executed", async () => {
    const directory = openSync(root, "r");
    try {
      const result = spawnSync(process.execPath, [DIRQ_BIN], {
        cwd: root,
        stdio: [directory, "pipe", "pipe"],
        encoding: "utf8",
      });
      assertUserError(
        { code: result.status, stdout: result.stdout, stderr: result.stderr },
        "stdin is a directory",
      );
    } finally {
      closeSync(directory);
    }
  });

  it("dirq repl is the same session spelled out; --help prints its own usage", async () => {
    const result = await runDirq(["repl", "--format", "json"], {
      cwd: root,
      input: "SELECT 1 AS x\n",
    });
    assert.deepEqual(result, { code: 0, stdout: '[{"x":1}]\n', stderr: "" });
    const help = await runDirq(["repl", "--help"], { cwd: root });
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: dirq repl \[options\] +\(or: dirq \[options\]\)/);
  });

  it("options before a subcommand stay an error; a repeated option is refused", async () => {
    assertUserError(
      await runDirq(["-c", "x.toml", "repl"], { cwd: root }),
      "-c must come after the subcommand",
    );
    assertUserError(
      await runDirq(["--persist", "--persist=x.db"], { cwd: root }),
      "--persist was given more than once",
    );
    assertUserError(
      await runDirq(["--on-file", "a", "--on-file", "b"], { cwd: root }),
      "more than once",
    );
  });

  it("the watcher keeps the index current between statements", async () => {
    const child = spawn(process.execPath, [DIRQ_BIN], {
      cwd: root,
      env: { ...process.env, DIRQ_PROGRESS: "never" },
    });
    let stdout = "";
    const answers: string[] = [];
    let waiting: ((line: string) => void) | null = null;
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      let newline: number;
      while ((newline = stdout.indexOf("\n")) >= 0) {
        const line = stdout.slice(0, newline);
        stdout = stdout.slice(newline + 1);
        if (waiting) {
          const resolve = waiting;
          waiting = null;
          resolve(line);
        } else answers.push(line);
      }
    });
    const ask = (sql: string) =>
      new Promise<string>((resolve) => {
        waiting = resolve;
        child.stdin.write(`${sql}\n`);
      });
    const count = "SELECT count(*) AS n FROM './' WHERE ext = 'log'";
    try {
      assert.equal(await ask(count), '[{"n":0}]');
      writeFileSync(join(root, "new.log"), "x");
      // No timing assumption: ask until the change shows (the test runner's timeout bounds it).
      let answer = await ask(count);
      while (answer !== '[{"n":1}]') {
        assert.equal(answer, '[{"n":0}]');
        await new Promise((resolve) => setTimeout(resolve, 50));
        answer = await ask(count);
      }
      child.stdin.end();
      const code = await new Promise((resolve) => child.on("close", resolve));
      assert.equal(code, 0);
    } finally {
      child.kill();
    }
  });

  it("a table filled without stats gets them when a later statement reads them", async () => {
    const child = spawn(process.execPath, [DIRQ_BIN], {
      cwd: root,
      env: { ...process.env, DIRQ_PROGRESS: "never" },
    });
    const lines: string[] = [];
    const waiters: ((line: string) => void)[] = [];
    let pending = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      pending += chunk;
      let newline: number;
      while ((newline = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        const waiter = waiters.shift();
        if (waiter) waiter(line);
        else lines.push(line);
      }
    });
    const ask = (sql: string) =>
      new Promise<string>((resolve) => {
        waiters.push(resolve);
        child.stdin.write(`${sql}\n`);
      });
    /** What `SELECT sum(size)` must answer: the sizes of the files on disk now. */
    const sizes = () =>
      readdirSync(root, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .reduce((sum, entry) => sum + statSync(join(entry.parentPath, entry.name)).size, 0);
    const askUntil = async (sql: string, want: string) => {
      let answer = await ask(sql);
      while (answer !== want) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        answer = await ask(sql);
      }
    };
    try {
      const before = readdirSync(root, { recursive: true, withFileTypes: true }).filter((entry) =>
        entry.isFile(),
      ).length;
      // Reads no stat column: the table is filled from the listings alone.
      assert.equal(await ask("SELECT count(*) AS n FROM './'"), `[{"n":${before}}]`);
      writeFileSync(join(root, "grown.txt"), "0123456789");
      await askUntil("SELECT count(*) AS n FROM './'", `[{"n":${before + 1}}]`);
      // count(*) read no column, so the rows had no paths: a statement that reads one gets them.
      assert.equal(
        await ask("SELECT count(*) AS n FROM './' WHERE path = 'grown.txt'"),
        `[{"n":1}]`,
      );
      // Now a statement reads `size`: every row has it, the watched file's too.
      assert.equal(await ask("SELECT sum(size) AS s FROM './'"), `[{"s":${sizes()}}]`);
      writeFileSync(join(root, "grown.txt"), "0123456789".repeat(5));
      await askUntil("SELECT sum(size) AS s FROM './'", `[{"s":${sizes()}}]`);
      child.stdin.end();
      assert.equal(await new Promise((resolve) => child.on("close", resolve)), 0);
    } finally {
      child.kill();
      rmSync(join(root, "grown.txt"), { force: true });
    }
  });

  it("kill -9 of its whole process group leaves no temporary index behind", async () => {
    const temporary = mkdtempSync(join(tmpdir(), "dirq-repl-tmp-"));
    const child = spawn(process.execPath, [DIRQ_BIN], {
      cwd: root,
      env: { ...process.env, DIRQ_PROGRESS: "never", TMPDIR: temporary },
      detached: true,
    });
    const closed = new Promise((resolve) => child.once("close", resolve));
    const indexes = () => readdirSync(temporary).filter((name) => name.startsWith("dirq-repl-"));
    try {
      const answered = new Promise((resolve) => child.stdout.once("data", resolve));
      child.stdin.write("SELECT count(*) FROM './'\n");
      await answered;
      assert.equal(indexes().length, 1);
      process.kill(-(child.pid as number), "SIGKILL");
      await closed;
      // The reaper runs in a process group of its own and removes the index.
      await eventually(() => indexes().length === 0, "the reaper removing the index", 10_000);
    } finally {
      child.kill("SIGKILL");
      rmSync(temporary, { recursive: true, force: true });
    }
  });

  it("Ctrl-C (SIGINT) stops the running statement and the script", async () => {
    const child = spawn(process.execPath, [DIRQ_BIN], {
      cwd: root,
      env: { ...process.env, DIRQ_PROGRESS: "never" },
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    try {
      child.stdin.write("SELECT 1 AS one\n");
      while (!stdout.includes("\n")) await new Promise((resolve) => setTimeout(resolve, 50));
      child.stdin.write(
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n\nSELECT 2\n",
      );
      // Wait until a query process is busy (Linux /proc; elsewhere, signal at once).
      const running = () =>
        (descendants(child.pid as number) ?? [{ command: "query-process", state: "R" }]).some(
          ({ command, state }) => command.includes("query-process") && state === "R",
        );
      while (!running()) await new Promise((resolve) => setTimeout(resolve, 50));
      child.kill("SIGINT");
      assert.equal(await closed, 130);
      assert.equal(stdout, '[{"one":1}]\n');
      assert.match(stderr, /dirq: interrupted: the statement was stopped/);
    } finally {
      child.kill("SIGKILL");
    }
  });
});

describe("REPL with extensions and worker-backed functions", () => {
  let root: string;
  const vec0 = createRequire(import.meta.url).resolve("sqlite-vec-linux-x64/vec0.so");

  before(() => {
    root = makeTree({
      "a.txt": "one",
      "upper.cjs": `require("node:readline")
  .createInterface({ input: process.stdin })
  .on("line", (line) => {
    const { id, args } = JSON.parse(line);
    process.stdout.write(JSON.stringify({ id, result: String(args[0]).toUpperCase() }) + "\\n");
  });
`,
      "dirq.toml": `[[dirq.function]]\nname = "up"\ncommand = "node upper.cjs"\n`,
    });
  });

  after(() => removeTree(root));

  it("loads --extension into every statement's connection and calls config worker functions", async () => {
    const script = "SELECT vec_length('[1,2,3]') AS n\nSELECT up(path) AS p FROM './*.txt'\n";
    const result = await runDirq(["-c", "dirq.toml", "--extension", vec0], {
      cwd: root,
      input: script,
    });
    assert.equal(result.stderr, "");
    assert.equal(result.code, 0);
    assert.equal(result.stdout, '[{"n":3}]\n[{"p":"A.TXT"}]\n');
  });
});
