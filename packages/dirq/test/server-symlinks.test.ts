import assert from "node:assert/strict";
import { renameSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runDirq } from "./helpers.js";
import {
  type EventStream,
  openReadyEvents,
  postQuery,
  type RowEvent,
  type ServerProcess,
  serverFixtures,
  untilServedAsFresh,
} from "./server-support.js";

/*
 * A symlinked file is a row with its target's size, times and content, but an edit reaches the
 * watcher under the target's path only. The server must still update the link's rows, in
 * path-tables and config tables alike, and answer what a fresh one-shot run answers.
 */

const ROWS_HOOK = `import { readFileSync } from "node:fs";
const data = JSON.parse(readFileSync(process.argv[2], "utf8"));
process.stdout.write(JSON.stringify(Array.isArray(data) ? data : [data]));
`;

/** A config table over the `.json` files at the top: the links, not their targets in data/. */
const CONFIG = `[[table]]
name = "conf"
glob = "*.json"
on-file = ${JSON.stringify(`'${process.execPath}' rows.mjs {path}`)}
schema = { name = "TEXT", n = "INTEGER" }
`;

const FILES = "SELECT path, size FROM './' ORDER BY path";
const CONF = "SELECT _dirq_file_path AS f, name, n FROM conf ORDER BY f";
const ARGS = ["-c", "dirq.toml"];

const { tree, serve } = serverFixtures();

type Match = (row: RowEvent) => boolean;

/** A row event of `action` for `file` in `table`, with `row` as its new row when given. */
const isRow =
  (action: RowEvent["action"], table: string, file: string, row?: Record<string, unknown>): Match =>
  (event) =>
    event.action === action &&
    event.table === table &&
    event.file_path === file &&
    (row === undefined || JSON.stringify(event.row) === JSON.stringify(row));

/** Waits until every match has an event from frame `mark` on, in whatever order they came. */
async function events(stream: EventStream, mark: number, matches: Match[]): Promise<RowEvent[]> {
  await stream.until(
    () => matches.every((match) => stream.rowsFrom(mark).some(match)),
    "the links' row events",
    180_000,
  );
  return matches.map((match) => stream.rowsFrom(mark).find(match) as RowEvent);
}

async function serverJson(server: ServerProcess, sql: string): Promise<string> {
  const answer = await postQuery(server, sql);
  assert.equal(answer.status, 200, `${sql}: ${answer.text}`);
  return answer.text;
}

async function freshJson(root: string, sql: string): Promise<string> {
  const result = await runDirq([sql, "--format", "json", ...ARGS], { cwd: root });
  assert.equal(result.code, 0, `dirq ${sql}: ${result.stderr}`);
  return result.stdout;
}

/**
 * Asserts that the server answers each statement as a fresh one-shot run does. The events
 * awaited before say the change was applied; the bounded wait only absorbs a recheck still
 * under way, and the final comparison is what counts.
 */
async function assertServerEqualsFresh(server: ServerProcess, root: string): Promise<void> {
  for (const sql of [FILES, CONF]) {
    await untilServedAsFresh(
      () => serverJson(server, sql),
      () => freshJson(root, sql),
      60_000,
    );
    assert.equal(await serverJson(server, sql), await freshJson(root, sql), sql);
  }
}

describe("server: symlinked files follow their targets", { concurrency: true }, () => {
  it("an edit of a link's target updates the link's rows in a path-table and a config table", async () => {
    const root = tree({
      "rows.mjs": ROWS_HOOK,
      "dirq.toml": CONFIG,
      "data/target.json": JSON.stringify({ name: "first", n: 1 }),
    });
    symlinkSync("data/target.json", join(root, "link.json"));
    // A chain: the lookup of via.json goes through link.json.
    symlinkSync("link.json", join(root, "via.json"));
    const server = await serve(root, ARGS);
    const stream = await openReadyEvents(server);
    try {
      const before = JSON.parse(await serverJson(server, FILES)) as { path: string }[];
      assert.deepEqual(
        before.map((row) => row.path),
        ["data/target.json", "dirq.toml", "link.json", "rows.mjs", "via.json"],
      );
      assert.equal(
        await serverJson(server, CONF),
        '[{"f":"link.json","name":"first","n":1},{"f":"via.json","name":"first","n":1}]\n',
      );

      const edited = JSON.stringify({ name: "second, longer", n: 2 });
      let mark = stream.frames.length;
      writeFileSync(join(root, "data/target.json"), edited);
      const sized = await events(stream, mark, [
        isRow("update", "./", "link.json"),
        isRow("update", "./", "via.json"),
        isRow("update", "conf", "link.json", { name: "second, longer", n: 2 }),
        isRow("update", "conf", "via.json", { name: "second, longer", n: 2 }),
      ]);
      for (const event of sized.slice(0, 2)) {
        assert.equal((event.row as { size: number }).size, edited.length);
      }
      await assertServerEqualsFresh(server, root);

      // The target goes away (the links break), then comes back by a rename over its name,
      // as an editor saves: the watcher must still know where the links lead.
      mark = stream.frames.length;
      unlinkSync(join(root, "data/target.json"));
      await events(stream, mark, [
        isRow("delete", "conf", "link.json"),
        isRow("delete", "./", "via.json"),
      ]);
      mark = stream.frames.length;
      writeFileSync(join(root, "data/.target.json.tmp"), JSON.stringify({ name: "third", n: 3 }));
      renameSync(join(root, "data/.target.json.tmp"), join(root, "data/target.json"));
      await events(stream, mark, [
        isRow("insert", "./", "link.json"),
        isRow("insert", "conf", "via.json", { name: "third", n: 3 }),
      ]);
      await assertServerEqualsFresh(server, root);

      // Retargeting the link in the middle of the chain moves both links to the new file.
      writeFileSync(join(root, "data/other.json"), JSON.stringify({ name: "other", n: 4 }));
      mark = stream.frames.length;
      symlinkSync("data/other.json", join(root, ".link.tmp"));
      renameSync(join(root, ".link.tmp"), join(root, "link.json"));
      await events(stream, mark, [
        isRow("update", "conf", "link.json", { name: "other", n: 4 }),
        isRow("update", "conf", "via.json", { name: "other", n: 4 }),
      ]);
      mark = stream.frames.length;
      writeFileSync(join(root, "data/other.json"), JSON.stringify({ name: "other", n: 5 }));
      await events(stream, mark, [
        isRow("update", "conf", "link.json", { name: "other", n: 5 }),
        isRow("update", "conf", "via.json", { name: "other", n: 5 }),
      ]);
      await assertServerEqualsFresh(server, root);
      assert.deepEqual(
        stream.rows().filter((row) => row.action === "error"),
        [],
        "no error events",
      );
    } finally {
      stream.close();
    }
  });

  it("a link made while the server runs, into an ignored folder, follows its target", async () => {
    const root = tree({
      "rows.mjs": ROWS_HOOK,
      "dirq.toml": CONFIG,
      ".gitignore": "build/\n",
      "build/out.json": JSON.stringify({ name: "built", n: 1 }),
    });
    const server = await serve(root, ARGS);
    const stream = await openReadyEvents(server);
    try {
      // The path-table is live (and watched) from its first query on.
      const before = JSON.parse(await serverJson(server, FILES)) as { path: string }[];
      assert.deepEqual(
        before.map((row) => row.path),
        [".gitignore", "dirq.toml", "rows.mjs"],
      );
      assert.equal(await serverJson(server, CONF), "[]\n");
      let mark = stream.frames.length;
      symlinkSync("build/out.json", join(root, "out.json"));
      await events(stream, mark, [
        isRow("insert", "./", "out.json"),
        isRow("insert", "conf", "out.json", { name: "built", n: 1 }),
      ]);
      mark = stream.frames.length;
      writeFileSync(
        join(root, "build/out.json"),
        JSON.stringify({ name: "rebuilt, longer", n: 2 }),
      );
      await events(stream, mark, [
        isRow("update", "./", "out.json"),
        isRow("update", "conf", "out.json", { name: "rebuilt, longer", n: 2 }),
      ]);
      await assertServerEqualsFresh(server, root);
    } finally {
      stream.close();
    }
  });
});
