import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { open, type WatchEvent } from "../src/index.js";
import { makeTree, removeTree } from "./helpers.js";

/** `watch()` resumes: `lastEventId`, and a reset for what a consumer lost (docs/sdk.md). */

const roots: string[] = [];
after(() => {
  for (const root of roots) removeTree(root);
});

function itemsIndex() {
  const root = makeTree({ "data/seed.json": '{"name":"seed"}' });
  roots.push(root);
  const db = open({
    root,
    progress: false,
    tables: [{ name: "items", glob: "data/*.json", format: "json" }],
  });
  const write = (name: string) =>
    writeFileSync(join(root, "data", `${name}.json`), JSON.stringify({ name }));
  return { db, write };
}

/** The next `count` events of `iterator` (failing after 10 s). */
async function take(iterator: AsyncIterator<WatchEvent>, count: number): Promise<WatchEvent[]> {
  const events: WatchEvent[] = [];
  const timer = setTimeout(() => void iterator.return?.(), 10_000);
  try {
    while (events.length < count) {
      const next = await iterator.next();
      if (next.done) throw new Error(`the stream ended after ${JSON.stringify(events)}`);
      events.push(next.value);
    }
  } finally {
    clearTimeout(timer);
  }
  return events;
}

const pathOf = (event: WatchEvent | undefined) =>
  event === undefined || event.action === "reset" ? event?.action : event.file_path;

describe("watch() resumes", () => {
  test("lastEventId continues after an event with exactly the ones after it", async () => {
    const { db, write } = itemsIndex();
    try {
      const whole = db.watch();
      const first = db.watch();
      await first.ready;
      write("a");
      write("b");
      const seen = await take(first, 2);
      const lastEventId = first.lastEventId;
      assert.match(lastEventId, /^[0-9a-f]{16}-2$/);
      await first.return();
      for (const name of ["c", "d", "e"]) write(name);
      // Gone by when it resumes: the history has them.
      await take(whole, 5);
      await whole.return();
      const resumed = db.watch({ lastEventId });
      const missed = await take(resumed, 3);
      assert.deepEqual(missed.map(pathOf), ["data/c.json", "data/d.json", "data/e.json"]);
      assert.deepEqual(seen.map(pathOf), ["data/a.json", "data/b.json"]);
      assert.match(resumed.lastEventId, /-5$/);
      await resumed.return();
    } finally {
      await db.close();
    }
  });

  test("an id of another index, or not an id, starts with a reset", async () => {
    const { db, write } = itemsIndex();
    try {
      for (const lastEventId of ["0123456789abcdef-1", "nonsense"]) {
        const stream = db.watch({ lastEventId });
        await stream.ready;
        write(`after-${lastEventId}`);
        const [reset, next] = await take(stream, 2);
        assert.deepEqual(reset, { action: "reset" });
        assert.equal(pathOf(next), `data/after-${lastEventId}.json`);
        await stream.return();
      }
    } finally {
      await db.close();
    }
  });

  test("a consumer more than `buffer` events behind gets one reset, then newer events", async () => {
    const { db, write } = itemsIndex();
    try {
      const slow = db.watch({ buffer: 5 });
      const quick = db.watch();
      await slow.ready;
      for (let i = 0; i < 12; i++) write(`n${i}`);
      await take(quick, 12);
      assert.deepEqual(await take(slow, 1), [{ action: "reset" }]);
      write("later");
      assert.deepEqual((await take(slow, 1)).map(pathOf), ["data/later.json"]);
      await slow.return();
      await quick.return();
    } finally {
      await db.close();
    }
  });
});
