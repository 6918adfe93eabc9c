/**
 * No refresh holds up another table. Hook processes take their turns in a lane of their own,
 * so a format table's file never waits behind hung hooks; a large file is read and compared
 * off the thread that serves requests (in a table with a `ddl` too), so other tables'
 * statements are answered and their events sent while it refreshes, or while one comes to a
 * table once the server serves; a large file of a table's first build, or one a `--persist`
 * start reads again, is read off that thread too. Each case asserts an order of arrival,
 * never a duration.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { DIRQ_BIN, processesMarked, saveWhole, tempTree } from "./helpers.js";
import {
  type EventStream,
  eventually,
  openReadyEvents,
  queryRows,
  request,
  type RowEvent,
  type ServerProcess,
  startServer,
} from "./server-support.js";

const opened: { server: ServerProcess; events: EventStream; root: string }[] = [];

async function serve(tree: Record<string, string>) {
  const root = tempTree(tree);
  const server = await startServer(["-c", "dirq.toml", "--port", "0"], { cwd: root });
  const events = await openReadyEvents(server);
  opened.push({ server, events, root });
  return { root, server, events };
}

after(async () => {
  for (const { server, events, root } of opened) {
    events.close();
    await server.kill();
    rmSync(root, { recursive: true, force: true });
  }
});

/** A port nothing listens on now (a server started on it can be reached before it is ready). */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/**
 * Changes the small table's file right after the big file was written (its refresh starts
 * beside the big file's read) and checks that the small table's event and answer come before
 * any event of the big table; then the big table's first event.
 */
async function smallAnsweredFirst(
  { root, server, events }: { root: string; server: ServerProcess; events: EventStream },
  from: number,
): Promise<RowEvent> {
  saveWhole(root, "small.json", '[{"v": "after"}]');
  const small = await events.next((event) => event.table === "small", 60_000);
  assert.deepEqual(small.row, { v: "after" });
  const answer = await queryRows(server, "SELECT v FROM small");
  assert.deepEqual(answer, [{ v: "after" }]);
  const bigBefore = events
    .rows()
    .slice(from)
    .filter((event) => event.table === "big");
  assert.deepEqual(bigBefore, [], "the small table's answer came before the big table's rows");
  return events.next((event) => event.table === "big", 120_000);
}

/**
 * Serves `config` (a big table over big.csv of 250,000 records, a small one over small.json),
 * changes one record of the big file, and checks that the small table's event and answer come
 * before the big table's `update` of it. Returns the server.
 */
async function oneRecordChanged(config: string): Promise<ServerProcess> {
  const line = (i: number, tag: string) => `${i},${tag} ${i},${"p".repeat(80)}`;
  const records = Array.from({ length: 250_000 }, (_, i) => line(i, "row"));
  const { root, server, events } = await serve({
    "dirq.toml": config,
    "big.csv": `id,name,pad\n${records.join("\n")}\n`,
    "small.json": '[{"v": "before"}]',
  });
  const from = events.rowCount();
  // One record changes: the whole file is read again and compared.
  records[7] = line(7, "changed");
  saveWhole(root, "big.csv", `id,name,pad\n${records.join("\n")}\n`);
  const big = await smallAnsweredFirst({ root, server, events }, from);
  assert.deepEqual([big.action, big.row?.name], ["update", "changed 7"]);
  return server;
}

/** A table over one large CSV file and one over a small JSON file. */
const BIG_AND_SMALL = [
  "[[table]]",
  'name = "big"',
  'glob = "big.csv"',
  'format = "csv"',
  "",
  "[[table]]",
  'name = "small"',
  'glob = "small.json"',
  'format = "json"',
  "",
];

/** Hung hooks: more than the hook lane's bound, each stopped only by its 30-second limit. */
const HUNG = 40;

describe("lanes", () => {
  test("a JSON table's row events arrive while hooks of another table hang", async () => {
    const marker = `1000.${String(process.pid).padStart(7, "0")}${Math.floor(Math.random() * 1e7)}`;
    const config = [
      "[[table]]",
      'name = "hung"',
      'glob = "hooks/*.txt"',
      "timeout = 30",
      `on-file = "sh -c 'exec sleep \\"$0\\"' ${marker} {path}"`,
      "",
      "[[table]]",
      'name = "items"',
      'glob = "data/*.json"',
      'format = "json"',
      "",
    ].join("\n");
    const { root, events } = await serve({
      "dirq.toml": config,
      "hooks/.keep": "",
      "data/a.json": '[{"n": 1}]',
    });
    for (let i = 0; i < HUNG; i++) writeFileSync(join(root, `hooks/h${i}.txt`), `${i}`);
    // Every hook the lane lets start is running (and hangs) before the JSON file changes.
    await eventually(() => processesMarked(marker).length >= 4, "hung hooks running", 30_000);
    const from = events.rowCount();
    saveWhole(root, "data/a.json", '[{"n": 2}]');
    const row = await events.next((event) => event.table === "items", 25_000);
    assert.deepEqual([row.action, row.row, row.old_row], ["update", { n: 2 }, { n: 1 }]);
    // None of the hooks has ended: no event of their table came before the JSON file's.
    const hungEvents = events
      .rows()
      .slice(from)
      .filter((event: RowEvent) => event.table === "hung");
    assert.deepEqual(hungEvents, []);
    assert.ok(processesMarked(marker).length > 0, "the hooks still hang");
  });

  test("while a large file refreshes, another table's events and statements are answered", async () => {
    await oneRecordChanged(BIG_AND_SMALL.join("\n"));
  });

  test("while a large file of a table with a ddl refreshes, another table's events and statements are answered", async () => {
    const config = [...BIG_AND_SMALL];
    config.splice(4, 0, 'ddl = "CREATE INDEX big_name ON big(name)"');
    const server = await oneRecordChanged(config.join("\n"));
    // The ddl's index was kept up to date by the refresh's writes.
    const plan = await queryRows(
      server,
      "EXPLAIN QUERY PLAN SELECT id FROM big WHERE name = 'changed 7'",
    );
    assert.match(JSON.stringify(plan), /big_name/);
    assert.deepEqual(await queryRows(server, "SELECT id FROM big WHERE name = 'changed 7'"), [
      { id: 7 },
    ]);
  });

  test("a large file's refresh off the thread fires its table's ddl triggers (a full-text table)", async () => {
    const ddl =
      "CREATE VIRTUAL TABLE big_fts USING fts5(name); " +
      "CREATE TRIGGER big_ai AFTER INSERT ON big BEGIN INSERT INTO big_fts(name) VALUES (new.name); END";
    const config = [...BIG_AND_SMALL];
    config.splice(4, 0, `ddl = "${ddl}"`);
    // Past the size from which a changed file is read through the staging thread.
    const records = Array.from({ length: 20_000 }, (_, i) => `${i},row ${i},${"p".repeat(80)}`);
    const { root, server, events } = await serve({
      "dirq.toml": config.join("\n"),
      "big.csv": `id,name,pad\n${records.join("\n")}\n`,
      "small.json": '[{"v": "before"}]',
    });
    records.push("20000,appended zebra,x");
    saveWhole(root, "big.csv", `id,name,pad\n${records.join("\n")}\n`);
    const big = await events.next((event) => event.table === "big", 120_000);
    assert.deepEqual([big.action, big.row?.name], ["insert", "appended zebra"]);
    const found = await queryRows(
      server,
      "SELECT name FROM big_fts WHERE big_fts MATCH 'zebra' UNION ALL SELECT count(*) FROM big_fts",
    );
    assert.deepEqual(found, [{ name: "appended zebra" }, { name: 20_001 }]);
  });

  test("while a large file's rows leave its table, another table's events and statements are answered", async () => {
    const records = Array.from({ length: 250_000 }, (_, i) => `${i},row ${i},${"p".repeat(80)}`);
    const { root, server, events } = await serve({
      "dirq.toml": BIG_AND_SMALL.join("\n"),
      "big.csv": `id,name,pad\n${records.join("\n")}\n`,
      "small.json": '[{"v": "before"}]',
    });
    const from = events.rowCount();
    rmSync(join(root, "big.csv"));
    const big = await smallAnsweredFirst({ root, server, events }, from);
    assert.deepEqual([big.action, big.row?.name, big.file_path], ["delete", "row 0", "big.csv"]);
    await eventually(
      async () =>
        JSON.stringify(await queryRows(server, "SELECT count(*) AS n FROM big")) ===
        JSON.stringify([{ n: 0 }]),
      "every row of the deleted file gone",
      120_000,
    );
    // Every row's delete event, in the order of the file's rows.
    await eventually(
      () => events.rowCount() - from >= 250_001, // the small table's one event, and the deletes
      "every delete event",
      120_000,
    );
    const deletes = events
      .rows()
      .slice(from)
      .filter((event) => event.table === "big");
    assert.equal(deletes.length, 250_000);
    assert.ok(
      deletes.every((event, i) => event.action === "delete" && event.row?.name === `row ${i}`),
    );
  });

  test("while a large file is read for a table's first build, the server's thread answers", async () => {
    const line = (i: number) => `${i},row ${i},${"p".repeat(80)}`;
    const records = Array.from({ length: 250_000 }, (_, i) => line(i));
    const config = [
      ...BIG_AND_SMALL,
      // Shaped rows (a capture, columns, strict) from files large enough for the thread too.
      "[[table]]",
      'name = "shaped"',
      'glob = "parts/{part}/rows.jsonl"',
      'format = "jsonl"',
      'schema = { part = "TEXT", n = "INTEGER", who = "TEXT" }',
      "strict = true",
      'columns = { part = "part", n = "id", who = "meta.who" }',
      "",
    ].join("\n");
    const jsonl = (count: number, extra: string) =>
      Array.from(
        { length: count },
        (_, i) =>
          `{"id": ${i}, "meta": {"who": "w${i % 3}"${extra}}, "pad": "${"q".repeat(40)}"}\n`,
      ).join("");
    const root = tempTree({
      "dirq.toml": config,
      "big.csv": `id,name,pad\n${records.join("\n")}\n`,
      "small.json": '[{"v": 1}]',
      "parts/a/rows.jsonl": jsonl(20_000, ""),
      // Row 19,999 has no `meta.who`: strict makes it its file's error, the other file stands.
      "parts/b/rows.jsonl": jsonl(19_999, "") + '{"id": 1, "meta": {}}\n',
    });
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [DIRQ_BIN, "server", "-c", "dirq.toml", "--host", "127.0.0.1", "--port", String(port)],
      { cwd: root, env: { ...process.env, DIRQ_PROGRESS: "always" }, stdio: "pipe" },
    );
    const exited = new Promise((resolve) => child.once("exit", resolve));
    try {
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      // The big table (the first in the config) starts reading its one file.
      await eventually(
        () => stderr.includes("indexing 0/1 files"),
        "the big table's build",
        60_000,
      );
      const page = await request(`http://127.0.0.1:${port}/`);
      assert.equal(page.status, 200);
      // What the server wrote before its answer has reached this process by now.
      await new Promise((resolve) => setImmediate(resolve));
      assert.doesNotMatch(stderr, /indexed 1 files/, "the answer came before the build's end");
      await eventually(
        () => /indexed 1 files[^]*indexed 1 files/.test(stderr),
        "both built",
        120_000,
      );
      const rows = await queryRows(
        { url: `http://127.0.0.1:${port}` },
        "SELECT count(*) AS n, sum(id) AS s FROM big",
      );
      assert.deepEqual(rows, [{ n: 250_000, s: 31_249_875_000 }]);
      const shaped = await queryRows(
        { url: `http://127.0.0.1:${port}` },
        "SELECT part, count(*) AS n, sum(n) AS s, count(DISTINCT who) AS w, typeof(n) AS t FROM shaped GROUP BY part",
      );
      assert.deepEqual(shaped, [{ part: "a", n: 20_000, s: 199_990_000, w: 3, t: "integer" }]);
    } finally {
      child.kill("SIGTERM");
      await exited;
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("while a --persist start brings a changed large file up to date, the server's thread answers", async () => {
    const line = (i: number, tag: string) => `${i},${tag} ${i},${"p".repeat(80)}`;
    const records = Array.from({ length: 250_000 }, (_, i) => line(i, "row"));
    const root = tempTree({
      "dirq.toml": BIG_AND_SMALL.join("\n"),
      "big.csv": `id,name,pad\n${records.join("\n")}\n`,
      "small.json": '[{"v": 1}]',
    });
    const first = await startServer(["-c", "dirq.toml", "--port", "0", "--persist"], {
      cwd: root,
    });
    await first.kill();
    // One record changes: the start reads the file again and compares it with the cache's rows.
    records[7] = line(7, "changed");
    saveWhole(root, "big.csv", `id,name,pad\n${records.join("\n")}\n`);
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [DIRQ_BIN, "server", "-c", "dirq.toml", "--port", String(port), "--persist"],
      { cwd: root, env: { ...process.env, DIRQ_PROGRESS: "never" }, stdio: "pipe" },
    );
    const exited = new Promise((resolve) => child.once("exit", resolve));
    try {
      let stdout = "";
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
      child.stderr.resume();
      // The port is bound before the start brings the tables up to date: the first answer.
      const answers: number[] = [];
      await eventually(
        async () => {
          const page = await request(`http://127.0.0.1:${port}/`).catch(() => null);
          if (page !== null) answers.push(page.status);
          return page !== null;
        },
        "the console's page",
        60_000,
      );
      assert.deepEqual(answers, [200]);
      // What the server wrote before its answer has reached this process by now.
      await new Promise((resolve) => setImmediate(resolve));
      assert.doesNotMatch(stdout, /Running at/, "the page came before the server was ready");
      await eventually(() => stdout.includes("Running at"), "the server ready", 120_000);
      const rows = await queryRows(
        { url: `http://127.0.0.1:${port}` },
        "SELECT count(*) AS n, max(name) FILTER (WHERE id = 7) AS seven FROM big",
      );
      assert.deepEqual(rows, [{ n: 250_000, seven: "changed 7" }]);
    } finally {
      child.kill("SIGTERM");
      await exited;
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("a large file that comes to a table while the server serves is read off its thread", async () => {
    const records = Array.from({ length: 250_000 }, (_, i) => `${i},row ${i},${"p".repeat(80)}`);
    // The big table's glob matches no file when the server starts: it is built empty.
    const config = BIG_AND_SMALL.join("\n").replace('glob = "big.csv"', 'glob = "big/*.csv"');
    const { root, server, events } = await serve({
      "dirq.toml": config,
      "big/.keep": "",
      "small.json": '[{"v": "before"}]',
    });
    const from = events.rowCount();
    saveWhole(root, "big/rows.csv", `id,name,pad\n${records.join("\n")}\n`);
    const big = await smallAnsweredFirst({ root, server, events }, from);
    assert.deepEqual([big.action, big.file_path], ["insert", "big/rows.csv"]);
    await eventually(
      async () =>
        JSON.stringify(await queryRows(server, "SELECT count(*) AS n, sum(id) AS s FROM big")) ===
        JSON.stringify([{ n: 250_000, s: 31_249_875_000 }]),
      "every row of the new file",
      120_000,
    );
  });
});
