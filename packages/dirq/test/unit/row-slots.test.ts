import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { seededRandom } from "../differential.js";
import { diffAnswers, keyOf, type RowDelta } from "../../src/live/live-diff.js";
import { RowSlots } from "../../src/live/row-slots.js";

/**
 * `RowSlots` takes in the rows that left and joined at the cost of those rows; its diffs and
 * rows must be the ones `diffAnswers` makes of the whole answer (what a whole re-run and the
 * diff thread give), for seeded answers with repeated rows, keys shared by several rows, rows
 * that leave one file and join from another, and answers that shrink and grow again (its
 * slots are packed then).
 */

/** A row's text: few distinct ids and values, so rows repeat and keys collide. */
function rowText(random: () => number, ids: number): string {
  const id = Math.floor(random() * ids);
  return JSON.stringify({ id, v: Math.floor(random() * 4) });
}

/** Some held rows leave (each held row at most as often as it is held), some rows join. */
function nextDelta(random: () => number, held: readonly string[], ids: number): RowDelta {
  const pool = [...held];
  const gone: string[] = [];
  const leaving = Math.floor(random() * Math.min(pool.length + 1, random() < 0.2 ? 400 : 6));
  for (let n = 0; n < leaving; n++) {
    gone.push(pool.splice(Math.floor(random() * pool.length), 1)[0] as string);
  }
  const joined: string[] = [];
  for (let n = Math.floor(random() * (random() < 0.2 ? 300 : 6)); n > 0; n--) {
    // Now and then a row that also left: the same text leaving one file and joining from another.
    const again = gone.length > 0 && random() < 0.15;
    joined.push(
      again ? (gone[Math.floor(random() * gone.length)] as string) : rowText(random, ids),
    );
  }
  return { gone, joined };
}

function compare(seed: number, key: readonly string[] | null, steps: number): void {
  const random = seededRandom(seed);
  const ids = 5 + Math.floor(random() * 60);
  let rows = Array.from({ length: Math.floor(random() * 200) }, () => rowText(random, ids));
  const slots = new RowSlots(rows);
  const pairBy = key === null ? null : (row: string) => keyOf(row, key);
  for (let step = 0; step < steps; step++) {
    const delta = nextDelta(random, rows, ids);
    const expected = diffAnswers(rows, { delta }, { ordered: false, key });
    const diff = slots.take(delta, pairBy);
    assert.deepEqual(diff, expected.diff, `seed ${seed}, step ${step}: the diff`);
    rows = [...expected.rows];
    assert.deepEqual(slots.rows(), rows, `seed ${seed}, step ${step}: the rows`);
    assert.equal(slots.length, rows.length);
  }
}

describe("RowSlots", () => {
  it("makes the diffs and rows diffAnswers makes, without a key", () => {
    for (let seed = 1; seed <= 40; seed++) compare(seed, null, 60);
  });

  it("makes the diffs and rows diffAnswers makes, rows paired by a key", () => {
    for (let seed = 41; seed <= 80; seed++) compare(seed, ["id"], 60);
  });

  it("packs its slots when most rows left, and keeps their order", () => {
    const rows = Array.from({ length: 5000 }, (_, i) => JSON.stringify({ id: i }));
    const slots = new RowSlots(rows);
    // All but every tenth row leaves, in steps, so that vacant slots outnumber rows.
    const leaving = rows.filter((_, i) => i % 10 !== 0);
    for (let at = 0; at < leaving.length; at += 500) {
      slots.take({ gone: leaving.slice(at, at + 500), joined: [] }, null);
    }
    const diff = slots.take({ gone: [rows[10] as string], joined: ['{"id":-1}'] }, null);
    assert.deepEqual(diff.removed, [{ at: 1, row: rows[10] }]);
    assert.deepEqual(diff.added, [{ at: 499, row: '{"id":-1}' }]);
    const kept = rows.filter((_, i) => i % 10 === 0 && i !== 10);
    assert.deepEqual(slots.rows(), [...kept, '{"id":-1}']);
  });

  it("places one row in and out of a large answer as diffAnswers does", () => {
    const rows = Array.from({ length: 100_000 }, (_, i) => JSON.stringify({ id: i, v: i % 97 }));
    const slots = new RowSlots(rows);
    let current = rows;
    const random = seededRandom(7);
    for (let step = 0; step < 20; step++) {
      const leaving = current[Math.floor(random() * current.length)] as string;
      const { id } = JSON.parse(leaving) as { id: number };
      const delta = { gone: [leaving], joined: [JSON.stringify({ id, v: 100 + step })] };
      const expected = diffAnswers(current, { delta }, { ordered: false, key: ["id"] });
      assert.deepEqual(
        slots.take(delta, (row) => keyOf(row, ["id"])),
        expected.diff,
      );
      current = [...expected.rows];
    }
    assert.deepEqual(slots.rows(), current);
  });
});
