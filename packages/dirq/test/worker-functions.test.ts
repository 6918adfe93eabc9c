import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, afterEach, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { assertUserError, DIRQ_BIN, makeTree, parseRows, removeTree, runDirq } from "./helpers.js";
import {
  assertJsonError,
  eventually,
  postQuery,
  queryRows,
  type ServerProcess,
  startServer,
} from "./server-support.js";

/**
 * A worker as a user would write one: newline-delimited JSON on stdin and stdout, exits at end
 * of input. It logs each request's arguments to the file named by its first argument, and its
 * pid to pids.log, so tests can count round trips and processes. Special arguments make it
 * misbehave. With a second argument `spawn`, it starts a child of its own (a `sleep`).
 */
const WORKER = `
import { spawn, spawnSync } from "node:child_process";
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";
const [log = "calls.log", mode] = process.argv.slice(2);
appendFileSync("pids.log", process.pid + "\\n");
if (mode === "spawn") {
  const child = spawn("sleep", ["1000"], { stdio: "ignore" });
  appendFileSync("children.log", child.pid + "\\n");
}
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const { id, args } = JSON.parse(line);
  appendFileSync(log, JSON.stringify(args) + "\\n");
  const reply = (body) => process.stdout.write(JSON.stringify({ id, ...body }) + "\\n");
  const [first] = args;
  if (first === "boom") return reply({ error: "boom is not a word I upper-case" });
  if (first === "crash") {
    process.stderr.write("worker: crashing on purpose\\n");
    process.exit(3);
  }
  if (first === "garbage") return process.stdout.write("this is not json\\n");
  // In one write with its reply: a blank line, or a response to a request never made.
  if (first === "blank") return process.stdout.write("\\n" + JSON.stringify({ id, result: "BLANK" }) + "\\n");
  if (first === "stray") return process.stdout.write('{"id":-7,"result":"x"}\\n' + JSON.stringify({ id, result: "STRAY" }) + "\\n");
  if (first === "hang") return appendFileSync("hang.log", process.pid + "\\n");
  if (first === null) return reply({ result: null });
  const text = String(first);
  reply({
    result: args.length > 1 ? args.map(String).join("+") : text.toUpperCase(),
    ...(text.startsWith("c") ? { meta: { cached: true } } : {}),
  });
});
// The rule for worker authors: when stdin ends, dirq is gone; exit.
lines.on("close", () => process.exit(0));
`;

const CONFIG = `
[[dirq.function]]
name = "up"
command = "node worker.mjs calls.log"
deterministic = true

[[dirq.function]]
name = "up_each"
command = "node worker.mjs each.log"

[[dirq.function]]
name = "up_spawn"
command = "node worker.mjs spawn.log spawn"
deterministic = true
`;

/** The test folder: the indexed tree in `tree/`, configs and workers (and their logs) in `cfg/`. */
let base: string;
/** The index root, where dirq runs. */
let root: string;
/** The config's folder: the workers' working directory, where they write their logs. */
let cfg: string;

before(() => {
  base = makeTree({
    "cfg/worker.mjs": WORKER,
    "cfg/dirq.toml": CONFIG,
    "cfg/sub/relative.toml": `[[dirq.function]]\nname = "up"\ncommand = "node ../worker.mjs calls.log"\n`,
    "tree/notes/a.md": "a",
    "tree/notes/b.md": "bb",
    "tree/notes/c.md": "ccc",
    "tree/notes/cat.txt": "meow",
    "tree/notes/d.txt": "dddd",
  });
  root = join(base, "tree");
  cfg = join(base, "cfg");
});

after(() => removeTree(base));

/** The config, as given on the command line from the root. */
const CONFIG_ARG = "../cfg/dirq.toml";

/** Forgets what earlier tests' workers logged. */
function clearLogs(): void {
  for (const name of [
    "calls.log",
    "each.log",
    "spawn.log",
    "pids.log",
    "children.log",
    "hang.log",
  ]) {
    rmSync(join(cfg, name), { force: true });
    rmSync(join(cfg, "sub", name), { force: true });
  }
}

function logLines(name: string): string[] {
  const path = join(cfg, name);
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8").split("\n").filter(Boolean);
}

function pids(name = "pids.log"): number[] {
  return logLines(name).map(Number);
}

/** Alive and not a zombie. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

async function query(sql: string, env: Record<string, string> = {}) {
  return runDirq([sql, "-c", CONFIG_ARG, "--format", "json"], { cwd: root, env });
}

async function queryOk(sql: string): Promise<Record<string, unknown>[]> {
  const result = await query(sql);
  assert.equal(result.code, 0, result.stderr);
  return parseRows(result.stdout);
}

describe("worker-backed functions in a one-shot query", () => {
  afterEach(clearLogs);

  it("answers every row from one worker process, one round trip per distinct argument", async () => {
    const rows = await queryOk("SELECT path, up(basename) AS u FROM './notes' ORDER BY path");
    assert.deepEqual(rows, [
      { path: "notes/a.md", u: "A.MD" },
      { path: "notes/b.md", u: "B.MD" },
      { path: "notes/c.md", u: "C.MD" },
      { path: "notes/cat.txt", u: "CAT.TXT" },
      { path: "notes/d.txt", u: "D.TXT" },
    ]);
    assert.equal(pids().length, 1, "one worker process for the whole query");
    assert.equal(logLines("calls.log").length, 5);
  });

  it("deterministic: identical arguments in one query are sent once", async () => {
    const rows = await queryOk("SELECT up(ext) AS u, count(*) AS n FROM './notes' GROUP BY 1");
    assert.deepEqual(rows, [
      { u: "MD", n: 3 },
      { u: "TXT", n: 2 },
    ]);
    assert.deepEqual(logLines("calls.log").sort(), ['["md"]', '["txt"]']);
  });

  it("not deterministic: every call is its own round trip", async () => {
    const rows = await queryOk("SELECT up_each(ext) AS u FROM './notes' ORDER BY path");
    assert.deepEqual(
      rows.map((row) => row.u),
      ["MD", "MD", "MD", "TXT", "TXT"],
    );
    assert.equal(logLines("each.log").length, 5);
  });

  it("several arguments, SQL types, and calls that depend on other calls' answers", async () => {
    const rows = await queryOk(
      "SELECT up(1, 'x', 2.5, NULL) AS many, up(up(basename)) AS twice, " +
        "up(NULL) AS none FROM './notes' WHERE up(ext) = 'TXT' ORDER BY path",
    );
    assert.deepEqual(rows, [
      { many: "1+x+2.5+null", twice: "CAT.TXT", none: null },
      { many: "1+x+2.5+null", twice: "D.TXT", none: null },
    ]);
  });

  it("an integer, a real and a text argument are different calls; a repeat is one only when deterministic", async () => {
    const sql = (fn: string) =>
      `SELECT ${fn}(1) AS a, ${fn}(1) AS b, ${fn}('1') AS c, ${fn}(1.0) AS d, ${fn}(2) AS e`;
    assert.deepEqual(await queryOk(sql("up")), [{ a: "1", b: "1", c: "1", d: "1", e: "2" }]);
    assert.deepEqual(logLines("calls.log").sort(), ['["1"]', "[1]", "[1]", "[2]"]);
    assert.deepEqual(await queryOk(sql("up_each")), [{ a: "1", b: "1", c: "1", d: "1", e: "2" }]);
    assert.equal(logLines("each.log").length, 5);
  });

  it("resolves a relative command against the config file's folder", async () => {
    const result = await runDirq(["SELECT up('x') AS u", "-c", "../cfg/sub/relative.toml"], {
      cwd: root,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(parseRows(result.stdout), [{ u: "X" }]);
    // The worker ran in the config's folder.
    assert.equal(logLines("sub/calls.log").length, 1);
  });

  it("progress: round trips and cache hits, then a summary", async () => {
    const result = await query("SELECT up(basename) FROM './notes'", { DIRQ_PROGRESS: "always" });
    assert.equal(result.code, 0, result.stderr);
    const lines = result.stderr.split("\n");
    // c.md and cat.txt are answered from the worker's cache (meta.cached).
    assert.ok(lines.includes("dirq: running 5 worker calls (2 cached)"), result.stderr);
    assert.match(result.stderr, /^dirq: ran 5 worker calls in \d+(ms|\.\d\ds)$/m);
  });

  it("progress: no worker line for a query that calls no worker", async () => {
    const result = await query("SELECT upper(path) FROM './notes'", { DIRQ_PROGRESS: "always" });
    assert.equal(result.code, 0, result.stderr);
    assert.doesNotMatch(result.stderr, /worker/);
    assert.deepEqual(pids(), [], "no worker was started");
  });

  it("a worker's error fails the query with its message", async () => {
    const result = await query("SELECT up(basename), up('boom') FROM './notes'");
    assertUserError(result, "worker function up: boom is not a word I upper-case");
  });

  it("a worker that dies mid-query fails it with a clear message", async () => {
    const result = await query("SELECT up('crash')");
    const message = assertUserError(result, /worker function up \(node worker\.mjs calls\.log\)/);
    assert.match(message, /exited with status 3 while answering/);
    assert.match(message, /crashing on purpose/);
  });

  it("a blank line among a worker's replies is skipped; a reply to no request fails the query, quoting it", async () => {
    const blank = await query("SELECT up('blank') AS v");
    assert.equal(blank.code, 0, blank.stderr);
    assert.deepEqual(JSON.parse(blank.stdout), [{ v: "BLANK" }]);
    const stray = await query("SELECT up('stray')");
    assertUserError(
      stray,
      /printed "\{\\"id\\":-7,\\"result\\":\\"x\\"\}", whose id answers no request in flight/,
    );
  });

  it("a worker that prints garbage fails the query, quoting it", async () => {
    const result = await query("SELECT up('garbage')");
    assertUserError(result, /printed "this is not json", which is not a JSON response/);
  });

  it("a worker that cannot start is an error naming the function and its config", async () => {
    const config = join(cfg, "missing.toml");
    const text = `[[dirq.function]]\nname = "nope"\ncommand = "./no-such-worker"\n`;
    await import("node:fs").then((fs) => fs.writeFileSync(config, text));
    const result = await runDirq(["SELECT nope(1)", "-c", "../cfg/missing.toml"], { cwd: root });
    assertUserError(
      result,
      /worker function nope .*cannot be started.*missing\.toml: dirq\.function\[0\]/,
    );
  });

  it("a statement that never names a function starts no worker", async () => {
    assert.deepEqual(await queryOk("SELECT 'up' AS word, upper('x') AS u"), [
      { word: "up", u: "X" },
    ]);
    assert.deepEqual(pids(), []);
  });

  it("a function named only inside a string: its early-started worker gets no call and is gone after exit", async () => {
    assert.deepEqual(await queryOk("SELECT 'up(x)' AS text"), [{ text: "up(x)" }]);
    // The one-shot CLI starts a worker when the text reads like a call (docs/extensions.md).
    const started = pids();
    assert.ok(started.length <= 1, `at most one worker started: ${started.join(", ")}`);
    assert.deepEqual(logLines("calls.log"), [], "no request was sent");
    await eventually(() => started.every((pid) => !alive(pid)), "the worker is gone");
  });

  it("leaves no process behind: the worker and what it started are gone after exit", async () => {
    const rows = await queryOk("SELECT up_spawn('x') AS u");
    assert.deepEqual(rows, [{ u: "X" }]);
    const started = [...pids(), ...pids("children.log")];
    assert.equal(started.length, 2);
    await eventually(() => started.every((pid) => !alive(pid)), "worker processes exit");
  });

  for (const how of ["SIGINT", "SIGTERM", "SIGHUP", "Ctrl-C"] as const) {
    it(`${how} while a worker answers: dirq ends as the signal says; the worker and the helper it started are gone`, async () => {
      // Ctrl-C at a terminal is SIGINT to dirq's whole process group (not the worker's own).
      const child = spawn(
        process.execPath,
        [DIRQ_BIN, "SELECT up_spawn('hang')", "-c", CONFIG_ARG],
        { cwd: root, stdio: "ignore", detached: how === "Ctrl-C" },
      );
      const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
        child.on("exit", (code, signal) => resolve({ code, signal })),
      );
      await eventually(
        () => pids("hang.log").length === 1 && pids("children.log").length === 1,
        "the worker got the call and started its helper",
      );
      const started = [...pids("hang.log"), ...pids("children.log")];
      assert.ok(started.every(alive));
      if (how === "Ctrl-C") process.kill(-(child.pid as number), "SIGINT");
      else child.kill(how);
      assert.deepEqual(await exited, { code: null, signal: how === "Ctrl-C" ? "SIGINT" : how });
      await eventually(() => started.every((pid) => !alive(pid)), "worker and helper are gone");
    });
  }

  it("leaves no worker behind after dirq is killed with SIGKILL mid-query", async () => {
    const child = spawn(process.execPath, [DIRQ_BIN, "SELECT up('hang')", "-c", CONFIG_ARG], {
      cwd: root,
      stdio: "ignore",
    });
    await eventually(() => pids("hang.log").length === 1, "the worker got the call");
    const [worker] = pids("hang.log");
    assert.ok(worker !== undefined && alive(worker));
    child.kill("SIGKILL");
    // Its stdin reaches end of file: the worker exits.
    await eventually(() => !alive(worker), "the worker exits after dirq was killed");
  });
});

describe("worker-backed functions in the library", () => {
  afterEach(clearLogs);

  it("overlapping queries on one index each get their own answers", async () => {
    const { openIndex } = await import("../src/engine.js");
    const { loadConfigs } = await import("../src/config/load-config.js");
    const index = openIndex({ root, config: loadConfigs([CONFIG_ARG], root), progress: false });
    try {
      const statements = ["a", "b", "c"].map((x) => `SELECT up('${x}') AS u, up_each('${x}') AS e`);
      const results = await Promise.all(statements.map((sql) => index.queryObjects(sql)));
      assert.deepEqual(results, [[{ u: "A", e: "A" }], [{ u: "B", e: "B" }], [{ u: "C", e: "C" }]]);
    } finally {
      index.close();
    }
  });
});

describe("worker-backed functions in an SDK script", () => {
  afterEach(clearLogs);

  /** Runs a script that opens the index with the test config and runs `body`. */
  function runScript(body: string) {
    const index = fileURLToPath(new URL("../src/index.js", import.meta.url));
    const script = `import { readFileSync } from "node:fs";
import { open } from ${JSON.stringify(index)};
const db = open({ root: ${JSON.stringify(root)}, configs: [${JSON.stringify(join(cfg, "dirq.toml"))}], progress: false });
${body}`;
    // A script that hangs is stopped after a minute and fails the test; it never should.
    return spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      cwd: cfg,
      encoding: "utf8",
      timeout: 60_000,
    });
  }

  it("a script that called a worker function and never closes the index ends by itself, leaving no worker", async () => {
    const run = runScript(
      `console.log(JSON.stringify(await db.query("SELECT up_spawn('x') AS u")));`,
    );
    assert.equal(run.signal, null, "the script ended by itself");
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, '[{"u":"X"}]\n');
    const started = [...pids(), ...pids("children.log")];
    assert.equal(started.length, 2, "the worker and its helper ran");
    await eventually(() => started.every((pid) => !alive(pid)), "worker and helper are gone");
  });

  it("close() ends the worker and its helper while the script still runs", async () => {
    const run = runScript(`console.log(JSON.stringify(await db.query("SELECT up_spawn('x') AS u")));
await db.close();
const pids = ["pids.log", "children.log"].flatMap((name) => readFileSync(name, "utf8").split("\\n").filter(Boolean).map(Number));
const alive = (pid) => { try { const stat = readFileSync("/proc/" + pid + "/stat", "utf8"); return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z"; } catch { return false; } };
// The script goes on (its timers keep it alive): only close() can have ended them.
for (let i = 0; i < 200 && pids.some(alive); i++) await new Promise((resolve) => setTimeout(resolve, 50));
console.log(pids.length, pids.some(alive) ? "alive" : "gone");`);
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, '[{"u":"X"}]\n2 gone\n');
  });
});

describe("worker-backed functions in the server", () => {
  let server: ServerProcess;
  before(async () => {
    clearLogs();
    // An 8-second statement limit (not 30 s): the hanging worker's test waits for it.
    server = await startServer(["--port", "0", "-c", CONFIG_ARG], {
      cwd: root,
      env: { DIRQ_QUERY_TIMEOUT_MS: "8000" },
    });
  });
  after(async () => {
    await server.kill();
    clearLogs();
  });

  it("answers from the query processes", async () => {
    const rows = await queryRows(server, "SELECT up(basename) AS u FROM './notes' ORDER BY path");
    assert.deepEqual(
      rows.map((row) => row.u),
      ["A.MD", "B.MD", "C.MD", "CAT.TXT", "D.TXT"],
    );
  });

  it("caches a statement with deterministic functions only, never one with others", async () => {
    const deterministic = "SELECT up(ext) AS u FROM './notes' ORDER BY path";
    await queryRows(server, deterministic);
    const before = logLines("calls.log").length;
    await queryRows(server, deterministic);
    assert.equal(logLines("calls.log").length, before, "answered from the result cache");

    const volatile = "SELECT up_each(ext) AS u FROM './notes' ORDER BY path";
    await queryRows(server, volatile);
    const first = logLines("each.log").length;
    await queryRows(server, volatile);
    assert.equal(logLines("each.log").length, 2 * first, "ran again");
  });

  it("a worker error is a 400 with its message; the worker answers the next query", async () => {
    assertJsonError(await postQuery(server, "SELECT up('boom')"), 400, /boom is not a word/);
    assert.deepEqual(await queryRows(server, "SELECT up('after') AS u"), [{ u: "AFTER" }]);
  });

  it("a worker that crashes fails the query; the next query gets a fresh worker", async () => {
    const startedBefore = pids().length;
    assertJsonError(
      await postQuery(server, "SELECT up('crash')"),
      400,
      /worker function up .*exited with status 3/,
    );
    assert.deepEqual(await queryRows(server, "SELECT up('again') AS u"), [{ u: "AGAIN" }]);
    assert.ok(pids().length > startedBefore, "a new worker process was started");
  });

  it("a worker that prints garbage fails the query; the next query works", async () => {
    assertJsonError(await postQuery(server, "SELECT up('garbage')"), 400, /not a JSON response/);
    assert.deepEqual(await queryRows(server, "SELECT up('fine') AS u"), [{ u: "FINE" }]);
  });

  it("a worker that hangs past the query timeout is stopped; the next query gets a fresh one", async () => {
    const answer = await postQuery(server, "SELECT up('hang') AS u");
    assertJsonError(answer, 408, /timeout/);
    const hung = pids("hang.log");
    assert.equal(hung.length, 1, "one worker got the call");
    await eventually(() => hung.every((pid) => !alive(pid)), "the hung worker is killed");
    assert.deepEqual(await queryRows(server, "SELECT up('next') AS u"), [{ u: "NEXT" }]);
  });

  it("no worker is left behind after the server is killed with SIGKILL", async () => {
    const own = await startServer(["--port", "0", "-c", CONFIG_ARG], { cwd: root });
    const before = new Set(pids());
    await queryRows(own, "SELECT up('one more') AS u, up_each('x') AS e");
    const started = pids().filter((pid) => !before.has(pid));
    assert.ok(started.length >= 2, `workers started: ${started.join(", ")}`);
    await own.stop("SIGKILL");
    await eventually(() => started.every((pid) => !alive(pid)), "workers exit");
  });
});
