import assert from "node:assert/strict";
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { seededRandom } from "../differential.js";
import { tempTree } from "../helpers.js";
import { loadConfigs } from "../../src/config/load-config.js";
import { answerRows } from "../../src/live/answer-rows.js";
import { filesReader, groupByFile, incrementalPlan } from "../../src/live/incremental.js";
import { LiveQueries, type LiveSubscription } from "../../src/live/live-queries.js";
import { LiveSession } from "../../src/live/live-session.js";
import { bindArguments, type QueryParameters } from "../../src/query/parameters.js";

/**
 * Live queries in the core, over real files: the incremental way (rows of changed files read
 * again) against re-running the whole statement, side by side, through seeded changes.
 */

const CONFIG = `[[table]]
name = "items"
glob = "data/*.json"
format = "json"
schema = { id = "INTEGER", grp = "TEXT", v = "INTEGER", name = "TEXT" }
`;

type Statement = { sql: string; key?: string[]; params?: QueryParameters };

/** Statements the incremental way takes, with and without a key. */
const STATEMENTS: Statement[] = [
  { sql: "SELECT id, name FROM items WHERE v > 40" },
  { sql: "SELECT id, name, v FROM items WHERE v % 3 <> 0", key: ["id"] },
  { sql: "SELECT id, v * 2 + 1 AS w, upper(name) AS n, grp || '-' || id AS g FROM items" },
  { sql: "SELECT path, size FROM './data' WHERE size > 40" },
];

/** Incremental statements with values of every kind: the changed files are bound beside them. */
const STATEMENTS_WITH_VALUES: Statement[] = [
  { sql: "SELECT id, v FROM items WHERE v > ? AND grp <> ?", params: [20, "g1"] },
  {
    sql: "SELECT id, name FROM items WHERE v BETWEEN :low AND @high",
    params: { low: 10, high: 80 },
  },
  { sql: "SELECT id, ?2 AS tag FROM items WHERE v < ?1", params: [60, "low"] },
];

/** Every frame the subscription has for now. */
async function drain(subscription: LiveSubscription): Promise<string[]> {
  const frames: string[] = [];
  for (let frame = await subscription.next(0); frame; frame = await subscription.next(0)) {
    frames.push(`${frame.event} ${frame.data.replace(/"incremental":(true|false),/, "")}`);
  }
  return frames;
}

async function freshRows(
  session: LiveSession,
  sql: string,
  params?: QueryParameters,
): Promise<string[]> {
  const prepared = await session.prepare(sql, { parameters: true });
  const args = bindArguments(sql, params);
  return answerRows(await session.run(prepared, { args })).sort();
}

async function until(done: () => Promise<boolean>, what: string): Promise<void> {
  for (let tries = 0; !(await done()); tries++) {
    assert.ok(tries < 600, `timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** How large the tree of a differential run is: its files at first, and rows per file. */
interface TreeSize {
  files: number;
  minRows: number;
  maxRows: number;
}

const SMALL_TREE: TreeSize = { files: 12, minRows: 1, maxRows: 3 };

/** Writes a file of seeded rows, atomically (the watcher sees one change); their ids. */
function writeItems(
  root: string,
  file: string,
  random: () => number,
  next: () => number,
  size: TreeSize = SMALL_TREE,
): number[] {
  const length = size.minRows + Math.floor(random() * (size.maxRows - size.minRows + 1));
  const rows = Array.from({ length }, () => ({
    id: next(),
    grp: `g${Math.floor(random() * 4)}`,
    v: Math.floor(random() * 100),
    name: `n${Math.floor(random() * 1000)}`,
  }));
  writeFileSync(join(root, "tmp/next.json"), JSON.stringify(rows));
  renameSync(join(root, "tmp/next.json"), join(root, file));
  return rows.map((row) => row.id);
}

/** Waits until the index holds the files and ids `model` says. */
async function untilIndexed(session: LiveSession, model: Map<string, number[]>): Promise<void> {
  const ids = JSON.stringify([...model.values()].flat().sort((a, b) => a - b));
  const files = JSON.stringify([...model.keys()].sort());
  await until(async () => {
    const got = await session.run(await session.prepare("SELECT id FROM items ORDER BY id"));
    const paths = await session.run(
      await session.prepare("SELECT path FROM './data' WHERE path LIKE '%.json' ORDER BY path"),
    );
    const idsNow = JSON.stringify(answerRows(got).map((row) => JSON.parse(row).id));
    const filesNow = JSON.stringify(answerRows(paths).map((row) => JSON.parse(row).path));
    return idsNow === ids && filesNow === files;
  }, `the index to hold ${files}`);
}

/** A live session over `root` and its `.dirq.toml`, in this process. */
function liveSession(root: string): LiveSession {
  return new LiveSession({
    index: {
      root,
      progress: false,
      fillAllColumns: true,
      config: loadConfigs([join(root, ".dirq.toml")]),
    },
    folderPrefix: "dirq-live-query-test-",
    reaper: false,
    runner: { timeoutMs: 30_000, maxAnswerBytes: 1 << 26, maxProcesses: 1 },
    onWatchError: (error) => assert.fail(`watcher: ${String(error)}`),
  });
}

/** Statements re-run whole: with and without an order of their own, with and without a key. */
const WHOLE_STATEMENTS: { sql: string; key?: string[] }[] = [
  { sql: "SELECT id, grp, v FROM items ORDER BY v, id" },
  { sql: "SELECT id, v FROM items ORDER BY grp", key: ["id"] },
  { sql: "SELECT id, grp FROM items WHERE v > 30" },
  { sql: "SELECT id, v * 2 AS w FROM items", key: ["id"] },
  { sql: "SELECT grp, count(*) AS n FROM items GROUP BY grp", key: ["grp"] },
];

/**
 * Opens each statement both ways, changes seeded files step by step, and checks that both ways
 * answer as a fresh query does and give the same frames after every step.
 */
async function sameFramesBothWays(
  statements: Statement[],
  size: TreeSize = SMALL_TREE,
): Promise<void> {
  const root = tempTree({ ".dirq.toml": CONFIG, "tmp/.keep": "" });
  mkdirSync(join(root, "data"));
  const random = seededRandom(65);
  let id = 0;
  const model = new Map<string, number[]>();
  for (let i = 0; i < size.files; i++) {
    model.set(
      `data/f${i}.json`,
      writeItems(root, `data/f${i}.json`, random, () => ++id, size),
    );
  }
  const session = liveSession(root);
  const queries = new LiveQueries(session, { timeoutMs: 30_000, lingerMs: 0 });
  try {
    await session.build();
    await session.watch();
    const pairs: [LiveSubscription, LiveSubscription][] = [];
    for (const statement of statements) {
      const incremental = await queries.open({ ...statement, incremental: true });
      const whole = await queries.open({ ...statement, incremental: false });
      assert.equal(incremental.query.incremental, true, statement.sql);
      assert.equal(whole.query.incremental, false, statement.sql);
      pairs.push([incremental, whole]);
    }
    // The two first answers may be of different commits (the second opened later).
    const withoutCommit = (frames: string[]) => frames.map((f) => f.replace(/"commit":\d+,/, ""));
    await untilIndexed(session, model);
    for (const [incremental, whole] of pairs) {
      assert.deepEqual(withoutCommit(await drain(incremental)), withoutCommit(await drain(whole)));
    }
    for (let step = 0; step < 40; step++) {
      const file = `data/f${Math.floor(random() * (size.files + 4))}.json`;
      if (random() < 0.25) {
        rmSync(join(root, file), { force: true });
        model.delete(file);
      } else
        model.set(
          file,
          writeItems(root, file, random, () => ++id, size),
        );
      await untilIndexed(session, model);
      for (const [n, [incremental, whole]] of pairs.entries()) {
        const { sql, params } = statements[n] as Statement;
        await until(async () => {
          const fresh = JSON.stringify(await freshRows(session, sql, params));
          const rows = (s: LiveSubscription) => JSON.stringify([...s.query.answer.rows].sort());
          return rows(incremental) === fresh && rows(whole) === fresh;
        }, `step ${step}: ${sql}`);
        assert.deepEqual(await drain(incremental), await drain(whole), `step ${step}: ${sql}`);
      }
    }
    // Without `measureCpu` no run reads its thread's CPU time.
    for (const [incremental] of pairs) assert.equal(incremental.query.byFileCpuMs, 0);
  } finally {
    queries.close();
    await session.close();
  }
}

describe("LiveQuery", () => {
  it("gives the same frames incrementally as re-running the whole statement", async () => {
    await sameFramesBothWays(STATEMENTS);
  });

  it("gives the same frames both ways for answers of thousands of rows", async () => {
    // One file's rows in and out of a large answer: the file-by-file way places them without
    // walking the answer, the whole way diffs whole answers (on the diff thread, at this size).
    await sameFramesBothWays(
      [
        { sql: "SELECT id, grp, v FROM items" },
        { sql: "SELECT id, name, v FROM items WHERE v > 10", key: ["id"] },
      ],
      { files: 100, minRows: 50, maxRows: 150 },
    );
  });

  it("gives the same frames both ways for statements with values", async () => {
    await sameFramesBothWays(STATEMENTS_WITH_VALUES);
  });

  it("gives the same frames with whole answers diffed on the diff thread as on the main thread", async () => {
    const root = tempTree({ ".dirq.toml": CONFIG, "tmp/.keep": "" });
    mkdirSync(join(root, "data"));
    const random = seededRandom(650);
    let id = 0;
    const next = () => ++id;
    for (let i = 0; i < 10; i++) writeItems(root, `data/f${i}.json`, random, next);
    const session = liveSession(root);
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
      for (const statement of WHOLE_STATEMENTS) {
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
          const sql = WHOLE_STATEMENTS[n]?.sql as string;
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

  it("reads one changed file's rows as it reads them among several, values bound beside them", async () => {
    // One changed file has a statement of its own (its path bound as it is, not a JSON list):
    // both statements must give each file the same rows, with the statement's own values bound.
    const root = tempTree({ ".dirq.toml": CONFIG, "tmp/.keep": "" });
    mkdirSync(join(root, "data"));
    const random = seededRandom(66);
    let id = 0;
    for (let i = 0; i < 6; i++) writeItems(root, `data/f${i}.json`, random, () => ++id);
    const session = liveSession(root);
    try {
      await session.build();
      // Every file, and one without rows.
      const files = [...Array.from({ length: 6 }, (_, i) => `data/f${i}.json`), "data/no.json"];
      for (const { sql, params } of [...STATEMENTS, ...STATEMENTS_WITH_VALUES]) {
        const prepared = await session.prepare(sql, { parameters: true });
        const args = bindArguments(sql, params);
        const plan = incrementalPlan(prepared, (q, v) => session.index.readRows(q, v), args);
        assert.ok(plan !== null, sql);
        const read = filesReader(plan, args, (q) => session.index.rowReader(q, prepared));
        const rowsOf = (some: string[]) => {
          const { columns, rows } = read(some);
          return Object.fromEntries(groupByFile(columns, rows, some));
        };
        const together = rowsOf(files);
        const expected = await freshRows(session, sql, params);
        assert.deepEqual(Object.values(together).flat().sort(), expected, sql);
        // Twice each, so that a run after the first binds its file again.
        for (const file of [...files, ...files]) {
          assert.deepEqual(rowsOf([file]), { [file]: together[file] }, `${sql}: ${file}`);
        }
      }
    } finally {
      await session.close();
    }
  });

  it("keeps its history as the frames' SSE bytes, which a client that resumes reads again", async () => {
    const root = tempTree({
      ".dirq.toml": CONFIG,
      "data/a.json": JSON.stringify([{ id: 1, grp: "g", v: 1, name: "déjà\nvu ✓" }]),
    });
    const session = liveSession(root);
    const queries = new LiveQueries(session, { timeoutMs: 30_000, lingerMs: 0 });
    try {
      await session.build();
      await session.watch();
      const first = await queries.open({ sql: "SELECT id, name FROM items" });
      const query = first.query;
      assert.equal((await first.next(0))?.event, "snapshot");
      const diffs = [];
      for (let i = 2; i <= 4; i++) {
        writeFileSync(
          join(root, `data/f${i}.json`),
          JSON.stringify([{ id: i, grp: "g", v: i, name: `ünï ${i} ✓` }]),
        );
        await until(async () => query.head === i - 1, `the diff of file ${i}`);
        diffs.push(await first.next(0));
      }
      let bytes = 0;
      for (const frame of diffs) {
        assert.ok(frame?.encoded, "a kept frame is written as its bytes");
        assert.equal(
          frame.encoded.toString(),
          `id: ${frame.id}\nevent: diff\ndata: ${frame.data}\n\n`,
        );
        assert.match(JSON.parse(frame.data).added[0].row.name, /^ünï \d ✓$/);
        bytes += Buffer.byteLength(frame.data);
      }
      assert.equal(query.historyChars, bytes, "the history counts its frames' UTF-8 bytes");
      // Resumed after the first diff: the same bytes for the frames after it.
      const resumed = await queries.open({ sql: "SELECT id, name FROM items" }, diffs[0]?.id);
      assert.equal((await resumed.next(0))?.event, "ready");
      for (const frame of diffs.slice(1)) {
        const again = await resumed.next(0);
        assert.equal(again?.id, frame?.id);
        assert.deepEqual(again?.encoded, frame?.encoded);
      }
    } finally {
      queries.close();
      await session.close();
    }
  });

  it("does not run again for another table's commit while a run is in flight", async () => {
    const root = tempTree({
      ".dirq.toml": `${CONFIG}
[[table]]
name = "docs"
glob = "docs/*.json"
format = "json"
`,
      "data/a.json": JSON.stringify([{ id: 1, grp: "g", v: 1, name: "a" }]),
      "docs/a.json": JSON.stringify([{ x: 1 }]),
    });
    const session = liveSession(root);
    const queries = new LiveQueries(session, { timeoutMs: 60_000, lingerMs: 0 });
    const docsCommits: number[] = [];
    session.subscribe((_, commit) => {
      if (commit.changes.some((change) => change.table === "docs")) docsCommits.push(commit.seq);
    });
    try {
      await session.build();
      await session.watch();
      // Re-run whole, and slow enough that the other table's commit comes while it runs.
      const slow = await queries.open({
        sql: "SELECT count(*) AS n, (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 4000000) SELECT max(x) FROM c) AS m FROM items",
      });
      const query = slow.query;
      assert.equal(query.incremental, false);
      writeFileSync(
        join(root, "data/b.json"),
        JSON.stringify([{ id: 2, grp: "g", v: 2, name: "b" }]),
      );
      await until(async () => query.runs === 1, "the run for the items commit");
      writeFileSync(join(root, "docs/b.json"), JSON.stringify([{ x: 2 }]));
      await until(async () => docsCommits.length > 0, "the docs commit");
      assert.equal(query.head, 0, "the docs commit came while the run was in flight");
      await until(async () => query.head === 1, "the diff of the items commit");
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal(query.runs, 1, "runs after the first answer");
    } finally {
      queries.close();
      await session.close();
    }
  });
});
