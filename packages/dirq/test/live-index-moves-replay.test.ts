import assert from "node:assert/strict";
import { renameSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { removeTree, runDirq, tempTree } from "./helpers.js";
import { isDeepStrictEqual } from "node:util";
import {
  eventually,
  openEvents,
  queryRows,
  type ServerProcess,
  type SseFrame,
  startServer,
} from "./server-support.js";

/*
 * Folder renames applied as moves, in slices of commits, with their row events: replaying the
 * events on the rows before gives the rows after (every delete finds its row), and their
 * numbers and commits come in order. Tables of two formats and the path-table, nested renames,
 * a move into a folder that stays and one onto a name another folder just left.
 */

const CONFIG = `[[table]]
name = "data"
glob = "**/*.json"
format = "json"

[[table]]
name = "lines"
glob = "**/*.csv"
format = "csv"
`;

const FOLDERS = 40;

function tree(): string {
  const spec: Record<string, string> = { "dirq.toml": CONFIG, "keep/README": "stays" };
  for (let i = 0; i < FOLDERS; i++) {
    spec[`f${i}/a.json`] = JSON.stringify([
      { id: i, name: `n${i}` },
      { id: -i, name: "é😀" },
    ]);
    spec[`f${i}/t.csv`] = `k,v\n${i},x\n${i + 1},y\n`;
    spec[`f${i}/deep/b.json`] = JSON.stringify({ k: i });
    spec[`f${i}/plain.txt`] = `file ${i}`;
  }
  return tempTree(spec);
}

/** Each table's rows as `file<TAB>row JSON` texts, sorted (a multiset). */
const TABLES = [
  { label: "./", sql: `SELECT * FROM './'`, file: (row: Record<string, unknown>) => row.path },
  { label: "data", sql: `SELECT _dirq_file_path AS _f, * FROM data`, file: null },
  { label: "lines", sql: `SELECT _dirq_file_path AS _f, * FROM lines`, file: null },
] as const;

function keyOf(file: unknown, row: Record<string, unknown>): string {
  return `${String(file)}\t${JSON.stringify(row)}`;
}

function keysOf(table: (typeof TABLES)[number], rows: Record<string, unknown>[]): string[] {
  return rows
    .map((row) => {
      if (table.file !== null) return keyOf(table.file(row), row);
      const { _f: path, ...rest } = row;
      return keyOf(path, rest);
    })
    .sort();
}

async function contents(server: { url: string }): Promise<Map<string, string[]>> {
  const tables = new Map<string, string[]>();
  for (const table of TABLES)
    tables.set(table.label, keysOf(table, await queryRows(server, table.sql)));
  return tables;
}

/** What a fresh one-shot run answers, as `contents` gives it. */
async function oneShot(root: string): Promise<Map<string, string[]>> {
  const tables = new Map<string, string[]>();
  for (const table of TABLES) {
    const fresh = await runDirq(["-c", "dirq.toml", table.sql], { cwd: root });
    assert.equal(fresh.code, 0, fresh.stderr);
    tables.set(table.label, keysOf(table, JSON.parse(fresh.stdout) as Record<string, unknown>[]));
  }
  return tables;
}

/**
 * The tables' rows after the `row` frames, replayed in order on `start`; checks that frame ids
 * rise, commits never fall, and each delete finds the row it deletes.
 */
function replay(start: Map<string, string[]>, frames: readonly SseFrame[]): Map<string, string[]> {
  const tables = new Map([...start].map(([label, keys]) => [label, [...keys]]));
  let lastId = 0;
  let lastCommit = 0;
  for (const frame of frames) {
    if (frame.event !== "row") continue;
    // Ids are `<run>-<n>`.
    const id = Number(
      frame.lines
        .find((line) => line.startsWith("id: "))
        ?.split("-")
        .pop(),
    );
    assert.ok(id > lastId, `frame ids in order: ${id} after ${lastId}`);
    lastId = id;
    const data = JSON.parse(frame.data) as {
      action: string;
      table: string;
      file_path: string;
      row: Record<string, unknown>;
      commit: number;
    };
    assert.ok(data.commit >= lastCommit, "commits in order");
    lastCommit = data.commit;
    const rows = tables.get(data.table);
    assert.ok(rows !== undefined, `a known table: ${data.table}`);
    const key = keyOf(data.file_path, data.row);
    if (data.action === "insert") rows.push(key);
    else {
      assert.equal(data.action, "delete", frame.data);
      const at = rows.indexOf(key);
      assert.ok(at !== -1, `a deleted row that was there: ${key}`);
      rows.splice(at, 1);
    }
  }
  for (const rows of tables.values()) rows.sort();
  return tables;
}

describe("live index: folder moves replayed from their row events", () => {
  let root = "";
  let server: ServerProcess | undefined;
  before(() => {
    root = tree();
  });
  after(async () => {
    await server?.kill();
    removeTree(root);
  });

  it("server: replaying every row event on the rows before gives the rows after, in order", async () => {
    server = await startServer(["-c", "dirq.toml", "--host", "127.0.0.1", "--port", "0"], {
      cwd: root,
    });
    const start = await contents(server);
    assert.equal(start.get("data")?.length, FOLDERS * 3);
    const events = await openEvents(server);
    // Renamed, nested in a renamed folder, moved into a folder that stays, and one onto a
    // name another folder left.
    for (let i = 2; i < FOLDERS; i++) renameSync(join(root, `f${i}`), join(root, `m${i}`));
    renameSync(join(root, "m2/deep"), join(root, "m2/deeper"));
    renameSync(join(root, "f0"), join(root, "keep/f0"));
    renameSync(join(root, "f1"), join(root, "f3"));
    const expected = await oneShot(root);
    await eventually(
      async () => isDeepStrictEqual(await contents(server as ServerProcess), expected),
      "the live index equal to a fresh scan",
      30_000,
    );
    const end = await contents(server);
    assert.deepEqual(end, expected);
    // Every row event, replayed in order on the rows before: each delete finds its row.
    const replayed = () => replay(start, events.frames);
    await eventually(
      () => Promise.resolve(isDeepStrictEqual(replayed(), end)),
      "the moves' row events",
      30_000,
    );
    assert.deepEqual(replayed(), end);
    events.close();
  });
});
