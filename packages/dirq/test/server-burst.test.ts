import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { saveWhole } from "./helpers.js";
import {
  decodeChunkedResponse,
  delay,
  eventually,
  openReadyEvents,
  openStuckSubscriber,
  queryRows,
  type ServerProcess,
  type SseFrame,
  SseParser,
  serverFixtures,
} from "./server-support.js";

/*
 * A burst larger than the event history (docs/http.md, Slow clients): the history bounds what
 * a client that comes back can replay, never what a connected subscriber that reads receives.
 * A subscriber that does not read is still cut off.
 */

const { tree, serve } = serverFixtures();

const CONFIG = `[[table]]
name = "items"
glob = "data/*.json"
format = "json"
schema = { name = "TEXT", text = "TEXT" }
`;

const FILES = 100;
const TEXT = "z".repeat(500_000);

/** 100 files of 500 KB, all at once: 50 MB of row data, more than the 32 MiB history. */
function writeBurst(root: string, prefix: string): void {
  for (let i = 0; i < FILES; i++) {
    saveWhole(
      root,
      `data/${prefix}${i}.json`,
      JSON.stringify({ name: `${prefix}${i}`, text: TEXT }),
    );
  }
}

async function itemServer(
  env: Record<string, string> = {},
): Promise<{ root: string; server: ServerProcess }> {
  const root = tree({ "dirq.toml": CONFIG, "data/seed.json": '{"name":"seed","text":"s"}' });
  const server = await serve(root, ["-c", "dirq.toml"], env);
  // The table is built before the burst, so every file of it is a row event.
  assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM items"), [{ n: 1 }]);
  return { root, server };
}

describe("/events bursts larger than the history", () => {
  it("a subscriber that reads receives every row of a 50 MB burst, without a reset", async () => {
    const { root, server } = await itemServer();
    const events = await openReadyEvents(server);
    try {
      writeBurst(root, "b");
      const seen = (): Set<string> =>
        new Set(
          events
            .rows()
            .map((row) => row.file_path)
            .filter((path) => path.startsWith("data/b")),
        );
      await events.until(
        () => seen().size === FILES || events.frames.some((frame) => frame.event === "reset"),
        "all 100 rows (or a reset)",
        120_000,
      );
      const kinds = events.frames.map((frame) => frame.event);
      assert.ok(!kinds.includes("reset"), `a reset after ${seen().size} of ${FILES} rows`);
      assert.equal(seen().size, FILES);
    } finally {
      events.close();
    }
  });

  it("a subscriber that does not read is still cut off: one reset, then live", async () => {
    const { root, server } = await itemServer({
      // An 8 MB history: the queue is far beyond it whatever the kernel's socket buffers take.
      DIRQ_EVENT_HISTORY_BYTES: "8000000",
      DIRQ_EVENT_STALL_MS: "200",
    });
    const stuck = await openStuckSubscriber("127.0.0.1", server.port);
    try {
      stuck.resume();
      await stuck.waitFor("event: ready", 60_000);
      // Reads nothing more from here on, as far as the server can tell.
      stuck.socket.pause();
      writeBurst(root, "s");
      await eventually(
        async () =>
          (await queryRows(server, "SELECT count(*) AS n FROM items"))[0]?.n === FILES + 1,
        "the 100 rows in the index",
        60_000,
      );
      // Longer than the stall time: its socket accepted nothing meanwhile.
      await delay(1500);
      stuck.socket.resume();
      saveWhole(root, "data/marker.json", '{"name":"marker","text":"m"}');
      await stuck.waitFor('"data/marker.json"', 60_000);
      const events: string[] = [];
      new SseParser((frame) => events.push(frame.event)).push(
        decodeChunkedResponse(stuck.received()).body,
      );
      assert.ok(events.includes("reset"), events.join(" "));
      assert.ok(events.filter((event) => event === "row").length < FILES, events.join(" "));
    } finally {
      stuck.close();
    }
  });

  it("the frames of one commit go out in a few writes, whole and in order", async () => {
    const rows = 3000;
    const csv = ["id,name", ...Array.from({ length: rows }, (_, i) => `${i},name ${i}`)];
    const root = tree({
      "dirq.toml": `[[table]]\nname = "people"\nglob = "data/*.csv"\nformat = "csv"\n`,
      "data/seed.csv": "id,name\n-1,seed\n",
    });
    const server = await serve(root, ["-c", "dirq.toml"]);
    const raw = await openStuckSubscriber("127.0.0.1", server.port);
    try {
      raw.resume();
      await raw.waitFor("event: ready", 60_000);
      saveWhole(root, "data/people.csv", `${csv.join("\n")}\n`);
      await raw.waitFor(`"name":"name ${rows - 1}"`, 60_000);
      const response = decodeChunkedResponse(raw.received());
      const frames: SseFrame[] = [];
      new SseParser((frame) => frames.push(frame)).push(response.body);
      const names = frames
        .filter((frame) => frame.event === "row")
        .map((frame) => (JSON.parse(frame.data) as { row: { name: string } }).row.name);
      assert.deepEqual(
        names.filter((name) => name !== "seed"),
        Array.from({ length: rows }, (_, i) => `name ${i}`),
      );
      const ids = frames.flatMap((frame) => frame.lines.filter((line) => line.startsWith("id: ")));
      assert.equal(new Set(ids).size, frames.length, "a frame without an id, or an id twice");
      // One write per frame before: as many chunks of the chunked encoding as frames.
      assert.ok(
        response.chunks * 10 < frames.length,
        `${frames.length} frames in ${response.chunks} writes`,
      );
    } finally {
      raw.close();
    }
  });
});
