/**
 * A live refresh of a large file of a built-in format goes through a staging table (the new
 * rows read as a build reads them, compared with the old ones in SQL; src/indexer/
 * staged-refresh.ts). It must give exactly the events and rows the refresh of a small file
 * gives. Each file here is read by two tables: one refreshed through the staging table, and
 * one with a `ddl`, refreshed the ordinary way (rows compared in JavaScript) since the config
 * declares a function (a `ddl` may name it, and only the index's own connection has it). The
 * same edits must give both the same events, in the same order, and the same rows, which a
 * fresh scan must give too.
 */
import assert from "node:assert/strict";
import { mkdtempSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { STAGED_REFRESH_BYTES } from "../src/indexer/staged-refresh.js";
import { runDirq } from "./helpers.js";
import {
  type EventStream,
  openReadyEvents,
  queryRows,
  type RowEvent,
  type ServerProcess,
  startServer,
} from "./server-support.js";

const CONFIG = `
[[table]]
name = "csv_staged"
glob = "big.csv"
format = "csv"

[[table]]
name = "csv_plain"
glob = "big.csv"
format = "csv"
ddl = "CREATE INDEX csv_plain_name ON csv_plain(name)"

[[table]]
name = "typed_staged"
glob = "big.csv"
format = "csv"
schema = { id = "INTEGER", amount = "REAL", code = "TEXT", extra = "TEXT" }

[[table]]
name = "typed_plain"
glob = "big.csv"
format = "csv"
schema = { id = "INTEGER", amount = "REAL", code = "TEXT", extra = "TEXT" }
ddl = "CREATE INDEX typed_plain_id ON typed_plain(id)"

[[table]]
name = "jsonl_staged"
glob = "big.jsonl"
format = "jsonl"

[[table]]
name = "jsonl_plain"
glob = "big.jsonl"
format = "jsonl"
ddl = "CREATE INDEX jsonl_plain_k ON jsonl_plain(k)"

# Never called (its worker never starts): it keeps the tables with a ddl on the ordinary refresh.
[[dirq.function]]
name = "unused"
command = "true"
`;

/** Records of about 100 bytes: 13,000 of them make a file past the staging size (1 MiB). */
const RECORDS = 13_000;

function csvRecord(i: number): string {
  const amount = i % 11 === 0 ? "" : (i * 1.25).toFixed(2);
  return `${i},name ${i},"quoted, ""${i}""",${amount},${i % 7 === 0 ? "007" : i * 3},padding ${"-".repeat(20)} ${i}`;
}

function jsonlRecord(i: number): string {
  return JSON.stringify({
    k: i,
    text: `line ${i} ${"x".repeat(60)}`,
    n: i % 5 === 0 ? null : i / 4,
  });
}

/** Writes a file aside and renames it into place: the watcher sees it whole. */
function writeWhole(root: string, name: string, text: string): void {
  const aside = join(root, `.${name}.tmp`);
  writeFileSync(aside, text);
  renameSync(aside, join(root, name));
}

describe("the live refresh of a large file", () => {
  let root = "";
  let server: ServerProcess | null = null;
  let events: EventStream | null = null;
  const csv = Array.from({ length: RECORDS }, (_, i) => csvRecord(i));
  const jsonl = Array.from({ length: RECORDS }, (_, i) => jsonlRecord(i));

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "dirq-large-refresh-"));
    writeFileSync(join(root, "dirq.toml"), CONFIG);
    writeFileSync(join(root, "big.csv"), `id,name,quote,amount,code,pad\n${csv.join("\n")}\n`);
    writeFileSync(join(root, "big.jsonl"), `${jsonl.join("\n")}\n`);
    for (const name of ["big.csv", "big.jsonl"]) {
      assert.ok(statSync(join(root, name)).size > STAGED_REFRESH_BYTES, `${name} is large`);
    }
    server = await startServer(["-c", "dirq.toml", "--port", "0"], { cwd: root });
    events = await openReadyEvents(server);
  });

  after(async () => {
    events?.close();
    await server?.kill();
    rmSync(root, { recursive: true, force: true });
  });

  /** Applies an edit and waits for its events: `expected` per table of the pair. */
  let typedEvents = 0;

  /**
   * Applies an edit and waits for its events: `expected` for each table of the pair, and
   * `typed` for each of the CSV file's tables with a schema.
   */
  async function edit(table: "csv" | "jsonl", write: () => void, expected: number, typed = 0) {
    const stream = events as EventStream;
    const from = stream.rowCount();
    write();
    const total = 2 * expected + 2 * typed;
    await stream.until(() => stream.rowCount() >= from + total, `${total} events`, 60_000);
    const rows = stream.rows().slice(from);
    assert.equal(
      rows.filter((row) => row.table === `${table}_staged`).length,
      expected,
      JSON.stringify(rows.slice(0, 3)),
    );
    const staged = rows.filter((row) => row.table === `${table}_staged`);
    const plain = rows.filter((row) => row.table === `${table}_plain`);
    const named = (row: RowEvent) => ({ ...row, table: "t" });
    assert.deepEqual(staged.map(named), plain.map(named));
    if (table === "csv") {
      // The same file through a schema (declared types, columns kept or left NULL).
      const typed = rows.filter((row) => row.table === "typed_staged");
      const typedPlain = rows.filter((row) => row.table === "typed_plain");
      assert.deepEqual(typed.map(named), typedPlain.map(named));
      typedEvents += typed.length;
    }
    return staged;
  }

  const writeCsv = () =>
    writeWhole(root, "big.csv", `id,name,quote,amount,code,pad\n${csv.join("\n")}\n`);
  const writeJsonl = () => writeWhole(root, "big.jsonl", `${jsonl.join("\n")}\n`);

  test("edits, appends, removals and rewrites give the events of an ordinary refresh", async () => {
    csv[10] = csvRecord(10).replace("name 10", "renamed");
    csv[500] = csvRecord(500).replace('""500""', '""five hundred""');
    let changed = await edit("csv", writeCsv, 2, 0);
    assert.deepEqual(
      changed.map((row) => [row.action, row.row?.id, row.old_row?.name]),
      [
        ["update", 10, "name 10"],
        ["update", 500, "name 500"],
      ],
    );
    csv.push(csvRecord(20_000), csvRecord(20_001), csvRecord(20_002));
    changed = await edit("csv", writeCsv, 3, 3);
    assert.deepEqual(
      changed.map((row) => row.action),
      ["insert", "insert", "insert"],
    );
    csv.splice(-5);
    changed = await edit("csv", writeCsv, 5, 5);
    assert.deepEqual(
      changed.map((row) => [row.action, row.row?.id]),
      [
        ["delete", 12_998],
        ["delete", 12_999],
        ["delete", 20_000],
        ["delete", 20_001],
        ["delete", 20_002],
      ],
    );
    // The same content again gives no event; a value's type that changes is an update, one
    // that reads the same in JSON (7 and 7.0) is not.
    writeCsv();
    csv[20] = csv[20]?.replace(",25.00,", ",abc,") ?? "";
    csv[22] = csv[22]?.replace(",66,", ",66.0,") ?? "";
    changed = await edit("csv", writeCsv, 1, 2);
    assert.deepEqual(
      changed.map((row) => [row.action, row.row?.amount, row.old_row?.amount]),
      [["update", "abc", 25]],
    );
    // The schema's table has no column for the first two edits (names, quotes), and its TEXT
    // `code` tells 66 from 66.0: 0 + 3 + 5 + 0 + 2 events.
    assert.equal(typedEvents, 10);
  });

  test("a key that is new to the table adds its column; the other rows do not change", async () => {
    jsonl[7] = JSON.stringify({ k: 7, text: "changed", n: 1, fresh: "new key" });
    const changed = await edit("jsonl", writeJsonl, 1);
    assert.deepEqual(changed[0]?.row, { k: 7, text: "changed", n: 1, fresh: "new key" });
    const rows = await queryRows(
      server as ServerProcess,
      "SELECT count(fresh) AS n FROM jsonl_staged",
    );
    assert.deepEqual(rows, [{ n: 1 }]);
  });

  test("the rows equal the ordinary refresh's and a fresh scan's", async () => {
    for (const [staged, plain] of [
      ["csv_staged", "csv_plain"],
      ["typed_staged", "typed_plain"],
      ["jsonl_staged", "jsonl_plain"],
    ]) {
      const sql = (table: string) => `SELECT * FROM ${table} ORDER BY _dirq_row_index`;
      const live = await queryRows(server as ServerProcess, sql(staged as string));
      assert.deepEqual(live, await queryRows(server as ServerProcess, sql(plain as string)));
      const fresh = await runDirq([sql(staged as string), "-c", "dirq.toml"], { cwd: root });
      assert.equal(fresh.code, 0, fresh.stderr);
      assert.deepEqual(live, JSON.parse(fresh.stdout));
    }
  });

  test("a record that breaks a rule is an error and takes the file's rows away", async () => {
    csv.splice(100, 0, "1,2");
    const stream = events as EventStream;
    const from = stream.rowCount();
    writeCsv();
    const rowsBefore = csv.length - 1;
    await stream.until(
      () => stream.rowCount() >= from + 2 * (rowsBefore + 1),
      "the error and the deletes",
      60_000,
    );
    const rows = stream.rows().slice(from);
    for (const table of ["csv_staged", "csv_plain"]) {
      const own = rows.filter((row) => row.table === table);
      assert.equal(own[0]?.action, "error");
      assert.match(own[0]?.error ?? "", /line 102: 2 fields, but the header has 6/);
      assert.equal(own.filter((row) => row.action === "delete").length, rowsBefore);
    }
    assert.deepEqual(
      await queryRows(server as ServerProcess, "SELECT count(*) AS n FROM csv_staged"),
      [{ n: 0 }],
    );
  });
});
