import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { DIRQ_BIN, processesMarked, processRuns, tempTree } from "./helpers.js";
import {
  eventually,
  type Exit,
  openLive,
  openReadyEvents,
  queryRows,
  startServer,
  treeCpu,
} from "./server-support.js";

/**
 * A stop at every phase of a server's and a REPL's life: the process ends within the bound
 * docs/http.md and docs/repl.md give, leaves no process of its own behind (its process group,
 * its hooks, its query processes) and removes its temporary index. Each phase is held open
 * by a hook that sleeps, or is one a small tree keeps going (the watch fallback's checks).
 */

/** The stop bound the docs give, with no request in flight. */
const STOP_BOUND_MS = 5_000;

/** A sleep whose length carries a unique fraction: the hook processes are found by it. */
function sleepMarker(): string {
  return `1000.${String(process.pid).padStart(7, "0")}${Math.floor(Math.random() * 1e7)}`;
}

/**
 * A tree whose `items` table runs `hook.sh` on every `data/*.json`: it sleeps (`marker`) on
 * files named `slow*` and prints a row for the others.
 */
function hookTree(marker: string, files: Record<string, string>): string {
  const root = tempTree({
    ...files,
    "hook.sh": `case "$1" in *slow*) exec sleep ${marker} ;; esac\nprintf '[{"name":"%s"}]' "$1"\n`,
  });
  chmodSync(join(root, "hook.sh"), 0o755);
  const hook = join(root, "hook.sh");
  writeFileSync(
    join(root, "dirq.toml"),
    `[[table]]\nname = "items"\nglob = "data/*.json"\ntimeout = 0\non-file = "${hook} {path}"\n`,
  );
  return root;
}

/** A dirq process in a process group of its own, with a temporary folder of its own. */
interface Started {
  child: ChildProcess;
  exited: Promise<Exit>;
  /** Its TMPDIR: where its index folder is made. */
  tmp: string;
  stdout(): string;
  stderr(): string;
}

function startDirq(args: readonly string[], cwd: string, env: Record<string, string> = {}) {
  const tmp = tempTree({});
  const child = spawn(process.execPath, [DIRQ_BIN, ...args], {
    cwd,
    detached: true,
    env: { ...process.env, DIRQ_PROGRESS: "never", TMPDIR: tmp, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<Exit>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return { child, exited, tmp, stdout: () => stdout, stderr: () => stderr };
}

/** The processes of process group `pgid` (Linux: read from /proc). */
function processGroup(pgid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid && processRuns(Number(entry))) found.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/**
 * Sends `signal` to `started`'s dirq process and asserts that it exits as `expected` within
 * the bound, that nothing of its process group or its hooks (`marker`) still runs, and that
 * its temporary index folder is gone.
 */
async function assertStops(
  started: Started,
  signal: NodeJS.Signals,
  expected: Exit,
  marker: string | null,
): Promise<void> {
  const pid = started.child.pid as number;
  const sent = Date.now();
  started.child.kill(signal);
  const timer = setTimeout(() => started.child.kill("SIGKILL"), 60_000);
  const exit = await started.exited;
  const took = Date.now() - sent;
  clearTimeout(timer);
  assert.deepEqual(exit, expected, started.stderr());
  assert.ok(took < STOP_BOUND_MS, `exited ${took} ms after ${signal}; ${started.stderr()}`);
  await eventually(
    () =>
      processGroup(pid).length === 0 && (marker === null || processesMarked(marker).length === 0),
    `processes left: group ${processGroup(pid).join(", ")}; hooks ${marker && processesMarked(marker).join(", ")}`,
  );
  await eventually(
    () => readdirSync(started.tmp).length === 0,
    `temporary folder left: ${readdirSync(started.tmp).join(", ")}`,
  );
  assert.doesNotMatch(started.stderr(), /internal error|FATAL/);
}

/** Resolves once `check` holds on what `started` printed; rejects if it exits first. */
async function printed(started: Started, check: () => boolean, what: string): Promise<void> {
  await eventually(() => {
    if (started.child.exitCode !== null || started.child.signalCode !== null) {
      throw new Error(`exited before ${what}: ${started.stderr()}`);
    }
    return check();
  }, what);
}

const SERVER_ARGS = ["server", "-c", "dirq.toml", "--host", "127.0.0.1", "--port", "0"];

describe("server stop", { concurrency: true }, () => {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`${signal} during the start-up build, a hook running: exit 0`, async () => {
      const marker = sleepMarker();
      const root = hookTree(marker, { "data/a.json": "{}", "data/slow.json": "{}" });
      const started = startDirq(SERVER_ARGS, root);
      await printed(started, () => processesMarked(marker).length > 0, "the hook to start");
      await assertStops(started, signal, { code: 0, signal: null }, marker);
      assert.doesNotMatch(started.stdout(), /Running at/);
    });
  }

  it("SIGTERM during the start-up build of a big file in a built-in format: exit 0", async () => {
    const rows = Array.from({ length: 100_000 }, (_, i) =>
      JSON.stringify({ id: i, name: `n${i}` }),
    );
    const root = tempTree({
      "data/big.jsonl": `${rows.join("\n")}\n`,
      "data/small.jsonl": '{"id":-1}\n',
      "dirq.toml": '[[table]]\nname = "items"\nglob = "data/*.jsonl"\nformat = "jsonl"\n',
    });
    // Progress lines on stderr say the build has begun.
    const started = startDirq(SERVER_ARGS, root, { DIRQ_PROGRESS: "always" });
    await printed(started, () => /indexing 0\//.test(started.stderr()), "the build to begin");
    await assertStops(started, "SIGTERM", { code: 0, signal: null }, null);
  });

  it("SIGTERM while serving: a burst's hooks running, folders checked without a watch, /events and /live open: exit 0", async () => {
    const marker = sleepMarker();
    const files: Record<string, string> = {};
    for (let i = 0; i < 20; i++) files[`data/f${i}.json`] = "{}";
    const root = hookTree(marker, files);
    const tmp = tempTree({});
    // One watch only: the other folders are checked by the fallback's thread.
    const env = { TMPDIR: tmp, DIRQ_MAX_WATCHES: "1" };
    const server = await startServer(SERVER_ARGS.slice(1), { cwd: root, env, detached: true });
    assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM items"), [{ n: 20 }]);
    const events = await openReadyEvents(server);
    const live = await openLive(server, { sql: "SELECT name FROM items ORDER BY name" });
    assert.equal(live.status, 200, live.error);
    // A burst: every file rewritten, some to a name whose hook sleeps.
    for (let i = 0; i < 20; i++) writeFileSync(join(root, `data/f${i}.json`), '{"v":2}');
    for (let i = 0; i < 5; i++) writeFileSync(join(root, `data/slow${i}.json`), "{}");
    await eventually(() => processesMarked(marker).length > 0, "the burst's hooks to start");
    const started: Started = {
      child: server.child,
      exited: server.exited,
      tmp,
      stdout: server.stdout,
      stderr: server.stderr,
    };
    await assertStops(started, "SIGTERM", { code: 0, signal: null }, marker);
    assert.deepEqual(await events.ended, { how: "end" });
    await live.ended;
  });
});

describe("REPL stop", { concurrency: true }, () => {
  it("SIGTERM during the start-up build, a hook running: ended by the signal, hooks stopped", async () => {
    const marker = sleepMarker();
    const root = hookTree(marker, { "data/a.json": "{}", "data/slow.json": "{}" });
    const started = startDirq(["-c", "dirq.toml"], root);
    await printed(started, () => processesMarked(marker).length > 0, "the hook to start");
    await assertStops(started, "SIGTERM", { code: null, signal: "SIGTERM" }, marker);
  });

  it("SIGTERM during a long statement: exit 143, its query process stopped", async () => {
    const root = tempTree({ "a.txt": "a" });
    const started = startDirq([], root);
    started.child.stdin?.write(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c;\n",
    );
    // Running: a query process has used a good tenth of a second since.
    const pid = started.child.pid as number;
    await printed(
      started,
      () => [...treeCpu(pid)].some(([each, ticks]) => each !== pid && ticks > 10),
      "the statement to run",
    );
    await assertStops(started, "SIGTERM", { code: 143, signal: null }, null);
  });
});
