import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { makeTree, removeTree } from "./helpers.js";
import {
  assertJsonError,
  clockTicks,
  delay,
  type EventStream,
  openReadyEvents,
  postQuery,
  processTree,
  queryRows,
  type ServerProcess,
  startServer,
  treeCpu,
} from "./server-support.js";

/** Never ends on its own: counts an endless recursive CTE. */
const RUNAWAY =
  "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c";

/** CPU seconds the process tree of `pid` uses over `ms`, in total and per process. */
async function cpuOver(
  pid: number,
  ms: number,
): Promise<{ seconds: number; byProcess: Map<number, number> }> {
  const ticks = clockTicks();
  const start = treeCpu(pid);
  await delay(ms);
  const end = treeCpu(pid);
  let total = 0;
  const byProcess = new Map<number, number>();
  // A process that ended within the window is not counted: its work stopped.
  for (const [member, value] of end) {
    const used = (value - (start.get(member) ?? 0)) / ticks;
    byProcess.set(member, used);
    total += used;
  }
  return { seconds: total, byProcess };
}

/** The state letter of a process (`Z` for a zombie), or null once it is gone. */
function processState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0] ?? null;
  } catch {
    return null;
  }
}

/** The limit this server gets (DIRQ_QUERY_TIMEOUT_MS): long enough for what the test does
 * while its runaways run, shorter than the default 30 s they would otherwise spin for. */
const LIMIT_MS = 15_000;

describe("dirq server: the query timeout (slow)", () => {
  let root: string;
  let server: ServerProcess;
  let events: EventStream;

  before(async () => {
    root = makeTree({ "docs/a.md": "# a\n", "docs/b.md": "# b\n" });
    server = await startServer(["--host", "127.0.0.1", "--port", "0"], {
      cwd: root,
      env: { DIRQ_QUERY_TIMEOUT_MS: String(LIMIT_MS) },
    });
    assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM './docs'"), [{ n: 2 }]);
    // Opened now and left idle: the keep-alive test reads it after the timeout test.
    events = await openReadyEvents(server);
  });

  after(async () => {
    events?.close();
    await server?.kill();
    if (root) removeTree(root);
  });

  it(
    "runaway queries get 408 after the limit, other requests are served meanwhile, and their CPU use stops",
    { timeout: 90_000 },
    async (t) => {
      const started = Date.now();
      let runawayDone = false;
      // Two at once: each gets its own query process, and neither blocks other requests.
      const runaways = Promise.all([
        postQuery(server, RUNAWAY),
        postQuery(server, RUNAWAY),
      ]).finally(() => {
        runawayDone = true;
      });

      // While they run, the process tree is busy (this also proves the CPU measurement works).
      await delay(500);
      const busy = await cpuOver(server.pid, 2_000);
      t.diagnostic(`CPU while the runaways run: ${busy.seconds.toFixed(2)} s over 2 s`);
      assert.ok(busy.seconds > 0.3, `the runaways burn CPU (${busy.seconds} s over 2 s)`);
      const hot = [...busy.byProcess].filter(([, used]) => used > 0.1).map(([pid]) => pid);
      assert.ok(hot.length >= 1, "busy query processes");
      assert.ok(!hot.includes(server.pid), "statements run outside the server's own process");
      const tree = processTree(server.pid);
      assert.ok(hot.every((pid) => tree.includes(pid)));

      // Other requests are answered promptly meanwhile: a plain statement, a path-table, an event.
      const quickStart = Date.now();
      const quick = await postQuery(server, "SELECT 1 AS one");
      const quickMs = Date.now() - quickStart;
      assert.equal(quick.status, 200, quick.text);
      assert.equal(quick.text, '[{"one":1}]\n');
      assert.equal(runawayDone, false, "SELECT 1 was answered before the runaways ended");
      t.diagnostic(`SELECT 1 during the runaway took ${quickMs} ms`);
      assert.ok(quickMs < 5_000, `SELECT 1 took ${quickMs} ms while the runaway ran`);
      assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM './docs'"), [{ n: 2 }]);
      writeFileSync(join(root, "docs/during.md"), "written during the runaway");
      const insert = await events.next(
        (row) => row.action === "insert" && row.file_path === "docs/during.md",
      );
      assert.equal(insert.table, "./docs");
      assert.equal(runawayDone, false, "the event arrived before the runaways ended");

      const answers = await runaways;
      const elapsed = Date.now() - started;
      t.diagnostic(`408s after ${elapsed} ms`);
      for (const answer of answers) assertJsonError(answer, 408, /15-second timeout/);
      assert.ok(elapsed >= LIMIT_MS - 1_000, `408 came after ${elapsed} ms, before the limit`);
      assert.ok(elapsed < LIMIT_MS + 15_000, `408 came after ${elapsed} ms`);

      // After the 408s the work has really stopped: the tree is nearly idle...
      const idle = await cpuOver(server.pid, 2_000);
      t.diagnostic(`CPU after the 408s: ${idle.seconds.toFixed(2)} s over 2 s`);
      assert.ok(idle.seconds < 0.5, `CPU after the 408s: ${idle.seconds} s over 2 s`);
      // ...and the processes that ran the statements are gone (or at most unreaped zombies).
      for (const pid of hot) {
        const state = processState(pid);
        assert.ok(state === null || state === "Z", `query process ${pid} is still ${state}`);
      }

      // The server still answers, the next statements included.
      assert.deepEqual(await queryRows(server, "SELECT 2 AS two"), [{ two: 2 }]);
      assert.deepEqual(await queryRows(server, "SELECT path FROM './docs' ORDER BY path"), [
        { path: "docs/a.md" },
        { path: "docs/b.md" },
        { path: "docs/during.md" },
      ]);
    },
  );

  it("an idle /events stream gets keep-alive comment lines", { timeout: 60_000 }, async () => {
    // The stream has been open (idle but for one event) through the 15 s test above; when run
    // alone this waits for the first keep-alive (at most 15 s of idleness).
    await events.until(() => events.comments.length > 0, "a keep-alive comment", 20_000);
    for (const comment of events.comments) assert.match(comment, /^:/);
    // A comment is not a frame: the frames are still only `ready` and row events.
    assert.equal(events.frames[0]?.event, "ready");
    assert.ok(events.frames.slice(1).every((frame) => frame.event === "row"));
    // The stream still carries events after its keep-alives.
    writeFileSync(join(root, "docs/after-keep-alive.md"), "still there");
    await events.next(
      (row) => row.action === "insert" && row.file_path === "docs/after-keep-alive.md",
    );
  });
});
