import assert from "node:assert/strict";
import { chmodSync, cpSync, mkdirSync, renameSync, rmSync, symlinkSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runDirq, saveWhole, shellHook } from "./helpers.js";
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
 * The watcher's isolation: one file's failure is an `error` event for that file, every other
 * change is applied, and in-memory state never drifts from SQLite. Each test ends by checking
 * that the server answers exactly what a fresh one-shot scan answers.
 */

/** Prints a file holding {"wide": n} as one row with n keys, any other file as json-rows.sh does. */
const WIDE_HOOK = `import { readFileSync } from "node:fs";
const data = JSON.parse(readFileSync(process.argv[2], "utf8"));
if (typeof data.wide === "number") {
  const row = {};
  for (let i = 0; i < data.wide; i++) row["k" + i] = i;
  process.stdout.write(JSON.stringify([row]));
} else {
  process.stdout.write(JSON.stringify(Array.isArray(data) ? data : [data]));
}
`;

const NODE = `'${process.execPath}'`;

/** A table parsed by `program {path}`. */
function table(name: string, glob: string, program: string, extra = ""): string {
  return `[[table]]
name = "${name}"
glob = "${glob}"
on-file = ${JSON.stringify(`${program} {path}`)}
${extra}
`;
}

const { tree, serve } = serverFixtures({
  beforeRemove: (root) => {
    try {
      chmodSync(join(root, "moved/locked"), 0o755);
    } catch {
      // not every tree has one
    }
  },
});

async function serverJson(server: ServerProcess, sql: string): Promise<string> {
  const answer = await postQuery(server, sql);
  assert.equal(answer.status, 200, `${sql}: ${answer.text}`);
  return answer.text;
}

/** A fresh one-shot scan's JSON (exit 23, a partial scan, counts: it names skipped files). */
async function freshJson(cwd: string, sql: string, extra: readonly string[]): Promise<string> {
  const result = await runDirq([sql, "--format", "json", ...extra], { cwd });
  assert.ok(result.code === 0 || result.code === 23, `dirq ${sql}: ${result.stderr}`);
  return result.stdout;
}

/**
 * Waits until the server answers each statement exactly as a fresh scan does (the watcher
 * needs a moment after the last change), then asserts it. The wait is bounded generously:
 * the machine is shared, and only the final equality matters.
 */
async function assertServerEqualsFreshScan(
  server: ServerProcess,
  root: string,
  statements: readonly string[],
  config: readonly string[],
): Promise<void> {
  for (const sql of statements) {
    await untilServedAsFresh(
      () => serverJson(server, sql),
      () => freshJson(root, sql, config),
      180_000,
    );
    const fresh = await freshJson(root, sql, config);
    assert.equal(await serverJson(server, sql), fresh, `server vs fresh scan for ${sql}`);
  }
}

/**
 * Asserts that a one-shot walk treats a symlink loop as a broken link (not a row, not an
 * error): the tests below rely on it, and a regression should fail here, by name.
 */
async function assertWalkSurvivesLoops(): Promise<void> {
  const root = tree({ "a.md": "a" });
  symlinkSync("loop", join(root, "loop"));
  const result = await runDirq(["SELECT count(*) AS n FROM './'", "--format", "json"], {
    cwd: root,
  });
  assert.equal(result.code, 0, `a symlink loop fails the walk: ${result.stderr}`);
  assert.equal(result.stdout, '[{"n":1}]\n', "a symlink loop is no row");
}

const isRow = (action: RowEvent["action"], table: string | null, file: string) => (row: RowEvent) =>
  row.action === action && row.table === table && row.file_path === file;

let sentinels = 0;

/** Writes a new file in `dir` (of the path-table `table`) and waits for its insert. */
async function settle(stream: EventStream, root: string, table: string, dir: string) {
  const name = `${dir}/sentinel-${++sentinels}.md`;
  saveWhole(root, name, "s");
  await stream.next(isRow("insert", table, name), 180_000);
}

describe("watcher isolation: each trigger that used to lose changes", { concurrency: true }, () => {
  it("a schema-less config table whose glob matches nothing yet loses no change", async () => {
    const config = ["-c", "dirq.toml"];
    const root = tree({
      "rows.sh": shellHook("json-rows.sh"),
      "dirq.toml": table("notes", "notes/*.json", "sh rows.sh"),
      "docs/a.md": "a",
    });
    const server = await serve(root, config);
    const stream = await openReadyEvents(server);
    try {
      assert.equal(
        await serverJson(server, "SELECT path FROM './docs'"),
        '[{"path":"docs/a.md"}]\n',
      );
      saveWhole(root, "docs/b.md", "b");
      await stream.next(isRow("insert", "./docs", "docs/b.md"), 180_000);
      unlinkSync(join(root, "docs/a.md"));
      await stream.next(isRow("delete", "./docs", "docs/a.md"), 180_000);
      saveWhole(root, "notes/n1.json", JSON.stringify({ title: "first", words: 3 }));
      const insert = await stream.next(isRow("insert", "notes", "notes/n1.json"), 180_000);
      assert.deepEqual(insert.row, { title: "first", words: 3 });
      assert.deepEqual(
        stream.rows().filter((row) => row.action === "error"),
        [],
        "no error events",
      );
      await assertServerEqualsFreshScan(
        server,
        root,
        [
          "SELECT * FROM './docs' ORDER BY path",
          "SELECT _dirq_file_path AS f, title, words FROM notes ORDER BY f",
        ],
        config,
      );
    } finally {
      stream.close();
    }
  });

  it("a symlink loop and an unreadable folder in a moved directory lose no neighbour's change", async () => {
    await assertWalkSurvivesLoops();
    const root = tree({
      "moving/a.md": "a",
      "moving/sub/b.md": "b",
      "moving/locked/hidden.md": "h",
      "other/c.md": "c",
    });
    symlinkSync("loop", join(root, "moving/loop"));
    symlinkSync("/etc/passwd", join(root, "moving/outside.md"));
    const server = await serve(root);
    const stream = await openReadyEvents(server);
    try {
      const all = "SELECT * FROM './' ORDER BY path";
      const before = JSON.parse(await serverJson(server, all)) as { path: string }[];
      assert.ok(!before.some((row) => row.path === "moving/outside.md"), "outside link is no row");
      // One batch: the move (loop included), a neighbour's new file and a rewrite.
      renameSync(join(root, "moving"), join(root, "moved"));
      if (process.getuid?.() !== 0) chmodSync(join(root, "moved/locked"), 0o000);
      saveWhole(root, "other/d.md", "d");
      saveWhole(root, "other/c.md", "c, longer now");
      const expected = [
        isRow("insert", "./", "other/d.md"),
        isRow("delete", "./", "moving/a.md"),
        isRow("insert", "./", "moved/sub/b.md"),
      ];
      await stream.until(
        () => expected.every((match) => stream.rows().some(match)),
        "the move's and the neighbours' events",
        180_000,
      );
      await assertServerEqualsFreshScan(server, root, [all], []);
      const rows = JSON.parse(await serverJson(server, all)) as { path: string }[];
      assert.ok(!rows.some((row) => row.path.startsWith("moving/")), "no phantom rows");
      assert.ok(!rows.some((row) => row.path.endsWith("loop")), "a loop is no row");
    } finally {
      stream.close();
    }
  });

  it("a ddl UNIQUE violation in a batch fails that file only; later batches still apply", async () => {
    const config = ["-c", "dirq.toml"];
    const root = tree({
      "rows.sh": shellHook("json-rows.sh"),
      "dirq.toml": table(
        "items",
        "data/*.json",
        "sh rows.sh",
        `ddl = "CREATE UNIQUE INDEX items_name ON items(name)"`,
      ),
      "data/a.json": JSON.stringify({ name: "a", n: 1 }),
    });
    const server = await serve(root, config);
    const stream = await openReadyEvents(server);
    try {
      assert.equal(await serverJson(server, "SELECT name FROM items"), '[{"name":"a"}]\n');
      // One batch: b adds a column and breaks the UNIQUE index; c adds another column.
      saveWhole(root, "data/b.json", JSON.stringify({ name: "a", extra: 1 }));
      saveWhole(root, "data/c.json", JSON.stringify({ name: "c", other: 3 }));
      const error = await stream.next(isRow("error", "items", "data/b.json"), 180_000);
      assert.match(error.error as string, /UNIQUE/);
      // Later batches apply, with the columns SQLite really has.
      saveWhole(root, "data/d.json", JSON.stringify({ name: "d", n: 4, other: 5 }));
      const d = await stream.next(isRow("insert", "items", "data/d.json"), 180_000);
      assert.deepEqual(d.row, { name: "d", n: 4, other: 5 });
      saveWhole(root, "data/b.json", JSON.stringify({ name: "b", extra: 1 }));
      const b = await stream.next(isRow("insert", "items", "data/b.json"), 180_000);
      assert.deepEqual(b.row, { name: "b", n: null, other: null, extra: 1 });
      await assertServerEqualsFreshScan(
        server,
        root,
        ["SELECT _dirq_file_path AS f, name, n, extra, other FROM items ORDER BY f"],
        config,
      );
    } finally {
      stream.close();
    }
  });

  it("a hook printing thousands of keys fails that file only; later batches still apply", async () => {
    const config = ["-c", "dirq.toml"];
    const root = tree({
      "wide.mjs": WIDE_HOOK,
      "dirq.toml": table("items", "data/*.json", `${NODE} wide.mjs`),
      "data/a.json": JSON.stringify({ name: "a" }),
    });
    const server = await serve(root, config);
    const stream = await openReadyEvents(server);
    try {
      assert.equal(await serverJson(server, "SELECT name FROM items"), '[{"name":"a"}]\n');
      saveWhole(root, "data/wide.json", JSON.stringify({ wide: 3000 }));
      saveWhole(root, "data/c.json", JSON.stringify({ name: "c", other: 3 }));
      const error = await stream.next(isRow("error", "items", "data/wide.json"), 180_000);
      assert.match(error.error as string, /column/i);
      saveWhole(root, "data/d.json", JSON.stringify({ name: "d", other: 4 }));
      const d = await stream.next(isRow("insert", "items", "data/d.json"), 180_000);
      assert.deepEqual(d.row, { name: "d", other: 4 });
      unlinkSync(join(root, "data/wide.json"));
      await settleItems(stream, root);
      await assertServerEqualsFreshScan(
        server,
        root,
        ["SELECT _dirq_file_path AS f, name, other FROM items ORDER BY f"],
        config,
      );
    } finally {
      stream.close();
    }
  });
});

/** Waits for an items insert of a new file: every earlier change has then been applied. */
async function settleItems(stream: EventStream, root: string): Promise<void> {
  const name = `data/sentinel-${++sentinels}.json`;
  saveWhole(root, name, JSON.stringify({ name: name }));
  await stream.next(isRow("insert", "items", name), 180_000);
}

/* ------------------------------------------------------------------------------------------ */
/* The storm: what a clone, a checkout, a mass copy and moves do to a tree at once.             */
/* ------------------------------------------------------------------------------------------ */

type Replay = Map<string, Map<string, string[]>>;

/** Applies events to per-table, per-file multisets of row JSON. */
function replay(state: Replay, events: readonly RowEvent[]): void {
  for (const event of events) {
    if (event.action === "error" || event.table === null) continue;
    let files = state.get(event.table);
    if (!files) state.set(event.table, (files = new Map()));
    const rows = files.get(event.file_path) ?? [];
    const row = JSON.stringify(event.row);
    const remove = (json: string) => {
      const at = rows.indexOf(json);
      assert.ok(at !== -1, `replay: ${event.action} of a row not there: ${json}`);
      rows.splice(at, 1);
    };
    if (event.action === "insert") rows.push(row);
    else if (event.action === "delete") remove(row);
    else {
      remove(JSON.stringify(event.old_row));
      rows.push(row);
    }
    if (rows.length === 0) files.delete(event.file_path);
    else files.set(event.file_path, rows);
  }
}

/** A table's rows grouped by file, as row JSON (the file column given by `fileColumn`). */
function grouped(rows: Record<string, unknown>[], fileColumn: string): Map<string, string[]> {
  const files = new Map<string, string[]>();
  for (const row of rows) {
    const file = row[fileColumn] as string;
    const visible = Object.fromEntries(Object.entries(row).filter(([key]) => key !== "f"));
    files.set(file, [...(files.get(file) ?? []), JSON.stringify(visible)]);
  }
  return files;
}

function sortedEntries(files: Map<string, string[]> | undefined): [string, string[]][] {
  return [...(files ?? new Map<string, string[]>())]
    .map(([file, rows]): [string, string[]] => [file, [...rows].sort()])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

const ALL = "SELECT * FROM './' ORDER BY path";
const ITEMS = "SELECT _dirq_file_path AS f, name, n FROM items ORDER BY f, _dirq_row_index";

/** The server's path-table and `items` rows now, as a replay starts from them. */
async function replayStart(server: ServerProcess): Promise<Replay> {
  const state: Replay = new Map();
  const paths = JSON.parse(await serverJson(server, ALL)) as Record<string, unknown>[];
  state.set("./", new Map(paths.map((row) => [row.path as string, [JSON.stringify(row)]])));
  const items = JSON.parse(await serverJson(server, ITEMS)) as Record<string, unknown>[];
  state.set("items", grouped(items, "f"));
  return state;
}

/** Asserts that `state` with the events since `mark` applied is what the server holds now. */
async function assertReplayEqualsServer(
  server: ServerProcess,
  stream: EventStream,
  state: Replay,
  mark: number,
): Promise<void> {
  replay(state, stream.rowsFrom(mark));
  const finalPaths = JSON.parse(await serverJson(server, ALL)) as Record<string, unknown>[];
  const expectedPaths = new Map(
    finalPaths.map((row) => [row.path as string, [JSON.stringify(row)]]),
  );
  assert.deepEqual(sortedEntries(state.get("./")), sortedEntries(expectedPaths));
  const finalItems = JSON.parse(await serverJson(server, ITEMS)) as Record<string, unknown>[];
  assert.deepEqual(sortedEntries(state.get("items")), sortedEntries(grouped(finalItems, "f")));
}

const ITEMS_TABLE = table(
  "items",
  "data/**/*.json",
  "sh rows.sh",
  `schema = { name = "TEXT", n = "INTEGER" }`,
);

describe("the storm", () => {
  it("clone, checkout, mass copy, moves, a symlink loop, an unreadable folder: server = fresh scan = event replay", async () => {
    await assertWalkSurvivesLoops();
    const config = ["-c", "dirq.toml"];
    const root = tree({
      "rows.sh": shellHook("json-rows.sh"),
      "dirq.toml": ITEMS_TABLE,
      ".gitignore": "target/\n",
      "README.md": "readme",
      "data/seed.json": JSON.stringify({ name: "seed", n: 0 }),
    });
    const server = await serve(root, config);
    const stream = await openReadyEvents(server);
    try {
      const state = await replayStart(server);
      const mark = stream.frames.length;

      // Clone: many folders of files at once, some parsed, an ignored build folder.
      for (let d = 0; d < 30; d++) {
        for (let f = 0; f < 20; f++) saveWhole(root, `repo/d${d}/f${f}.md`, `v1 ${d}/${f}`);
        saveWhole(root, `data/repo/d${d}.json`, JSON.stringify([{ name: `d${d}`, n: d }]));
        saveWhole(root, `target/build/o${d}.bin`, "x");
      }
      // Checkout: rewrite some, delete some, add some, change parsed rows.
      for (let d = 0; d < 30; d += 2) {
        for (let f = 0; f < 20; f += 3)
          saveWhole(root, `repo/d${d}/f${f}.md`, `v2 longer ${d}/${f}`);
        rmSync(join(root, `repo/d${d}/f1.md`), { force: true });
        saveWhole(root, `repo/d${d}/new.md`, "new");
        saveWhole(root, `data/repo/d${d}.json`, JSON.stringify([{ name: `d${d}`, n: "7" }]));
      }
      // Mass copy, and moves of whole folders (one holding a symlink loop).
      cpSync(join(root, "repo/d3"), join(root, "copy/d3"), { recursive: true });
      cpSync(join(root, "repo/d4"), join(root, "copy/d4"), { recursive: true });
      symlinkSync("loop", join(root, "repo/d5/loop"));
      mkdirSync(join(root, "moved"), { recursive: true });
      renameSync(join(root, "repo/d5"), join(root, "moved/d5"));
      renameSync(join(root, "repo/d6"), join(root, "moved/d6"));
      renameSync(join(root, "data/repo"), join(root, "data/moved"));
      // An unreadable folder (root reads everything, so only when not running as root).
      saveWhole(root, "moved/locked/secret.md", "s");
      if (process.getuid?.() !== 0) chmodSync(join(root, "moved/locked"), 0o000);

      await assertServerEqualsFreshScan(server, root, [ALL, ITEMS], config);
      await settle(stream, root, "./", "moved");
      await settleItems(stream, root);
      await assertReplayEqualsServer(server, stream, state, mark);
      // Typed values in events: the hook printed "7" for an INTEGER column. The last event of
      // the file tells its rows now (the first may be its older rows, moved with the folder).
      const typed = stream
        .rowsFrom(mark)
        .findLast((row) => row.table === "items" && row.file_path === "data/moved/d0.json");
      assert.deepEqual(typed?.row, { name: "d0", n: 7 });
    } finally {
      stream.close();
    }
  });
});

/* ------------------------------------------------------------------------------------------ */
/* A folder renamed while the hooks of its files are queued or running.                      */
/* ------------------------------------------------------------------------------------------ */

/**
 * json-rows.sh, held while the file `hold` is in the tree and the hook's file is still where
 * it was named: a hook of the folder renamed then finds nothing (it fails), as one that starts
 * after the rename does.
 */
const HELD_HOOK = `while [ -e hold ] && [ -e "$1" ]; do sleep 0.1; done
${shellHook("json-rows.sh")}`;

/** A tree of `folders` folders of 20 files each under `base`. */
function bulkTree(base: string, folders: number): Record<string, string> {
  const spec: Record<string, string> = {};
  for (let d = 0; d < folders; d++) {
    for (let f = 0; f < 20; f++) spec[`${base}/d${d}/f${f}.md`] = `${d}/${f}`;
  }
  return spec;
}

describe("a folder renamed while its files' hooks run", () => {
  it("no row is lost: the hooks that found nothing under the old name do not move with it", async () => {
    const FILES = 30;
    const config = ["-c", "dirq.toml"];
    const root = tree({
      "rows.sh": HELD_HOOK,
      "dirq.toml": ITEMS_TABLE,
      ".gitignore": "aside/\n",
      "data/seed.json": JSON.stringify({ name: "seed", n: 0 }),
      ...bulkTree("aside/bulk", 200),
    });
    const server = await serve(root, config);
    const stream = await openReadyEvents(server);
    try {
      const state = await replayStart(server);
      const mark = stream.frames.length;
      saveWhole(root, "hold", "");
      const names = new Set<string>();
      for (let i = 0; i < FILES; i++) {
        names.add(`data/repo/f${i}.json`);
        saveWhole(root, `data/repo/f${i}.json`, JSON.stringify({ name: `f${i}`, n: i }));
      }
      // Their path-table rows are committed: their hooks are queued or held now.
      const inserted = () =>
        stream
          .rowsFrom(mark)
          .filter(
            (row) => row.action === "insert" && row.table === "./" && names.has(row.file_path),
          ).length;
      await stream.until(() => inserted() === FILES, "the new files' path rows", 180_000);
      // A folder of thousands of files comes in: its batch commits in slices, holding the
      // writer. The folder is renamed meanwhile, so the held hooks fail and wait for the writer
      // while the batch that tells of the rename waits behind this one.
      renameSync(join(root, "aside/bulk"), join(root, "bulk"));
      await stream.next((row) => row.table === "./" && row.file_path.startsWith("bulk/"), 180_000);
      renameSync(join(root, "data/repo"), join(root, "data/moved"));
      rmSync(join(root, "hold"));

      await assertServerEqualsFreshScan(server, root, [ALL, ITEMS], config);
      await settle(stream, root, "./", "bulk");
      await settleItems(stream, root);
      await assertReplayEqualsServer(server, stream, state, mark);
      const items = JSON.parse(await serverJson(server, ITEMS)) as { f: string }[];
      assert.equal(items.filter((row) => row.f.startsWith("data/moved/")).length, FILES);
    } finally {
      stream.close();
    }
  });
});
