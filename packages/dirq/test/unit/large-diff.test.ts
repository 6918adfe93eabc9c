import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { seededRandom } from "../differential.js";
import { DiffThread } from "../../src/live/large-diff.js";
import { LiveAnswer } from "../../src/live/live-answer.js";
import type { DiffShape } from "../../src/live/live-diff.js";

/**
 * The diff of a large answer is made on the diff thread, of a small one on the main thread:
 * both ways must give the same diffs and rows, for seeded answers (live-query.test.ts runs
 * live queries over real files both ways).
 */

const SHAPES: DiffShape[] = [
  { ordered: true, key: null },
  { ordered: true, key: ["id"] },
  { ordered: false, key: null },
  { ordered: false, key: ["id"] },
];

/** A row's text as a query process writes it. */
function rowText(id: number, v: number): string {
  return JSON.stringify({ id, v, name: `n${id % 7}` });
}

/** The next answer: some rows gone, some new, some changed in place, some moved or repeated. */
function nextAnswer(random: () => number, rows: string[], nextId: () => number): string[] {
  const out: string[] = [];
  for (const row of rows) {
    const roll = random();
    if (roll < 0.1) continue;
    const { id } = JSON.parse(row) as { id: number };
    if (roll < 0.2) out.push(rowText(id, Math.floor(random() * 5)));
    else out.push(row);
    if (roll > 0.97) out.push(row);
  }
  for (let n = Math.floor(random() * 6); n > 0; n--) {
    out.splice(Math.floor(random() * (out.length + 1)), 0, rowText(nextId(), 0));
  }
  if (out.length > 1 && random() < 0.3) {
    const from = Math.floor(random() * out.length);
    const [moved] = out.splice(from, 1);
    out.splice(Math.floor(random() * out.length), 0, moved as string);
  }
  return out;
}

describe("diffs on the diff thread", () => {
  it("are the diffs and rows the main thread makes, for seeded answers of every shape", async () => {
    const thread = new DiffThread();
    try {
      for (let seed = 1; seed <= 12; seed++) {
        for (const shape of SHAPES) {
          const random = seededRandom(seed);
          let id = 0;
          const nextId = () => ++id;
          // Each answer from the one before: rows dropped, changed, added, moved, repeated.
          const bodies: string[] = [];
          let rows = Array.from({ length: 20 }, () => rowText(nextId(), 1));
          for (let step = 0; step < 30; step++) {
            bodies.push(`[${rows.join(",")}]`);
            rows = nextAnswer(random, rows, nextId);
          }
          const first = (bodies[0] as string).length;
          const longest = Math.max(...bodies.map((body) => body.length));
          assert.ok(longest > first);
          const here = new LiveAnswer(shape, null, 0);
          const there = new LiveAnswer(shape, thread, 0);
          // Starts on this thread and moves to the diff thread at the first answer past half way.
          const moving = new LiveAnswer(shape, thread, Math.ceil((first + longest) / 2));
          for (const [step, body] of bodies.entries()) {
            const what = `seed ${seed}, ${JSON.stringify(shape)}, step ${step}`;
            const expected = await here.whole(body, step === 0);
            assert.deepEqual(await there.whole(body, step === 0), expected, what);
            assert.deepEqual(await moving.whole(Buffer.from(body), step === 0), expected, what);
            assert.equal(there.text, here.text, what);
            assert.equal(moving.text, here.text, what);
            assert.deepEqual(there.current, here.current, what);
          }
          there.close();
          moving.close();
        }
      }
    } finally {
      thread.close();
    }
  });
});
