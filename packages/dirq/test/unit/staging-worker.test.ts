import assert from "node:assert/strict";
import { rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { tempTree } from "../helpers.js";
import { loadConfigs } from "../../src/config/load-config.js";
import { openIndex } from "../../src/engine.js";
import type { RowChange } from "../../src/indexer/row-changes.js";
import { STAGED_DELETE_ROWS } from "../../src/indexer/staged-refresh.js";
import { openSqlite } from "../../src/indexer/database.js";
import { LogCheckpoints } from "../../src/indexer/log-checkpoints.js";
import {
  CHANGES_PER_MESSAGE,
  changeSlices,
  StagingWorker,
  takeSlice,
} from "../../src/indexer/staging-worker.js";

/**
 * The staging thread sends a change set back in slices, each taken by the main thread in a
 * turn of its own: what arrives is every change, in order, as the thread made it.
 */

test("changeSlices and takeSlice give back every change in order, a slice per table and file", () => {
  const changes: RowChange[] = [];
  const actions = ["insert", "update", "delete"] as const;
  for (let i = 0; i < 2 * CHANGES_PER_MESSAGE + 7; i++) {
    const action = actions[i % 3] as (typeof actions)[number];
    changes.push({
      action,
      table: i < CHANGES_PER_MESSAGE + 3 ? "big" : "other",
      file_path: i < 5 ? "a.csv" : "b.csv",
      row: `{"i":${i}}`,
      old_row: action === "update" ? `{"i":${-i}}` : null,
    });
  }
  const slices = changeSlices(7, changes);
  assert.ok(slices.every((slice) => slice.id === 7));
  assert.ok(slices.every((slice) => slice.rows.length <= CHANGES_PER_MESSAGE));
  assert.deepEqual(
    slices.map((slice) => [slice.table, slice.file_path, slice.rows.length]),
    [
      ["big", "a.csv", 5],
      ["big", "b.csv", CHANGES_PER_MESSAGE - 2],
      ["other", "b.csv", CHANGES_PER_MESSAGE],
      ["other", "b.csv", 4],
    ],
  );
  const taken: RowChange[] = [];
  for (const slice of slices) takeSlice(slice, taken);
  assert.deepEqual(taken, changes);
});

test("changeSlices refuses an error change: a staged refresh's failure is its request's", () => {
  const error: RowChange = { action: "error", table: "big", file_path: "a.csv", error: "bad" };
  assert.throws(() => changeSlices(1, [error]), /error change/);
});

const CONFIG = `[[table]]
name = "big"
glob = "big.csv"
format = "csv"
`;

/** Records of a CSV file large enough for the staging thread (over 1 MiB, many rows). */
function records(count: number, changed: ReadonlySet<number> = new Set()): string {
  const lines = Array.from(
    { length: count },
    (_, i) => `${i},${changed.has(i) ? "changed" : "row"} ${i},${"p".repeat(80)}`,
  );
  return `id,name,pad\n${lines.join("\n")}\n`;
}

test("a large file's edit and its leaving come back from the staging thread whole and in order", async () => {
  const count = STAGED_DELETE_ROWS + 2 * CHANGES_PER_MESSAGE + 345;
  const root = tempTree({ ".dirq.toml": CONFIG, "big.csv": records(count) });
  const index = openIndex({
    root,
    progress: false,
    databasePath: join(root, "index.db"),
    config: loadConfigs([join(root, ".dirq.toml")]),
  });
  const refresh = async (): Promise<RowChange[]> => {
    const changes: RowChange[] = [];
    const run = await index.startRefresh(["big.csv"], {
      onCommit: (commit) => changes.push(...commit.changes),
    });
    await run.done;
    return changes;
  };
  const name = (text: unknown) => (JSON.parse(String(text)) as { name: string }).name;
  try {
    assert.deepEqual(await index.queryObjects("SELECT count(*) AS n FROM big"), [
      { n: BigInt(count) },
    ]);
    // Two rows changed and ten appended: updates with their old rows, then inserts.
    writeFileSync(join(root, "big.csv"), records(count + 10, new Set([5, count - 1])));
    const edited = await refresh();
    assert.deepEqual(
      edited.map((change) =>
        change.action === "error"
          ? change.error
          : [
              change.action,
              change.table,
              change.file_path,
              name(change.row),
              change.old_row && name(change.old_row),
            ],
      ),
      [
        ["update", "big", "big.csv", "changed 5", "row 5"],
        ["update", "big", "big.csv", `changed ${count - 1}`, `row ${count - 1}`],
        ...Array.from({ length: 10 }, (_, i) => [
          "insert",
          "big",
          "big.csv",
          `row ${count + i}`,
          null,
        ]),
      ],
    );
    rmSync(join(root, "big.csv"));
    const left = await refresh();
    assert.equal(left.length, count + 10);
    left.forEach((change, i) => {
      assert.ok(change.action === "delete" && change.table === "big");
      assert.equal(change.file_path, "big.csv");
      assert.equal(name(change.row), i === 5 || i === count - 1 ? `changed ${i}` : `row ${i}`);
    });
    assert.deepEqual(await index.queryObjects("SELECT count(*) AS n FROM big"), [{ n: 0n }]);
  } finally {
    index.close();
  }
});

/** An index file in WAL mode whose connection leaves the log unchecked: rows in the log only. */
function loggedIndex(): { path: string; db: ReturnType<typeof openSqlite> } {
  const path = join(tempTree({}), "index.db");
  const db = openSqlite(path);
  db.pragma("page_size = 65536");
  db.pragma("journal_mode = WAL");
  db.pragma("wal_autocheckpoint = 0");
  db.exec("CREATE TABLE t (v TEXT)");
  const insert = db.prepare("INSERT INTO t VALUES (?)");
  db.transaction(() => {
    for (let i = 0; i < 500; i++) insert.run(`${i}`.padEnd(4096, "x"));
  })();
  return { path, db };
}

test("checkpoint copies the log into the index file on the thread, and nothing while it is not running", async () => {
  const { path, db } = loggedIndex();
  const before = statSync(path).size;
  const worker = new StagingWorker({ databasePath: path, synchronous: 0 });
  try {
    // Not started: SQLite's own checkpoint is left to do it.
    await worker.checkpoint();
    assert.equal(statSync(path).size, before);
    worker.start();
    await worker.checkpoint();
    // 500 rows of 4 KiB: about 2 MB copied from the log into the file.
    assert.ok(statSync(path).size >= before + 2_000_000, `${before} → ${statSync(path).size}`);
    assert.equal(db.prepare("SELECT count(*) FROM t").pluck().get(), 500);
  } finally {
    await worker.close();
    db.close();
  }
});

test("LogCheckpoints runs one checkpoint at a time, at most one per interval, after commits", async () => {
  const started: number[] = [];
  let finish = () => {};
  const checkpoints = new LogCheckpoints(() => {
    started.push(started.length);
    return new Promise<void>((resolve) => (finish = resolve));
  }, 50);
  checkpoints.committed();
  checkpoints.committed();
  assert.equal(started.length, 1, "one runs at once; commits meanwhile ask for none more");
  finish();
  await new Promise(setImmediate);
  checkpoints.committed();
  assert.equal(started.length, 1, "the next waits for its interval");
  await new Promise((resolve) => setTimeout(resolve, 120));
  assert.equal(started.length, 2);
  finish();
  await new Promise(setImmediate);
  checkpoints.close();
});
