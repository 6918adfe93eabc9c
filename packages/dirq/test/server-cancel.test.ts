import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { type ClientRequest, request as httpRequest } from "node:http";
import { availableParallelism } from "node:os";
import { connect } from "node:net";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  assertJsonError,
  clockTicks,
  cpuTicks,
  eventually,
  postQuery,
  queryProcesses,
  queryRows,
  serverFixtures,
  type ServerProcess,
  startServer,
} from "./server-support.js";

/*
 * Statements nobody waits for any more: a client that goes away, a burst that is over, a
 * server that shuts down. Asserted on the server's real query processes (/proc) and on what
 * its clients receive; the time limits below are safety nets, far beyond what each step
 * needs, and all shorter than the 30-second statement limit that would otherwise end them.
 */

const { tree, serve } = serverFixtures();

/** Never ends on its own: counts an endless recursive CTE. */
const RUNAWAY =
  "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c";

/** Seconds of work for SQLite, with a known answer. */
const SLOW =
  "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10000000) SELECT count(*) AS n FROM c";

/** The pool's size on this machine (its default: one process per core, at least two). */
const POOL_SIZE = Math.max(2, availableParallelism());

/** Well within the 30-second statement limit, which would end an abandoned statement too. */
const SAFETY_MS = 20_000;

/** Whether a process has ended (gone, or a zombie its parent has not reaped yet). */
function ended(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
}

/** `POST /query` on a connection of its own, which `destroy()` drops: a client going away. */
function postAndLeave(server: ServerProcess, sql: string): ClientRequest {
  const body = JSON.stringify({ sql });
  const client = httpRequest({
    host: "127.0.0.1",
    port: server.port,
    path: "/query",
    method: "POST",
    agent: false,
    headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
  });
  // Its own destroy() surfaces as an error here: expected.
  client.on("error", () => {});
  client.end(body);
  return client;
}

/** A query process of the server that burns CPU: one running a statement. */
async function busyQueryProcess(server: ServerProcess, count = 1): Promise<number[]> {
  const enough = clockTicks() / 5;
  const start = new Map<number, number>();
  let busy: number[] = [];
  await eventually(
    () => {
      busy = [];
      for (const pid of queryProcesses(server)) {
        const ticks = cpuTicks(pid);
        if (ticks === null) continue;
        if (!start.has(pid)) start.set(pid, ticks);
        if (ticks - (start.get(pid) as number) >= enough) busy.push(pid);
      }
      return busy.length >= count;
    },
    `${count} query process(es) running a statement`,
    SAFETY_MS,
  );
  return busy;
}

describe("dirq server: statements whose client went away", () => {
  it("a client that disconnects stops its statement: its query process is killed", async () => {
    const server = await serve(tree({ "a.txt": "a" }));
    const client = postAndLeave(server, RUNAWAY);
    const [running] = (await busyQueryProcess(server)) as [number];
    client.destroy();
    await eventually(
      () => ended(running),
      `the query process ${running} of the abandoned statement ends`,
      SAFETY_MS,
    );
    // The server serves on, with a pool of its usual size.
    assert.deepEqual(await queryRows(server, "SELECT 1 AS one"), [{ one: 1 }]);
    assert.ok(queryProcesses(server).length <= POOL_SIZE);
  });

  it("a burst of clients that disconnect leaves no more query processes than the pool's size", async () => {
    const server = await serve(tree({ "a.txt": "a" }));
    const clients = Array.from({ length: POOL_SIZE + 3 }, () => postAndLeave(server, RUNAWAY));
    // Statements that run for a while stop counting against the pool's size: it grows.
    await eventually(
      () => queryProcesses(server).length > POOL_SIZE,
      `more than ${POOL_SIZE} query processes for the burst`,
      SAFETY_MS,
    );
    for (const client of clients) client.destroy();
    await eventually(
      () => queryProcesses(server).length <= POOL_SIZE,
      `at most ${POOL_SIZE} query processes once the clients are gone`,
      SAFETY_MS,
    );
    assert.deepEqual(await queryRows(server, "SELECT 2 AS two"), [{ two: 2 }]);
  });

  it("after a burst of slow statements, the idle query processes beyond the pool's size end", async () => {
    const server = await serve(tree({ "a.txt": "a" }));
    let most = 0;
    let bursting = true;
    const watching = (async () => {
      while (bursting) {
        most = Math.max(most, queryProcesses(server).length);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    const answers = await Promise.all(
      Array.from({ length: POOL_SIZE + 2 }, (_, i) => postQuery(server, `${SLOW} -- ${i}`)),
    );
    bursting = false;
    await watching;
    for (const answer of answers) assert.equal(answer.text, '[{"n":10000000}]\n');
    assert.ok(most > POOL_SIZE, `the burst grew the pool (at most ${most} processes seen)`);
    await eventually(
      () => queryProcesses(server).length <= POOL_SIZE,
      `at most ${POOL_SIZE} query processes once idle`,
      SAFETY_MS,
    );
    // The ones left answer.
    const after = await Promise.all(
      Array.from({ length: 4 }, (_, i) => postQuery(server, `SELECT ${i} AS n`)),
    );
    after.forEach((answer, i) => assert.equal(answer.text, `[{"n":${i}}]\n`));
  });
});

/** Whether a new connection to the server is refused (the listening socket is closed). */
function refusesConnections(server: ServerProcess): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(server.port, server.host);
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code === "ECONNREFUSED"));
  });
}

describe("dirq server: statements still out at shutdown", () => {
  it("a statement in flight at SIGINT finishes and gets its answer; exit 0", async () => {
    const server = await serve(tree({ "a.txt": "a" }));
    const count = 3_000_000;
    const answer = postQuery(server, SLOW.replace("10000000", String(count)));
    await busyQueryProcess(server);
    const exit = server.stop("SIGINT");
    const drained = await answer;
    assert.equal(drained.status, 200, drained.text);
    assert.equal(drained.text, `[{"n":${count}}]\n`);
    assert.deepEqual(await exit, { code: 0, signal: null }, server.stderr());
  });

  it("a runaway statement is answered 503 after the drain; new connections are refused meanwhile", async () => {
    const server = await serve(tree({ "a.txt": "a" }));
    let answered = false;
    const answer = postQuery(server, RUNAWAY).finally(() => (answered = true));
    await busyQueryProcess(server);
    const signalled = Date.now();
    const exit = server.stop("SIGTERM");
    await eventually(() => refusesConnections(server), "new connections to be refused", SAFETY_MS);
    assert.equal(answered, false, "the statement in flight is still draining");
    assert.equal(server.child.exitCode, null, "the server still runs while it drains");
    assertJsonError(await answer, 503, /shutting down/);
    // The drain is 5 seconds; a statement is stopped only once it is over.
    assert.ok(Date.now() - signalled >= 4_000, "the statement got the drain's time");
    assert.deepEqual(await exit, { code: 0, signal: null });
  });

  it("a statement waiting for its table to be built gets 503 too (SIGINT)", async () => {
    const root = tree({});
    for (let d = 0; d < 60; d++) {
      mkdirSync(join(root, `d${d}`));
      for (let f = 0; f < 500; f++) writeFileSync(join(root, `d${d}`, `f${f}.txt`), "x");
    }
    const server = await startServer(["--host", "127.0.0.1", "--port", "0"], {
      cwd: root,
      env: { DIRQ_PROGRESS: "always" },
    });
    try {
      const before = server.stderr().length;
      const answer = postQuery(server, `SELECT count(*) AS n FROM './', (${RUNAWAY})`);
      // Progress on stderr says when the build has begun.
      await eventually(
        () => /scanning \d+ files/.test(server.stderr().slice(before)),
        "the table build to begin",
        SAFETY_MS,
      );
      const exit = server.stop("SIGINT");
      // Stopped while its table is built (or, on a machine that built it first, while it runs).
      assertJsonError(await answer, 503, /shutting down/);
      assert.deepEqual(await exit, { code: 0, signal: null });
    } finally {
      await server.kill();
    }
  });
});
