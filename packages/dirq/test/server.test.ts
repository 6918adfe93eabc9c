import assert from "node:assert/strict";
import {
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { Agent } from "node:http";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { runDirq, shellHook, tempTree, withoutCommit } from "./helpers.js";
import {
  assertJsonError,
  cpuTicks,
  decodeChunkedResponse,
  eventually,
  type EventStream,
  httpRequest,
  lastFrameTime,
  openEvents,
  openReadyEvents,
  openStuckSubscriber,
  postQuery,
  postRaw,
  processTree,
  queryRows,
  request,
  type RowEvent,
  rssBytes,
  runServerToExit,
  type ServerProcess,
  type SseFrame,
  SseParser,
  startServer,
  treeCpu,
} from "./server-support.js";

/* ------------------------------------------------------------------------------------------ */
/* Trees, hooks and configs                                                                    */
/* ------------------------------------------------------------------------------------------ */

const VERSION = (
  JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string;
  }
).version;

/**
 * Prints a file's JSON as rows, as json-rows.sh does, but for a file named slow.json it first leaves a `started` marker in the
 * folder given as its second argument and waits there for a `gate` file.
 */
const GATED_HOOK = `import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
const [file, markers] = process.argv.slice(2);
if (basename(file) === "slow.json") {
  writeFileSync(join(markers, "started"), "");
  while (!existsSync(join(markers, "gate"))) await new Promise((r) => setTimeout(r, 20));
}
const data = JSON.parse(readFileSync(file, "utf8"));
process.stdout.write(JSON.stringify(Array.isArray(data) ? data : [data]));
`;

const BULK_ROWS = 500;
const BULK_VERSIONS = 5;

/** Prints `rows` rows, each with `pad` characters of text tagged with the file's version. */
const BULK_HOOK = `import { readFileSync } from "node:fs";
const { rows, version, pad } = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = [];
for (let i = 0; i < rows; i++) out.push({ i, text: version + ":" + "x".repeat(pad) });
process.stdout.write(JSON.stringify(out));
`;

/** A TOML basic string holding `value`. */
function tomlString(value: string): string {
  return JSON.stringify(value);
}

/** The node binary, quoted for the hook command splitter. */
const NODE = `'${process.execPath}'`;

/** The items table, parsed by `program {path}<extra>`. */
function itemsConfig(program = "sh rows.sh", extra = ""): string {
  return `[[table]]
name = "items"
glob = "data/*.json"
schema = { name = "TEXT", n = "INTEGER" }
on-file = ${tomlString(`${program} {path}${extra}`)}
`;
}

const PATH_COLUMNS = ["path", "basename", "dir", "ext", "size", "mtime", "ctime"];

const servers: ServerProcess[] = [];

/** Starts a server that is killed after the file's tests (if a test has not stopped it). */
async function serve(
  root: string,
  args: readonly string[] = ["--host", "127.0.0.1", "--port", "0"],
  env: Record<string, string> = {},
): Promise<ServerProcess> {
  const server = await startServer(args, { cwd: root, env });
  servers.push(server);
  return server;
}

after(async () => {
  await Promise.all(servers.map((server) => server.kill()));
});

/** The CLI's JSON output for `sql` in `cwd`, expecting success. */
async function cliJson(cwd: string, sql: string, extra: readonly string[] = []): Promise<string> {
  const result = await runDirq([sql, "--format", "json", ...extra], { cwd });
  assert.equal(result.code, 0, `dirq ${sql}: ${result.stderr}`);
  return result.stdout;
}

/**
 * A fresh one-shot scan's JSON for `sql` in `cwd`: what a restarted server would answer. A
 * partial scan (exit 23: a file skipped) counts, its rows are what the others give.
 */
async function freshJson(cwd: string, sql: string, extra: readonly string[] = []): Promise<string> {
  const result = await runDirq([sql, "--format", "json", ...extra], { cwd });
  assert.ok(result.code === 0 || result.code === 23, `dirq ${sql}: ${result.stderr}`);
  return result.stdout;
}

/** The server's answer body for `sql`, expecting success. */
async function serverJson(server: ServerProcess, sql: string): Promise<string> {
  const answer = await postQuery(server, sql);
  assert.equal(answer.status, 200, `${sql}: ${answer.text}`);
  return answer.text;
}

/** The CLI's diagnostic for `sql` in `cwd`, expecting failure. */
async function cliError(cwd: string, sql: string): Promise<string> {
  const result = await runDirq([sql, "--format", "json"], { cwd });
  assert.equal(result.code, 1, `dirq ${sql} should fail: ${result.stdout}`);
  assert.match(result.stderr, /^dirq: /);
  return result.stderr.slice("dirq: ".length).trimEnd();
}

/* ------------------------------------------------------------------------------------------ */
/* Start, flags, bind failure                                                                  */
/* ------------------------------------------------------------------------------------------ */

// Independent servers: the tests run at once.
describe("dirq server: start and flags", { concurrency: true }, () => {
  let root: string;
  before(() => {
    root = tempTree({ "docs/a.md": "# a\n" });
  });

  it("--port 0 binds a free port and prints Running at localhost:<real port>", async () => {
    const server = await startServer(["--port", "0"], { cwd: root });
    servers.push(server);
    assert.equal(server.host, "localhost");
    assert.ok(server.port > 0 && server.port < 65536, `port ${server.port}`);
    assert.equal(server.stdout(), `Running at localhost:${server.port}\n`);
    // The printed address really answers.
    const rows = await queryRows(server, "SELECT 1 AS one");
    assert.deepEqual(rows, [{ one: 1 }]);
    assert.deepEqual(await server.stop("SIGTERM"), { code: 0, signal: null }, server.stderr());
  });

  it("--host 127.0.0.1 binds that address and prints it", async () => {
    const server = await serve(root, ["--host", "127.0.0.1", "--port", "0"]);
    assert.equal(server.stdout(), `Running at 127.0.0.1:${server.port}\n`);
    assert.deepEqual(await queryRows(server, "SELECT 2 AS two"), [{ two: 2 }]);
  });

  it("a port already in use: exit 1 with a clear message on stderr", async () => {
    const first = await serve(root);
    const second = await runServerToExit(
      ["--host", "127.0.0.1", "--port", String(first.port)],
      root,
    );
    assert.equal(second.exit.code, 1, `stderr: ${second.stderr}`);
    assert.doesNotMatch(second.stdout, /Running at/);
    assert.match(second.stderr, /^dirq: /);
    assert.ok(
      second.stderr.includes(`127.0.0.1:${first.port}`),
      `the message names the address: ${second.stderr}`,
    );
    assert.match(second.stderr, /EADDRINUSE|in use/i);
    assert.doesNotMatch(second.stderr, /^\s+at .+:\d+:\d+\)?$/m, "no stack trace");
    // The first server is unaffected.
    assert.deepEqual(await queryRows(first, "SELECT 3 AS three"), [{ three: 3 }]);
  });

  for (const [flag, value] of [
    ["--on-file", "cat {path}"],
    ["--format", "json"],
  ] as const) {
    it(`${flag} is rejected as an unknown argument`, async () => {
      const result = await runServerToExit(["--port", "0", flag, value], root);
      assert.equal(result.exit.code, 1, `stderr: ${result.stderr}`);
      assert.doesNotMatch(result.stdout, /Running at/);
      assert.match(result.stderr, /^dirq: /);
      assert.ok(result.stderr.includes(flag), `names ${flag}: ${result.stderr}`);
      assert.match(result.stderr, /unknown/i);
    });
  }

  it("--help prints the usage and exits 0", async () => {
    const result = await runServerToExit(["--help"], root);
    assert.equal(result.exit.code, 0, result.stderr);
    assert.match(result.stdout, /dirq server/);
    assert.match(result.stdout, /--port/);
    assert.equal(result.stderr, "");
  });

  it("--version prints the version and exits 0", async () => {
    const result = await runServerToExit(["--version"], root);
    assert.equal(result.exit.code, 0, result.stderr);
    assert.ok(result.stdout.includes(VERSION), `version in ${result.stdout}`);
    assert.equal(result.stderr, "");
  });

  it("--no-ignore serves files a .gitignore hides", async () => {
    const local = tempTree({ ".gitignore": "hidden.md\n", "shown.md": "1", "hidden.md": "2" });
    const sql = "SELECT path FROM './*.md' ORDER BY path";
    const plain = await serve(local);
    const all = await serve(local, ["--no-ignore", "--host", "127.0.0.1", "--port", "0"]);
    assert.deepEqual(await queryRows(plain, sql), [{ path: "shown.md" }]);
    assert.deepEqual(await queryRows(all, sql), [{ path: "hidden.md" }, { path: "shown.md" }]);
  });

  it("an invalid --port is a usage error", async () => {
    const result = await runServerToExit(["--port", "70000"], root);
    assert.equal(result.exit.code, 1);
    assert.match(result.stderr, /--port/);
  });
});

/* ------------------------------------------------------------------------------------------ */
/* POST /query and the other routes                                                            */
/* ------------------------------------------------------------------------------------------ */

/** Statements the server refuses with 400, and what the diagnostic must say. */
const SQL_ERRORS = [
  ["a syntax error", "SELEC 1", /syntax error/],
  ["an unknown table", "SELECT * FROM nosuch", /no such table: nosuch/],
  ["the removed table files", "SELECT * FROM files", /FROM '\.\/'/],
  ["a write (DELETE)", "DELETE FROM './docs'", /read-only/],
  ["a write (CREATE TABLE)", "CREATE TABLE t (x)", /read-only/],
  ["ATTACH", "ATTACH DATABASE 'attached.db' AS x", /ATTACH/],
  ["an internal table", "SELECT * FROM _dirq_meta", /_dirq_meta/],
  ["an internal table, any case", "SELECT * FROM _DIRQ_META", /internal/i],
  ["two statements", "SELECT 1; SELECT 2", /./],
  ["a path outside the root", "SELECT * FROM '../'", /outside/],
] as const;

describe("POST /query", () => {
  let root: string;
  let server: ServerProcess;
  /** The CLI's diagnostic for each of SQL_ERRORS, run in parallel up front. */
  const cliDiagnostics = new Map<string, Promise<string>>();
  before(async () => {
    root = tempTree({
      "docs/a.md": "# a\n",
      "docs/b.txt": "bee\n",
      "docs/deep/c.md": "see\n",
      README: "readme",
      "tab\there.txt": "tab",
    });
    for (const [, sql] of SQL_ERRORS) {
      const diagnostic = cliError(root, sql);
      diagnostic.catch(() => undefined);
      cliDiagnostics.set(sql, diagnostic);
    }
    server = await serve(root);
  });

  it("answers 200 with the same bytes as the CLI in JSON mode (path-table)", async () => {
    const sql = "SELECT * FROM './' ORDER BY path";
    const answer = await postQuery(server, sql);
    assert.equal(answer.status, 200, answer.text);
    assert.match(answer.contentType, /^application\/json\b/);
    const cli = await cliJson(root, sql);
    assert.equal(answer.text, cli);
    const rows = JSON.parse(answer.text) as Record<string, unknown>[];
    assert.deepEqual(
      rows.map((row) => row.path),
      ["README", "docs/a.md", "docs/b.txt", "docs/deep/c.md", "tab\there.txt"],
    );
    assert.deepEqual(Object.keys(rows[0] as object), PATH_COLUMNS);
  });

  it("answers a glob path-table and aggregates like the CLI", async () => {
    for (const sql of [
      "SELECT path, size FROM './docs/**/*.md' ORDER BY path",
      "SELECT ext, count(*) AS n FROM './docs' GROUP BY ext ORDER BY ext",
      "SELECT path FROM './' WHERE 0",
    ]) {
      const answer = await postQuery(server, sql);
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.text, await cliJson(root, sql), sql);
    }
  });

  it("serializes big integers, infinities, blobs and NULL exactly like the CLI", async () => {
    const sql = "SELECT 9223372036854775807 AS big, 1e999 AS inf, x'ABff' AS b, NULL AS n";
    const answer = await postQuery(server, sql);
    assert.equal(answer.status, 200, answer.text);
    assert.match(answer.contentType, /^application\/json\b/);
    assert.equal(answer.text, '[{"big":9223372036854775807,"inf":null,"b":"abff","n":null}]\n');
    assert.equal(answer.text, await cliJson(root, sql));
  });

  it("400 for a malformed JSON body", async () => {
    for (const body of ['{"sql": ', "not json", ""]) {
      assertJsonError(await postRaw(server, body), 400, /JSON/i);
    }
  });

  it("400 for a missing, empty or non-string sql", async () => {
    assertJsonError(await postRaw(server, "{}"), 400, /sql/);
    assertJsonError(await postRaw(server, '{"query": "SELECT 1"}'), 400, /sql/);
    assertJsonError(await postRaw(server, "null"), 400, /sql/);
    assertJsonError(await postRaw(server, "[]"), 400, /sql/);
    assertJsonError(await postRaw(server, '{"sql": ""}'), 400, /sql/);
    assertJsonError(await postRaw(server, '{"sql": "   "}'), 400, /sql/);
    assertJsonError(await postRaw(server, '{"sql": 5}'), 400, /sql/);
    assertJsonError(await postRaw(server, '{"sql": ["SELECT 1"]}'), 400, /sql/);
    assertJsonError(await postRaw(server, '{"sql": null}'), 400, /sql/);
  });

  for (const [what, sql, pattern] of SQL_ERRORS) {
    it(`400 for ${what}, with the CLI's diagnostic`, async () => {
      const message = assertJsonError(await postQuery(server, sql), 400, pattern);
      assert.equal(message, await cliDiagnostics.get(sql));
    });
  }

  it("ATTACH creates no file", async () => {
    await postQuery(server, "ATTACH DATABASE 'attached2.db' AS y");
    assert.equal(existsSync(join(root, "attached2.db")), false);
    assert.equal(existsSync(join(root, "attached.db")), false);
  });

  it("413 with a JSON error for a body over 1 MiB", async () => {
    const big = JSON.stringify({ sql: `SELECT 1 -- ${"x".repeat(1024 * 1024 + 10)}` });
    assertJsonError(await httpRequest(server, { method: "POST", path: "/query", body: big }), 413);
  });

  it("413 for a chunked body over 1 MiB (no content-length)", async () => {
    const big = JSON.stringify({ sql: `SELECT 1 -- ${"x".repeat(1024 * 1024 + 10)}` });
    const answer = await httpRequest(server, {
      method: "POST",
      path: "/query",
      body: big,
      chunked: true,
    });
    assertJsonError(answer, 413);
  });

  it("a body just under 1 MiB is accepted, chunked or not", async () => {
    const body = JSON.stringify({ sql: `SELECT 1 AS one -- ${"x".repeat(1000 * 1000)}` });
    for (const chunked of [false, true]) {
      const answer = await httpRequest(server, { method: "POST", path: "/query", body, chunked });
      assert.equal(answer.status, 200, answer.text.slice(0, 200));
      assert.equal(answer.text, '[{"one":1}]\n');
    }
  });

  it("after a 413, the next request on the same keep-alive connection is answered", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const big = JSON.stringify({ sql: `SELECT 1 -- ${"x".repeat(1024 * 1024 + 10)}` });
      for (const chunked of [false, true]) {
        const refused = await httpRequest(server, {
          method: "POST",
          path: "/query",
          body: big,
          chunked,
          agent,
        });
        assertJsonError(refused, 413);
        const next = await httpRequest(server, {
          method: "POST",
          path: "/query",
          body: JSON.stringify({ sql: "SELECT 1 AS one" }),
          agent,
        });
        assert.equal(next.status, 200);
        assert.equal(next.text, '[{"one":1}]\n');
      }
    } finally {
      agent.destroy();
    }
  });

  it("405 with a plain-text body for GET /query, PUT /query and POST /events", async () => {
    for (const [method, path, allow] of [
      ["GET", "/query", "POST"],
      ["PUT", "/query", "POST"],
      ["DELETE", "/query", "POST"],
      ["POST", "/events", "GET"],
      ["PUT", "/events", "GET"],
    ] as const) {
      const answer = await request(`${server.url}${path}`, { method });
      assert.equal(answer.status, 405, `${method} ${path}: ${answer.text}`);
      assert.match(answer.contentType, /^text\/plain\b/, `${method} ${path}`);
      assert.ok(answer.text.length > 0, "a body");
      assert.throws(() => JSON.parse(answer.text) as unknown, `${method} ${path} is not JSON`);
      assert.equal(answer.headers.get("allow"), allow);
    }
  });

  it("404 with a JSON error for an unknown path", async () => {
    for (const [method, path] of [
      ["GET", "/index.html"], // GET / is the web console (console.test.ts)
      ["GET", "/nope"],
      ["POST", "/query/extra"],
      ["GET", "/event"],
    ] as const) {
      assertJsonError(await request(`${server.url}${path}`, { method }), 404);
    }
  });

  it("is still healthy after every error above", async () => {
    assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM './docs'"), [{ n: 3 }]);
  });
});

/* ------------------------------------------------------------------------------------------ */
/* Degraded mode                                                                                */
/* ------------------------------------------------------------------------------------------ */

// Independent servers: the tests run at once.
describe("degraded: a -c file that cannot load", { concurrency: true }, () => {
  let root: string;
  before(() => {
    root = tempTree({
      "docs/a.md": "# a\n",
      "bad.toml": "[[table]]\nname = = 1\n",
      "unknown-key.toml": `[dirq]\nbogus_key = 1\n`,
      "no-program.toml": `[[table]]\nname = "t"\nglob = "docs/*.md"\non-file = "no-such-program-xyz {path}"\n`,
      "rows.sh": shellHook("json-rows.sh"),
    });
  });

  for (const [what, config, pattern] of [
    ["missing", "missing.toml", /missing\.toml/],
    ["invalid TOML", "bad.toml", /bad\.toml/],
    ["an unknown key", "unknown-key.toml", /bogus_key/],
    ["a hook program that does not exist", "no-program.toml", /no-such-program-xyz/],
  ] as const) {
    it(`${what}: binds, answers 503 on /query and /events, exits 0 on SIGTERM`, async () => {
      const server = await serve(root, ["-c", config, "--host", "127.0.0.1", "--port", "0"]);
      assert.equal(server.stdout(), `Running at 127.0.0.1:${server.port}\n`);
      const query = await postQuery(server, "SELECT 1");
      const message = assertJsonError(query, 503, /^failed to load config: /);
      assert.match(message, pattern);
      const events = await request(`${server.url}/events`);
      assert.equal(assertJsonError(events, 503), message);
      // The methods and unknown paths are still answered as usual.
      assert.equal((await request(`${server.url}/query`)).status, 405);
      assertJsonError(await request(`${server.url}/nope`), 404);
      assert.deepEqual(await server.stop("SIGTERM"), { code: 0, signal: null }, server.stderr());
    });
  }

  it("SIGINT also exits 0 when degraded", async () => {
    const server = await serve(root, ["-c", "missing.toml", "--host", "127.0.0.1", "--port", "0"]);
    assert.deepEqual(await server.stop("SIGINT"), { code: 0, signal: null });
  });
});

/* ------------------------------------------------------------------------------------------ */
/* Config tables                                                                                */
/* ------------------------------------------------------------------------------------------ */

describe("config tables in the server", () => {
  let root: string;
  let server: ServerProcess;
  before(async () => {
    root = tempTree({
      "rows.sh": shellHook("json-rows.sh"),
      "dirq.toml": itemsConfig(),
      "data/one.json": JSON.stringify([
        { name: "a", n: 1 },
        { name: "b", n: 2 },
      ]),
      "data/two.json": JSON.stringify({ name: "c", n: 3, extra: "dropped" }),
      "data/other.txt": "not matched",
    });
    server = await serve(root, ["-c", "dirq.toml", "--host", "127.0.0.1", "--port", "0"]);
  });

  it("answers a query on a [[table]] with the hook's rows", async () => {
    const sql = "SELECT * FROM items ORDER BY name";
    const rows = await queryRows(server, sql);
    assert.deepEqual(rows, [
      { name: "a", n: 1 },
      { name: "b", n: 2 },
      { name: "c", n: 3 },
    ]);
    const answer = await postQuery(server, sql);
    assert.equal(answer.text, await cliJson(root, sql, ["-c", "dirq.toml"]));
  });

  it("hidden columns are reachable when named", async () => {
    const rows = await queryRows(
      server,
      "SELECT _dirq_file_path AS f, _dirq_row_index AS i, name FROM items ORDER BY f, i",
    );
    assert.deepEqual(
      rows.map((row) => [row.f, row.name]),
      [
        ["data/one.json", "a"],
        ["data/one.json", "b"],
        ["data/two.json", "c"],
      ],
    );
  });

  it("config tables appear in sqlite_master", async () => {
    const rows = await queryRows(server, "SELECT name FROM sqlite_master WHERE name = 'items'");
    assert.deepEqual(rows, [{ name: "items" }]);
  });
});

/* ------------------------------------------------------------------------------------------ */
/* Signals                                                                                      */
/* ------------------------------------------------------------------------------------------ */

// Independent servers: the tests run at once.
describe("signals", { concurrency: true }, () => {
  let root: string;
  before(() => {
    root = tempTree({ "docs/a.md": "# a\n" });
  });

  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`${signal}: open /events streams are closed by the server, exit 0`, async () => {
      const server = await serve(root);
      await queryRows(server, "SELECT count(*) FROM './docs'");
      const first = await openReadyEvents(server);
      const second = await openReadyEvents(server);
      const exit = await server.stop(signal);
      assert.deepEqual(exit, { code: 0, signal: null }, server.stderr());
      assert.deepEqual(await first.ended, { how: "end" });
      assert.deepEqual(await second.ended, { how: "end" });
      assert.equal(server.stderr(), "");
    });
  }

  it("Ctrl-C (SIGINT to the whole process group) exits 0 and leaves no process behind", async () => {
    const server = await startServer(["--host", "127.0.0.1", "--port", "0"], {
      cwd: root,
      detached: true,
    });
    servers.push(server);
    // A query process is started ahead of the first query; run a statement to be sure.
    assert.deepEqual(await queryRows(server, "SELECT 1 AS one"), [{ one: 1 }]);
    const family = processTree(server.pid);
    assert.ok(family.length > 1, "the server has query processes");
    const stream = await openReadyEvents(server);
    process.kill(-server.pid, "SIGINT");
    assert.deepEqual(await server.exited, { code: 0, signal: null }, server.stderr());
    assert.deepEqual(await stream.ended, { how: "end" });
    assert.equal(server.stderr(), "");
    await eventually(
      () => family.every((pid) => cpuTicks(pid) === null),
      `processes ${family.join(", ")} end with the server`,
    );
  });

  it("a statement still running when the server stops is no internal error", async () => {
    const server = await serve(root);
    assert.deepEqual(await queryRows(server, "SELECT 1 AS one"), [{ one: 1 }]);
    const before = treeCpu(server.pid);
    // Runs far longer than the server's drain time: the pool still holds it when it closes.
    const endless = postQuery(
      server,
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1e12) SELECT count(*) FROM c",
    ).catch((error: unknown) => error);
    // Running: a query process has used a good tenth of a second since.
    await eventually(
      () =>
        [...treeCpu(server.pid)].some(
          ([pid, ticks]) => pid !== server.pid && ticks - (before.get(pid) ?? 0) > 10,
        ),
      "the statement to run",
    );
    assert.deepEqual(await server.stop("SIGTERM"), { code: 0, signal: null }, server.stderr());
    await endless;
    assert.doesNotMatch(server.stderr(), /internal error/);
  });

  it("SIGTERM stops the query processes too", async () => {
    const server = await serve(root);
    assert.deepEqual(await queryRows(server, "SELECT 1 AS one"), [{ one: 1 }]);
    const family = processTree(server.pid);
    assert.ok(family.length > 1, "the server has query processes");
    assert.deepEqual(await server.stop("SIGTERM"), { code: 0, signal: null }, server.stderr());
    await eventually(
      () => family.every((pid) => cpuTicks(pid) === null),
      `processes ${family.join(", ")} end with the server`,
    );
  });

  it("a running hook blocks no query, and SIGTERM does not wait for it", async () => {
    const markers = tempTree({});
    const local = tempTree({
      "gated.mjs": GATED_HOOK,
      "dirq.toml": itemsConfig(`${NODE} gated.mjs`, ` '${markers}'`),
      "data/a.json": JSON.stringify({ name: "a", n: 1 }),
    });
    const server = await serve(local, ["-c", "dirq.toml", "--host", "127.0.0.1", "--port", "0"]);
    assert.deepEqual(await queryRows(server, "SELECT name FROM items"), [{ name: "a" }]);
    // The watcher picks up slow.json and its hook blocks until a gate file appears (never).
    writeFileSync(join(local, "data/slow.json"), JSON.stringify({ name: "slow", n: 2 }));
    const started = join(markers, "started");
    await eventually(() => existsSync(started), "the gated hook never started", 60_000);
    // Queries are answered from the last commit while the hook runs.
    assert.deepEqual(await queryRows(server, "SELECT name FROM items"), [{ name: "a" }]);
    assert.deepEqual(await queryRows(server, "SELECT 1 AS one"), [{ one: 1 }]);
    assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM './data'"), [{ n: 2 }]);
    // A statement in flight at SIGTERM is stopped with a 503 answer; the hung hook does not
    // hold the shutdown.
    const inFlight = postQuery(
      server,
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c",
    );
    // Sequencing only: give the request time to reach the server before the signal.
    await new Promise((resolve) => setTimeout(resolve, 200));
    server.child.kill("SIGTERM");
    assertJsonError(await inFlight, 503, /shutting down/);
    assert.deepEqual(await server.exited, { code: 0, signal: null }, server.stderr());
  });
});

/* ------------------------------------------------------------------------------------------ */
/* Events                                                                                       */
/* ------------------------------------------------------------------------------------------ */

/** A path-table row for `path`, as the index should hold it now. */
function statRow(root: string, path: string): Record<string, unknown> {
  const stats = statSync(join(root, path));
  const slash = path.lastIndexOf("/");
  const basename = path.slice(slash + 1);
  const dot = basename.lastIndexOf(".");
  return {
    path,
    basename,
    dir: slash === -1 ? "" : path.slice(0, slash),
    ext: dot > 0 ? basename.slice(dot + 1) : null,
    size: stats.size,
    mtime: Math.floor(stats.mtimeMs / 1000),
    ctime: Math.floor(stats.ctimeMs / 1000),
  };
}

const isRow =
  (action: RowEvent["action"], table: string | null, file: string) =>
  (row: RowEvent): boolean =>
    row.action === action && row.table === table && row.file_path === file;

describe("GET /events", () => {
  let root: string;
  let server: ServerProcess;
  let sentinels = 0;

  before(async () => {
    root = tempTree({
      "rows.sh": shellHook("json-rows.sh"),
      "dirq.toml": itemsConfig(),
      "docs/keep.md": "keep\n",
      "docs/secret.md": "secret\n",
      "docs/old-name.md": "renamed soon\n",
      "data/x.json": JSON.stringify([
        { name: "a", n: 1 },
        { name: "b", n: 2 },
      ]),
    });
    server = await serve(root, ["-c", "dirq.toml", "--host", "127.0.0.1", "--port", "0"]);
    // Materialize the path-table: only built tables are kept current.
    assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM './docs'"), [{ n: 3 }]);
  });

  /**
   * Writes a file under the root. A write to a path changed less than 150 ms ago (by a write
   * or as seen by the last event) first waits out the rest (sequencing only): a second change
   * that close to the first is lost, a bug the "todo" test below pins down; the other tests
   * should not trip on it.
   */
  const lastWrite = new Map<string, number>();
  async function spaced(path: string): Promise<void> {
    const last = lastWrite.get(path);
    const since = last === undefined ? 0 : Math.max(last, lastFrameTime());
    const wait = since + 150 - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    lastWrite.set(path, Date.now());
  }
  /**
   * Written in a folder outside the tree and renamed into place, as editors save: the watcher
   * sees the file whole. Written in place, a loaded machine can show it empty first (an insert,
   * then an update).
   */
  let aside: string | null = null;
  let written = 0;
  async function write(path: string, content: string): Promise<void> {
    await spaced(path);
    aside ??= tempTree({});
    const staged = join(aside, `${written++}`);
    writeFileSync(staged, content);
    renameSync(staged, join(root, path));
  }

  /** Paths of './docs' in the index now. */
  async function docsPaths(): Promise<string[]> {
    const rows = await queryRows(server, "SELECT path FROM './docs' ORDER BY path");
    return rows.map((row) => row.path as string);
  }

  async function docsRow(path: string): Promise<Record<string, unknown> | undefined> {
    const rows = await queryRows(
      server,
      `SELECT * FROM './docs' WHERE path = '${path.replaceAll("'", "''")}'`,
    );
    return rows[0];
  }

  async function itemsOf(file: string): Promise<Record<string, unknown>[]> {
    return queryRows(
      server,
      `SELECT name, n FROM items WHERE _dirq_file_path = '${file}' ORDER BY _dirq_row_index`,
    );
  }

  /**
   * Creates a new file in './docs' and waits for its insert: every frame a change before it
   * caused has then arrived. Returns the frames from `mark` up to (not including) the sentinel.
   */
  async function settle(stream: EventStream, mark: number): Promise<RowEvent[]> {
    const name = `docs/sentinel-${++sentinels}.md`;
    await write(name, "s");
    await stream.next(isRow("insert", "./docs", name));
    // Every sentinel's events are left out, not only this one's: the watcher may see an
    // earlier sentinel created empty and then written, and send its `update` late, after
    // the next test began.
    return stream.rowsFrom(mark).filter((row) => !row.file_path.startsWith("docs/sentinel-"));
  }

  it("opens with text/event-stream and a ready frame carrying {}", async () => {
    const stream = await openEvents(server);
    try {
      assert.equal(stream.status, 200);
      assert.match(stream.contentType, /^text\/event-stream\b/);
      await stream.until(() => stream.frames.length > 0, "ready");
      // Its id is where a reconnect continues (docs/http.md, Resuming).
      const ready = stream.frames[0];
      assert.deepEqual([ready?.event, ready?.data], ["ready", "{}"]);
      assert.match(ready?.lines[0] ?? "", /^id: [0-9a-f]{16}-\d+$/);
      assert.deepEqual(ready?.lines.slice(1), ["event: ready", "data: {}"]);
    } finally {
      stream.close();
    }
    assert.deepEqual(await stream.ended, { how: "aborted" });
  });

  it("the async iterator yields ready first", async () => {
    const stream = await openEvents(server);
    try {
      for await (const frame of stream) {
        assert.equal(frame.event, "ready");
        break;
      }
    } finally {
      stream.close();
    }
  });

  it("path-table: create, modify, delete give insert, update, delete", async () => {
    const stream = await openReadyEvents(server);
    try {
      const mark = stream.frames.length;
      const file = "docs/new.md";
      await write(file, "one\n");
      const insert = await stream.next(isRow("insert", "./docs", file));
      assert.deepEqual(Object.keys(insert), ["action", "table", "file_path", "row", "old_row"]);
      assert.equal(insert.old_row, null);
      assert.deepEqual(Object.keys(insert.row as object), PATH_COLUMNS);
      assert.deepEqual(insert.row, statRow(root, file));
      // Published after the index has it.
      assert.deepEqual(await docsRow(file), insert.row);

      await write(file, "one, two and three\n");
      const update = await stream.next(isRow("update", "./docs", file));
      assert.deepEqual(update.old_row, insert.row);
      assert.deepEqual(update.row, statRow(root, file));
      assert.equal((update.row as { size: number }).size, 19);
      assert.deepEqual(await docsRow(file), update.row);

      unlinkSync(join(root, file));
      const deleted = await stream.next(isRow("delete", "./docs", file));
      assert.deepEqual(deleted.row, update.row);
      assert.equal(deleted.old_row, null);
      assert.equal(await docsRow(file), undefined);

      const seen = await settle(stream, mark);
      assert.deepEqual(
        seen.map((row) => `${row.action} ${row.file_path}`),
        [`insert ${file}`, `update ${file}`, `delete ${file}`],
      );
    } finally {
      stream.close();
    }
  });

  it("rename (fs.renameSync) gives a delete and an insert", async () => {
    const stream = await openReadyEvents(server);
    try {
      const before = await docsRow("docs/old-name.md");
      assert.ok(before);
      renameSync(join(root, "docs/old-name.md"), join(root, "docs/new-name.md"));
      const mark = stream.cursor;
      const deleted = await stream.next(isRow("delete", "./docs", "docs/old-name.md"));
      assert.deepEqual(deleted.row, before);
      stream.cursor = mark;
      const inserted = await stream.next(isRow("insert", "./docs", "docs/new-name.md"));
      assert.deepEqual(inserted.row, statRow(root, "docs/new-name.md"));
      const paths = await docsPaths();
      assert.ok(paths.includes("docs/new-name.md"));
      assert.ok(!paths.includes("docs/old-name.md"));
    } finally {
      stream.close();
    }
  });

  it("a directory moved in gives inserts for its files; removing it gives deletes", async () => {
    const outside = tempTree({});
    mkdirSync(join(outside, "moved/nested"), { recursive: true });
    writeFileSync(join(outside, "moved/1.md"), "1");
    writeFileSync(join(outside, "moved/2.txt"), "22");
    writeFileSync(join(outside, "moved/nested/3.md"), "333");
    const files = ["docs/moved/1.md", "docs/moved/2.txt", "docs/moved/nested/3.md"];
    const stream = await openReadyEvents(server);
    try {
      renameSync(join(outside, "moved"), join(root, "docs/moved"));
      await stream.until(
        () => files.every((file) => stream.rows().some(isRow("insert", "./docs", file))),
        `inserts for ${files.join(", ")}`,
      );
      for (const file of files) {
        const insert = stream.rows().find(isRow("insert", "./docs", file)) as RowEvent;
        assert.deepEqual(insert.row, statRow(root, file));
      }
      assert.deepEqual(
        (await docsPaths()).filter((path) => path.startsWith("docs/moved/")),
        files,
      );

      rmSync(join(root, "docs/moved"), { recursive: true });
      await stream.until(
        () => files.every((file) => stream.rows().some(isRow("delete", "./docs", file))),
        `deletes for ${files.join(", ")}`,
      );
      assert.deepEqual(
        (await docsPaths()).filter((path) => path.startsWith("docs/moved/")),
        [],
      );
    } finally {
      stream.close();
    }
  });

  it("a file created in a new nested directory gives an insert", async () => {
    const stream = await openReadyEvents(server);
    try {
      mkdirSync(join(root, "docs/fresh/er"), { recursive: true });
      // Whole (written aside, renamed): a file seen empty would give a late update too, which
      // the next test would see as a change nobody made.
      writeFileSync(join(root, "f.md.part"), "f");
      renameSync(join(root, "f.md.part"), join(root, "docs/fresh/er/f.md"));
      await stream.next(isRow("insert", "./docs", "docs/fresh/er/f.md"));
      assert.ok((await docsPaths()).includes("docs/fresh/er/f.md"));
    } finally {
      stream.close();
    }
  });

  it(".gitignore edits: ignoring a file gives a delete, un-ignoring an insert", async () => {
    const stream = await openReadyEvents(server);
    try {
      const mark = stream.frames.length;
      const before = await docsRow("docs/secret.md");
      assert.ok(before);
      await write(".gitignore", "docs/secret.md\n");
      const deleted = await stream.next(isRow("delete", "./docs", "docs/secret.md"));
      assert.deepEqual(deleted.row, before);
      assert.equal(await docsRow("docs/secret.md"), undefined);

      await write(".gitignore", "# nothing ignored\n");
      const inserted = await stream.next(isRow("insert", "./docs", "docs/secret.md"));
      assert.deepEqual(inserted.row, before);
      assert.deepEqual(await docsRow("docs/secret.md"), before);

      // Nothing else changed, so nothing else was sent.
      const seen = await settle(stream, mark);
      assert.deepEqual(
        seen.map((row) => `${row.action} ${row.table} ${row.file_path}`),
        ["delete ./docs docs/secret.md", "insert ./docs docs/secret.md"],
      );
    } finally {
      stream.close();
    }
  });

  it("config table: row-level insert/update/delete by position", async () => {
    const stream = await openReadyEvents(server);
    try {
      const mark = stream.frames.length;
      assert.deepEqual(await itemsOf("data/x.json"), [
        { name: "a", n: 1 },
        { name: "b", n: 2 },
      ]);
      await write(
        "data/x.json",
        JSON.stringify([
          { name: "a", n: 1 },
          { name: "b", n: 3 },
          { name: "c", n: 4 },
        ]),
      );
      const update = await stream.next(isRow("update", "items", "data/x.json"));
      assert.deepEqual(update.row, { name: "b", n: 3 });
      assert.deepEqual(update.old_row, { name: "b", n: 2 });
      const insert = await stream.next(isRow("insert", "items", "data/x.json"));
      assert.deepEqual(insert.row, { name: "c", n: 4 });
      assert.equal(insert.old_row, null);
      assert.deepEqual(await itemsOf("data/x.json"), [
        { name: "a", n: 1 },
        { name: "b", n: 3 },
        { name: "c", n: 4 },
      ]);

      await write("data/x.json", JSON.stringify([{ name: "a", n: 1 }]));
      await stream.until(
        () => stream.rowsFrom(mark).filter(isRow("delete", "items", "data/x.json")).length >= 2,
        "two deletes",
      );
      const deletes = stream.rowsFrom(mark).filter(isRow("delete", "items", "data/x.json"));
      assert.deepEqual(
        deletes.map((row) => [row.row, row.old_row]),
        [
          [{ name: "b", n: 3 }, null],
          [{ name: "c", n: 4 }, null],
        ],
      );
      assert.deepEqual(await itemsOf("data/x.json"), [{ name: "a", n: 1 }]);

      // This file's rows only: a late event of another file (once in CI, an extra `update`)
      // is not what this test is about; the message shows everything that came.
      const seen = await settle(stream, mark);
      assert.deepEqual(
        seen.filter((row) => row.table === "items").map((row) => row.action),
        ["update", "insert", "delete", "delete"],
        `row 0 never changed, so it was never sent; all events: ${JSON.stringify(seen)}`,
      );
    } finally {
      stream.close();
    }
  });

  it("config table: a failing hook gives an error event and the stream goes on", async () => {
    const stream = await openReadyEvents(server);
    try {
      const file = "data/y.json";
      await write(file, JSON.stringify({ name: "y", n: 10 }));
      const insert = await stream.next(isRow("insert", "items", file));
      assert.deepEqual(insert.row, { name: "y", n: 10 });

      await write(file, "{ not json");
      const error = await stream.next(isRow("error", "items", file));
      assert.deepEqual(Object.keys(error), ["action", "table", "file_path", "error"]);
      assert.equal(typeof error.error, "string");
      assert.ok((error.error as string).length > 0);
      // A file whose hook fails has no rows, as a fresh start (or a one-shot query) shows it.
      const gone = await stream.next(isRow("delete", "items", file));
      assert.deepEqual(gone.row, { name: "y", n: 10 });
      assert.deepEqual(await itemsOf(file), []);
      assert.equal(
        await serverJson(server, "SELECT name, n FROM items ORDER BY name, n"),
        await freshJson(root, "SELECT name, n FROM items ORDER BY name, n", ["-c", "dirq.toml"]),
      );

      await write(file, JSON.stringify({ name: "y", n: 11 }));
      const insert2 = await stream.next(isRow("insert", "items", file));
      assert.deepEqual(insert2.row, { name: "y", n: 11 });
      assert.deepEqual(await itemsOf(file), [{ name: "y", n: 11 }]);

      unlinkSync(join(root, file));
      const deleted = await stream.next(isRow("delete", "items", file));
      assert.deepEqual(deleted.row, { name: "y", n: 11 });
      assert.deepEqual(await itemsOf(file), []);
    } finally {
      stream.close();
    }
  });

  it("config table: a new file whose hook fails gives an error event, then its rows", async () => {
    const stream = await openReadyEvents(server);
    try {
      const file = "data/z.json";
      await write(file, "[oops");
      const error = await stream.next(isRow("error", "items", file));
      assert.match(error.error as string, /\S/);
      assert.deepEqual(await itemsOf(file), []);
      await write(file, JSON.stringify([{ name: "z", n: 1 }]));
      const insert = await stream.next(isRow("insert", "items", file));
      assert.deepEqual(insert.row, { name: "z", n: 1 });
      assert.deepEqual(await itemsOf(file), [{ name: "z", n: 1 }]);
    } finally {
      stream.close();
    }
  });

  it("config table: renaming a file gives deletes for its rows and inserts under the new name", async () => {
    await write(
      "data/before.json",
      JSON.stringify([
        { name: "r1", n: 1 },
        { name: "r2", n: 2 },
      ]),
    );
    const stream = await openReadyEvents(server);
    try {
      await eventually(
        async () => (await itemsOf("data/before.json")).length === 2,
        "before.json indexed",
      );
      renameSync(join(root, "data/before.json"), join(root, "data/after.json"));
      await stream.until(
        () =>
          stream.rows().filter(isRow("delete", "items", "data/before.json")).length === 2 &&
          stream.rows().filter(isRow("insert", "items", "data/after.json")).length === 2,
        "two deletes and two inserts",
      );
      assert.deepEqual(
        stream
          .rows()
          .filter(isRow("insert", "items", "data/after.json"))
          .map((row) => row.row),
        [
          { name: "r1", n: 1 },
          { name: "r2", n: 2 },
        ],
      );
      assert.deepEqual(await itemsOf("data/before.json"), []);
      assert.deepEqual(await itemsOf("data/after.json"), [
        { name: "r1", n: 1 },
        { name: "r2", n: 2 },
      ]);
    } finally {
      stream.close();
    }
  });

  it("an editor-style write (temp file renamed over) gives an update", async () => {
    const stream = await openReadyEvents(server);
    try {
      const mark = stream.frames.length;
      const before = await itemsOf("data/x.json");
      assert.deepEqual(before, [{ name: "a", n: 1 }]);
      await write("data/x.json.tmp", JSON.stringify([{ name: "a", n: 100 }]));
      await spaced("data/x.json");
      renameSync(join(root, "data/x.json.tmp"), join(root, "data/x.json"));
      const update = await stream.next(isRow("update", "items", "data/x.json"));
      assert.deepEqual(update.row, { name: "a", n: 100 });
      assert.deepEqual(update.old_row, { name: "a", n: 1 });
      assert.deepEqual(await itemsOf("data/x.json"), [{ name: "a", n: 100 }]);
      const seen = await settle(stream, mark);
      assert.deepEqual(
        seen.map((row) => `${row.action} ${row.table} ${row.file_path}`),
        ["update items data/x.json"],
        "no delete or insert for an atomic replace",
      );
    } finally {
      stream.close();
    }
  });

  it("the same file in a path-table and a config table gives one event per table", async () => {
    // Materialize './data' too: both tables now hold data/w.json.
    await queryRows(server, "SELECT count(*) FROM './data'");
    const stream = await openReadyEvents(server);
    try {
      // Written whole and renamed into place: a plain write can be seen empty first (an insert
      // of size 0, then an update), and this test is about one event per table, not that.
      await spaced("data/w.json");
      const staged = `${root}-w.json`;
      writeFileSync(staged, JSON.stringify({ name: "w", n: 5 }));
      renameSync(staged, join(root, "data/w.json"));
      await stream.next(isRow("insert", "items", "data/w.json"));
      stream.cursor = 1;
      const pathInsert = await stream.next(isRow("insert", "./data", "data/w.json"));
      assert.deepEqual(pathInsert.row, statRow(root, "data/w.json"));
    } finally {
      stream.close();
    }
  });

  it("a glob path-table gets events only for the files its glob matches", async () => {
    await queryRows(server, "SELECT count(*) FROM './docs/*.txt'");
    const stream = await openReadyEvents(server);
    try {
      const mark = stream.frames.length;
      mkdirSync(join(root, "docs/sub"), { recursive: true });
      await write("docs/g.txt", "txt");
      await write("docs/g.md", "md");
      await write("docs/sub/g.txt", "nested: not matched by a single *");
      const inserted = await stream.next(isRow("insert", "./docs/*.txt", "docs/g.txt"));
      assert.deepEqual(inserted.row, statRow(root, "docs/g.txt"));
      const seen = await settle(stream, mark);
      assert.deepEqual(seen.map((row) => `${row.action} ${row.table} ${row.file_path}`).sort(), [
        "insert ./docs docs/g.md",
        "insert ./docs docs/g.txt",
        "insert ./docs docs/sub/g.txt",
        "insert ./docs/*.txt docs/g.txt",
      ]);
      assert.deepEqual(await queryRows(server, "SELECT path FROM './docs/*.txt' ORDER BY path"), [
        { path: "docs/g.txt" },
      ]);
    } finally {
      stream.close();
    }
  });

  it("a change soon after the previous change's event is not lost", async () => {
    const file = "docs/twice.md";
    const stream = await openReadyEvents(server);
    try {
      writeFileSync(join(root, file), "v0");
      await stream.next(isRow("insert", "./docs", file));
      for (let i = 1; i <= 5; i++) {
        // Two writes in a row, the second as soon as the first one's event arrived.
        await spaced(file);
        writeFileSync(join(root, file), "x".repeat(10 * i));
        await stream.next(
          (row) =>
            isRow("update", "./docs", file)(row) && (row.row as { size: number }).size === 10 * i,
        );
        writeFileSync(join(root, file), "y".repeat(10 * i + 5));
        await stream.next(
          (row) =>
            isRow("update", "./docs", file)(row) &&
            (row.row as { size: number }).size === 10 * i + 5,
          3_000,
        );
        assert.equal((await docsRow(file))?.size, 10 * i + 5);
      }
    } finally {
      stream.close();
      unlinkSync(join(root, file));
    }
  });

  it("50 subscribers at once all get the event", async () => {
    const streams = await Promise.all(Array.from({ length: 50 }, () => openReadyEvents(server)));
    try {
      await write("docs/for-everyone.md", "hello all");
      await Promise.all(
        streams.map((stream) => stream.next(isRow("insert", "./docs", "docs/for-everyone.md"))),
      );
    } finally {
      for (const stream of streams) stream.close();
    }
    await Promise.all(streams.map((stream) => stream.ended));
    // Closed subscribers do not disturb the server.
    assert.deepEqual(await queryRows(server, "SELECT 1 AS ok"), [{ ok: 1 }]);
    const stream = await openReadyEvents(server);
    try {
      unlinkSync(join(root, "docs/for-everyone.md"));
      await stream.next(isRow("delete", "./docs", "docs/for-everyone.md"));
    } finally {
      stream.close();
    }
  });
});

/* ------------------------------------------------------------------------------------------ */
/* A lagging subscriber                                                                        */
/* ------------------------------------------------------------------------------------------ */

describe("a lagging /events subscriber", () => {
  it("a subscriber that keeps up gets every event of one large change", async () => {
    const rows = (v: number) =>
      JSON.stringify(Array.from({ length: 1100 }, (_, i) => ({ name: `r${i}`, n: v })));
    const root = tempTree({
      "rows.sh": shellHook("json-rows.sh"),
      "dirq.toml": itemsConfig(),
      "data/big.json": rows(0),
    });
    const server = await serve(root, ["-c", "dirq.toml", "--host", "127.0.0.1", "--port", "0"]);
    const stream = await openReadyEvents(server);
    try {
      // Written aside and renamed: the hook never reads half a file, even on a loaded machine.
      writeFileSync(join(root, "big.next"), rows(1));
      renameSync(join(root, "big.next"), join(root, "data/big.json"));
      // The index has all 1100 new rows...
      await eventually(
        async () =>
          (await queryRows(server, "SELECT count(*) AS n FROM items WHERE n = 1"))[0]?.n === 1100,
        "all rows updated in the index",
      );
      // ...and a prompt subscriber gets all 1100 updates.
      await stream.until(() => stream.rowCount() >= 1100, "1100 updates");
      assert.equal(stream.rows().filter(isRow("update", "items", "data/big.json")).length, 1100);
    } finally {
      stream.close();
      await server.kill();
    }
  });

  it("gets a reset for the overflow, keeps receiving, and never grows the server's memory", async (t) => {
    // Long names make path-table events about 1 KB; the bulk table's rows make its update
    // events about 8 KB, so the stuck client's kernel buffers (a few MB) fill up for sure.
    const long = "d".repeat(200);
    const bulk = (version: number) => JSON.stringify({ rows: BULK_ROWS, version, pad: 4000 });
    const root = tempTree({
      [`docs/${long}/`]: "",
      "bulk.mjs": BULK_HOOK,
      "dirq.toml": `[[table]]
name = "bulk"
glob = "data/*.json"
schema = { i = "INTEGER", text = "TEXT" }
on-file = ${tomlString(`${NODE} bulk.mjs {path}`)}
`,
      "data/bulk.json": bulk(0),
    });
    // A history of 1,024 frames (the default is 65,536): the stuck client falls behind it.
    const server = await serve(root, ["-c", "dirq.toml", "--host", "127.0.0.1", "--port", "0"], {
      DIRQ_EVENT_HISTORY_FRAMES: "1024",
      // Cut off once it is that far behind and its socket took nothing for 200 ms (5 s by
      // default): long before the test ends.
      DIRQ_EVENT_STALL_MS: "200",
    });
    assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM './docs'"), [{ n: 0 }]);
    assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM bulk"), [{ n: BULK_ROWS }]);
    const rssAtStart = rssBytes(server.pid);
    const normal = await openReadyEvents(server);
    const stuck = await openStuckSubscriber("127.0.0.1", server.port);
    try {
      // 600 files created, then deleted: 1200 path-table events.
      const perRound = 600;
      const name = (i: number) =>
        `docs/${long}/file-${String(i).padStart(4, "0")}-${"f".repeat(150)}.txt`;
      // Each file and version appears whole (written aside, then renamed): on a loaded machine
      // the watcher can see a file between its creation and its write, an empty file that the
      // write then updates, and a hook can read a half-written one.
      const stage = join(root, "staging");
      mkdirSync(stage);
      const writeWhole = (path: string, text: string) => {
        const aside = join(stage, "next");
        writeFileSync(aside, text);
        renameSync(aside, join(root, path));
      };
      for (let i = 0; i < perRound; i++) writeWhole(name(i), `${i}`);
      let expected = perRound;
      const received = (what: string) =>
        normal.until(() => normal.rowCount() >= expected, what, 60_000);
      await received(`${expected} events on the normal subscriber`);
      for (let i = 0; i < perRound; i++) unlinkSync(join(root, name(i)));
      expected += perRound;
      await received(`${expected} events on the normal subscriber`);
      // Then new versions of the bulk file, each updating every row: 2500 events.
      for (let version = 1; version <= BULK_VERSIONS; version++) {
        // Sequencing only: a rewrite within 50 ms of the last one may be lost (see the todo).
        await new Promise((resolve) => setTimeout(resolve, 100));
        writeWhole("data/bulk.json", bulk(version));
        expected += BULK_ROWS;
        await received(`${expected} events (bulk version ${version})`);
      }

      // The normal subscriber got every event, exactly once, in order.
      const rows = normal.rows();
      const kinds = new Map<string, number>();
      for (const row of rows) {
        const kind = `${row.action} ${row.table}`;
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      }
      assert.equal(rows.length, expected, `events by kind: ${JSON.stringify([...kinds])}`);
      for (let i = 0; i < perRound; i++) {
        const file = name(i);
        assert.equal(rows.filter(isRow("insert", "./docs", file)).length, 1, file);
        assert.equal(rows.filter(isRow("delete", "./docs", file)).length, 1, file);
      }
      const updates = rows.filter(isRow("update", "bulk", "data/bulk.json"));
      assert.equal(updates.length, BULK_VERSIONS * BULK_ROWS);
      updates.forEach((row, k) => {
        const version = Math.floor(k / BULK_ROWS) + 1;
        assert.equal((row.row as { text: string }).text.slice(0, 2), `${version}:`);
        assert.equal((row.old_row as { text: string }).text.slice(0, 2), `${version - 1}:`);
      });

      // Still responsive, with bounded memory.
      assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM './docs'"), [{ n: 0 }]);
      const rss = rssBytes(server.pid);
      t.diagnostic(
        `server RSS ${Math.round(rssAtStart / 1e6)} MB at start, ${Math.round(rss / 1e6)} MB with a stuck subscriber after ${expected} events`,
      );
      assert.ok(rss < 300 * 1024 * 1024, `server RSS ${Math.round(rss / 1e6)} MB`);

      // The stuck client starts reading again: it missed the overflow but gets new events.
      stuck.resume();
      writeFileSync(
        join(root, "data/marker.json"),
        JSON.stringify({ rows: 1, version: 9, pad: 1 }),
      );
      await normal.next(isRow("insert", "bulk", "data/marker.json"));
      await stuck.waitFor('"data/marker.json"', 60_000);
      const { head, body } = decodeChunkedResponse(stuck.received());
      assert.match(head, /^HTTP\/1\.1 200 /);
      const frames: SseFrame[] = [];
      new SseParser((frame) => frames.push(frame)).push(body);
      assert.equal(frames[0]?.event, "ready");
      // One reset where it fell behind the history: it knows to query again.
      assert.equal(frames.filter((frame) => frame.event === "reset").length, 1);
      const lagged = frames
        .filter((frame) => frame.event === "row")
        .map((frame) => withoutCommit(JSON.parse(frame.data) as RowEvent & { commit?: unknown }));
      t.diagnostic(`the lagging subscriber got ${lagged.length} of ${expected + 1} row frames`);
      // What it got is whole frames, in publication order, ending with the new event.
      assert.ok(lagged.length < expected, "the stuck subscriber's backlog was bounded");
      assert.deepEqual(lagged.at(-1), normal.rows().at(-1));
      const order = new Map(normal.rows().map((row, k) => [JSON.stringify(row), k]));
      let last = -1;
      for (const row of lagged) {
        const k = order.get(JSON.stringify(row));
        assert.ok(k !== undefined && k > last, "a frame the normal subscriber got, in order");
        last = k;
      }
    } finally {
      normal.close();
      stuck.close();
    }
    assert.deepEqual(await server.stop("SIGTERM"), { code: 0, signal: null }, server.stderr());
  });
});
