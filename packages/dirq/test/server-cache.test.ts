import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { describe, it } from "node:test";
import { queryJson } from "./helpers.js";
import {
  type EventStream,
  openReadyEvents,
  queryRows,
  type RowEvent,
  serverFixtures,
} from "./server-support.js";

/*
 * The server's result cache: what it may keep (answers the rows settle, also through views)
 * and what drops a kept answer (a change to a table it read, and nothing else).
 */

/**
 * A worker as a user would write one: it answers with its first argument and logs every call
 * to calls.log in its folder, so a test sees whether a statement ran or came from the cache.
 */
const WORKER = `
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const { id, args } = JSON.parse(line);
  appendFileSync("calls.log", JSON.stringify(args) + "\\n");
  process.stdout.write(JSON.stringify({ id, result: args[0] }) + "\\n");
});
lines.on("close", () => process.exit(0));
`;

const ROWS_HOOK = `import { readFileSync } from "node:fs";
process.stdout.write(JSON.stringify([JSON.parse(readFileSync(process.argv[2], "utf8"))]));
`;

const NODE = `'${process.execPath}'`;

const MARK_FUNCTION = `[[dirq.function]]
name = "mark"
command = ${JSON.stringify(`${NODE} worker.mjs`)}
deterministic = true
`;

const { tree, serve } = serverFixtures();

/**
 * A test folder: the indexed tree in `tree/` (with the on-file hook), the config and its worker
 * (which logs there) in `cfg/`, and `tmp/` for files written before they are renamed into the
 * tree.
 */
function folder(files: Record<string, string>, config: string) {
  const spec: Record<string, string> = {
    "cfg/worker.mjs": WORKER,
    "cfg/dirq.toml": config,
    // Hooks run in the root (functions in the config's folder); no table here selects it.
    "tree/rows.mjs": ROWS_HOOK,
    "tmp/": "",
  };
  for (const [path, content] of Object.entries(files)) spec[`tree/${path}`] = content;
  const base = tree(spec);
  let written = 0;
  return {
    root: join(base, "tree"),
    config: join(base, "cfg", "dirq.toml"),
    /** Calls the worker answered so far, in every query process. */
    calls(): number {
      const log = join(base, "cfg", "calls.log");
      return existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean).length : 0;
    },
    /**
     * Writes a file of the tree in one step (renamed into place from outside the tree), so the
     * watcher never sees it half written.
     */
    write(path: string, content: string): void {
      const temporary = join(base, "tmp", String(++written));
      writeFileSync(temporary, content);
      mkdirSync(join(base, "tree", path, ".."), { recursive: true });
      renameSync(temporary, join(base, "tree", path));
    },
  };
}

const rowOf = (table: string, file: string) => (row: RowEvent) =>
  row.table === table && row.file_path === file;

/** The rows as a fresh one-shot `dirq` run over the same tree answers them. */
function fresh(root: string, sql: string): Promise<Record<string, unknown>[]> {
  return queryJson(root, sql);
}

/** Only the named columns of each row. */
function pick(rows: Record<string, unknown>[], columns: readonly string[]) {
  return rows.map((row) => Object.fromEntries(columns.map((column) => [column, row[column]])));
}

describe("the server's result cache", { concurrency: true }, () => {
  it("a view over random() or the clock answers afresh on every request", async () => {
    const views = [
      "CREATE VIEW dice AS SELECT random() AS r",
      "CREATE VIEW instant AS SELECT julianday('now') AS j",
      "CREATE VIEW seconds AS SELECT strftime('%s', 'now') AS s, datetime('now') AS d",
      "CREATE VIEW marked AS SELECT name, mark(name) AS m FROM items",
    ];
    const dir = folder(
      { "data/a.json": JSON.stringify({ name: "a" }) },
      `${MARK_FUNCTION}
[[table]]
name = "items"
glob = "data/*.json"
on-file = ${JSON.stringify(`${NODE} rows.mjs {path}`)}
ddl = ${JSON.stringify(views.join("; "))}
`,
    );
    const server = await serve(dir.root, ["-c", dir.config]);

    const dice = "SELECT r FROM dice";
    assert.notDeepEqual(await queryRows(server, dice), await queryRows(server, dice));

    // julianday keeps milliseconds: two answers a few milliseconds apart differ.
    const instant = "SELECT j FROM instant";
    const first = await queryRows(server, instant);
    await delay(5);
    assert.notDeepEqual(await queryRows(server, instant), first);

    // strftime('%s') and datetime() count whole seconds.
    const seconds = "SELECT s, d FROM seconds";
    const before = await queryRows(server, seconds);
    await delay(1100);
    const after = await queryRows(server, seconds);
    assert.notEqual(after[0]?.s, before[0]?.s);
    assert.notEqual(after[0]?.d, before[0]?.d);

    // A view over a function declared deterministic is kept: the second answer calls nobody.
    const marked = "SELECT name, m FROM marked";
    assert.deepEqual(await queryRows(server, marked), [{ name: "a", m: "a" }]);
    const calls = dir.calls();
    assert.ok(calls > 0, "the worker answered the first request");
    assert.deepEqual(await queryRows(server, marked), [{ name: "a", m: "a" }]);
    assert.equal(dir.calls(), calls, "the second answer came from the cache");
  });

  it("a change to one path-table drops only the answers that read it", async () => {
    const dir = folder(
      {
        "a/1.txt": "a",
        "a/2.txt": "aa",
        "b/1.txt": "b",
        "b/2.txt": "bb",
      },
      MARK_FUNCTION,
    );
    const server = await serve(dir.root, ["-c", dir.config]);
    const stream: EventStream = await openReadyEvents(server);
    try {
      // Each statement marks its rows: a request that runs it calls the worker.
      const overA = "SELECT path, size, mark(path) AS m FROM './a' ORDER BY path";
      const overB = "SELECT path, size, mark(path) AS m FROM './b' ORDER BY path";
      const overBoth =
        "SELECT (SELECT sum(size) FROM './a') AS a, (SELECT sum(size) FROM './b') AS b, mark(1) AS m";
      const plainA = "SELECT path, size FROM './a' ORDER BY path";
      const plainB = "SELECT path, size FROM './b' ORDER BY path";
      const plainBoth =
        "SELECT (SELECT sum(size) FROM './a') AS a, (SELECT sum(size) FROM './b') AS b";

      const a0 = await queryRows(server, overA);
      assert.deepEqual(pick(a0, ["path", "size"]), await fresh(dir.root, plainA));
      let b = await queryRows(server, overB);
      assert.deepEqual(pick(b, ["path", "size"]), await fresh(dir.root, plainB));
      assert.deepEqual(
        pick(await queryRows(server, overBoth), ["a", "b"]),
        await fresh(dir.root, plainBoth),
      );

      const changes: [string, string][] = [
        ["b/1.txt", "b".repeat(10)],
        ["b/3.txt", "new"],
        ["b/1.txt", "b".repeat(20)],
        ["b/2.txt", ""],
      ];
      for (const [file, content] of changes) {
        dir.write(file, content);
        await stream.next(rowOf("./b", file), 180_000);

        const calls = dir.calls();
        assert.deepEqual(await queryRows(server, overA), a0);
        assert.equal(dir.calls(), calls, `the answer over './a' stayed kept after ${file}`);
        assert.deepEqual(pick(a0, ["path", "size"]), await fresh(dir.root, plainA));

        const next = await queryRows(server, overB);
        assert.deepEqual(pick(next, ["path", "size"]), await fresh(dir.root, plainB), file);
        assert.notDeepEqual(next, b, `the answer over './b' shows ${file}`);
        b = next;
        assert.deepEqual(
          pick(await queryRows(server, overBoth), ["a", "b"]),
          await fresh(dir.root, plainBoth),
        );
      }

      dir.write("a/1.txt", "a".repeat(30));
      await stream.next(rowOf("./a", "a/1.txt"), 180_000);
      const a1 = await queryRows(server, overA);
      assert.deepEqual(pick(a1, ["path", "size"]), await fresh(dir.root, plainA));
      assert.notDeepEqual(a1, a0);
    } finally {
      stream.close();
    }
  });

  it("a change to a config table or to one case variant drops the answers that read it", async () => {
    const dir = folder(
      {
        "data/a.json": JSON.stringify({ name: "a" }),
        "Docs/a.md": "A",
        "docs/a.md": "a",
      },
      `[[table]]
name = "items"
glob = "data/*.json"
on-file = ${JSON.stringify(`${NODE} rows.mjs {path}`)}
`,
    );
    const config = ["-c", dir.config];
    const server = await serve(dir.root, config);
    const stream = await openReadyEvents(server);
    try {
      const items = "SELECT name FROM items ORDER BY name";
      const upper = "SELECT path, size FROM './Docs' ORDER BY path";
      const lower = "SELECT path, size FROM './docs' ORDER BY path";
      const check = async () => {
        assert.deepEqual(await queryRows(server, items), await queryJson(dir.root, items, config));
        assert.deepEqual(await queryRows(server, upper), await fresh(dir.root, upper));
        assert.deepEqual(await queryRows(server, lower), await fresh(dir.root, lower));
      };
      await check();
      dir.write("data/b.json", JSON.stringify({ name: "b" }));
      await stream.next(rowOf("items", "data/b.json"), 180_000);
      await check();
      dir.write("docs/a.md", "a".repeat(10));
      await stream.next(rowOf("./docs", "docs/a.md"), 180_000);
      await check();
      dir.write("Docs/a.md", "A".repeat(20));
      await stream.next(rowOf("./Docs", "Docs/a.md"), 180_000);
      await check();
    } finally {
      stream.close();
    }
  });
});
