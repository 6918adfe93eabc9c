// The smoke suite of the packed-install matrix (see matrix.mjs, which runs it once per Node
// version, under that Node, with the packed tarballs installed in a clean prefix). Plain
// JavaScript and Node's own test runner: it runs on the oldest Node we support as it is.
//
// Environment (set by matrix.mjs):
//   SMOKE_PREFIX        the folder the tarballs were installed into (its node_modules/.bin)
//   SMOKE_NODE_VERSION  the Node version this run must be on (x.y.z); its folder is first on PATH
//   SMOKE_INSTALL_LOG   npm's output of that install
//   SMOKE_IGNORE_SCRIPTS_PREFIX  where dirq alone was installed with --ignore-scripts (the floor
//                      and the newest Node only; unset, that case is skipped and says why)
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { writeFileSync } from "node:fs";
import { createServer, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

const PREFIX = required("SMOKE_PREFIX");
const NODE_VERSION = required("SMOKE_NODE_VERSION");
const INSTALL_LOG = required("SMOKE_INSTALL_LOG");
const IGNORE_SCRIPTS_PREFIX = process.env.SMOKE_IGNORE_SCRIPTS_PREFIX ?? "";
const MAJOR = Number(NODE_VERSION.split(".")[0]);
const TIMEOUT_MS = 60_000;

function required(name) {
  const value = process.env[name];
  if (!value)
    throw new Error(`${name} is not set: run this suite through packed-install/matrix.mjs`);
  return value;
}

const bin = (name) => join(PREFIX, "node_modules", ".bin", name);
let work;
let env;

before(() => {
  work = mkdtempSync(join(tmpdir(), `packed-smoke-${NODE_VERSION}-`));
  // A code cache folder of this run's own unless the matrix shares one across Node versions.
  env = {
    ...process.env,
    DIRQ_PROGRESS: "never",
    XDG_CACHE_HOME: process.env.XDG_CACHE_HOME ?? join(work, "cache"),
  };
  delete env.RUSTREG_DOCTOR_TOKEN;
});
after(() => rmSync(work, { recursive: true, force: true }));

/** Runs a program to its end: exit code, stdout and stderr (never throws on a non-zero exit). */
function run(file, args, { cwd = work, input, extraEnv = {}, timeoutMs = TIMEOUT_MS } = {}) {
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      args,
      { cwd, env: { ...env, ...extraEnv }, timeout: timeoutMs, maxBuffer: 1 << 24 },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== "number") reject(error);
        else resolve({ code: error ? error.code : 0, stdout, stderr });
      },
    );
    // A program that exits before reading its input is not this suite's failure.
    child.stdin.on("error", () => {});
    child.stdin.end(input ?? "");
  });
}

function tree(name, files) {
  const root = join(work, name);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

describe(`packed install on Node ${NODE_VERSION}`, () => {
  test("runs on the Node it was asked for, which is also `node` on PATH", async () => {
    assert.equal(process.version, `v${NODE_VERSION}`);
    const onPath = await run("node", ["--version"]);
    assert.equal(onPath.stdout.trim(), `v${NODE_VERSION}`);
  });

  test("npm installed it: only SQLite's binding warns about engines, on Node 20 and 26 only", () => {
    const log = readFileSync(INSTALL_LOG, "utf8");
    const warned = [...log.matchAll(/EBADENGINE\s+package: '([^']+)'/g)].map((m) => m[1]);
    // @rocicorp/zero-sqlite3 declares "22.x || 24.x" but carries its addon prebuilt for Node
    // 20 and 26 too (ABI 115 and 147): the warning is expected there, and only there
    // (docs/install.md).
    const declared = MAJOR === 22 || MAJOR === 24;
    assert.deepEqual(warned, declared ? [] : ["@rocicorp/zero-sqlite3@1.1.4"], log);
    assert.doesNotMatch(log, /npm (error|ERR!)/, log);
    // npm 11 lists the install scripts it has no approval for: none of ours has one.
    const unapproved = [...log.matchAll(/npm warn install-scripts {3}(\S+)@/g)].map((m) => m[1]);
    assert.deepEqual(
      unapproved.filter((name) => name !== "@rocicorp/zero-sqlite3"),
      [],
      log,
    );
    // Nothing compiled SQLite: its package has no build folder, the prebuilt addon is used.
    const sqlite = join(PREFIX, "node_modules", "@rocicorp", "zero-sqlite3");
    assert.ok(existsSync(sqlite), "zero-sqlite3 is installed");
    assert.ok(!existsSync(join(sqlite, "build")), "zero-sqlite3 compiled nothing at install");
  });

  test("the tarballs installed their manifests' metadata and licenses", () => {
    for (const name of ["dirq", "pubtool", "lmclient"]) {
      const folder = join(PREFIX, "node_modules", name);
      const manifest = JSON.parse(readFileSync(join(folder, "package.json"), "utf8"));
      assert.ok(existsSync(join(folder, "LICENSE")), `${name} ships LICENSE`);
      for (const field of ["repository", "bugs", "homepage"]) {
        assert.ok(manifest[field], `${name}'s package.json has ${field}`);
      }
    }
  });

  test("dirq: one-shot query, --version and init; the code cache is this Node's own", async () => {
    const root = tree("one-shot", { "a.txt": "hello\n", "docs/b.md": "# b\n" });
    const sql = "SELECT path, size FROM './' ORDER BY path";
    const expected = [
      { path: "a.txt", size: 6 },
      { path: "docs/b.md", size: 4 },
    ];
    // The first run writes this Node build's code cache, the second compiles from it.
    for (const attempt of ["first", "second"]) {
      const result = await run(bin("dirq"), [sql], { cwd: root });
      assert.equal(result.code, 0, `${attempt} run: ${result.stderr}`);
      assert.deepEqual(JSON.parse(result.stdout), expected, attempt);
    }
    const caches = readdirSync(join(env.XDG_CACHE_HOME, "dirq"));
    assert.ok(
      // A statement with a quoted path table: the bundle's `cli+paths` cache (docs/install.md).
      caches.some((name) => name.startsWith(`cli+paths-v${NODE_VERSION}-`)),
      `a code cache for v${NODE_VERSION} among ${caches.join(", ")}`,
    );
    const version = await run(bin("dirq"), ["--version"], { cwd: root });
    assert.equal(version.code, 0, version.stderr);
    const manifest = join(PREFIX, "node_modules", "dirq", "package.json");
    assert.equal(version.stdout.trim(), JSON.parse(readFileSync(manifest, "utf8")).version);
    const init = await run(bin("dirq"), ["init"], { cwd: root });
    assert.equal(init.code, 0, init.stderr);
    assert.ok(existsSync(join(root, ".dirq.toml")), `init wrote .dirq.toml: ${init.stderr}`);
  });

  test("dirq: a code cache with bytes changed inside (same length) never stops a run", async () => {
    const root = tree("damaged-cache", { "a.txt": "a\n" });
    const sql = "SELECT 41 + 1 AS x";
    const answer = async (what) => {
      const result = await run(bin("dirq"), [sql], { cwd: root });
      assert.deepEqual([result.code, result.stderr, result.stdout], [0, "", '[{"x":42}]\n'], what);
    };
    await answer("a run that writes the cache");
    await answer("a run that verifies it");
    const folder = join(env.XDG_CACHE_HOME, "dirq");
    // This Node's caches only: the matrix's other Nodes share the folder.
    const caches = readdirSync(folder).filter(
      (name) => name.includes(`-v${NODE_VERSION}-`) && name.endsWith(".v8cache"),
    );
    assert.ok(caches.length > 0, readdirSync(folder).join(", "));
    for (const name of caches) {
      const bytes = readFileSync(join(folder, name));
      for (let i = 0; i < 8; i++) {
        const at = 256 + Math.floor(((bytes.length - 512) * i) / 8);
        bytes[at] ^= 0x5a;
      }
      writeFileSync(join(folder, name), bytes);
    }
    for (const attempt of ["first", "second", "third"])
      await answer(`${attempt} run after the damage`);
  });

  test("dirq: a cache folder that cannot be made (/proc) is not used, and nothing spins", async () => {
    const root = tree("proc-cache", { "a.txt": "a\n" });
    for (const extraEnv of [{ XDG_CACHE_HOME: "/proc" }, { XDG_CACHE_HOME: "", HOME: "/proc" }]) {
      const result = await run(bin("dirq"), ["SELECT count(*) AS n FROM './'"], {
        cwd: root,
        extraEnv,
        timeoutMs: 20_000,
      });
      assert.deepEqual([result.code, result.stdout], [0, '[{"n":1}]\n'], JSON.stringify(extraEnv));
    }
  });

  const ignoreScripts = {
    skip:
      IGNORE_SCRIPTS_PREFIX === "" &&
      "made on the floor and the newest Node of the matrix only (see matrix.mjs)",
  };
  test(
    "dirq installed with --ignore-scripts: SQLite's prebuilt addon, the extension built by the first run",
    ignoreScripts,
    async () => {
      const root = tree("ignore-scripts", { "a.txt": "a\n", "b/c.txt": "cc\n" });
      const installed = join(IGNORE_SCRIPTS_PREFIX, "node_modules", "dirq");
      const library = join(installed, "native", "build", "dirq_fs.so");
      assert.ok(!existsSync(library), "nothing compiled at install");
      const sql = "SELECT path, size FROM './' ORDER BY path";
      const expected = '[{"path":"a.txt","size":2},{"path":"b/c.txt","size":3}]\n';
      const dirq = join(IGNORE_SCRIPTS_PREFIX, "node_modules", ".bin", "dirq");
      const extraEnv = { XDG_CACHE_HOME: join(work, "ignore-scripts-cache") };
      const first = await run(dirq, [sql], { cwd: root, extraEnv });
      assert.deepEqual([first.code, first.stdout], [0, expected], first.stderr);
      if (existsSync(library)) {
        assert.equal(first.stderr, "", "built with the machine's C compiler, silently");
      } else {
        // A machine without a C compiler: said once, with how to build it.
        assert.match(
          first.stderr,
          /^dirq: note: dirq's native file system extension could not be built/,
        );
      }
      const second = await run(dirq, [sql], { cwd: root, extraEnv });
      assert.deepEqual([second.code, second.stdout, second.stderr], [0, expected, ""]);
    },
  );

  test("dirq: piped REPL", async () => {
    const root = tree("repl", { "a.txt": "a\n" });
    const result = await run(bin("dirq"), [], {
      cwd: root,
      input: "SELECT 1 AS x;\nSELECT count(*) AS n FROM './'\n",
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, '[{"x":1}]\n[{"n":1}]\n');
  });

  test("dirq server: a query over HTTP and one row event over SSE", async () => {
    const root = tree("server", { "a.txt": "a\n" });
    const server = spawn(bin("dirq"), ["server", "--port", "0"], {
      cwd: root,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    server.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
    const exited = new Promise((resolve) => server.once("exit", resolve));
    try {
      const address = await new Promise((resolve, reject) => {
        let stdout = "";
        const timer = setTimeout(() => reject(new Error(`no address; ${stderr}`)), TIMEOUT_MS);
        server.stdout.setEncoding("utf8").on("data", (chunk) => {
          stdout += chunk;
          const found = /^Running at (\S+):(\d+)\n/m.exec(stdout);
          if (found) {
            clearTimeout(timer);
            resolve({ host: found[1], port: Number(found[2]) });
          }
        });
        server.once("exit", (code) => reject(new Error(`server exited ${code}: ${stderr}`)));
      });
      const query = await post(address, "/query", { sql: "SELECT path FROM './' ORDER BY path" });
      assert.equal(query.status, 200, query.body);
      assert.deepEqual(JSON.parse(query.body), [{ path: "a.txt" }]);
      const rowEvent = await firstRowEvent(address, () =>
        writeFileSync(join(root, "b.txt"), "b\n"),
      );
      assert.equal(rowEvent.action, "insert");
      assert.equal(rowEvent.file_path, "b.txt");
    } finally {
      server.kill("SIGTERM");
      await exited;
    }
  });

  test("dirq SDK: open, query, close", async () => {
    const root = tree("sdk", { "a.csv": "x\n1\n" });
    const script = join(PREFIX, "sdk-smoke.mjs");
    writeFileSync(
      script,
      `import { open } from "dirq";
const db = open({ root: process.argv[2], progress: false });
console.log(JSON.stringify(await db.query("SELECT path FROM './*.csv'")));
await db.close();
`,
    );
    const result = await run("node", [script, root], { cwd: PREFIX });
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), [{ path: "a.csv" }]);
  });

  test('dirq SDK from CommonJS: require("dirq"), with a fill on helper threads', async () => {
    const files = { "a.csv": "x\n1\n" };
    for (let i = 0; i < 3000; i++) files[`many/f${i}.txt`] = "";
    const root = tree("sdk-cjs", files);
    const script = join(PREFIX, "sdk-smoke.cjs");
    writeFileSync(
      script,
      `const { open, isDirqError } = require("dirq");
(async () => {
  const db = open({ root: process.argv[2], progress: false });
  const rows = await db.query("SELECT count(*) AS n FROM './'");
  await db.close();
  let code;
  try {
    open({ root: process.argv[2] + "/missing" });
  } catch (error) {
    code = isDirqError(error) && error.code;
  }
  console.log(JSON.stringify([rows, code]));
})();
`,
    );
    const result = await run("node", [script, root], { cwd: PREFIX });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, "", "no warning about require() of an ES module");
    assert.deepEqual(JSON.parse(result.stdout), [[{ n: 3001 }], "ROOT_INVALID"]);
  });

  test("pubtool: --help and doctor", async () => {
    const help = await run(bin("pubtool"), ["--help"]);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /doctor/);
    const root = tree("pubtool", {
      ".github/workflows/release.yml": `name: release
on:
  push:
    tags: ["v*"]
permissions:
  id-token: write
  contents: write
jobs:
  publish:
    runs-on: ubuntu-latest
    environment: release
    steps:
      - uses: actions/checkout@v4
      - run: npx pubtool publish
`,
    });
    const doctor = await run(bin("pubtool"), ["doctor"], { cwd: root });
    assert.equal(doctor.code, 0, doctor.stderr + doctor.stdout);
    assert.match(doctor.stdout, /doctor: ok\n$/);
  });

  test("lmclient: forward and aforward against a loopback server, with openai bundled", async () => {
    // Its worker bundles the openai client and undici: neither is installed beside it.
    for (const bundled of ["openai", "undici"]) {
      assert.ok(!existsSync(join(PREFIX, "node_modules", bundled)), `${bundled} is not installed`);
    }
    const fake = await startChatServer();
    try {
      const script = join(PREFIX, "lmclient-smoke.mjs");
      writeFileSync(
        script,
        `import { CompatLM } from "lmclient";
const lm = new CompatLM({ model: "smoke", base_url: process.argv[2], num_retries: 0 });
const sync = lm.forward("one");
const async = await lm.aforward("two");
console.log(JSON.stringify([sync.choices[0].message.content, async.choices[0].message.content]));
`,
      );
      // Its own process: forward blocks its thread until the answer, and the server is here.
      const result = await run("node", [script, fake.baseUrl], { cwd: PREFIX });
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(JSON.parse(result.stdout), ["echo: one", "echo: two"]);
    } finally {
      await fake.close();
    }
  });
});

function post({ host, port }, path, body) {
  return new Promise((resolve, reject) => {
    const req = request(
      { host, port, path, method: "POST", headers: { "Content-Type": "application/json" } },
      (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (chunk) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode, body: text }));
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

/** Subscribes to /events, calls `change` once `ready` came, and resolves the first row event. */
function firstRowEvent({ host, port }, change) {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path: "/events" }, (res) => {
      let buffer = "";
      const timer = setTimeout(() => {
        req.destroy();
        reject(new Error(`no row event; got: ${buffer}`));
      }, TIMEOUT_MS);
      res.setEncoding("utf8").on("data", (chunk) => {
        const before = buffer;
        buffer += chunk;
        if (!before.includes("event: ready") && buffer.includes("event: ready")) change();
        const row = /event: row\ndata: (.*)\n/.exec(buffer);
        if (row) {
          clearTimeout(timer);
          req.destroy();
          resolve(JSON.parse(row[1]));
        }
      });
    });
    req.on("error", (error) => {
      if (error.code !== "ECONNRESET") reject(error);
    });
    req.end();
  });
}

/** A minimal OpenAI-compatible chat-completion server on loopback: it echoes the last message. */
async function startChatServer() {
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8").on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) {
        res.writeHead(404, { "Content-Type": "application/json" }).end('{"error":"not found"}');
        return;
      }
      const { model, messages } = JSON.parse(body);
      const content = `echo: ${messages.at(-1).content}`;
      res.writeHead(200, { "Content-Type": "application/json" }).end(
        JSON.stringify({
          id: "chatcmpl-smoke",
          object: "chat.completion",
          created: 0,
          model,
          choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${server.address().port}/v1`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
