import assert from "node:assert/strict";
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { isDirqError, type LiveChange, type LiveRows, open, type Row } from "../src/index.js";
import { makeTree, removeTree } from "./helpers.js";

/** `db.live()`: the current rows and an iterator of changes, over real files (docs/sdk.md). */

const parse = (_path: string, content: Buffer) => JSON.parse(content.toString("utf8")) as Row[];

const roots: string[] = [];
after(() => roots.forEach(removeTree));

function liveTree(): string {
  const root = makeTree({
    "data/a.json": JSON.stringify([
      { id: 1, name: "one", v: 10 },
      { id: 2, name: "two", v: 60 },
    ]),
    "data/b.json": JSON.stringify([{ id: 3, name: "three", v: 70 }]),
    "tmp/.keep": "",
  });
  roots.push(root);
  return root;
}

function openDb(root: string) {
  return open({
    root,
    tables: [{ name: "items", glob: "data/*.json", extract: parse }],
    progress: false,
  });
}

/** A `next()` still out from an earlier wait: its change is the next one taken. */
const outstanding = new WeakMap<LiveRows, Promise<IteratorResult<LiveChange>>>();

/** Takes changes until `done()` holds; the changes taken. */
async function changesUntil(live: LiveRows, done: () => Promise<boolean>): Promise<LiveChange[]> {
  const taken: LiveChange[] = [];
  const deadline = Date.now() + 60_000;
  while (!(await done())) {
    assert.ok(Date.now() < deadline, `timed out; changes so far: ${JSON.stringify(taken)}`);
    const pending = outstanding.get(live) ?? live.next();
    outstanding.set(live, pending);
    const next = await Promise.race([
      pending,
      new Promise<null>((resolve) => setTimeout(() => resolve(null), 500)),
    ]);
    if (next === null) continue;
    outstanding.delete(live);
    if (!next.done) taken.push(next.value);
  }
  return taken;
}

describe("SDK: db.live()", () => {
  it("holds the statement's answer in its order and gives each change, keyed rows as updates", async () => {
    const root = liveTree();
    const db = openDb(root);
    try {
      const sql = "SELECT id, name, v FROM items WHERE v > ? ORDER BY v DESC";
      const live = db.live(sql, [50], { key: ["id"] });
      await live.ready;
      assert.deepEqual(live.rows, [
        { id: 3, name: "three", v: 70 },
        { id: 2, name: "two", v: 60 },
      ]);
      assert.deepEqual(live.columns, ["id", "name", "v"]);
      const same = async () =>
        JSON.stringify(live.rows) === JSON.stringify(await db.query(sql, [50]));

      writeFileSync(join(root, "data/a.json"), JSON.stringify([{ id: 2, name: "TWO", v: 90 }]));
      const changes = await changesUntil(live, same);
      const updates = changes.flatMap((change) => change.updated);
      assert.deepEqual(updates, [
        {
          from: 1,
          at: 0,
          oldRow: { id: 2, name: "two", v: 60 },
          row: { id: 2, name: "TWO", v: 90 },
        },
      ]);
      assert.ok(changes.every((change) => change.commit > 0 && !change.snapshot));

      writeFileSync(join(root, "tmp/c.json"), JSON.stringify([{ id: 4, name: "four", v: 80 }]));
      renameSync(join(root, "tmp/c.json"), join(root, "data/c.json"));
      rmSync(join(root, "data/b.json"));
      await changesUntil(live, same);
      assert.deepEqual(live.rows, [
        { id: 2, name: "TWO", v: 90 },
        { id: 4, name: "four", v: 80 },
      ]);
      live.close();
      assert.deepEqual(await (outstanding.get(live) ?? live.next()), {
        value: undefined,
        done: true,
      });
    } finally {
      await db.close();
    }
  });

  it("keeps a statement without an order as the same rows as a fresh query, read file by file", async () => {
    const root = liveTree();
    const db = openDb(root);
    try {
      const sql = "SELECT id, upper(name) AS n FROM items WHERE v >= 10";
      const live = db.live(sql);
      const other = db.live(sql);
      await Promise.all([live.ready, other.ready]);
      const sorted = (rows: readonly Row[]) => rows.map((row) => JSON.stringify(row)).sort();
      const same = async () =>
        JSON.stringify(sorted(live.rows)) === JSON.stringify(sorted(await db.query(sql)));
      writeFileSync(join(root, "data/d.json"), JSON.stringify([{ id: 5, name: "five", v: 12 }]));
      const changes = await changesUntil(live, same);
      assert.deepEqual(
        changes.flatMap((change) => change.added.map((added) => added.row)),
        [{ id: 5, n: "FIVE" }],
      );
      assert.deepEqual(changes.at(-1)?.added[0]?.at, 3);
      await changesUntil(other, async () => other.rows.length === live.rows.length);
      assert.deepEqual(other.rows, live.rows);
      other.close();
      live.close();
    } finally {
      await db.close();
    }
  });

  it("rejects a statement that cannot run, and ends with signal and close()", async () => {
    const root = liveTree();
    const db = openDb(root);
    try {
      const refused = db.live("DELETE FROM items");
      await assert.rejects(refused.ready, (error: unknown) => isDirqError(error));
      await assert.rejects(refused.next(), (error: unknown) => isDirqError(error));
      const badKey = db.live("SELECT id FROM items", undefined, { key: ["nope"] });
      await assert.rejects(badKey.ready, /key column "nope" is not a column/);

      const controller = new AbortController();
      const stopped = db.live("SELECT id FROM items ORDER BY id", undefined, {
        signal: controller.signal,
      });
      await stopped.ready;
      const pending = stopped.next();
      controller.abort();
      assert.deepEqual(await pending, { value: undefined, done: true });

      const following = db.live("SELECT name FROM items ORDER BY name");
      await following.ready;
      const waiting = following.next();
      await db.close();
      assert.deepEqual(await waiting, { value: undefined, done: true });
    } finally {
      await db.close();
    }
  });
});
