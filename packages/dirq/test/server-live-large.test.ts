import assert from "node:assert/strict";
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  type LiveData,
  openLive,
  postQuery,
  request,
  serverFixtures,
  untilLiveCurrent,
} from "./server-support.js";

/*
 * A live query over a table of 200,000 rows, re-run whole after one file changed: its answer
 * is diffed off the main thread, so `POST /query` on another table is answered while it is.
 * `GET /live/stats` says when a query's diff is being made; a diff made on the main thread
 * ends before the server reads another request, so no answer could ever say so, and the test
 * fails then. Order of arrival only, no timing thresholds.
 */

const { tree, serve } = serverFixtures();

const FILES = 200;
const ROWS_PER_FILE = 1000;

const CONFIG = `[[table]]
name = "big"
glob = "big/*.json"
format = "json"
schema = { id = "INTEGER", grp = "TEXT", v = "INTEGER", name = "TEXT" }

[[table]]
name = "small"
glob = "small/*.json"
format = "json"
schema = { id = "INTEGER" }
`;

function bigFile(file: number, changed = -1): string {
  const rows = Array.from({ length: ROWS_PER_FILE }, (_, i) => {
    const id = file * ROWS_PER_FILE + i;
    return { id, grp: `g${id % 20}`, v: id === changed ? -1 : (id * 7) % 90, name: `n${i}` };
  });
  return JSON.stringify(rows);
}

/** The statements whose diff is being made now, as `GET /live/stats` says. */
async function diffing(url: string): Promise<string[]> {
  const answer = await request(`${url}/live/stats`);
  assert.equal(answer.status, 200, answer.text);
  const stats = JSON.parse(answer.text) as { queries: { sql: string; diffing: boolean }[] };
  return stats.queries.filter((query) => query.diffing).map((query) => query.sql);
}

describe("GET /live of a large answer", () => {
  it("answers POST /query while its diff is made", async () => {
    const spec: Record<string, string> = {
      ".dirq.toml": CONFIG,
      "small/s.json": JSON.stringify([{ id: 1 }, { id: 2 }]),
    };
    for (let file = 0; file < FILES; file++) spec[`big/f${file}.json`] = bigFile(file);
    const root = tree(spec);
    const server = await serve(root, ["-c", ".dirq.toml"], { DIRQ_LIVE_STATS: "1" });
    // ORDER BY: re-run whole after every change, never file by file. Two statements: two
    // diffs, two chances to be asked while one is made.
    const statements = [
      "SELECT id, grp, v, name FROM big ORDER BY id",
      "SELECT id, name, v, grp FROM big ORDER BY id",
    ];
    const lives = [await openLive(server, { sql: statements[0] as string })];
    lives.push(await openLive(server, { sql: statements[1] as string }));
    try {
      for (const live of lives) {
        assert.equal(live.status, 200, live.error);
        await live.until(() => live.snapshot !== null, "the snapshot", 120_000);
        assert.equal(live.rows.length, FILES * ROWS_PER_FILE);
        assert.equal(live.snapshot?.incremental, false);
      }
      const diffs = (n: number) => lives[n]?.frames.filter((f) => f.event === "diff").length;

      const changed = 7 * ROWS_PER_FILE + 500;
      writeFileSync(join(root, "next.tmp"), bigFile(7, changed));
      renameSync(join(root, "next.tmp"), join(root, "big/f7.json"));
      // Asked again and again until both diff frames are in: a statement said to be diffing
      // before and after a POST /query was diffing while that statement was answered.
      let answeredWhileDiffing = false;
      while (!answeredWhileDiffing && (diffs(0) === 0 || diffs(1) === 0)) {
        const before = await diffing(server.url);
        if (before.length === 0) continue;
        const answer = await postQuery(server, "SELECT count(*) AS n FROM small");
        assert.equal(answer.status, 200, answer.text);
        assert.deepEqual(JSON.parse(answer.text), [{ n: 2 }]);
        const after = await diffing(server.url);
        answeredWhileDiffing = before.some((sql) => after.includes(sql));
      }
      assert.ok(
        answeredWhileDiffing,
        "no POST /query was answered while a diff was being made: was it made on the main thread?",
      );

      for (const [n, live] of lives.entries()) {
        await live.until(() => diffs(n) === 1, "the diff frame", 60_000);
        const diff = JSON.parse(live.frames.find((f) => f.event === "diff")?.data ?? "{}");
        const ids = (list: { row: { id: number } }[]) => list.map((placed) => placed.row.id);
        assert.deepEqual(ids((diff as LiveData).removed as { row: { id: number } }[]), [changed]);
        assert.deepEqual(ids((diff as LiveData).added as { row: { id: number } }[]), [changed]);
        assert.deepEqual(live.rows[changed], { id: changed, grp: "g0", v: -1, name: "n500" });
        await untilLiveCurrent(server, live, statements[n] as string);
      }
    } finally {
      for (const live of lives) live.close();
    }
  });
});
