import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  assertNoStackTrace,
  DIRQ_BIN,
  makeTree,
  parseRows,
  processRuns,
  removeTree,
  runDirq,
} from "./helpers.js";
import { eventually, startServer } from "./server-support.js";

/*
 * Hooks that misbehave: print for ever, fork children that hold their stdout or outlive them,
 * close stdout early, print binary garbage. Nothing hangs past a hook's time limit (its own
 * tests: hook-limits.test.ts), and SIGINT / SIGTERM still end dirq before it, leaving no
 * process of any hook behind, in every mode.
 */

/** Forks `sleep` holding the hook's stdout, records both pids, prints `[]` and exits. */
const FORKING_HOOK = `import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
const child = spawn("sleep", ["1000"], { stdio: ["ignore", "inherit", "inherit"] });
child.unref();
appendFileSync(process.env.DIRQ_TEST_PIDS, process.pid + "\\n" + child.pid + "\\n");
console.log("[]");
`;

/** Starts a daemon with its own output (not holding the hook's pipes), prints a row, exits. */
const DAEMON_HOOK = `import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
const child = spawn("sleep", ["1000"], { stdio: "ignore" });
child.unref();
appendFileSync(process.env.DIRQ_TEST_PIDS, child.pid + "\\n");
console.log(JSON.stringify([{ ok: 1 }]));
`;

const root = makeTree({
  "a.txt": "a",
  "hooks/fork.mjs": FORKING_HOOK,
  "hooks/daemon.mjs": DAEMON_HOOK,
});
const pidFile = join(root, "hooks/pids");
after(() => removeTree(root));

function recordedPids(): number[] {
  if (!existsSync(pidFile)) return [];
  return readFileSync(pidFile, "utf8").split("\n").filter(Boolean).map(Number);
}

async function assertNoneAlive(): Promise<void> {
  const pids = recordedPids();
  assert.ok(pids.length > 0, "the hook recorded its processes");
  await eventually(() => pids.every((pid) => !processRuns(pid)), `no hook process alive: ${pids}`);
  writeFileSync(pidFile, "");
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: string | null }> {
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
}

/** Starts `dirq <args>` in the root with the pid file set; resolves once the hook ran. */
async function startWithHook(args: readonly string[], input?: string): Promise<ChildProcess> {
  writeFileSync(pidFile, "");
  const child = spawn(process.execPath, [DIRQ_BIN, ...args], {
    cwd: root,
    env: { ...process.env, DIRQ_PROGRESS: "never", DIRQ_TEST_PIDS: pidFile },
    stdio: [input === undefined ? "ignore" : "pipe", "ignore", "ignore"],
  });
  if (input !== undefined) child.stdin?.end(input);
  await eventually(() => recordedPids().length >= 2, "the hook started its child", 60_000);
  return child;
}

const FORK = `${process.execPath} hooks/fork.mjs {path}`;

describe("hooks that never finish: a signal still ends dirq, with no orphans", () => {
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    it(`one-shot query, ${signal}: dirq ends as the signal says; hook and child are gone`, async () => {
      const child = await startWithHook(["SELECT * FROM './a.txt'", "--on-file", FORK]);
      const exited = exitOf(child);
      child.kill(signal);
      assert.deepEqual(await exited, { code: null, signal });
      await assertNoneAlive();
    });
  }

  it("piped REPL, SIGTERM: the session ends; hook and child are gone", async () => {
    const child = await startWithHook(["--on-file", FORK], "SELECT * FROM './a.txt'\n");
    const exited = exitOf(child);
    child.kill("SIGTERM");
    const exit = await exited;
    assert.equal(exit.code, 143, JSON.stringify(exit));
    await assertNoneAlive();
  });

  it("server, SIGTERM during the start-up build: exit 0; hook and child are gone", async () => {
    writeFileSync(pidFile, "");
    writeFileSync(
      join(root, "hooks/fork.toml"),
      `[[table]]\nname = "t"\nglob = "a.txt"\non-file = "${process.execPath} hooks/fork.mjs {path}"\n`,
    );
    const child = spawn(
      process.execPath,
      [DIRQ_BIN, "server", "-c", "hooks/fork.toml", "--host", "127.0.0.1", "--port", "0"],
      {
        cwd: root,
        env: { ...process.env, DIRQ_PROGRESS: "never", DIRQ_TEST_PIDS: pidFile },
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    // What the server said, for a failure to show (a clean run says nothing).
    let stderr = "";
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    await eventually(() => recordedPids().length >= 2, "the hook started its child", 60_000);
    const exited = exitOf(child);
    child.kill("SIGTERM");
    assert.deepEqual(await exited, { code: 0, signal: null }, `stderr: ${stderr}`);
    await assertNoneAlive();
  });
});

describe("hooks that finish badly", () => {
  it("a hook that prints for ever is stopped past the output limit: that file is skipped", async () => {
    const result = await runDirq(["SELECT count(*) AS n FROM './a.txt'", "--on-file", "yes"], {
      cwd: root,
    });
    assertNoStackTrace(result.stderr);
    assert.equal(result.code, 23, result.stderr);
    assert.deepEqual(parseRows(result.stdout), [{ n: 0 }]);
    assert.match(result.stderr, /^dirq: skipped a\.txt: hook printed more than 256 MiB/m);
  });

  it("a daemon a hook leaves behind is stopped when the hook ends; its rows stand", async () => {
    writeFileSync(pidFile, "");
    const result = await runDirq(
      ["SELECT ok FROM './a.txt'", "--on-file", `${process.execPath} hooks/daemon.mjs {path}`],
      { cwd: root, env: { DIRQ_TEST_PIDS: pidFile } },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(parseRows(result.stdout), [{ ok: 1 }]);
    await assertNoneAlive();
  });

  it("a hook that closes stdout early and goes on is skipped once it ends", async () => {
    const result = await runDirq(
      ["SELECT * FROM './a.txt'", "--on-file", "sh -c 'exec >&-; sleep 0.2; echo late >&2'"],
      { cwd: root },
    );
    assertNoStackTrace(result.stderr);
    assert.equal(result.code, 23, result.stderr);
    assert.match(result.stderr, /^dirq: skipped a\.txt: hook printed invalid JSON/m);
  });

  it("binary garbage on stdout and stderr: one escaped line, no terminal control bytes", async () => {
    const garbage = "head -c 65536 /dev/urandom";
    const result = await runDirq(
      ["SELECT * FROM './a.txt'", "--on-file", `sh -c '${garbage}; ${garbage} >&2; exit 0'`],
      { cwd: root },
    );
    assertNoStackTrace(result.stderr);
    assert.equal(result.code, 23, result.stderr);
    const lines = result.stderr.trimEnd().split("\n");
    assert.equal(lines.length, 1, result.stderr);
    assert.doesNotMatch(result.stderr.trimEnd(), /[\u0000-\u001f\u007f]/);
  });

  it("the server keeps serving while a config hook prints garbage and dies by a signal", async () => {
    writeFileSync(
      join(root, "hooks/bad.toml"),
      `[[table]]\nname = "bad"\nglob = "a.txt"\non-file = "sh -c 'head -c 4096 /dev/urandom; kill -SEGV $$'"\n`,
    );
    const server = await startServer(
      ["-c", "hooks/bad.toml", "--host", "127.0.0.1", "--port", "0"],
      { cwd: root },
    );
    try {
      const answer = await fetch(`${server.url}/query`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ sql: "SELECT count(*) AS n FROM bad" }),
      });
      assert.equal(answer.status, 200);
      assert.deepEqual(await answer.json(), [{ n: 0 }]);
    } finally {
      assert.deepEqual(await server.stop(), { code: 0, signal: null });
    }
  });
});
