import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { tempTree } from "../helpers.js";
import { loadConfigs } from "../../src/config/load-config.js";
import { openIndex } from "../../src/engine.js";
import type { RowChange } from "../../src/indexer/row-changes.js";
import { STAGED_DELETE_ROWS } from "../../src/indexer/staged-refresh.js";
import { CHANGES_PER_MESSAGE, changeSlices, takeSlice } from "../../src/indexer/staging-worker.js";

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
