import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  openReadyEvents,
  postQuery,
  queryRows,
  type ServerProcess,
  startServer,
} from "./server-support.js";

/*
 * A big first build must leave the server free: while one request fills a large path-table,
 * other clients' statements are answered and /events keep-alives flow. Asserted by order of
 * arrival only (no timing thresholds): all of it arrives before the big answer.
 */

const DIRS = 60;
const FILES_PER_DIR = 500;

const roots: string[] = [];
const servers: ServerProcess[] = [];
after(async () => {
  await Promise.all(servers.map((server) => server.kill()));
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

function bigTree(): string {
  const root = mkdtempSync(join(tmpdir(), "dirq-stall-"));
  roots.push(root);
  for (let d = 0; d < DIRS; d++) {
    const dir = join(root, `d${d}`);
    mkdirSync(dir);
    for (let f = 0; f < FILES_PER_DIR; f++) writeFileSync(join(dir, `f${f}.txt`), "x");
  }
  return root;
}

async function until(done: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !done(); waited += 5) {
    if (waited > 120_000) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("a big build does not stall the server", () => {
  it("answers other statements and sends /events keep-alives while a big path-table fills", async () => {
    const root = bigTree();
    const server = await startServer(["--host", "127.0.0.1", "--port", "0"], {
      cwd: root,
      env: { DIRQ_PROGRESS: "always", DIRQ_KEEP_ALIVE_MS: "10" },
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
    assert.deepEqual(await big, [{ n: DIRS * FILES_PER_DIR }]);
    assert.deepEqual(arrivals, ["SELECT 1", "SELECT 2", "SELECT 3", "keep-alives", "big answer"]);
  });
});
