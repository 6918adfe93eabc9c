import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  assertNoStackTrace,
  DIRQ_BIN,
  makeTree,
  parseRows,
  removeTree,
  runDirq,
} from "./helpers.js";
import {
  eventually,
  openStuckSubscriber,
  queryRows,
  type RawSubscriber,
  type ServerProcess,
  serverFixtures,
  startServer,
} from "./server-support.js";

/*
 * Files that break naive tools: names with spaces, newlines and bytes that are not UTF-8,
 * paths longer than the system allows, symlink loops, links out of the root, unreadable files
 * and folders, files that vanish mid-scan, a 2 GB sparse file, a folder replaced by a file
 * while the server watches, a watcher past the system's inotify limit. Each is listed or
 * skipped with a clear message; nothing crashes; nothing outside the root is read.
 */

const asRoot = process.getuid?.() === 0;
const hasSetpriv = spawnSync("setpriv", ["--version"]).status === 0;
/** Runs a command as an unprivileged user when the tests run as root (permissions bind then). */
function unprivileged(command: readonly string[]): string[] {
  return asRoot
    ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", ...command]
    : [...command];
}
const permissionSkip = asRoot && !hasSetpriv ? "running as root without setpriv" : false;

/** Bytes that are not UTF-8, inside a file name. */
function rawName(root: string, name: string): Buffer {
  return Buffer.concat([Buffer.from(`${root}/`), Buffer.from(name, "latin1")]);
}

/** Makes `depth` nested folders of 200-character names under `root`: past PATH_MAX (4096). */
function makeDeepTree(root: string, depth: number): void {
  const script = `n=$(printf 'd%.0s' $(seq 1 200)); for i in $(seq 1 ${depth}); do mkdir "$n" && cd "$n" || exit 1; done; echo deep > deep.txt`;
  const result = spawnSync("bash", ["-c", script], { cwd: root });
  assert.equal(result.status, 0, String(result.stderr));
}

describe("hostile names and links (one-shot)", () => {
  const outside = mkdtempSync(join(tmpdir(), "dirq-outside-"));
  writeFileSync(join(outside, "secret.txt"), "outside the root");
  mkdirSync(join(outside, "dir"));
  writeFileSync(join(outside, "dir/also-secret.txt"), "outside the root");
  const root = makeTree({
    "with space.txt": "a",
    "new\nline.txt": "b",
    "tab\tand\\back.txt": "c",
    [`${"n".repeat(250)}.txt`]: "d",
    "ok/plain.md": "e",
  });
  writeFileSync(rawName(root, "bad-\xff\xfe-name"), "f");
  symlinkSync("loop-b", join(root, "loop-a"));
  symlinkSync("loop-a", join(root, "loop-b"));
  symlinkSync("self", join(root, "self"));
  symlinkSync("..", join(root, "ok/up"));
  symlinkSync(join(outside, "secret.txt"), join(root, "out-file"));
  symlinkSync(join(outside, "dir"), join(root, "out-dir"));
  symlinkSync("../../", join(root, "ok/escape"));
  truncateSync(join(root, "ok/plain.md"), 0);
  writeFileSync(join(root, "sparse.bin"), "");
  truncateSync(join(root, "sparse.bin"), 2 * 1024 ** 3);
  makeDeepTree(root, 22);
  after(() => {
    // Node's rm gives up past PATH_MAX; rm(1) walks folder by folder.
    spawnSync("rm", ["-rf", root]);
    removeTree(outside);
  });

  const EXPECTED = [
    "bad-\uFFFD\uFFFD-name",
    "new\nline.txt",
    `${"n".repeat(250)}.txt`,
    "ok/plain.md",
    "sparse.bin",
    "tab\tand\\back.txt",
    "with space.txt",
  ];

  it("every real file is a row; loops and links out of the root are not; the too-long folder is named", async () => {
    const result = await runDirq(
      ["SELECT path, size FROM './' ORDER BY path", "--format", "json"],
      {
        cwd: root,
      },
    );
    assertNoStackTrace(result.stderr);
    const rows = parseRows(result.stdout);
    assert.deepEqual(
      rows.map((row) => row.path),
      EXPECTED,
    );
    assert.equal(rows.find((row) => row.path === "sparse.bin")?.size, 2 * 1024 ** 3);
    // Past PATH_MAX: that folder is skipped with the system's reason, the rest is listed.
    assert.equal(result.code, 23, result.stderr);
    assert.match(result.stderr, /^dirq: skipped d{200}\/.*ENAMETOOLONG/m);
    assert.equal(result.stderr.trimEnd().split("\n").length, 1, result.stderr);
  });

  it("a hook is handed only files inside the root, and never a non-UTF-8 name", async () => {
    const hook = `${process.execPath} -e "console.log(JSON.stringify([{arg: process.argv[1]}]))" {path}`;
    const result = await runDirq(["SELECT arg FROM './' ORDER BY arg", "--on-file", hook], {
      cwd: root,
    });
    assertNoStackTrace(result.stderr);
    assert.equal(result.code, 23, result.stderr);
    const handed = parseRows(result.stdout).map((row) => String(row.arg));
    assert.ok(handed.length >= 5, result.stdout);
    for (const path of handed) {
      assert.ok(path.startsWith(`${root}/`), `${path} is inside the root`);
      assert.ok(!path.includes(outside), `${path} is not outside`);
    }
    assert.match(
      result.stderr,
      /^dirq: skipped bad-\uFFFD\uFFFD-name: its name is not valid UTF-8/m,
    );
  });

  it("links that lead out, named directly, are empty tables, never the outside files", async () => {
    for (const name of ["./out-file", "./out-dir", "./out-dir/also-secret.txt", "./ok/escape"]) {
      const result = await runDirq([`SELECT * FROM '${name}'`, "--format", "json"], { cwd: root });
      assertNoStackTrace(result.stderr);
      if (result.code === 0) assert.equal(result.stdout, "[]\n", name);
      else assert.doesNotMatch(result.stdout, /secret/, name);
    }
  });
});

describe("unreadable files and folders", { skip: permissionSkip }, () => {
  const root = makeTree({ "open.txt": "a", "locked/inside.txt": "b", "secret.txt": "c" });
  chmodSync(root, 0o755);
  chmodSync(join(root, "secret.txt"), 0);
  chmodSync(join(root, "locked"), 0);
  after(() => {
    chmodSync(join(root, "locked"), 0o755);
    removeTree(root);
  });

  function run(
    args: readonly string[],
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const [command, ...rest] = unprivileged([process.execPath, DIRQ_BIN, ...args]) as [
      string,
      ...string[],
    ];
    return new Promise((resolve) => {
      const child = spawn(command, rest, {
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

  it("an unreadable file is a row (stat needs no read permission); a locked folder is named", async () => {
    const result = await run(["SELECT path FROM './' ORDER BY path", "--format", "json"]);
    assertNoStackTrace(result.stderr);
    assert.equal(result.code, 23, result.stderr);
    assert.deepEqual(
      parseRows(result.stdout).map((row) => row.path),
      ["open.txt", "secret.txt"],
    );
    // The folder is named once: not again, absolute, inside Node's message.
    assert.match(result.stderr, /^dirq: skipped locked: EACCES: permission denied$/m);
  });

  it("a hook that cannot read a file skips that file only, naming it", async () => {
    const hook = `${process.execPath} -e "require('fs').readFileSync(process.argv[1]); console.log('[{}]')" {path}`;
    const result = await run(["SELECT count(*) AS n FROM './*.txt'", "--on-file", hook]);
    assertNoStackTrace(result.stderr);
    assert.equal(result.code, 23, result.stderr);
    assert.deepEqual(parseRows(result.stdout), [{ n: 1 }]);
    assert.match(result.stderr, /^dirq: skipped secret\.txt: /m);
  });
});

describe("a folder deeper than the system's path limit", () => {
  const roots: string[] = [];
  // rm walks relative to each folder; Node's recursive removal stops at the path limit.
  after(() => roots.forEach((root) => spawnSync("rm", ["-rf", root])));

  it("is skipped with a short reason that names it once; the rest is indexed", async () => {
    const root = makeTree({ "top.txt": "top" });
    roots.push(root);
    // 21 folders of 200 characters: past PATH_MAX (4,096), made by relative steps.
    const name = "d".repeat(200);
    const made = spawnSync(
      "bash",
      [
        "-c",
        `for i in $(seq 21); do mkdir ${name} && cd ${name} || exit 1; done; echo deep > deep.txt`,
      ],
      { cwd: root },
    );
    assert.equal(made.status, 0, made.stderr.toString());
    const result = await runDirq(["SELECT path FROM './' ORDER BY path", "--format", "json"], {
      cwd: root,
    });
    assertNoStackTrace(result.stderr);
    assert.equal(result.code, 23, result.stderr);
    assert.deepEqual(
      parseRows(result.stdout).map((row) => row.path),
      ["top.txt"],
    );
    const lines = result.stderr.trim().split("\n");
    assert.equal(lines.length, 1, result.stderr);
    assert.match(
      lines[0] as string,
      /^dirq: skipped (d{200}\/){20}d{200}: ENAMETOOLONG: name too long$/,
    );
  });
});

describe("files that vanish between listing and stat", () => {
  const spec: Record<string, string> = {};
  for (let d = 0; d < 100; d++) for (let f = 0; f < 5; f++) spec[`d${d}/f${f}`] = "x";
  const root = makeTree(spec);
  after(() => removeTree(root));

  it("a tree renamed and rewritten under the scan: every run answers, none crashes", async () => {
    // Folders flip between two names and files are replaced, as fast as bash can.
    const churn = spawn(
      "bash",
      [
        "-c",
        "while :; do for i in $(seq 0 99); do if [ -d d$i ]; then mv d$i e$i; else mv e$i d$i; fi; rm -f d$i/f0 e$i/f1; echo y > d$i/f0 2>/dev/null; done; done",
      ],
      // Its own process group, so that stopping it stops the mv or rm it is running too.
      { cwd: root, stdio: "ignore", detached: true },
    );
    const churnEnded = new Promise((resolve) => churn.once("exit", resolve));
    try {
      for (let run = 0; run < 6; run++) {
        const result = await runDirq(["SELECT count(*) AS n, sum(size) AS s FROM './'"], {
          cwd: root,
        });
        assertNoStackTrace(result.stderr);
        assert.ok(result.code === 0 || result.code === 23, `exit ${result.code}: ${result.stderr}`);
        const [row] = parseRows(result.stdout);
        assert.ok(Number(row?.n) <= 500, JSON.stringify(row));
      }
    } finally {
      process.kill(-(churn.pid as number), "SIGKILL");
      await churnEnded;
    }
  });
});

describe("the server watching hostile changes", () => {
  const { tree, serve } = serverFixtures();
  let server: ServerProcess;
  let root: string;
  let events: RawSubscriber;
  const received = () => events.received().toString("utf8");
  const sawEvent = (action: string, path: string) =>
    received().includes(`"action":"${action}","table":"./","file_path":${JSON.stringify(path)}`);

  it("starts with a non-UTF-8 name, a sparse file and a folder", async () => {
    root = tree({ "d/a.txt": "a", "d/sub/b.txt": "b", "keep.txt": "k" });
    writeFileSync(rawName(root, "bad-\xff"), "1");
    writeFileSync(join(root, "sparse.bin"), "");
    truncateSync(join(root, "sparse.bin"), 2 * 1024 ** 3);
    server = await serve(root);
    assert.equal((await queryRows(server, "SELECT count(*) AS n FROM './'"))[0]?.n, 5);
    events = await openStuckSubscriber("127.0.0.1", server.port);
    events.resume();
    await events.waitFor("event: ready", 60_000);
  });

  it("a folder replaced by a file, and back: deletes, then an insert; the index is a fresh scan", async () => {
    rmSync(join(root, "d"), { recursive: true });
    writeFileSync(join(root, "d"), "now a file");
    await eventually(() => sawEvent("insert", "d"), "insert of the file d", 60_000);
    assert.ok(sawEvent("delete", "d/a.txt") && sawEvent("delete", "d/sub/b.txt"), received());
    unlinkSync(join(root, "d"));
    mkdirSync(join(root, "d"));
    writeFileSync(join(root, "d/c.txt"), "c");
    await eventually(() => sawEvent("insert", "d/c.txt"), "insert of d/c.txt", 60_000);
    assert.ok(sawEvent("delete", "d"), received());
  });

  it("a name that is not UTF-8 is updated and deleted like any other", async () => {
    writeFileSync(rawName(root, "bad-\xff"), "12345");
    await eventually(() => sawEvent("update", "bad-\uFFFD"), "update of bad-\uFFFD", 60_000);
    unlinkSync(rawName(root, "bad-\xff"));
    writeFileSync(rawName(root, "new-\xfe"), "2");
    await eventually(() => sawEvent("delete", "bad-\uFFFD"), "delete of bad-\uFFFD", 60_000);
    await eventually(() => sawEvent("insert", "new-\uFFFD"), "insert of new-\uFFFD", 60_000);
  });

  it("a sparse file grown to 3 GB is an update with its exact size", async () => {
    truncateSync(join(root, "sparse.bin"), 3 * 1024 ** 3);
    await eventually(() => received().includes('"size":3221225472'), "the new size", 60_000);
  });

  it("after all that, the server's answer is a fresh scan's", async () => {
    events.close();
    const sql = "SELECT path, size FROM './' ORDER BY path";
    const fresh = await runDirq([sql, "--format", "json"], { cwd: root });
    assert.equal(fresh.code, 0, fresh.stderr);
    await eventually(
      async () => JSON.stringify(await queryRows(server, sql)) === fresh.stdout.trimEnd(),
      "server = fresh scan",
      20_000,
    );
    assert.doesNotMatch(server.stderr(), /internal error/);
  });
});

describe("the watcher past the system's inotify limit", () => {
  // A user namespace has its own inotify limits, which its root may lower: a real limit.
  const probe = spawnSync("unshare", [
    "-Ur",
    "sh",
    "-c",
    "echo 30 > /proc/sys/user/max_inotify_watches",
  ]);
  const skip = probe.status === 0 ? false : "user namespaces (unshare -Ur) are not available";
  const spec: Record<string, string> = {};
  for (let d = 0; d < 80; d++) spec[`d${d}/f.txt`] = "x";
  const root = makeTree(spec);
  let server: ServerProcess | undefined;
  after(async () => {
    await server?.kill();
    removeTree(root);
  });

  it(
    "says so once, then polls: a change in an unwatched folder is still seen",
    { skip },
    async () => {
      const script = `echo 30 > /proc/sys/user/max_inotify_watches && exec "$0" "$@"`;
      server = await startServer(["--host", "127.0.0.1", "--port", "0"], {
        cwd: root,
        prefix: ["unshare", "-Ur", "sh", "-c", script],
      });
      assert.equal((await queryRows(server, "SELECT count(*) AS n FROM './'"))[0]?.n, 80);
      writeFileSync(join(root, "d79/new.txt"), "new");
      await eventually(
        async () =>
          (await queryRows(server as ServerProcess, "SELECT count(*) AS n FROM './'"))[0]?.n === 81,
        "the new file in an unwatched folder",
        30_000,
      );
      const warnings = () =>
        (server as ServerProcess)
          .stderr()
          .split("\n")
          .filter((line) => line.includes("inotify"));
      // The warning comes once the first check has run (it gives that check's delay), which
      // can be after the change it found is already answered.
      await eventually(async () => warnings().length > 0, "the watch-limit warning", 30_000);
      const lines = warnings();
      assert.equal(lines.length, 1, server.stderr());
      assert.match(
        lines[0] as string,
        /^dirq: watcher: the system limit on inotify watches .*reached.*folders have no watch.*list those folders and stat their files/,
      );
    },
  );
});
