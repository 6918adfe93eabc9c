import assert from "node:assert/strict";
import { existsSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { openIndex } from "../../src/engine.js";
import {
  type Commit,
  commitJson,
  type RowChange,
  rowChangeJson,
} from "../../src/indexer/row-changes.js";
import { makeTree, removeTree } from "../helpers.js";

/** Prints the file's JSON as one row; waits while the file says `wait` until `go` exists. */
const HOOK = `import { existsSync, readFileSync, writeFileSync } from "node:fs";
const data = JSON.parse(readFileSync(process.argv[2], "utf8"));
if (data.wait) {
  writeFileSync("started", "");
  while (!existsSync("go")) await new Promise((resolve) => setTimeout(resolve, 20));
}
process.stdout.write(JSON.stringify([{ v: data.v }]));
`;

const roots: string[] = [];
after(() => roots.forEach(removeTree));

async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test("refresh: a newer change of a file stops its older hook; only the newest rows commit", async () => {
  const root = makeTree({ "hook.mjs": HOOK, "data/a.json": '{"v":1}', "data/b.json": '{"v":1}' });
  roots.push(root);
  const index = openIndex({ root, onFile: "node hook.mjs {path}", progress: false });
  try {
    await index.query("SELECT * FROM './data'");
    const commits: RowChange[][] = [];
    const onCommit = (commit: Commit) => commits.push([...commit.changes]);
    writeFileSync(join(root, "data/a.json"), '{"v":2,"wait":true}');
    const older = await index.startRefresh(["data/a.json"], { onCommit });
    await until(() => existsSync(join(root, "started")));
    writeFileSync(join(root, "data/a.json"), '{"v":3}');
    writeFileSync(join(root, "data/b.json"), '{"v":4}');
    const newer = await index.startRefresh(["data/a.json", "data/b.json"], { onCommit });
    await Promise.all([older.done, newer.done]);
    const rows = await index.queryObjects("SELECT v FROM './data' ORDER BY v");
    assert.deepEqual(rows, [{ v: 3n }, { v: 4n }]);
    const written = commits.flat().map((change) => JSON.stringify(change));
    assert.ok(!written.some((text) => text.includes('"v":2')), written.join("\n"));
    // Nobody ever wrote `go`: the older hook would wait for ever, so `older.done` resolving
    // means it was stopped.
    assert.equal(existsSync(join(root, "go")), false);
  } finally {
    index.close();
  }
});

test("refresh: the first commit holds path-table rows; a waiting hook holds back only its own table", async () => {
  const root = makeTree({ "hook.mjs": HOOK, "data/a.json": '{"v":1}', "notes/n.json": '{"v":9}' });
  roots.push(root);
  const index = openIndex({ root, onFile: "node hook.mjs {path}", progress: false });
  try {
    await index.query("SELECT * FROM './data'");
    await index.query("SELECT * FROM './notes'");
    writeFileSync(join(root, "data/a.json"), '{"v":2,"wait":true}');
    writeFileSync(join(root, "notes/m.json"), '{"v":8}');
    const commits: RowChange[][] = [];
    const run = await index.startRefresh(["data/a.json", "notes/m.json"], {
      onCommit: (commit) => commits.push([...commit.changes]),
    });
    await until(() => existsSync(join(root, "started")));
    // The parsed `./notes` table has its new file although `./data`'s hook still runs.
    await index.refreshesDone(["./notes"]);
    const notes = await index.queryObjects("SELECT count(*) AS n FROM './notes'");
    assert.deepEqual(notes, [{ n: 2n }]);
    let dataDone = false;
    const waiting = index.refreshesDone(["./data"]).then(() => (dataDone = true));
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(dataDone, false);
    writeFileSync(join(root, "go"), "");
    await run.done;
    await waiting;
    assert.deepEqual(await index.queryObjects("SELECT v FROM './data'"), [{ v: 2n }]);
  } finally {
    index.close();
  }
});

test("refresh: closing the index stops the hooks its refreshes still run", async () => {
  const root = makeTree({ "hook.mjs": HOOK, "data/a.json": '{"v":1}' });
  roots.push(root);
  const index = openIndex({ root, onFile: "node hook.mjs {path}", progress: false });
  await index.query("SELECT * FROM './data'");
  writeFileSync(join(root, "data/a.json"), '{"v":2,"wait":true}');
  const commits: RowChange[][] = [];
  const run = await index.startRefresh(["data/a.json"], {
    onCommit: (commit) => commits.push([...commit.changes]),
  });
  await until(() => existsSync(join(root, "started")));
  index.close();
  // The hook waits for a `go` nobody writes: only stopping it ends the refresh.
  await run.done;
  assert.ok(!commits.flat().some((change) => JSON.stringify(change).includes('"v":2')));
});

test("refresh: a burst of moves commits in slices, handed on after the last, each with its own number", async () => {
  const [folders, perFolder] = [300, 30];
  const tree: Record<string, string> = {};
  for (let d = 0; d < folders; d++)
    for (let f = 0; f < perFolder; f++) tree[`d${d}/f${f}.txt`] = "x";
  const root = makeTree(tree);
  roots.push(root);
  const index = openIndex({ root, progress: false });
  try {
    // Filled with its paths: a move finds the rows it renames by path.
    assert.equal((await index.queryObjects("SELECT path FROM './'")).length, folders * perFolder);
    const moves = Array.from({ length: folders }, (_, d) => ({ from: `d${d}`, to: `m${d}` }));
    for (const { from, to } of moves) renameSync(join(root, from), join(root, to));
    const handed: { seq: number; newest: number; changes: number }[] = [];
    const run = await index.startRefresh([], {
      moves,
      onCommit: (commit) => {
        // The moves' commits (the refresh then commits what else it found: here nothing).
        if (commit.changes.length === 0) return;
        handed.push({ seq: commit.seq, newest: index.commitSeq, changes: commit.changes.length });
      },
    });
    await run.done;
    // Slices of a few milliseconds each: statements are answered between them.
    assert.ok(handed.length > 1, `${handed.length} commit(s)`);
    const first = handed[0]?.seq ?? 0;
    assert.deepEqual(
      handed.map(({ seq }) => seq),
      handed.map((_, i) => first + i),
    );
    // None was handed on before the burst's last commit was made.
    const last = first + handed.length - 1;
    assert.deepEqual(
      handed.filter(({ newest }) => newest !== last),
      [],
    );
    const changes = handed.reduce((sum, { changes: n }) => sum + n, 0);
    assert.equal(changes, 2 * folders * perFolder);
    const moved = await index.queryObjects("SELECT count(*) AS n FROM './' WHERE path GLOB 'm*'");
    assert.deepEqual(moved, [{ n: BigInt(folders * perFolder) }]);
  } finally {
    index.close();
  }
});

test("refresh: a moved folder's row events, held as texts until read, are each row's delete and insert in path order", async () => {
  // More files than one held text takes (1,024 rows), with names JSON escapes.
  const files = 2500;
  const tree: Record<string, string> = { "stays/a.txt": "a" };
  for (let f = 0; f < files; f++)
    tree[`big/f${String(f).padStart(4, "0")}${f % 7 === 0 ? ' "é\\' : ""}.txt`] = "x".repeat(
      f % 13,
    );
  const root = makeTree(tree);
  roots.push(root);
  const index = openIndex({ root, progress: false });
  try {
    const before = await index.queryObjects(
      "SELECT * FROM './' WHERE path GLOB 'big/*' ORDER BY path",
    );
    assert.equal(before.length, files);
    renameSync(join(root, "big"), join(root, "moved"));
    const commits: Commit[] = [];
    const run = await index.startRefresh([], {
      moves: [{ from: "big", to: "moved" }],
      onCommit: (commit) => commits.push(commit),
    });
    await run.done;
    // A commit tells how many changes it has before they are made.
    for (const commit of commits) assert.equal(commit.size, commit.changes.length);
    assert.ok(commits.some((commit) => commit.parts.some((part) => part.action === "held")));
    // The events' JSON made straight from the held texts is each change's own.
    for (const commit of commits) {
      assert.deepEqual(
        [...commitJson(commit)],
        commit.changes.map((change) => rowChangeJson(change, commit.seq)),
      );
    }
    const changes = commits.flatMap((commit) => [...commit.changes]);
    const after = await index.queryObjects(
      "SELECT * FROM './' WHERE path GLOB 'moved/*' ORDER BY path",
    );
    // As events show rows: a query's values, integers as JSON numbers.
    const json = (row: Record<string, unknown>) =>
      JSON.stringify(row, (_, value: unknown) =>
        typeof value === "bigint" ? Number(value) : value,
      );
    assert.deepEqual(
      changes.map((change) =>
        change.action === "error" ? change : [change.action, change.file_path, change.row],
      ),
      [
        ...before.map((row) => ["delete", row.path, json(row)]),
        ...after.map((row) => ["insert", row.path, json(row)]),
      ],
    );
  } finally {
    index.close();
  }
});
