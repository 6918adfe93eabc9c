import assert from "node:assert/strict";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { after, before, describe, it } from "node:test";
import { removeTree, runDirq, tempTree } from "./helpers.js";
import {
  eventually,
  openEvents,
  queryRows,
  type RowEvent,
  type ServerProcess,
  startServer,
} from "./server-support.js";

/**
 * A hook that counts its runs (a line per file in the file `$COUNT_TO`) and reads the file: its
 * words and the first of them. A shell script, as it runs hundreds of times (see `shellHook`).
 */
const COUNTING_HOOK = `printf '%s\\n' "$1" >> "$COUNT_TO" || exit 1
set -f
IFS= read -r text < "$1"
set -- $text
printf '[{"words": %d, "first": "%s"}]' "$#" "$1"
`;

/**
 * Four tables whose rows a move treats differently: a format's and a hook's (rows move), one
 * whose glob captures a folder name (rows parsed again), and one that selects only `src/`
 * (rows of a folder moved out go).
 */
const CONFIG = `[[table]]
name = "data"
glob = "**/*.json"
format = "json"

[[table]]
name = "words"
glob = "**/*.txt"
on-file = "sh count.sh {path}"

[[table]]
name = "grouped"
glob = "src/{group}/*.json"
format = "json"

[[table]]
name = "srconly"
glob = "src/**/*.txt"
on-file = "sh count.sh {path}"
`;

/**
 * The seeded tree: `src/g<i>/` with a JSON file, two text files, a file named like the folder
 * and a nested folder.
 */
function movesTree(groups: number): string {
  const spec: Record<string, string> = {
    "count.sh": COUNTING_HOOK,
    "dirq.toml": CONFIG,
    "lib/README": "moved folders land here",
  };
  for (let i = 0; i < groups; i++) {
    spec[`src/g${i}/row.json`] = JSON.stringify([{ id: i, name: `n${i}` }]);
    spec[`src/g${i}/a.txt`] = `alpha ${i} words here`;
    spec[`src/g${i}/deep/b.txt`] = `beta ${i}`;
    spec[`src/g${i}/deep/more.json`] = JSON.stringify({ k: i });
    // Named like its folder: the folder's own watch reports the folder's rename by this name.
    spec[`src/g${i}/g${i}`] = `named like its folder ${i}`;
  }
  return tempTree(spec);
}

const TABLE_QUERIES = [
  `SELECT path, size, dir, basename FROM './' ORDER BY path`,
  `SELECT _dirq_file_path AS f, * FROM data ORDER BY f, _dirq_row_index`,
  `SELECT _dirq_file_path AS f, * FROM words ORDER BY f`,
  `SELECT _dirq_file_path AS f, * FROM grouped ORDER BY f`,
  `SELECT _dirq_file_path AS f, * FROM srconly ORDER BY f`,
];

/** What a fresh one-shot run of each statement answers. */
async function oneShot(root: string, countTo: string): Promise<unknown[][]> {
  const answers: unknown[][] = [];
  for (const sql of TABLE_QUERIES) {
    const result = await runDirq(["-c", "dirq.toml", sql], {
      cwd: root,
      env: { ...process.env, COUNT_TO: countTo },
    });
    assert.equal(result.code, 0, result.stderr);
    answers.push(JSON.parse(result.stdout) as unknown[]);
  }
  return answers;
}

async function liveAnswers(server: ServerProcess): Promise<unknown[][]> {
  const answers: unknown[][] = [];
  for (const sql of TABLE_QUERIES) answers.push(await queryRows(server, sql));
  return answers;
}

function runs(countFile: string): string[] {
  return readFileSync(countFile, "utf8").split("\n").filter(Boolean);
}

/**
 * A burst of few moves is applied on the index's thread; one of sixteen or more on the move
 * thread, a step of moves at a time (the renames below make one batch of the watcher's).
 */
const BURSTS = [
  { groups: 8, applied: "on the index's thread" },
  { groups: 20, applied: "on the move thread" },
];

for (const { groups: GROUPS, applied } of BURSTS)
  describe(`live index: a renamed folder is applied as a move (${applied})`, () => {
    let root = "";
    let server: ServerProcess | undefined;
    const counts = tempTree({});
    const liveCount = join(counts, "live");
    before(() => {
      root = movesTree(GROUPS);
      writeFileSync(liveCount, "");
    });
    after(async () => {
      await server?.kill();
      removeTree(root);
      removeTree(counts);
    });

    it("server: after folder renames the index equals a fresh scan, and no moved file's hook runs again", async () => {
      server = await startServer(["-c", "dirq.toml", "--host", "127.0.0.1", "--port", "0"], {
        cwd: root,
        env: { COUNT_TO: liveCount },
      });
      // Builds the path-table, and lets the config tables' hooks finish.
      await liveAnswers(server);
      const built = runs(liveCount).length;
      // Two text files a group, each in two hook tables.
      assert.equal(built, GROUPS * 4);
      const events = await openEvents(server);
      // Kept in src/ (the same tables select it), out of src/, into another group's name after
      // that group left, and a nested folder moved out of its moved parent.
      renameSync(join(root, "src/g0"), join(root, "src/h0"));
      renameSync(join(root, "src/g1"), join(root, "lib/g1"));
      renameSync(join(root, "src/g2"), join(root, "src/x2"));
      renameSync(join(root, "src/g3"), join(root, "src/g2"));
      renameSync(join(root, "src/g4"), join(root, "src/k4"));
      renameSync(join(root, "src/k4/deep"), join(root, "src/deep4"));
      for (let i = 5; i < GROUPS; i++) renameSync(join(root, `src/g${i}`), join(root, `src/m${i}`));
      const expected = await oneShot(root, join(counts, "one-shot"));
      // Compared as objects: an inferred table's columns come in the order its files were read.
      await eventually(
        async () => isDeepStrictEqual(await liveAnswers(server as ServerProcess), expected),
        "the live index equal to a fresh scan",
        30_000,
      );
      assert.deepEqual(await liveAnswers(server), expected);
      // The hook ran again only where its table's selection changed: the text files leaving
      // src/ left `srconly` (no run); none entered a table.
      assert.deepEqual(runs(liveCount).slice(built), []);
      // Each moved row is a delete under its old name and an insert under its new one.
      const moved = (row: RowEvent) => row.table === "words" && /\/a\.txt$/.test(row.file_path);
      await events.until(
        () => events.rows().filter(moved).length >= 2 * GROUPS,
        "the words rows moved",
      );
      const h0 = events.rows().filter((row) => moved(row) && /g0\/|h0\//.test(row.file_path));
      assert.deepEqual(
        h0.map((row) => [row.action, row.file_path]),
        [
          ["delete", "src/g0/a.txt"],
          ["insert", "src/h0/a.txt"],
        ],
      );
      assert.deepEqual(h0[0]?.row, h0[1]?.row);
      events.close();
    });

    it("server: a file made at the name a folder's own watch reports for its rename is indexed", async () => {
      const live = server as ServerProcess;
      // The folder's own watch reports its rename as `src/q5/m5` (nothing there), which the
      // move leaves alone and the watcher rechecks a moment later. A file made there right away,
      // and one made at `src/q6/m6` after that recheck.
      renameSync(join(root, "src/m5"), join(root, "src/q5"));
      writeFileSync(join(root, "src/q5/m5"), "made at once");
      renameSync(join(root, "src/m6"), join(root, "src/q6"));
      await new Promise((resolve) => setTimeout(resolve, 500));
      writeFileSync(join(root, "src/q6/m6"), "made after the recheck");
      const expected = await oneShot(root, join(counts, "one-shot-2"));
      await eventually(
        async () => isDeepStrictEqual(await liveAnswers(live), expected),
        "the live index equal to a fresh scan",
        30_000,
      );
      const paths = (await queryRows(live, `SELECT path FROM './' WHERE path GLOB 'src/q[56]/*'`))
        .map((row) => (row as { path: string }).path)
        .sort();
      assert.ok(paths.includes("src/q5/m5") && paths.includes("src/q6/m6"), paths.join(", "));
    });
  });
