import assert from "node:assert/strict";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { connect, createServer as createTcpServer } from "node:net";
import { describe, it } from "node:test";
import {
  assertJsonError,
  eventually,
  postQuery,
  processTree,
  queryRows,
  request,
  type ServerProcess,
  serverFixtures,
} from "./server-support.js";
import { spawn } from "node:child_process";
import { DIRQ_BIN } from "./helpers.js";

const { tree, serve } = serverFixtures();

/** Sends raw bytes on a new connection and resolves with everything the server sent back. */
function rawExchange(port: number, text: string | Buffer, keepOpen = true): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let answer = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      answer += chunk;
    });
    socket.on("error", (error) => (answer ? resolve(answer) : reject(error)));
    socket.on("close", () => resolve(answer));
    socket.write(text);
    if (!keepOpen) socket.end();
  });
}

/** The status and JSON error body of a raw HTTP answer. */
function parseRaw(answer: string): { status: number; contentType: string; body: string } {
  const [head = "", body = ""] = answer.split("\r\n\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1]);
  const contentType = /\r\ncontent-type: ([^\r]+)/i.exec(head)?.[1] ?? "";
  return { status, contentType, body };
}

function assertRawJsonError(answer: string, status: number, pattern?: RegExp): void {
  const parsed = parseRaw(answer);
  assert.equal(parsed.status, status, answer);
  assert.match(parsed.contentType, /^application\/json/, answer);
  const body = JSON.parse(parsed.body) as { error: string };
  assert.deepEqual(Object.keys(body), ["error"]);
  if (pattern) assert.match(body.error, pattern);
}

const QUERY_BODY = JSON.stringify({ sql: "SELECT 1 AS one" });

function rawPost(host: string | null, contentType: string | null, body = QUERY_BODY): string {
  const lines = ["POST /query HTTP/1.1"];
  if (host !== null) lines.push(`Host: ${host}`);
  if (contentType !== null) lines.push(`Content-Type: ${contentType}`);
  lines.push(`Content-Length: ${Buffer.byteLength(body)}`, "Connection: close");
  return `${lines.join("\r\n")}\r\n\r\n${body}`;
}

describe("origins, framing and limits", () => {
  let server: ServerProcess;
  let root: string;

  it("starts", async () => {
    root = tree({ "docs/a.md": "a" });
    server = await serve(root);
  });

  it("a Host that is not this server is refused with 403 (DNS rebinding)", async () => {
    for (const host of ["evil.example", `evil.example:${server.port}`, "localhost.evil.example"]) {
      assertRawJsonError(
        await rawExchange(server.port, rawPost(host, "application/json")),
        403,
        /Host/,
      );
    }
    const events = `GET /events HTTP/1.1\r\nHost: attacker.test\r\nConnection: close\r\n\r\n`;
    assertRawJsonError(await rawExchange(server.port, events), 403);
    // No Host at all: refused the same way, with a JSON body.
    assertRawJsonError(await rawExchange(server.port, rawPost(null, "application/json")), 403);
    for (const host of [
      `localhost:${server.port}`,
      `127.0.0.1:${server.port}`,
      "localhost",
      "[::1]:1",
    ]) {
      const answer = parseRaw(await rawExchange(server.port, rawPost(host, "application/json")));
      assert.equal(answer.status, 200, host);
      assert.equal(answer.body, '[{"one":1}]\n');
    }
  });

  it("POST /query needs Content-Type application/json (415 otherwise)", async () => {
    const host = `127.0.0.1:${server.port}`;
    for (const type of ["text/plain", "application/x-www-form-urlencoded", null]) {
      assertRawJsonError(
        await rawExchange(server.port, rawPost(host, type)),
        415,
        /application\/json/,
      );
    }
    const ok = parseRaw(
      await rawExchange(server.port, rawPost(host, "application/json; charset=utf-8")),
    );
    assert.equal(ok.status, 200);
    // A browser's cross-site form post cannot set application/json without a preflight.
    const answer = await request(`${server.url}/query`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: QUERY_BODY,
    });
    assertJsonError(answer, 415);
  });

  it("errors node:http answers itself have JSON bodies", async () => {
    assertRawJsonError(await rawExchange(server.port, "NOT HTTP AT ALL\r\n\r\n"), 400);
    const longUrl = `GET /events?${"x".repeat(20_000)} HTTP/1.1\r\nHost: localhost\r\n\r\n`;
    assertRawJsonError(await rawExchange(server.port, longUrl), 431, /16384 bytes/);
    const badLength = "POST /query HTTP/1.1\r\nHost: localhost\r\nContent-Length: x\r\n\r\n";
    assertRawJsonError(await rawExchange(server.port, badLength), 400);
    // Headers never finished: the header timeout answers 408, with a JSON body.
    const slow = await rawExchange(
      server.port,
      "POST /query HTTP/1.1\r\nHost: localhost\r\n",
      true,
    );
    assertRawJsonError(slow, 408, /in time/);
  });

  it("a body the client abandons is not an internal error", async () => {
    const head = `POST /query HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"sql":`;
    await new Promise<void>((resolve) => {
      const socket = connect(server.port, "127.0.0.1", () => {
        socket.write(head, () => setTimeout(() => socket.destroy(), 100));
      });
      socket.on("close", () => resolve());
      socket.on("error", () => {});
    });
    assert.deepEqual(await queryRows(server, "SELECT 2 AS two"), [{ two: 2 }]);
    assert.doesNotMatch(server.stderr(), /internal error/);
  });

  it("a statement with bound parameters is a 400, not a 500", async () => {
    for (const sql of ["SELECT ?", "SELECT :name", "SELECT * FROM './' WHERE path = $p"]) {
      assertJsonError(await postQuery(server, sql), 400);
    }
  });

  it("an answer over the size limit is a 413 naming the limit; the server goes on", async () => {
    const big =
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 800000) " +
      "SELECT x, printf('%.100c', 'a') AS pad FROM c";
    assertJsonError(await postQuery(server, big), 413, /64 MiB/);
    assert.deepEqual(await queryRows(server, "SELECT 3 AS three"), [{ three: 3 }]);
  });

  it("connections beyond the limit get a 503 JSON answer", async () => {
    const sockets = await Promise.all(
      Array.from(
        { length: 2048 },
        () =>
          new Promise<import("node:net").Socket>((resolve, reject) => {
            const socket = connect(server.port, "127.0.0.1", () => resolve(socket));
            socket.on("error", reject);
          }),
      ),
    );
    try {
      // Past the kernel's accept backlog, a connection counts as open on this side before the
      // server has accepted it: ask until the server holds them all.
      let answer = "";
      await eventually(
        async () => {
          answer = await rawExchange(server.port, rawPost("localhost", "application/json"));
          return parseRaw(answer).status === 503;
        },
        "the server holds the limit's connections",
        60_000,
      );
      assertRawJsonError(answer, 503, /connections/);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
    await eventually(
      async () => (await postQuery(server, "SELECT 4 AS four")).status === 200,
      "served again once connections closed",
      60_000,
    );
  });
});

describe("freezes", { concurrency: true }, () => {
  const RUNAWAY =
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";

  it("quick statements are answered while runaway ones fill every query process", async () => {
    // The runaways' limit is far beyond the test; they end when their clients go away (the
    // server stops a statement whose client left), so on a loaded machine the quick
    // statements have all the time they need, and the runaways spin no longer than that.
    const server = await serve(tree({ "a.md": "a" }), [], { DIRQ_QUERY_TIMEOUT_MS: "600000" });
    const clients = new AbortController();
    let finished = 0;
    const runaways = Array.from({ length: 5 }, () =>
      postQuery(server, RUNAWAY, clients.signal).then(
        () => finished++,
        () => undefined,
      ),
    );
    try {
      assert.deepEqual(await queryRows(server, "SELECT 1 AS one"), [{ one: 1 }]);
      assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM './'"), [{ n: 1 }]);
      assert.equal(finished, 0, "answered while the runaways still ran");
    } finally {
      clients.abort();
      await Promise.all(runaways);
    }
  });

  it("kill -9 of the server also ends a process a hook started in a session of its own", async () => {
    // The hook's grandchild leaves the hook's process group (setsid), so only the mark in its
    // environment leads the server's reaper to it.
    const hook = `import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { basename } from "node:path";
if (basename(process.argv[2]) === "hang.json") {
  // Not a group leader, so setsid(1) moves itself (same pid) rather than forking.
  const escaped = spawn("setsid", [process.execPath, "-e", "setInterval(() => {}, 1000)"], {
    stdio: "ignore",
  });
  writeFileSync(process.argv[3], String(escaped.pid));
  setInterval(() => {}, 1000);
} else process.stdout.write("[]");
`;
    const root = tree({
      "hook.mjs": hook,
      "dirq.toml": `[[table]]\nname = "t"\nglob = "data/*.json"\non-file = ${JSON.stringify(`'${process.execPath}' hook.mjs {path} escaped.pid`)}\n`,
      "data/a.json": "{}",
    });
    const pidFile = join(root, "escaped.pid");
    const server = await serve(root, ["-c", "dirq.toml"]);
    // Written aside and renamed, so that one hook runs for it (see the test above).
    writeFileSync(join(root, "hang.part"), "{}");
    renameSync(join(root, "hang.part"), join(root, "data/hang.json"));
    let escaped = 0;
    await eventually(
      () => {
        escaped = Number(safeRead(pidFile));
        return escaped > 0 && startTime(escaped) !== null;
      },
      "the hook's escaped grandchild runs",
      60_000,
    );
    const started = startTime(escaped);
    await server.stop("SIGKILL");
    await eventually(
      () => startTime(escaped) !== started || isZombie(escaped),
      "the escaped grandchild is gone after the server was killed",
      60_000,
    ).catch((error: Error) => {
      // What the reaper had to go by, for a failure to show.
      const status = safeRead(`/proc/${escaped}/status`).match(/^(State|PPid|NSsid).*$/gm);
      const marked = safeRead(`/proc/${escaped}/environ`).includes("DIRQ_SERVER_MARK=");
      throw new Error(
        `${error.message}; ${status?.join(", ")}; mark in its environment: ${marked}`,
      );
    });
  });

  it("kill -9 of the server ends its query processes and hooks, and removes the temporary index", async () => {
    const hook = `import { basename } from "node:path";
if (basename(process.argv[2]) === "hang.json") setInterval(() => {}, 1000);
else process.stdout.write("[]");
`;
    const root = tree({
      "hook.mjs": hook,
      "dirq.toml": `[[table]]\nname = "t"\nglob = "data/*.json"\non-file = ${JSON.stringify(`'${process.execPath}' hook.mjs {path}`)}\n`,
      "data/a.json": "{}",
    });
    const server = await serve(root, ["-c", "dirq.toml"]);
    // Written aside and renamed: a file seen between its creation and its write would change
    // again, and its newer change would stop the hook found here and start another.
    writeFileSync(join(root, "hang.part"), "{}");
    renameSync(join(root, "hang.part"), join(root, "data/hang.json"));
    let hookPid = 0;
    await eventually(
      () => {
        for (const pid of processTree(server.pid).slice(1)) {
          if (safeRead(`/proc/${pid}/cmdline`).includes("hang.json")) hookPid = pid;
        }
        return hookPid !== 0;
      },
      "the hanging hook runs",
      60_000,
    );
    const running = postQuery(server, RUNAWAY).catch(() => null);
    let indexDir = "";
    await eventually(
      () => {
        for (const pid of processTree(server.pid).slice(1)) {
          for (const fd of safeReaddir(`/proc/${pid}/fd`)) {
            const target = safeReadlink(`/proc/${pid}/fd/${fd}`);
            if (target.endsWith("/index.db")) indexDir = target.slice(0, -"/index.db".length);
          }
        }
        return indexDir !== "";
      },
      "a query process has the index open",
      60_000,
    );
    const children = processTree(server.pid).slice(1);
    assert.ok(children.includes(hookPid));
    assert.ok(existsSync(indexDir));
    await server.stop("SIGKILL");
    await running;
    // A pid is the same process only while its start time is: pids are reused (pid_max is
    // 32768 here, and the suite starts thousands of processes).
    const started = new Map(children.map((pid) => [pid, startTime(pid)]));
    const alive = () =>
      children.filter((pid) => startTime(pid) === started.get(pid) && !isZombie(pid));
    await eventually(
      () => alive().length === 0,
      "every child of the killed server is gone",
      60_000,
    ).catch((error: unknown) => {
      const left = alive().map(
        (pid) => `${pid}: ${safeRead(`/proc/${pid}/cmdline`).replaceAll("\0", " ")}`,
      );
      throw new Error(`${(error as Error).message}; still running: ${left.join("; ")}`);
    });
    await eventually(() => !existsSync(indexDir), "the temporary index is removed", 60_000);
  });

  it("a port in use is reported at once, even when the start-up build would never end", async () => {
    const root = tree({
      "hang.mjs": "setInterval(() => {}, 1000);\n",
      "dirq.toml": `[[table]]\nname = "t"\nglob = "*.md"\non-file = ${JSON.stringify(`'${process.execPath}' hang.mjs {path}`)}\n`,
      "a.md": "a",
    });
    const blocker = createTcpServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const child = spawn(
        process.execPath,
        [DIRQ_BIN, "server", "-c", "dirq.toml", "--host", "127.0.0.1", "--port", String(port)],
        {
          cwd: root,
          stdio: ["ignore", "pipe", "pipe"],
          env: { ...process.env, DIRQ_PROGRESS: "never" },
        },
      );
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      // `close`, not `exit`: the diagnostic may still be in the pipe when the process exits.
      const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
      assert.equal(code, 1);
      assert.match(stderr, /cannot listen on 127\.0\.0\.1/);
    } finally {
      blocker.close();
    }
  });

  it("ignored folders get no inotify watch", async () => {
    const spec: Record<string, string> = { ".gitignore": "target/\n", "src/a.md": "a" };
    for (let d = 0; d < 40; d++) for (let f = 0; f < 25; f++) spec[`target/d${d}/f${f}.o`] = "x";
    const root = tree(spec);
    const server = await serve(root);
    assert.deepEqual(await queryRows(server, "SELECT path FROM './'"), [
      { path: ".gitignore" },
      { path: "src/a.md" },
    ]);
    const watches = inotifyWatches(server.pid);
    assert.ok(
      watches < 40,
      `${watches} inotify watches for a tree whose ignored part has 41 folders`,
    );
  });

  it("watches folders, not files: one inotify watch per folder", async () => {
    const spec: Record<string, string> = {};
    for (const folder of ["a", "b", "b/c"]) {
      for (let f = 0; f < 60; f++) spec[`${folder}/f${f}.txt`] = "x";
    }
    const server = await serve(tree(spec));
    assert.equal((await queryRows(server, "SELECT count(*) AS n FROM './'"))[0]?.n, 180);
    // The root, a, b and b/c.
    assert.equal(inotifyWatches(server.pid), 4);
  });

  it("a folder moved inside the tree is followed under its new name", async () => {
    const root = tree({ "a/sub/deep/x.txt": "x", "b/keep.txt": "k" });
    const server = await serve(root);
    const paths = async () =>
      (await queryRows(server, "SELECT path FROM './' ORDER BY path")).map((row) =>
        String(row.path),
      );
    assert.deepEqual(await paths(), ["a/sub/deep/x.txt", "b/keep.txt"]);
    renameSync(join(root, "a/sub"), join(root, "b/moved"));
    await eventually(
      async () => (await paths()).join() === "b/keep.txt,b/moved/deep/x.txt",
      "the moved folder's file under its new path",
      20_000,
    );
    // Changes inside the moved folder (and a folder made at its old place) arrive under the
    // right names: the old watches went with the old names.
    writeFileSync(join(root, "b/moved/deep/y.txt"), "y");
    mkdirSync(join(root, "a/sub"));
    writeFileSync(join(root, "a/sub/z.txt"), "z");
    await eventually(
      async () =>
        (await paths()).join() === "a/sub/z.txt,b/keep.txt,b/moved/deep/x.txt,b/moved/deep/y.txt",
      "new files in the moved folder and in the new one at the old place",
      20_000,
    );
    // A folder and its files created in one go are all seen.
    mkdirSync(join(root, "n/m"), { recursive: true });
    for (let i = 0; i < 20; i++) writeFileSync(join(root, `n/m/f${i}.txt`), "f");
    await eventually(
      async () => (await paths()).filter((path) => path.startsWith("n/m/")).length === 20,
      "twenty files of a new folder",
      20_000,
    );
  });
});

function safeReaddir(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

function safeRead(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

function safeReadlink(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return "";
  }
}

/** Field 22 of /proc/<pid>/stat (start time in clock ticks), or null when the process is gone. */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

function isZombie(pid: number): boolean {
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return true;
  }
}

/** inotify watches the process holds (lines `inotify wd:` in the fdinfo of its inotify fds). */
function inotifyWatches(pid: number): number {
  let count = 0;
  for (const fd of safeReaddir(`/proc/${pid}/fd`)) {
    if (safeReadlink(`/proc/${pid}/fd/${fd}`) !== "anon_inode:inotify") continue;
    const info = readFileSync(`/proc/${pid}/fdinfo/${fd}`, "utf8");
    count += info.split("\n").filter((line) => line.startsWith("inotify wd:")).length;
  }
  return count;
}
