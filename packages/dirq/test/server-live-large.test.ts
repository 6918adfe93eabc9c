import assert from "node:assert/strict";
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  type LiveData,
  openLive,
  openReadyEvents,
  postQuery,
  serverFixtures,
  untilLiveCurrent,
} from "./server-support.js";

/*
 * A live query over a table of 200,000 rows, re-run whole after one file changed: its answer
 * is diffed off the main thread, so `POST /query` on another table and `/events` keep-alives
 * go on while it is. Order of arrival only, no timing thresholds.
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

/** Resolves once `done()` holds, looking again at every turn of the event loop. */
async function whenTrue(done: () => boolean, what: string): Promise<void> {
  for (let turns = 0; !done(); turns++) {
    assert.ok(turns < 10_000_000, `never saw ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe("GET /live of a large answer", () => {
  it("answers POST /query and /events keep-alives while its diff is made", async () => {
    const spec: Record<string, string> = {
      ".dirq.toml": CONFIG,
      "small/s.json": JSON.stringify([{ id: 1 }, { id: 2 }]),
    };
    for (let file = 0; file < FILES; file++) spec[`big/f${file}.json`] = bigFile(file);
    const root = tree(spec);
    const server = await serve(root, ["-c", ".dirq.toml"], { DIRQ_KEEP_ALIVE_MS: "20" });
    // ORDER BY: re-run whole after every change, never file by file. Two statements, so that
    // one's diff frame marks a moment when the other's diff is being made.
    const statements = [
      "SELECT id, grp, v, name FROM big ORDER BY id",
      "SELECT id, name, v, grp FROM big ORDER BY id",
    ];
    const lives = [await openLive(server, { sql: statements[0] as string })];
    lives.push(await openLive(server, { sql: statements[1] as string }));
    const events = await openReadyEvents(server);
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
      await whenTrue(() => diffs(0) !== 0 || diffs(1) !== 0, "a diff frame");
      // The diffs are made one after the other: the second is being made now.
      const second = diffs(0) === 0 ? 0 : 1;
      assert.equal(diffs(second), 0, "both diff frames came at once");
      const keepAlives = events.comments.length;

      const answer = await postQuery(server, "SELECT count(*) AS n FROM small");
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(JSON.parse(answer.text), [{ n: 2 }]);
      assert.equal(diffs(second), 0, "POST /query was answered after the diff frame");
      await whenTrue(() => events.comments.length > keepAlives, "a keep-alive");
      assert.equal(diffs(second), 0, "the /events keep-alive came after the diff frame");

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
      events.close();
    }
  });
});
