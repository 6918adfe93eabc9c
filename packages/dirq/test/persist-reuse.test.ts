import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, it } from "node:test";
import { DIRQ_BIN, makeTree, removeTree, type RunResult, runDirq, shellHook } from "./helpers.js";

/*
 * What a warm `--persist` run reuses and what it must not (issue 35): `--on-file` tables are
 * brought up to date, a cut-short cache is rebuilt, a table's definition is its command text
 * and its program's content (never its argument files or mtimes), a cache whose ddl uses an
 * extension is checked with it loaded, and a build killed part way is resumed.
 */

const workspaces: string[] = [];
after(() => {
  for (const dir of workspaces) removeTree(dir);
});

interface Workspace {
  root: string;
  /** A folder outside the root (logs, a hook's `--log` file). */
  outside: string;
  /** Paths the hook parsed since the last call. */
  parsed(): string[];
  run(args: readonly string[], env?: Record<string, string>): Promise<RunResult>;
  /** Rows of `sql` as JSON; stderr kept for the caller. */
  rows(sql: string, args: readonly string[]): Promise<{ rows: unknown[]; stderr: string }>;
}

function workspace(tree: Record<string, string>): Workspace {
  const root = makeTree({ "hook.sh": shellHook("logging.sh"), ...tree });
  const outside = mkdtempSync(join(tmpdir(), "dirq-reuse-log-"));
  workspaces.push(root, outside);
  const log = join(outside, "parsed.log");
  writeFileSync(log, "");
  let seen = 0;
  const run = (args: readonly string[], env: Record<string, string> = {}) =>
    runDirq(args, { cwd: root, env: { PARSE_LOG: log, ...env } });
  return {
    root,
    outside,
    parsed() {
      const lines = readFileSync(log, "utf8").split("\n").filter(Boolean);
      const fresh = lines.slice(seen);
      seen = lines.length;
      return fresh.map((line) => line.replace(`${root}/`, "")).sort();
    },
    run,
    async rows(sql, args) {
      const result = await run(["query", sql, "--format", "json", ...args]);
      assert.equal(result.code, 0, result.stderr);
      return { rows: JSON.parse(result.stdout) as unknown[], stderr: result.stderr };
    },
  };
}

function dataFiles(count: number, prefix = "data"): Record<string, string> {
  const tree: Record<string, string> = {};
  for (let n = 1; n <= count; n++) tree[`${prefix}/f${n}.json`] = `{"v":${n}}\n`;
  return tree;
}

const TABLE = (onFile: string, extra = "") =>
  `[[table]]\nname = "posts"\nglob = "data/*.json"\non-file = "${onFile}"\n${extra}`;

describe("--persist with --on-file: later runs see edits, new and deleted files", () => {
  const SQL = "SELECT count(*) c, sum(v) s FROM './data'";
  const edit = (root: string) => {
    writeFileSync(join(root, "data/f1.json"), `{"v":100}\n`);
    writeFileSync(join(root, "data/f9.json"), `{"v":1000}\n`);
    unlinkSync(join(root, "data/f2.json"));
  };

  it("one-shot: the persisted answer equals the same query without --persist", async () => {
    const ws = workspace(dataFiles(3));
    const args = ["--on-file", "sh hook.sh {path}"];
    assert.deepEqual((await ws.rows(SQL, [...args, "--persist"])).rows, [{ c: 3, s: 6 }]);
    assert.equal(ws.parsed().length, 3);
    edit(ws.root);
    const warm = await ws.rows(SQL, [...args, "--persist"]);
    assert.deepEqual(ws.parsed(), ["data/f1.json", "data/f9.json"], "only what changed");
    assert.deepEqual(warm.rows, (await ws.rows(SQL, args)).rows);
    assert.deepEqual(warm.rows, [{ c: 3, s: 1103 }]);
  });

  it("the REPL: the same", async () => {
    const ws = workspace(dataFiles(3));
    const session = () =>
      runDirq(["--on-file", "sh hook.sh {path}", "--persist", "--format", "json"], {
        cwd: ws.root,
        env: { PARSE_LOG: join(ws.outside, "parsed.log") },
        input: `${SQL};\n`,
      });
    const first = await session();
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /"s":6/);
    edit(ws.root);
    const second = await session();
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, /"c":3,"s":1103/);
  });

  it("the SDK: open({ onFile, persist: true }) the same", () => {
    const ws = workspace(dataFiles(3));
    const index = fileURLToPath(new URL("../src/index.js", import.meta.url));
    const script = `import { open } from ${JSON.stringify(index)};
const db = open({ root: ${JSON.stringify(ws.root)}, onFile: "sh hook.sh {path}", persist: true, progress: false });
console.log(JSON.stringify(await db.query(${JSON.stringify(SQL)})));
await db.close();`;
    const run = () => {
      const result = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
        encoding: "utf8",
        env: { ...process.env, PARSE_LOG: join(ws.outside, "parsed.log") },
      });
      assert.equal(result.status, 0, result.stderr);
      return result.stdout.trim();
    };
    assert.equal(run(), '[{"c":3,"s":6}]');
    edit(ws.root);
    assert.equal(run(), '[{"c":3,"s":1103}]');
  });
});

describe("--persist: a cache cut short by less than a page", () => {
  it("is rebuilt with the documented line, and answers as a fresh scan", async () => {
    const ws = workspace({
      ...dataFiles(30),
      "dirq.toml": TABLE("sh hook.sh {path}", 'schema = { v = "INTEGER" }\n'),
    });
    const SQL = "SELECT group_concat(v) AS vs FROM (SELECT v FROM posts ORDER BY v)";
    const args = ["-c", "dirq.toml", "--persist"];
    const fresh = await ws.rows(SQL, ["-c", "dirq.toml"]);
    await ws.rows(SQL, args);
    const cache = join(ws.root, ".dirq/cache.db");
    for (const cut of [5, 4096]) {
      truncateSync(cache, readFileSync(cache).length - cut);
      const run = await ws.rows(SQL, args);
      assert.match(run.stderr, /^dirq: rebuilding the cache .*cache\.db: it is truncated$/m);
      assert.deepEqual(run.rows, fresh.rows);
      const again = await ws.rows(SQL, args);
      assert.equal(again.stderr, "", "the rebuilt cache is trusted again");
      assert.deepEqual(again.rows, fresh.rows);
    }
  });
});

describe("--persist: a table's definition is its command text and its program's content", () => {
  const SQL = "SELECT count(*) AS n FROM posts";

  it("argument files, a touch or a reinstall of the same bytes never re-parse; an edit does, with one line", async () => {
    const ws = workspace({ ...dataFiles(3) });
    const logFile = join(ws.outside, "hook.log");
    writeFileSync(join(ws.root, "dirq.toml"), TABLE(`sh hook.sh {path} --log ${logFile}`));
    const args = ["-c", "dirq.toml", "--persist"];
    const counts: number[] = [];
    for (let run = 0; run < 4; run++) {
      const result = await ws.rows(SQL, args);
      assert.equal(result.stderr, "");
      counts.push(ws.parsed().length);
    }
    assert.deepEqual(counts, [3, 0, 0, 0], "the --log file changes every run; it is no input");

    execFileSync("touch", [join(ws.root, "hook.sh")]);
    assert.equal((await ws.rows(SQL, args)).stderr, "");
    assert.equal(ws.parsed().length, 0, "a touch of the hook alone");

    // A reinstall: a new file (new inode) with the same bytes.
    const hook = join(ws.root, "hook.sh");
    copyFileSync(hook, `${hook}.new`);
    renameSync(`${hook}.new`, hook);
    assert.equal((await ws.rows(SQL, args)).stderr, "");
    assert.equal(ws.parsed().length, 0, "a reinstall with identical bytes");

    writeFileSync(hook, `${readFileSync(hook, "utf8")}# v2\n`);
    const edited = await ws.rows(SQL, args);
    assert.equal(edited.stderr, "dirq: rebuilding table posts: its on-file program changed\n");
    assert.equal(ws.parsed().length, 3);
  });

  it("an executable given by path counts by content too", async () => {
    const ws = workspace({
      ...dataFiles(2),
      "bin/parse.sh": `#!/bin/sh\nexec sh hook.sh "$1"\n`,
    });
    execFileSync("chmod", ["+x", join(ws.root, "bin/parse.sh")]);
    writeFileSync(join(ws.root, "dirq.toml"), TABLE("./bin/parse.sh {path}"));
    const args = ["-c", "dirq.toml", "--persist"];
    await ws.rows(SQL, args);
    assert.equal(ws.parsed().length, 2);
    execFileSync("touch", [join(ws.root, "bin/parse.sh")]);
    await ws.rows(SQL, args);
    assert.equal(ws.parsed().length, 0);
    writeFileSync(join(ws.root, "bin/parse.sh"), `#!/bin/sh\n# v2\nexec sh hook.sh "$1"\n`);
    const edited = await ws.rows(SQL, args);
    assert.equal(edited.stderr, "dirq: rebuilding table posts: its on-file program changed\n");
    assert.equal(ws.parsed().length, 2);
  });
});

describe("--persist: what moves a table's definition and what does not", () => {
  const SQL = "SELECT count(*) AS n FROM posts";
  const BASE = TABLE("sh hook.sh {path}", 'schema = { v = "INTEGER" }\n');

  /** After a first run with `before`, a run with the config `after` re-parses or not. */
  async function rebuilds(
    after: string,
    change: (ws: Workspace) => void = () => {},
    before = BASE,
  ): Promise<{ parsed: number; stderr: string }> {
    const ws = workspace({ ...dataFiles(3), "other/x.json": `{"v":9}\n`, "dirq.toml": before });
    const args = ["-c", "dirq.toml", "--persist"];
    await ws.rows(SQL, args);
    assert.equal(ws.parsed().length, 3);
    writeFileSync(join(ws.root, "dirq.toml"), after);
    change(ws);
    const result = await ws.rows(SQL, args);
    return { parsed: ws.parsed().length, stderr: result.stderr };
  }

  const moves: [string, string, string][] = [
    ["the glob", BASE.replace('"data/*.json"', '"data/f*.json"'), "its glob changed"],
    ["the schema", BASE.replace('"INTEGER"', '"TEXT"'), "its schema changed"],
    ["the ddl", `${BASE}ddl = "CREATE INDEX posts_v ON posts (v)"\n`, "its ddl changed"],
    [
      "the command text",
      BASE.replace("sh hook.sh {path}", "sh ./hook.sh {path}"),
      "its on-file command changed",
    ],
    [
      "the ignore settings",
      `[dirq]\nignore = ["nothing-here"]\n${BASE}`,
      "the ignore settings changed",
    ],
  ];
  for (const [what, config, reason] of moves) {
    it(`${what} rebuilds the table, saying so`, async () => {
      const { parsed, stderr } = await rebuilds(config);
      assert.equal(parsed, 3);
      assert.equal(stderr, `dirq: rebuilding table posts: ${reason}\n`);
    });
  }

  it("the content of an extension the ddl may use rebuilds the table", async () => {
    const ws = workspace({ ...dataFiles(2) });
    mkdirSync(join(ws.root, "ext"));
    const extension = join(ws.root, "ext/tok.so");
    buildTokenizer(extension);
    const config = `[[dirq.extension]]\npath = "ext/tok.so"\n${BASE}ddl = "CREATE INDEX posts_v ON posts (v)"\n`;
    writeFileSync(join(ws.root, "dirq.toml"), config);
    const args = ["-c", "dirq.toml", "--persist"];
    await ws.rows(SQL, args);
    assert.equal(ws.parsed().length, 2);
    execFileSync("touch", [extension]);
    assert.equal((await ws.rows(SQL, args)).stderr, "");
    assert.equal(ws.parsed().length, 0, "a touch of the extension alone");
    buildTokenizer(
      extension,
      "/* v2 */ static int unused_v2 = 2; int dirq_v2(void) { return unused_v2; }",
    );
    const rebuilt = await ws.rows(SQL, args);
    assert.equal(
      rebuilt.stderr,
      "dirq: rebuilding table posts: the extensions its ddl may use changed\n",
    );
    assert.equal(ws.parsed().length, 2);
  });

  it("a worker function the ddl names moves it; one it does not name never does", async () => {
    const fn = (name: string, command: string) =>
      `[[dirq.function]]\nname = "${name}"\ncommand = "${command}"\n`;
    const table = `${BASE}ddl = "CREATE VIEW doubled AS SELECT twice(v) AS w FROM posts"\n`;
    const before = `${fn("twice", "node twice.mjs")}${fn("other", "node other.mjs")}${table}`;
    const named = await rebuilds(
      `${fn("twice", "node twice-v2.mjs")}${fn("other", "node other.mjs")}${table}`,
      () => {},
      before,
    );
    assert.equal(named.parsed, 3);
    assert.equal(
      named.stderr,
      "dirq: rebuilding table posts: the worker functions its ddl names changed\n",
    );
    const unnamed = await rebuilds(
      `${fn("twice", "node twice.mjs")}${fn("other", "node other-v2.mjs")}${table}`,
      () => {},
      before,
    );
    assert.deepEqual(unnamed, { parsed: 0, stderr: "" });
  });

  it("a previous run's log, the cache's own folder and a file outside the glob do not", async () => {
    const { parsed, stderr } = await rebuilds(BASE, (ws) => {
      writeFileSync(join(ws.outside, "parsed.log.old"), "a previous run's log\n");
      writeFileSync(join(ws.root, ".dirq/notes.txt"), "in the cache's folder\n");
      writeFileSync(join(ws.root, "other/x.json"), `{"v":10}\n`);
      mkdirSync(join(ws.root, "logs"));
      writeFileSync(join(ws.root, "logs/run.log"), "a log under the root\n");
    });
    assert.equal(parsed, 0);
    assert.equal(stderr, "");
  });
});

/**
 * An FTS5 tokenizer extension built from C here (gcc, libsqlite3-dev's headers): `wrap`
 * hands its text to the tokenizer its arguments name, as an npm tokenizer such as
 * `html unicode61` does. `extra` changes the library's bytes.
 */
function buildTokenizer(output: string, extra = ""): void {
  const source = `${output}.c`;
  writeFileSync(source, `${TOKENIZER_C}\n${extra}\n`);
  execFileSync("gcc", ["-shared", "-fPIC", "-O2", "-o", output, source]);
  rmSync(source);
}

const TOKENIZER_C = `
#include <sqlite3ext.h>
#include <string.h>
SQLITE_EXTENSION_INIT1

typedef struct { fts5_tokenizer parent; Fts5Tokenizer *inner; } Wrap;

static fts5_api *fts5_of(sqlite3 *db) {
  fts5_api *api = 0;
  sqlite3_stmt *stmt = 0;
  if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &stmt, 0) == SQLITE_OK) {
    sqlite3_bind_pointer(stmt, 1, (void *)&api, "fts5_api_ptr", 0);
    sqlite3_step(stmt);
  }
  sqlite3_finalize(stmt);
  return api;
}

static int wrap_create(void *ctx, const char **argv, int argc, Fts5Tokenizer **out) {
  fts5_api *api = (fts5_api *)ctx;
  void *userdata = 0;
  Wrap *wrap = sqlite3_malloc(sizeof(Wrap));
  if (!wrap) return SQLITE_NOMEM;
  memset(wrap, 0, sizeof(Wrap));
  int rc = api->xFindTokenizer(api, argc > 0 ? argv[0] : "unicode61", &userdata, &wrap->parent);
  if (rc == SQLITE_OK) {
    rc = wrap->parent.xCreate(userdata, argc > 1 ? argv + 1 : 0, argc > 1 ? argc - 1 : 0, &wrap->inner);
  }
  if (rc != SQLITE_OK) { sqlite3_free(wrap); return rc; }
  *out = (Fts5Tokenizer *)wrap;
  return SQLITE_OK;
}

static void wrap_delete(Fts5Tokenizer *tokenizer) {
  Wrap *wrap = (Wrap *)tokenizer;
  wrap->parent.xDelete(wrap->inner);
  sqlite3_free(wrap);
}

static int wrap_tokenize(Fts5Tokenizer *tokenizer, void *ctx, int flags, const char *text, int n,
                         int (*token)(void *, int, const char *, int, int, int)) {
  Wrap *wrap = (Wrap *)tokenizer;
  return wrap->parent.xTokenize(wrap->inner, ctx, flags, text, n, token);
}

int sqlite3_tok_init(sqlite3 *db, char **error, const sqlite3_api_routines *routines) {
  SQLITE_EXTENSION_INIT2(routines);
  fts5_api *api = fts5_of(db);
  if (!api) { *error = sqlite3_mprintf("fts5 is not available"); return SQLITE_ERROR; }
  fts5_tokenizer tokenizer = { wrap_create, wrap_delete, wrap_tokenize };
  return api->xCreateTokenizer(api, "wrap", (void *)api, &tokenizer, 0);
}
`;

describe("--persist: a cache whose ddl uses an extension's tokenizer", () => {
  it("is checked with the extension loaded: reused, not rebuilt on every run", async () => {
    const ws = workspace({
      "data/a.json": `{"body":"hello world"}\n`,
      "data/b.json": `{"body":"goodbye moon"}\n`,
      "dirq.toml": `[[dirq.extension]]
path = "ext/tok.so"

[[table]]
name = "posts"
glob = "data/*.json"
on-file = "sh hook.sh {path}"
schema = { body = "TEXT" }
ddl = """
CREATE VIRTUAL TABLE posts_fts USING fts5(body, tokenize = 'wrap unicode61');
CREATE TRIGGER posts_fts_insert AFTER INSERT ON posts BEGIN
  INSERT INTO posts_fts (rowid, body) VALUES (new.rowid, new.body);
END;
"""
`,
    });
    mkdirSync(join(ws.root, "ext"));
    buildTokenizer(join(ws.root, "ext/tok.so"));
    const SQL = "SELECT body FROM posts_fts WHERE posts_fts MATCH 'hello'";
    const args = ["-c", "dirq.toml", "--persist"];
    for (const parses of [2, 0, 0]) {
      const run = await ws.rows(SQL, args);
      assert.equal(run.stderr, "", "no rebuild notice");
      assert.deepEqual(run.rows, [{ body: "hello world" }]);
      assert.equal(ws.parsed().length, parses);
    }
  });
});

describe("--persist: a build killed part way", () => {
  it("kill -9 while slow hooks run: the next run parses only the files the killed one had not finished", async () => {
    const files = 40;
    const ws = workspace({ ...dataFiles(files), "dirq.toml": TABLE("sh hook.sh {path}") });
    const log = join(ws.outside, "parsed.log");
    const doneLog = join(ws.outside, "done.log");
    writeFileSync(doneLog, "");
    // Files 1-32 are quick; 33-40 take 30 s, so the kill finds them running (fewer than the
    // hooks that may run at once, so they do not hold the quick ones back).
    const quick = 32;
    const child = spawn(
      process.execPath,
      [DIRQ_BIN, "SELECT count(*) FROM posts", "-c", "dirq.toml", "--persist"],
      {
        cwd: ws.root,
        env: {
          ...process.env,
          PARSE_LOG: log,
          DONE_LOG: doneLog,
          SLOW_ABOVE: String(quick),
          SLOW_DELAY_MS: "30000",
        },
        stdio: "ignore",
        detached: true,
      },
    );
    const closed = new Promise((resolve) => child.once("close", resolve));
    const finished = () => readFileSync(doneLog, "utf8").split("\n").filter(Boolean);
    const deadline = Date.now() + 60_000;
    while (finished().length < quick && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // Finished rows reach the catalog within half a second, slow hooks running or not.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    process.kill(-(child.pid as number), "SIGKILL");
    await closed;
    const done = finished().map((path) => path.replace(`${ws.root}/`, ""));
    assert.equal(done.length, quick, `killed after ${done.length} of ${files}`);
    ws.parsed();
    const next = await ws.rows("SELECT count(*) AS n, sum(v) AS s FROM posts", [
      "-c",
      "dirq.toml",
      "--persist",
    ]);
    assert.deepEqual(next.rows, [{ n: files, s: (files * (files + 1)) / 2 }]);
    const again = ws.parsed();
    assert.deepEqual(
      again,
      Object.keys(dataFiles(files))
        .filter((path) => !done.includes(path))
        .sort(),
      "the next run parses exactly the files the killed one had not finished",
    );
  });
});

describe("docs/persist.md", () => {
  it("quotes the full-disk message dirq prints", async (t) => {
    const docs = readFileSync(
      fileURLToPath(new URL("../../docs/persist.md", import.meta.url)),
      "utf8",
    );
    const quoted = /`(dirq: cannot write the index to <path>: database or disk is full[^`]*)`/.exec(
      docs,
    );
    assert.ok(quoted, "docs/persist.md quotes the full-disk message");
    const ws = workspace({ ...dataFiles(40), "dirq.toml": TABLE("sh hook.sh {path}") });
    // Room for a new cache (its first pages are 64 KiB each), not for these rows.
    for (let n = 1; n <= 40; n++) {
      writeFileSync(
        join(ws.root, `data/f${n}.json`),
        JSON.stringify({ v: n, body: "x".repeat(30_000) }),
      );
    }
    const mounts = mkdtempSync(join(tmpdir(), "dirq-reuse-full-"));
    workspaces.push(mounts);
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mounts], {
        stdio: "ignore",
      });
    } catch {
      t.skip("mounting a tmpfs is not allowed here");
      return;
    }
    try {
      const cache = join(mounts, "cache.db");
      const run = await ws.run([
        "SELECT count(*) FROM posts",
        "-c",
        "dirq.toml",
        `--persist=${cache}`,
      ]);
      assert.equal(run.code, 1);
      assert.equal(run.stderr, `${(quoted[1] as string).replace("<path>", cache)}\n`);
    } finally {
      execFileSync("umount", [mounts]);
    }
  });
});
