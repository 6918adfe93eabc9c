import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  delay,
  openReadyEvents,
  postQuery,
  queryRows,
  type ServerProcess,
  startServer,
} from "./server-support.js";

/*
 * A build in progress must leave the server free: while one request fills a path-table,
 * other clients' statements are answered and /events keep-alives flow. Asserted by order of
 * arrival only (no timing thresholds): all of it arrives before the big answer.
 *
 * The fill is made long by work it must do, not by size: one folder's `.gitignore` holds
 * thousands of patterns, each tried on that folder's files (seconds of the fill thread's
 * time, against milliseconds for a request). A tree of 30,000 plain files no longer did: the
 * scan got fast enough that a CI run saw the big answer before the third request's.
 */

const DIRS = 20;
const FILES_PER_DIR = 100;
// Enough for the fill to outlast three quick statements, few enough that a loaded CI machine
// builds the table within the server's 30-second statement timeout.
const PATTERNS = 8_000;

const roots: string[] = [];
const servers: ServerProcess[] = [];
after(async () => {
  await Promise.all(servers.map((server) => server.kill()));
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** Plain files, and in `d7` a `.gitignore` of patterns that match none of them. */
function treeWithCostlyRules(): string {
  const root = mkdtempSync(join(tmpdir(), "dirq-stall-"));
  roots.push(root);
  for (let d = 0; d < DIRS; d++) {
    const dir = join(root, `d${d}`);
    mkdirSync(dir);
    for (let f = 0; f < FILES_PER_DIR; f++) writeFileSync(join(dir, `f${f}.txt`), "x");
  }
  const patterns = Array.from({ length: PATTERNS }, (_, i) => `zz${i}*q/**/y${i}`);
  writeFileSync(join(root, "d7", ".gitignore"), `${patterns.join("\n")}\n`);
  return root;
}

async function until(done: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !done(); waited += 5) {
    if (waited > 120_000) throw new Error(`gave up waiting for ${what}`);
    await delay(5);
  }
}

describe("a big build does not stall the server", () => {
  it("answers other statements and sends /events keep-alives while a path-table fills", async () => {
    const root = treeWithCostlyRules();
    const server = await startServer(["--host", "127.0.0.1", "--port", "0"], {
      cwd: root,
      env: { DIRQ_PROGRESS: "always", DIRQ_KEEP_ALIVE_MS: "10" },
      // The watcher reads d7's thousands of rules before the server listens: seconds alone, far more
      // beside a loaded CI run. What is asserted is the order of arrivals, not this wait.
      timeoutMs: 180_000,
    });
    servers.push(server);
    const events = await openReadyEvents(server);
    const arrivals: string[] = [];
    const big = queryRows(server, "SELECT count(*) AS n FROM './'").then((rows) => {
      arrivals.push("big answer");
      return rows;
    });
    // The fill has begun once the server reports its scan.
    await until(() => /scanning \d+ files/.test(server.stderr()), "the scan to start");
    const keepAlives = events.comments.length;
    for (let i = 1; i <= 3; i++) {
      // A new statement each time: none is answered from a cache.
      const answer = await postQuery(server, `SELECT ${i} AS n`);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(JSON.parse(answer.text), [{ n: i }]);
      arrivals.push(`SELECT ${i}`);
    }
    await events.until(() => events.comments.length >= keepAlives + 3, "three keep-alives");
    arrivals.push("keep-alives");
    assert.deepEqual(await big, [{ n: DIRS * FILES_PER_DIR + 1 }]);
    assert.deepEqual(arrivals, ["SELECT 1", "SELECT 2", "SELECT 3", "keep-alives", "big answer"]);
  });
});

describe("a FIFO named .gitignore does not stall the server", () => {
  it(
    "made while the server runs, it is passed over and the server goes on answering and sending rows",
    { timeout: 60_000 },
    async () => {
      const root = mkdtempSync(join(tmpdir(), "dirq-stall-"));
      roots.push(root);
      mkdirSync(join(root, "sub"));
      writeFileSync(join(root, "sub", "a.txt"), "a");
      const server = await startServer(["--host", "127.0.0.1", "--port", "0"], { cwd: root });
      servers.push(server);
      assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM './'"), [{ n: 1 }]);
      const events = await openReadyEvents(server);
      try {
        execFileSync("mkfifo", [join(root, "sub", ".gitignore")]);
        writeFileSync(join(root, "sub", "b.txt"), "b");
        await events.next((row) => row.table === "./" && row.file_path === "sub/b.txt");
        assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM './'"), [{ n: 2 }]);
      } finally {
        events.close();
      }
    },
  );
});
