import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { openIndexDatabase } from "../src/indexer/database.js";
import { QueryPool } from "../src/runner/query-pool.js";
import { postQuery, serverFixtures } from "./server-support.js";

/*
 * The query pool sends a busy query process several statements at once, and none to a process
 * before it is up. A statement that turns
 * out slow must not hold the ones queued behind it: they go to other processes. Order of
 * arrival only, no timing thresholds.
 */

const { tree, serve } = serverFixtures();

/** Seconds of work for SQLite, and a known answer. */
const SLOW =
  "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000000) SELECT count(*) AS n FROM c";
/** A loaded CI machine may run SLOW for many times its idle time: no statement limit here. */
const NO_TIMEOUT = { DIRQ_QUERY_TIMEOUT_MS: "600000" };

describe("the query pool", () => {
  it("answers statements sent right behind a slow one before it, each correctly", async () => {
    const server = await serve(tree({ "a.txt": "a" }), [], NO_TIMEOUT);
    // The pool's first process is warm: everything below goes to it first.
    assert.equal((await postQuery(server, "SELECT 0 AS n")).status, 200);
    let slowDone = false;
    const slow = postQuery(server, SLOW).then((answer) => {
      slowDone = true;
      return answer;
    });
    const quick = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const answer = await postQuery(server, `SELECT ${i + 1} AS n`);
        return { answer, beforeSlow: !slowDone };
      }),
    );
    quick.forEach(({ answer, beforeSlow }, i) => {
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.text, `[{"n":${i + 1}}]\n`);
      assert.ok(beforeSlow, `SELECT ${i + 1} waited for the slow statement`);
    });
    const answer = await slow;
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.text, '[{"n":20000000}]\n');
    // The process that ran the slow statement dropped the stolen ones unrun, and serves on.
    const after = await Promise.all(
      Array.from({ length: 8 }, (_, i) => postQuery(server, `SELECT ${100 + i} AS n`)),
    );
    after.forEach((each, i) => assert.equal(each.text, `[{"n":${100 + i}}]\n`));
  });

  it("a statement queued behind a cancelled one is answered, not failed", async () => {
    const directory = mkdtempSync(join(tmpdir(), "dirq-pool-"));
    const databasePath = join(directory, "index.db");
    openIndexDatabase(directory, databasePath).close();
    const pool = new QueryPool({
      databasePath,
      timeoutMs: 60_000,
      maxAnswerBytes: 1024 * 1024,
      maxProcesses: 1,
    });
    try {
      assert.equal((await pool.run("SELECT 0 AS n")).ok, true);
      // Both go to the one warm process: the second waits there behind the first.
      const client = new AbortController();
      const slow = pool.run(SLOW, { signal: client.signal });
      const behind = pool.run("SELECT 7 AS n");
      client.abort();
      await assert.rejects(slow, { code: "QUERY_CANCELLED" });
      const answer = await behind;
      assert.ok(answer.ok, JSON.stringify(answer));
      assert.equal(Buffer.from(answer.body).toString("utf8"), '[{"n":7}]\n');
    } finally {
      pool.close();
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it("a query process that dies before it is up fails one statement, and is not restarted for it", async () => {
    const directory = mkdtempSync(join(tmpdir(), "dirq-pool-"));
    const databasePath = join(directory, "index.db");
    openIndexDatabase(directory, databasePath).close();
    // Preloaded into every Node process the pool starts: a query process leaves at once.
    const starts = join(directory, "starts");
    const preload = join(directory, "die.cjs");
    writeFileSync(
      preload,
      `if (String(process.argv[1]).endsWith("query-process.js")) {
        require("node:fs").appendFileSync(${JSON.stringify(starts)}, "x");
        process.exit(3);
      }`,
    );
    writeFileSync(starts, "");
    const saved = process.env.NODE_OPTIONS;
    process.env.NODE_OPTIONS = `${saved ?? ""} --require ${preload}`.trim();
    const pool = new QueryPool({ databasePath, timeoutMs: 60_000, maxAnswerBytes: 1024 * 1024 });
    try {
      for (const n of [1, 2]) {
        await assert.rejects(pool.run(`SELECT ${n} AS n`), /query process exited/);
      }
      assert.equal(readFileSync(starts, "utf8"), "xx", "one process started per statement");
    } finally {
      pool.close();
      if (saved === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = saved;
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
