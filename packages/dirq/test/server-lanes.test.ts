/**
 * No refresh holds up another table. Hook processes take their turns in a lane of their own,
 * so a format table's file never waits behind hung hooks; a large file is read and compared
 * off the thread that serves requests, so other tables' statements are answered and their
 * events sent while it refreshes. Each case asserts an order of arrival, never a duration.
 */
import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { processesMarked, saveWhole, tempTree } from "./helpers.js";
import {
  type EventStream,
  eventually,
  openReadyEvents,
  queryRows,
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
    const line = (i: number, tag: string) => `${i},${tag} ${i},${"p".repeat(80)}`;
    const records = Array.from({ length: 250_000 }, (_, i) => line(i, "row"));
    const config = [
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
    ].join("\n");
    const { root, server, events } = await serve({
      "dirq.toml": config,
      "big.csv": `id,name,pad\n${records.join("\n")}\n`,
      "small.json": '[{"v": "before"}]',
    });
    const from = events.rowCount();
    // One record changes: the whole file is read again and compared.
    records[7] = line(7, "changed");
    saveWhole(root, "big.csv", `id,name,pad\n${records.join("\n")}\n`);
    // Changed at once with it: its refresh starts beside the big file's, which reads tens of MB.
    saveWhole(root, "small.json", '[{"v": "after"}]');
    const small = await events.next((event) => event.table === "small", 60_000);
    assert.deepEqual(small.row, { v: "after" });
    const answer = await queryRows(server, "SELECT v FROM small");
    assert.deepEqual(answer, [{ v: "after" }]);
    const bigBefore = events
      .rows()
      .slice(from)
      .filter((event) => event.table === "big");
    assert.deepEqual(bigBefore, [], "the small table's answer came before the big one's commit");
    const big = await events.next((event) => event.table === "big", 120_000);
    assert.deepEqual([big.action, big.row?.name], ["update", "changed 7"]);
  });
});
