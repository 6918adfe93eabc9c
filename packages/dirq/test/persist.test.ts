import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { openSqlite } from "../src/indexer/database.js";
import {
  DIRQ_BIN,
  makeTree,
  removeTree,
  type RunResult,
  runDirq,
  shellHook,
  snapshotTree,
} from "./helpers.js";
import { eventually, queryRows, startServer } from "./server-support.js";

/* ------------------------------------------------------------------------------------------ */
/* A config table whose hook logs every file it parses, outside the root, to count re-parses.  */
/* ------------------------------------------------------------------------------------------ */

const CONFIG = `[[table]]
name = "posts"
glob = "posts/*.json"
on-file = "sh hook.sh {path}"
`;

const workspaces: string[] = [];
after(() => {
  for (const dir of workspaces) removeTree(dir);
});

interface Workspace {
  root: string;
  log: string;
  /** Paths the hook parsed since the last call. */
  parsed(): string[];
  run(args: readonly string[], env?: Record<string, string>): Promise<RunResult>;
  rows(sql: string, extra?: readonly string[]): Promise<Record<string, unknown>[]>;
}

function post(n: number): string {
  return `${JSON.stringify({ n, title: `post ${n}` })}\n`;
}

function workspace(files = 6): Workspace {
  const tree: Record<string, string> = { "hook.sh": shellHook("logging.sh"), "dirq.toml": CONFIG };
  for (let n = 1; n <= files; n++) tree[`posts/p${n}.json`] = post(n);
  const root = makeTree(tree);
  const outside = mkdtempSync(join(tmpdir(), "dirq-persist-log-"));
  workspaces.push(root, outside);
  const log = join(outside, "parsed.log");
  writeFileSync(log, "");
  let seen = 0;
  const run = (args: readonly string[], env: Record<string, string> = {}) =>
    runDirq(args, { cwd: root, env: { PARSE_LOG: log, ...env } });
  return {
    root,
    log,
    parsed() {
      const lines = readFileSync(log, "utf8").split("\n").filter(Boolean);
      const fresh = lines.slice(seen);
      seen = lines.length;
      return fresh.map((line) => line.replace(`${root}/`, "")).sort();
    },
    run,
    async rows(sql, extra = ["-c", "dirq.toml", "--persist"]) {
      const result = await run(["query", sql, "--format", "json", ...extra]);
      assert.equal(result.code, 0, result.stderr);
      return JSON.parse(result.stdout) as Record<string, unknown>[];
    },
  };
}

const ALL_POSTS = "SELECT _dirq_file_path AS file, n, title FROM posts ORDER BY file";

/** Runs SQL on a database file with the SQLite library dirq itself uses. */
function runSql(path: string, sql: string): void {
  const db = openSqlite(path);
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
}

/** Sets a file's mtime to exactly `ns` nanoseconds since the epoch (GNU touch keeps them all). */
function setMtimeNs(path: string, ns: bigint): void {
  const seconds = ns / 1_000_000_000n;
  const fraction = (ns % 1_000_000_000n).toString().padStart(9, "0");
  execFileSync("touch", ["-m", "-d", `@${seconds}.${fraction}`, path]);
}

describe("--persist: a restart re-parses only what changed", () => {
  it("parses every file once, then nothing until a file changes", async () => {
    const ws = workspace();
    const cold = await ws.rows(ALL_POSTS);
    assert.equal(cold.length, 6);
    assert.equal(ws.parsed().length, 6);
    assert.ok(existsSync(join(ws.root, ".dirq", "cache.db")), "bare --persist uses .dirq/cache.db");
    assert.equal(readFileSync(join(ws.root, ".dirq", ".gitignore"), "utf8").includes("*"), true);
    const warm = await ws.rows(ALL_POSTS);
    assert.deepEqual(warm, cold);
    assert.deepEqual(ws.parsed(), [], "a run with no change parses nothing");
  });

  it("modify, rename, delete, add: each file parsed once, rows as a fresh scan has them", async () => {
    const ws = workspace();
    await ws.rows(ALL_POSTS);
    ws.parsed();
    writeFileSync(join(ws.root, "posts/p1.json"), post(100));
    assert.deepEqual((await ws.rows(ALL_POSTS)).length, 6);
    assert.deepEqual(ws.parsed(), ["posts/p1.json"]);

    renameSync(join(ws.root, "posts/p2.json"), join(ws.root, "posts/renamed.json"));
    await ws.rows(ALL_POSTS);
    assert.deepEqual(ws.parsed(), ["posts/renamed.json"]);

    unlinkSync(join(ws.root, "posts/p3.json"));
    writeFileSync(join(ws.root, "posts/p7.json"), post(7));
    const rows = await ws.rows(ALL_POSTS);
    assert.deepEqual(ws.parsed(), ["posts/p7.json"]);
    const fresh = await ws.rows(ALL_POSTS, ["-c", "dirq.toml"]);
    ws.parsed();
    assert.deepEqual(rows, fresh, "the persisted index answers as a fresh scan");
    assert.deepEqual(
      rows.map((row) => row.file),
      [
        "posts/p1.json",
        "posts/p4.json",
        "posts/p5.json",
        "posts/p6.json",
        "posts/p7.json",
        "posts/renamed.json",
      ],
    );
  });

  it("an edit that keeps size and mtime within the cached second is seen (content hash)", async () => {
    const ws = workspace(3);
    const file = join(ws.root, "posts/p2.json");
    // A modification time in the future: the cache is written within (before) that second.
    const future = (BigInt(Date.now()) + 60_000n) * 1_000_000n + 123_456_789n;
    setMtimeNs(file, future);
    await ws.rows(ALL_POSTS);
    ws.parsed();
    writeFileSync(file, post(9)); // same length as post(2)
    setMtimeNs(file, future);
    assert.equal(statSync(file, { bigint: true }).mtimeNs, future);
    const rows = await ws.rows(ALL_POSTS);
    assert.deepEqual(ws.parsed(), ["posts/p2.json"]);
    assert.equal(rows.find((row) => row.file === "posts/p2.json")?.n, 9);
  });

  it("a change of the table's definition rebuilds that table", async () => {
    const ws = workspace(4);
    await ws.rows(ALL_POSTS);
    ws.parsed();
    const config = join(ws.root, "dirq.toml");
    writeFileSync(config, `${CONFIG}schema = { n = "INTEGER", title = "TEXT" }\n`);
    const rows = await ws.rows(ALL_POSTS);
    assert.equal(rows.length, 4);
    assert.equal(ws.parsed().length, 4, "a new schema parses every file again");
    writeFileSync(config, CONFIG.replace("posts/*.json", "posts/p[12].json"));
    assert.equal((await ws.rows(ALL_POSTS)).length, 2);
    assert.equal(ws.parsed().length, 2);
    // The hook's script is part of the definition: an edit of it parses every file again.
    writeFileSync(join(ws.root, "hook.sh"), `${shellHook("logging.sh")}# edited\n`);
    assert.equal((await ws.rows(ALL_POSTS)).length, 2);
    assert.equal(ws.parsed().length, 2);
    writeFileSync(
      config,
      `${CONFIG.replace("posts/*.json", "posts/p[12].json")}ddl = "CREATE VIEW titles AS SELECT title FROM posts"\n`,
    );
    assert.deepEqual(await ws.rows("SELECT count(*) AS c FROM titles"), [{ c: 2 }]);
    assert.equal(ws.parsed().length, 2, "a new ddl rebuilds the table");
    // A table dropped from the config is gone from the cache too.
    writeFileSync(config, "");
    const gone = await ws.run(["query", "SELECT * FROM posts", "-c", "dirq.toml", "--persist"]);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /no such table: posts/);
  });

  it("path-tables come back from the cache, and stat columns follow in-place edits", async () => {
    const ws = workspace(3);
    const count = "SELECT count(*) AS c FROM './'";
    assert.deepEqual(await ws.rows(count, ["--persist"]), [{ c: 5 }]);
    assert.deepEqual(await ws.rows(count, ["--persist"]), [{ c: 5 }], ".dirq is never indexed");
    writeFileSync(join(ws.root, "posts/new.json"), post(4));
    assert.deepEqual(await ws.rows(count, ["--persist"]), [{ c: 6 }]);
    const size = "SELECT size FROM './posts/p1.json'";
    const before = await ws.rows(size, ["--persist"]);
    writeFileSync(join(ws.root, "posts/p1.json"), `${post(1)}${" ".repeat(50)}`);
    const afterEdit = await ws.rows(size, ["--persist"]);
    assert.equal(afterEdit[0]?.size, (before[0]?.size as number) + 50);
    rmSync(join(ws.root, "posts/new.json"));
    assert.deepEqual(await ws.rows(count, ["--persist"]), [{ c: 5 }]);
  });

  it("a path-table a count filled without paths gets them when a later run reads a column", async () => {
    const ws = workspace(3);
    const count = "SELECT count(*) AS c FROM './posts'";
    // count(*) reads no column: the cached rows have no paths, and say so.
    assert.deepEqual(await ws.rows(count, ["--persist"]), [{ c: 3 }]);
    assert.deepEqual(await ws.rows(count, ["--persist"]), [{ c: 3 }]);
    const paths = "SELECT path, basename FROM './posts' ORDER BY path";
    const expected = ["p1.json", "p2.json", "p3.json"].map((name) => ({
      path: `posts/${name}`,
      basename: name,
    }));
    assert.deepEqual(await ws.rows(paths, ["--persist"]), expected);
    assert.deepEqual(await ws.rows(paths, ["--persist"]), expected);
    assert.deepEqual(await ws.rows(count, ["--persist"]), [{ c: 3 }]);
  });

  it("a path-table restored from the cache follows a .gitignore above the root", async () => {
    const repository = makeTree({ "sub/a.txt": "a\n", "sub/b.txt": "b\n" });
    workspaces.push(repository);
    execFileSync("git", ["init", "-q", repository]);
    const root = join(repository, "sub");
    const count = async () => {
      const result = await runDirq(
        ["query", "SELECT count(*) AS c FROM './**/*.txt'", "--format", "json", "--persist"],
        { cwd: root },
      );
      assert.equal(result.code, 0, result.stderr);
      return JSON.parse(result.stdout) as unknown;
    };
    assert.deepEqual(await count(), [{ c: 2 }]);
    // An hour back: a folder changed in the second it was walked is never trusted (racy), and
    // the first run just made the cache folder in it.
    execFileSync("touch", ["-m", "-d", "1 hour ago", root]);
    assert.deepEqual(await count(), [{ c: 2 }]);
    writeFileSync(join(repository, ".gitignore"), "b.txt\n");
    assert.deepEqual(await count(), [{ c: 1 }], "the repository top's .gitignore is followed");
  });

  it("--persist=<path> and --persist <path> put the cache there, outside or inside the root", async () => {
    const ws = workspace(2);
    const outside = join(mkdtempSync(join(tmpdir(), "dirq-persist-at-")), "index.cache");
    workspaces.push(join(outside, ".."));
    await ws.rows(ALL_POSTS, ["-c", "dirq.toml", `--persist=${outside}`]);
    assert.ok(existsSync(outside));
    const inside = await ws.run([
      "query",
      "SELECT path FROM './' ORDER BY path",
      "--persist",
      "my.cache",
      "--format",
      "json",
    ]);
    assert.equal(inside.code, 0, inside.stderr);
    assert.ok(existsSync(join(ws.root, "my.cache")));
    const again = await ws.run([
      "query",
      "SELECT path FROM './' ORDER BY path",
      "--persist",
      "my.cache",
      "--format",
      "json",
    ]);
    const paths = (JSON.parse(again.stdout) as { path: string }[]).map((row) => row.path);
    assert.ok(!paths.some((path) => path.startsWith("my.cache")), "the cache is never a row");
    // A bare --persist before the SQL leaves the SQL alone.
    const bare = await ws.run(["query", "--persist", "SELECT 1 AS one", "--format", "json"]);
    assert.equal(bare.code, 0, bare.stderr);
    assert.deepEqual(JSON.parse(bare.stdout), [{ one: 1 }]);
    const twice = await ws.run(["SELECT 1", "--persist", "--persist=x.db"]);
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, /--persist was given more than once/);
  });
});

describe("--persist: a cache that cannot be reused is rebuilt, never a crash", () => {
  it("a corrupt, truncated or foreign-version cache is rebuilt with a one-line notice", async () => {
    const ws = workspace(3);
    const cache = join(ws.root, ".dirq", "cache.db");
    const expected = await ws.rows(ALL_POSTS);
    const runPersisted = () =>
      ws.run(["query", ALL_POSTS, "--format", "json", "-c", "dirq.toml", "--persist"]);
    ws.parsed();
    const damage: [string, () => void][] = [
      ["garbage", () => writeFileSync(cache, "this is not a database\n".repeat(100))],
      ["truncated", () => truncateSync(cache, 1500)],
      [
        "zeroed pages",
        () => {
          const bytes = readFileSync(cache);
          bytes.fill(0x5a, 100, Math.min(bytes.length, 8192));
          writeFileSync(cache, bytes);
        },
      ],
    ];
    for (const [label, spoil] of damage) {
      spoil();
      const result = await runPersisted();
      assert.equal(result.code, 0, `${label}: ${result.stderr}`);
      assert.deepEqual(JSON.parse(result.stdout), expected, label);
      const notices = result.stderr.split("\n").filter(Boolean);
      assert.equal(notices.length, 1, `${label}: ${result.stderr}`);
      assert.match(notices[0] as string, /^dirq: rebuilding the cache .*cache\.db: /);
      assert.equal(ws.parsed().length, 3, label);
    }
    // Another dirq version wrote it.
    runSql(cache, "UPDATE _dirq_meta SET value = '0.0.1' WHERE key = 'version'");
    const result = await runPersisted();
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /rebuilding the cache .*: it was written by dirq 0\.0\.1/);
    // This version, another layout (a development build): rebuilt, saying so.
    runSql(cache, "UPDATE _dirq_meta SET value = '1' WHERE key = 'format'");
    const layout = await runPersisted();
    assert.equal(layout.code, 0, layout.stderr);
    assert.match(
      layout.stderr,
      /rebuilding the cache .*: it is in an older layout \(format 1, now 2\)/,
    );
  });

  it("a cache of another root is rebuilt; a database dirq did not write is never touched", async () => {
    const a = workspace(2);
    const b = workspace(3);
    const shared = join(mkdtempSync(join(tmpdir(), "dirq-persist-shared-")), "shared.db");
    workspaces.push(join(shared, ".."));
    assert.equal((await a.rows(ALL_POSTS, ["-c", "dirq.toml", `--persist=${shared}`])).length, 2);
    const other = await b.run([
      "query",
      ALL_POSTS,
      "--format",
      "json",
      "-c",
      "dirq.toml",
      `--persist=${shared}`,
    ]);
    assert.equal(other.code, 0, other.stderr);
    assert.equal(JSON.parse(other.stdout).length, 3);
    assert.match(other.stderr, /rebuilding the cache .*it indexes another root/);

    const foreign = join(a.root, "..", `${Date.now()}-mine.db`);
    runSql(foreign, "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('keep me')");
    const before = readFileSync(foreign);
    const refused = await a.run(["SELECT 1", `--persist=${foreign}`]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /is a SQLite database that dirq did not write/);
    assert.ok(readFileSync(foreign).equals(before), "the foreign database is untouched");
    assert.ok(!existsSync(`${foreign}.lock`), "no lock file is left beside it");
    rmSync(foreign);

    // A file that is not a database at all, named by the user: refused, never rebuilt over.
    const notes = join(a.root, "notes.txt");
    writeFileSync(notes, "my notes, not a cache\n".repeat(50));
    const text = await a.run(["SELECT 1", `--persist=${notes}`]);
    assert.equal(text.code, 1);
    assert.match(text.stderr, /notes\.txt is not a SQLite database; dirq will not overwrite it/);
    assert.equal(readFileSync(notes, "utf8"), "my notes, not a cache\n".repeat(50));
    assert.ok(!existsSync(`${notes}.lock`), "no lock file is left beside the notes");
  });
});

/** Spawns `dirq <args>` in `cwd` without waiting, in its own process group. */
function spawnDirq(
  args: readonly string[],
  cwd: string,
  env: Record<string, string>,
): ChildProcess {
  return spawn(process.execPath, [DIRQ_BIN, ...args], {
    cwd,
    env: { ...process.env, DIRQ_PROGRESS: "never", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
}

function linesIn(path: string): number {
  return readFileSync(path, "utf8").split("\n").filter(Boolean).length;
}

describe("--persist: crashes and concurrent processes", () => {
  it("kill -9 while indexing leaves a cache the next run uses or rebuilds: same rows as a fresh scan", async () => {
    const ws = workspace(24);
    for (const stage of ["cold", "warm"]) {
      if (stage === "warm") {
        for (let n = 1; n <= 24; n += 2)
          writeFileSync(join(ws.root, `posts/p${n}.json`), post(n * 10));
      }
      const start = linesIn(ws.log);
      const child = spawnDirq(["query", ALL_POSTS, "-c", "dirq.toml", "--persist"], ws.root, {
        PARSE_LOG: ws.log,
        PARSE_DELAY_MS: "60",
      });
      await eventually(() => linesIn(ws.log) >= start + 5, "five files parsed", 60_000);
      const closed = new Promise((resolve) => child.once("close", resolve));
      process.kill(-(child.pid as number), "SIGKILL");
      await closed;
      const resumed = await ws.rows(ALL_POSTS);
      const fresh = await ws.rows(ALL_POSTS, ["-c", "dirq.toml"]);
      assert.deepEqual(resumed, fresh, `${stage}: no lost or duplicated rows`);
      assert.equal(new Set(resumed.map((row) => row.file)).size, 24);
      assert.deepEqual(await ws.rows(ALL_POSTS), fresh);
    }
  });

  it("a second process waits for the first, and fails clearly when the cache stays busy", async () => {
    const ws = workspace(10);
    const slow = spawnDirq(
      [
        "query",
        "SELECT count(*) AS c FROM posts",
        "-c",
        "dirq.toml",
        "--persist",
        "--format",
        "json",
      ],
      ws.root,
      {
        PARSE_LOG: ws.log,
        PARSE_DELAY_MS: "150",
      },
    );
    const slowClosed = new Promise((resolve) => slow.once("close", resolve));
    let slowOut = "";
    slow.stdout?.setEncoding("utf8").on("data", (chunk: string) => (slowOut += chunk));
    await eventually(() => linesIn(ws.log) >= 1, "the first process parsing", 60_000);
    const second = await ws.run([
      "query",
      "SELECT count(*) AS c FROM posts",
      "-c",
      "dirq.toml",
      "--persist",
      "--format",
      "json",
    ]);
    await slowClosed;
    assert.deepEqual(JSON.parse(slowOut), [{ c: 10 }]);
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual(JSON.parse(second.stdout), [{ c: 10 }]);
    assert.equal(linesIn(ws.log), 10, "the second process reused what the first indexed");

    const server = await startServer(
      ["-c", "dirq.toml", "--persist", "--port", "0", "--host", "127.0.0.1"],
      {
        cwd: ws.root,
      },
    );
    try {
      const busy = await ws.run(["SELECT count(*) FROM posts", "-c", "dirq.toml", "--persist"]);
      assert.equal(busy.code, 1);
      assert.match(
        busy.stderr,
        /^dirq: the cache .*cache\.db is in use by another dirq process \(waited 5 s\)/,
      );
      assert.deepEqual(await queryRows(server, "SELECT count(*) AS c FROM posts"), [{ c: 10 }]);
    } finally {
      await server.kill();
    }
  });
});

/** Mounts a small tmpfs at `dir` (root only); false where this machine does not allow it. */
function mountTmpfs(dir: string, options: string): boolean {
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", options, "tmpfs", dir], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

describe("--persist: a cache on a read-only or full disk", () => {
  it("is a clear error naming the cache, and the indexed files stay untouched", async (t) => {
    const ws = workspace(40);
    for (let n = 1; n <= 40; n++) {
      writeFileSync(
        join(ws.root, `posts/p${n}.json`),
        JSON.stringify({ n, body: "x".repeat(3000) }),
      );
    }
    const mounts = mkdtempSync(join(tmpdir(), "dirq-persist-mounts-"));
    const readOnly = join(mounts, "ro");
    const full = join(mounts, "full");
    mkdirSync(readOnly);
    mkdirSync(full);
    if (!mountTmpfs(readOnly, "ro,size=1m") || !mountTmpfs(full, "size=64k")) {
      rmSync(mounts, { recursive: true, force: true });
      t.skip("mounting a tmpfs is not allowed here");
      return;
    }
    /** A query whose cache is `cache` fails with exit 1 and one clear line matching `message`. */
    const failsClearly = async (cache: string, message: RegExp) => {
      const run = await ws.run([
        "SELECT count(*) FROM posts",
        "-c",
        "dirq.toml",
        `--persist=${cache}`,
      ]);
      assert.equal(run.code, 1);
      assert.match(run.stderr, message);
      assert.doesNotMatch(run.stderr, /internal error|\n\s+at /);
    };
    try {
      const snapshot = snapshotTree(ws.root);
      await failsClearly(
        `${readOnly}/cache.db`,
        /^dirq: cannot use the cache .*ro\/cache\.db: .*Give --persist a writable path/,
      );
      await failsClearly(
        `${full}/cache.db`,
        /^dirq: cannot (write the index to|use the cache) .*full\/cache\.db.*(full|space)/m,
      );
      assert.equal(snapshotTree(ws.root), snapshot, "the indexed files are untouched");
    } finally {
      execFileSync("umount", [readOnly]);
      execFileSync("umount", [full]);
      rmSync(mounts, { recursive: true, force: true });
    }
  });
});

describe("--persist: a cache whose folder cannot be made", () => {
  it(
    "under /proc (mkdir says ENOENT under a folder that exists): a clear error at once",
    {
      timeout: 20_000,
    },
    async () => {
      const ws = workspace(1);
      const run = await ws.run([
        "SELECT count(*) FROM posts",
        "-c",
        "dirq.toml",
        "--persist=/proc/dirq/x/cache.db",
      ]);
      assert.equal(run.code, 1);
      assert.match(
        run.stderr,
        /^dirq: cannot use the cache \/proc\/dirq\/x\/cache\.db: .*Give --persist a writable path/,
      );
    },
  );
});

describe("--persist in the server and the REPL", () => {
  it("the server's index is the cache: a restart parses only what changed while it was down", async () => {
    const ws = workspace(5);
    const args = ["-c", "dirq.toml", "--persist", "--port", "0", "--host", "127.0.0.1"];
    const env = { PARSE_LOG: ws.log };
    Object.assign(process.env, env);
    let server = await startServer(args, { cwd: ws.root });
    try {
      assert.deepEqual(await queryRows(server, "SELECT count(*) AS c FROM posts"), [{ c: 5 }]);
      assert.equal(ws.parsed().length, 5);
      // A change while it runs: the watcher parses it and records it.
      writeFileSync(join(ws.root, "posts/p1.json"), post(11));
      await eventually(
        async () => {
          const rows = await queryRows(
            server,
            "SELECT n FROM posts WHERE _dirq_file_path = 'posts/p1.json'",
          );
          return rows[0]?.n === 11;
        },
        "the watcher applied the change",
        15_000,
      );
      assert.deepEqual(ws.parsed(), ["posts/p1.json"]);
    } finally {
      await server.kill();
    }
    writeFileSync(join(ws.root, "posts/p2.json"), post(22));
    server = await startServer(args, { cwd: ws.root });
    try {
      const rows = await queryRows(server, "SELECT n FROM posts ORDER BY n");
      assert.deepEqual(
        rows.map((row) => row.n),
        [3, 4, 5, 11, 22],
      );
      assert.deepEqual(ws.parsed(), ["posts/p2.json"], "only the file changed while it was down");
    } finally {
      await server.kill();
      for (const key of Object.keys(env)) delete process.env[key];
    }
  });

  it("kill -9 of the server while it indexes: the restart answers as a fresh scan", async () => {
    const ws = workspace(20);
    const args = ["-c", "dirq.toml", "--persist", "--port", "0", "--host", "127.0.0.1"];
    // Its own temporary directory, to see what the killed server leaves there.
    const temporary = mkdtempSync(join(tmpdir(), "dirq-persist-tmp-"));
    workspaces.push(temporary);
    const child = spawnDirq(["server", ...args], ws.root, {
      PARSE_LOG: ws.log,
      PARSE_DELAY_MS: "60",
      TMPDIR: temporary,
    });
    const closed = new Promise((resolve) => child.once("close", resolve));
    await eventually(() => linesIn(ws.log) >= 5, "the server parsing", 60_000);
    assert.equal(readdirSync(temporary).filter((name) => name.startsWith("dirq-index-")).length, 1);
    // The whole process group, as a cancelled job or a container stop kills it.
    process.kill(-(child.pid as number), "SIGKILL");
    await closed;
    await eventually(
      () => readdirSync(temporary).every((name) => !name.startsWith("dirq-index-")),
      "the reaper removing the killed server's index folder",
      10_000,
    );
    Object.assign(process.env, { PARSE_LOG: ws.log });
    const server = await startServer(args, { cwd: ws.root });
    try {
      const rows = await queryRows(server, ALL_POSTS);
      const fresh = await ws.rows(ALL_POSTS, ["-c", "dirq.toml"]);
      assert.deepEqual(rows, fresh);
    } finally {
      await server.kill();
      delete process.env.PARSE_LOG;
    }
  });

  it("the REPL reuses the cache", async () => {
    const ws = workspace(4);
    const session = () =>
      runDirq(["-c", "dirq.toml", "--persist", "--format", "json"], {
        cwd: ws.root,
        env: { PARSE_LOG: ws.log },
        input: "SELECT count(*) AS c FROM posts;\n",
      });
    for (const parses of [4, 0]) {
      const result = await session();
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /"c":4/);
      assert.equal(ws.parsed().length, parses);
    }
  });
});
