import assert from "node:assert/strict";
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { pick, seededRandom } from "../differential.js";
import { tempTree } from "../helpers.js";
import { loadConfigs } from "../../src/config/load-config.js";
import { DiffThread } from "../../src/live/large-diff.js";
import { LiveAnswer } from "../../src/live/live-answer.js";
import { LiveQueries, type LiveSubscription } from "../../src/live/live-queries.js";
import type { DiffShape } from "../../src/live/live-diff.js";
import { LiveSession } from "../../src/live/live-session.js";

/**
 * The diff of a large answer is made on the diff thread, of a small one on the main thread:
 * both ways must give the same diffs, rows and frames. Seeded answers through both, then live
 * queries over real files with every answer on the thread against none.
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

/** Every frame the subscription has for now. */
async function drain(subscription: LiveSubscription): Promise<string[]> {
  const frames: string[] = [];
  for (let frame = await subscription.next(0); frame; frame = await subscription.next(0)) {
    frames.push(`${frame.event} ${frame.data}`);
  }
  return frames;
}

async function until(done: () => Promise<boolean>, what: string): Promise<void> {
  for (let tries = 0; !(await done()); tries++) {
    assert.ok(tries < 600, `timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const CONFIG = `[[table]]
name = "items"
glob = "data/*.json"
format = "json"
schema = { id = "INTEGER", grp = "TEXT", v = "INTEGER" }
`;

/** Statements re-run whole: with and without an order of their own, with and without a key. */
const STATEMENTS: { sql: string; key?: string[] }[] = [
  { sql: "SELECT id, grp, v FROM items ORDER BY v, id" },
  { sql: "SELECT id, v FROM items ORDER BY grp", key: ["id"] },
  { sql: "SELECT id, grp FROM items WHERE v > 30" },
  { sql: "SELECT id, v * 2 AS w FROM items", key: ["id"] },
  { sql: "SELECT grp, count(*) AS n FROM items GROUP BY grp", key: ["grp"] },
];

function writeItems(root: string, file: string, random: () => number, next: () => number): void {
  const rows = Array.from({ length: 1 + Math.floor(random() * 3) }, () => ({
    id: next(),
    grp: pick(random, ["a", "b", "c"]),
    v: Math.floor(random() * 100),
  }));
  writeFileSync(join(root, "tmp/next.json"), JSON.stringify(rows));
  renameSync(join(root, "tmp/next.json"), join(root, file));
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

  it("gives live queries over real files the same frames as the main thread", async () => {
    const root = tempTree({ ".dirq.toml": CONFIG, "tmp/.keep": "" });
    mkdirSync(join(root, "data"));
    const random = seededRandom(650);
    let id = 0;
    const next = () => ++id;
    for (let i = 0; i < 10; i++) writeItems(root, `data/f${i}.json`, random, next);
    const session = new LiveSession({
      index: {
        root,
        progress: false,
        fillAllColumns: true,
        config: loadConfigs([join(root, ".dirq.toml")]),
      },
      folderPrefix: "dirq-large-diff-test-",
      reaper: false,
      runner: { timeoutMs: 30_000, maxAnswerBytes: 1 << 26, maxProcesses: 1 },
      onWatchError: (error) => assert.fail(`watcher: ${String(error)}`),
    });
    const onThread = new LiveQueries(session, {
      timeoutMs: 30_000,
      lingerMs: 0,
      diffThreadBytes: 0,
    });
    const onMain = new LiveQueries(session, {
      timeoutMs: 30_000,
      lingerMs: 0,
      diffThreadBytes: Number.POSITIVE_INFINITY,
    });
    try {
      await session.build();
      await session.watch();
      const pairs: [LiveSubscription, LiveSubscription][] = [];
      for (const statement of STATEMENTS) {
        const request = { ...statement, incremental: false };
        pairs.push([await onThread.open(request), await onMain.open(request)]);
      }
      // The first answers may be of different commits (one query started later).
      const withoutCommit = (frames: string[]) => frames.map((f) => f.replace(/"commit":\d+,/, ""));
      for (const [thread, main] of pairs) {
        assert.deepEqual(withoutCommit(await drain(thread)), withoutCommit(await drain(main)));
      }
      for (let step = 0; step < 30; step++) {
        const file = `data/f${Math.floor(random() * 14)}.json`;
        if (random() < 0.25) rmSync(join(root, file), { force: true });
        else writeItems(root, file, random, next);
        for (const [n, [thread, main]] of pairs.entries()) {
          const sql = STATEMENTS[n]?.sql as string;
          const fresh = async () => {
            const rows = await session.run(await session.prepare(sql));
            return JSON.stringify(JSON.parse(Buffer.from(rows).toString()));
          };
          await until(async () => {
            const want = await fresh();
            const rows = (s: LiveSubscription) => `[${s.query.answer.rows.join(",")}]`;
            const sorted = (text: string) =>
              JSON.stringify((JSON.parse(text) as unknown[]).map((r) => JSON.stringify(r)).sort());
            return sorted(rows(thread)) === sorted(want) && sorted(rows(main)) === sorted(want);
          }, `step ${step}: ${sql}`);
          assert.deepEqual(await drain(thread), await drain(main), `step ${step}: ${sql}`);
        }
      }
    } finally {
      onThread.close();
      onMain.close();
      await session.close();
    }
  });
});
