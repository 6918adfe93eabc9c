import assert from "node:assert/strict";
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import {
  assertJsonError,
  type EventStream,
  openReadyEvents,
  postQuery,
  queryRows,
  request,
  type RowEvent,
  serverFixtures,
} from "./server-support.js";

/*
 * Wrong answers the server used to give: stale column lists, raw hook values in events,
 * spurious updates, internal names in events, one table per spelling of a selection.
 */

const ROWS_HOOK = `import { readFileSync } from "node:fs";
const data = JSON.parse(readFileSync(process.argv[2], "utf8"));
process.stdout.write(JSON.stringify(Array.isArray(data) ? data : [data]));
`;

const NODE = `'${process.execPath}'`;

function table(name: string, glob: string, extra = ""): string {
  return `[[table]]
name = "${name}"
glob = "${glob}"
on-file = ${JSON.stringify(`${NODE} rows.mjs {path}`)}
${extra}
`;
}

const { tree, serve } = serverFixtures();

/** Writes a file atomically (a temporary name, then a rename), as editors save. */
function write(root: string, path: string, content: string): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  const temporary = join(root, dirname(path), `.${Date.now()}-${Math.random()}.tmp`);
  writeFileSync(temporary, content);
  renameSync(temporary, join(root, path));
}

const isRow = (action: RowEvent["action"], table: string | null, file: string) => (row: RowEvent) =>
  row.action === action && row.table === table && row.file_path === file;

let sentinels = 0;

/** Writes a new file for `table` and waits for its insert: earlier changes are all applied. */
async function settle(stream: EventStream, root: string, table: string, dir: string) {
  const name = `${dir}/sentinel-${++sentinels}.json`;
  write(root, name, JSON.stringify({ name: "sentinel" }));
  await stream.next(isRow("insert", table, name), 180_000);
}

describe("answers and events", { concurrency: true }, () => {
  it("EXPLAIN answers with the program, and load_extension() under EXPLAIN is still refused", async () => {
    const server = await serve(tree({ "a.txt": "a" }));
    const program = await postQuery(server, "EXPLAIN SELECT path FROM './'");
    assert.equal(program.status, 200, program.text);
    const steps = JSON.parse(program.text) as { opcode: string }[];
    assert.ok(
      steps.some((step) => step.opcode === "OpenRead"),
      program.text,
    );
    const plan = await postQuery(server, "EXPLAIN QUERY PLAN SELECT path FROM './'");
    assert.equal(plan.status, 200, plan.text);
    for (const sql of [
      "EXPLAIN SELECT load_extension('x')",
      "EXPLAIN QUERY PLAN SELECT load_extension('x')",
    ]) {
      assertJsonError(await postQuery(server, sql), 400, /load_extension/);
    }
  });

  it("a statement run before a column was added answers with the new column (caches keyed on the schema)", async () => {
    const root = tree({
      "rows.mjs": ROWS_HOOK,
      "dirq.toml": table("items", "data/*.json"),
      "data/a.json": JSON.stringify({ name: "a" }),
    });
    const server = await serve(root, ["-c", "dirq.toml"]);
    const stream = await openReadyEvents(server);
    try {
      const sql = "SELECT * FROM items ORDER BY name";
      assert.deepEqual(await queryRows(server, sql), [{ name: "a" }]);
      assert.deepEqual(await queryRows(server, sql), [{ name: "a" }]);
      write(root, "data/b.json", JSON.stringify({ name: "b", size: 2 }));
      await stream.next(isRow("insert", "items", "data/b.json"), 180_000);
      assert.deepEqual(await queryRows(server, sql), [
        { name: "a", size: null },
        { name: "b", size: 2 },
      ]);
    } finally {
      stream.close();
    }
  });

  it("events carry stored values, and a rewrite that changes no row sends nothing", async () => {
    const root = tree({
      "rows.mjs": ROWS_HOOK,
      "dirq.toml": table("items", "data/*.json", `schema = { name = "TEXT", n = "INTEGER" }`),
      "data/a.json": JSON.stringify({ name: "a", n: 1 }),
    });
    const server = await serve(root, ["-c", "dirq.toml"]);
    const stream = await openReadyEvents(server);
    try {
      assert.deepEqual(await queryRows(server, "SELECT name, n FROM items"), [{ name: "a", n: 1 }]);
      write(root, "data/t.json", JSON.stringify({ name: "t", n: "5", dropped: true }));
      const insert = await stream.next(isRow("insert", "items", "data/t.json"), 180_000);
      assert.deepEqual(insert.row, { name: "t", n: 5 });
      assert.deepEqual(await queryRows(server, "SELECT name, n FROM items WHERE name = 't'"), [
        insert.row,
      ]);
      const mark = stream.frames.length;
      // The same content again, then the same values spelled differently.
      write(root, "data/t.json", JSON.stringify({ name: "t", n: "5", dropped: true }));
      write(root, "data/a.json", JSON.stringify({ n: 1.0, name: "a" }));
      await settle(stream, root, "items", "data");
      const spurious = stream
        .rowsFrom(mark)
        .filter((row) => row.table === "items" && !row.file_path.includes("sentinel"));
      assert.deepEqual(spurious, []);
    } finally {
      stream.close();
    }
  });

  it("events of case-variant path-tables carry the name the user wrote", async () => {
    const root = tree({ "Docs/a.md": "A", "docs/a.md": "a" });
    const server = await serve(root);
    const stream = await openReadyEvents(server);
    try {
      assert.deepEqual(await queryRows(server, "SELECT path FROM './Docs'"), [
        { path: "Docs/a.md" },
      ]);
      assert.deepEqual(await queryRows(server, "SELECT path FROM './docs'"), [
        { path: "docs/a.md" },
      ]);
      write(root, "docs/b.md", "b");
      write(root, "Docs/b.md", "B");
      await stream.next(isRow("insert", "./docs", "docs/b.md"), 180_000);
      await stream.until(
        () => stream.rows().some(isRow("insert", "./Docs", "Docs/b.md")),
        "the insert in ./Docs",
        180_000,
      );
      assert.ok(stream.rows().every((row) => !/\u2051/.test(row.table ?? "")));
    } finally {
      stream.close();
    }
  });

  it("spellings of one selection share one table; live path-tables are bounded", async () => {
    const spec: Record<string, string> = { "x1/a.md": "a" };
    for (let d = 0; d < 105; d++) spec[`many/d${d}/f.md`] = String(d);
    const root = tree(spec);
    const server = await serve(root);
    const count = "SELECT count(*) AS n FROM ";
    for (const name of ["'./'", "'./x1/../'", "'./x1/..'", "'.'", "'./many/../'"]) {
      assert.deepEqual(await queryRows(server, `${count}${name}`), [{ n: 106 }], name);
    }
    const tables = async () =>
      (
        await queryRows(
          server,
          "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name LIKE '.%'",
        )
      )[0]?.n as number;
    assert.equal(await tables(), 1);
    for (let d = 0; d < 105; d++) {
      assert.deepEqual(await queryRows(server, `${count}'./many/d${d}'`), [{ n: 1 }]);
    }
    assert.ok((await tables()) <= 100, `${await tables()} live path-tables`);
    // A dropped one is built again on demand.
    assert.deepEqual(await queryRows(server, `${count}'./'`), [{ n: 106 }]);
    assert.deepEqual(await queryRows(server, `${count}'./many/d0'`), [{ n: 1 }]);
  });

  it("a ddl UNIQUE violation at start-up is degraded mode naming the file and key", async () => {
    const root = tree({
      "rows.mjs": ROWS_HOOK,
      "dirq.toml": table("items", "data/*.json", `ddl = "CREATE UNIQUE INDEX u ON items(name)"`),
      "data/a.json": JSON.stringify({ name: "same" }),
      "data/b.json": JSON.stringify({ name: "same" }),
    });
    const server = await serve(root, ["-c", "dirq.toml"]);
    const message = assertJsonError(await postQuery(server, "SELECT 1"), 503);
    assert.match(message, /^failed to load config: /);
    assert.match(message, /dirq\.toml: table\[0\]\.ddl/);
    assert.match(message, /data\/b\.json/);
    assert.match(message, /UNIQUE/);
    assertJsonError(await request(`${server.url}/events`), 503);
  });
});
