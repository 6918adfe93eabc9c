import assert from "node:assert/strict";
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  decodeChunkedResponse,
  delay,
  eventually,
  openStuckSubscriber,
  queryRows,
  type ServerProcess,
  type SseFrame,
  SseParser,
  serverFixtures,
} from "./server-support.js";

/** `/events` ids, `Last-Event-ID`, `?last_event_id=` and `reset` (docs/http.md, Resuming). */

const { tree, serve } = serverFixtures();

const CONFIG = `[[table]]
name = "items"
glob = "data/*.json"
format = "json"
schema = { name = "TEXT", text = "TEXT" }
`;

/** A frame with its SSE id (`undefined` when it has none). */
interface Frame {
  event: string;
  id: string | undefined;
  data: string;
}

function frameOf(frame: SseFrame): Frame {
  const idLine = frame.lines.find((line) => line.startsWith("id:"));
  return { event: frame.event, id: idLine?.replace(/^id: ?/, ""), data: frame.data };
}

interface Stream {
  frames: Frame[];
  rows(): Frame[];
  until(done: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  close(): void;
}

/** Opens `/events` (with `headers`, at `path`) and parses its frames as they come. */
async function openStream(
  server: ServerProcess,
  options: { headers?: Record<string, string>; path?: string } = {},
): Promise<Stream> {
  const controller = new AbortController();
  const response = await fetch(`${server.url}${options.path ?? "/events"}`, {
    headers: options.headers,
    signal: controller.signal,
  });
  assert.equal(response.status, 200);
  const frames: Frame[] = [];
  let wake = () => {};
  const parser = new SseParser((frame) => {
    frames.push(frameOf(frame));
    wake();
  });
  void (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        parser.push(decoder.decode(chunk, { stream: true }));
      }
    } catch {
      // Aborted by close().
    }
  })();
  return {
    frames,
    rows: () => frames.filter((frame) => frame.event === "row"),
    async until(done, what, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (!done()) {
        if (Date.now() > deadline) {
          const got = frames.map(
            (frame) => `${frame.event} ${frame.id} ${frame.data.slice(0, 80)}`,
          );
          throw new Error(`timed out waiting for ${what}; frames:\n${got.join("\n")}`);
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 50);
        });
      }
    },
    close: () => controller.abort(),
  };
}

function idParts(id: string | undefined): { run: string; n: number } {
  const match = /^([0-9a-f]+)-(\d+)$/.exec(id ?? "");
  assert.ok(match, `an id <run>-<n>: ${id}`);
  return { run: match[1] as string, n: Number(match[2]) };
}

/**
 * Written whole and renamed into place: a plain write can be seen empty first, and the frames
 * counted here would then include that file's error and a second change.
 */
function writeItem(root: string, name: string, text = name): void {
  const staged = join(root, `staged-${name}.json`);
  writeFileSync(staged, JSON.stringify({ name, text }));
  renameSync(staged, join(root, "data", `${name}.json`));
}

async function itemServer(env: Record<string, string> = {}) {
  const root = tree({ "dirq.toml": CONFIG, "data/seed.json": '{"name":"seed","text":"s"}' });
  const server = await serve(root, ["-c", "dirq.toml"], env);
  return { root, server };
}

/** Writes items one by one, each after the previous one's frame reached `stream`. */
async function writeItems(root: string, stream: Stream, names: readonly string[]): Promise<void> {
  for (const name of names) {
    writeItem(root, name);
    await stream.until(
      () => stream.rows().some((frame) => frame.data.includes(`"data/${name}.json"`)),
      `the frame of ${name}`,
    );
  }
}

describe("/events ids and resume", () => {
  it("every row frame has an id <run>-<n>, consecutive after the ready frame's", async () => {
    const { root, server } = await itemServer();
    const stream = await openStream(server);
    try {
      await writeItems(root, stream, ["a", "b", "c", "d"]);
      const [ready, ...rest] = stream.frames;
      assert.equal(ready?.event, "ready");
      const start = idParts(ready?.id);
      const ids = rest.map((frame) => idParts(frame.id));
      assert.ok(ids.every((id) => id.run === start.run));
      assert.deepEqual(
        ids.map((id) => id.n),
        ids.map((_, k) => start.n + 1 + k),
      );
    } finally {
      stream.close();
    }
  });

  it("Last-Event-ID and ?last_event_id= get exactly the missed frames, then live ones", async () => {
    const { root, server } = await itemServer();
    const whole = await openStream(server);
    const first = await openStream(server);
    try {
      await writeItems(root, whole, ["a", "b"]);
      await first.until(() => first.rows().length === 2, "two frames");
      first.close();
      const seen = first.rows().at(-1)?.id as string;
      await writeItems(root, whole, ["c", "d", "e"]);
      const missed = whole.rows().slice(2);
      const byHeader = await openStream(server, { headers: { "Last-Event-ID": seen } });
      const byQuery = await openStream(server, {
        path: `/events?last_event_id=${encodeURIComponent(seen)}`,
      });
      try {
        for (const resumed of [byHeader, byQuery]) {
          await resumed.until(() => resumed.rows().length >= 3, "the three missed frames");
          assert.deepEqual(resumed.frames[0], { event: "ready", id: seen, data: "{}" });
        }
        writeItem(root, "f");
        for (const resumed of [byHeader, byQuery]) {
          await resumed.until(() => resumed.rows().length >= 4, "the live frame after them");
          assert.deepEqual(resumed.rows(), whole.rows().slice(2, 6));
          assert.deepEqual(resumed.rows().slice(0, 3), missed);
          assert.equal(resumed.frames.length, 5, "no reset, nothing else");
        }
      } finally {
        byHeader.close();
        byQuery.close();
      }
      // The header wins over the address: an EventSource reconnecting sends the newer id.
      const both = await openStream(server, {
        headers: { "Last-Event-ID": whole.rows().at(-1)?.id as string },
        path: `/events?last_event_id=${encodeURIComponent(seen)}`,
      });
      try {
        await both.until(() => both.frames.length >= 1, "ready");
        assert.equal(both.frames[0]?.id, whole.rows().at(-1)?.id);
      } finally {
        both.close();
      }
    } finally {
      whole.close();
    }
  });

  it("an id the history no longer reaches, of another run, or malformed gets ready then reset", async () => {
    const { root, server } = await itemServer({ DIRQ_EVENT_HISTORY_FRAMES: "3" });
    const whole = await openStream(server);
    try {
      await writeItems(root, whole, ["a", "b", "c", "d", "e"]);
      const ids = whole.rows().map((frame) => frame.id as string);
      const { run } = idParts(ids[0]);
      const head = ids.at(-1);
      const stale = [ids[0], "0123456789abcdef-3", `${run}-99`, "not an id", `${run}-x`];
      for (const lastEventId of stale) {
        const resumed = await openStream(server, {
          headers: { "Last-Event-ID": lastEventId as string },
        });
        try {
          await resumed.until(() => resumed.frames.length >= 2, "ready and reset");
          assert.deepEqual(
            resumed.frames.slice(0, 2),
            [
              { event: "ready", id: undefined, data: "{}" },
              { event: "reset", id: head, data: "{}" },
            ],
            `Last-Event-ID: ${lastEventId}`,
          );
        } finally {
          resumed.close();
        }
      }
      // The oldest id still continued: the frame before the three kept.
      const edge = await openStream(server, { headers: { "Last-Event-ID": ids[1] as string } });
      try {
        await edge.until(() => edge.rows().length >= 3, "the three kept frames");
        assert.deepEqual(edge.rows(), whole.rows().slice(2));
      } finally {
        edge.close();
      }
    } finally {
      whole.close();
    }
  });

  it("the history's bound in time holds: frames older than it leave as new ones come", async () => {
    const { root, server } = await itemServer({ DIRQ_EVENT_HISTORY_MS: "1000" });
    const whole = await openStream(server);
    try {
      await writeItems(root, whole, ["a", "b"]);
      const before = whole.rows().map((frame) => frame.id as string);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await writeItems(root, whole, ["c"]);
      const after = whole.rows().slice(before.length);
      // The frames after b's last are all kept: a reader of b continues with c's.
      const kept = await openStream(server, {
        headers: { "Last-Event-ID": before.at(-1) as string },
      });
      // Those of a and b are past the bound: a reader of a's first frame is reset.
      const gone = await openStream(server, { headers: { "Last-Event-ID": before[0] as string } });
      try {
        await kept.until(() => kept.rows().length >= after.length, "c's frames");
        assert.equal(kept.frames[0]?.event, "ready");
        assert.deepEqual(kept.rows(), after);
        await gone.until(() => gone.frames.length >= 2, "a reset");
        assert.deepEqual(gone.frames[1], { event: "reset", id: after.at(-1)?.id, data: "{}" });
      } finally {
        kept.close();
        gone.close();
      }
    } finally {
      whole.close();
    }
  });

  it("the history's byte bound holds: large rows push older frames out", async () => {
    const { root, server } = await itemServer({ DIRQ_EVENT_HISTORY_BYTES: "300000" });
    const whole = await openStream(server);
    try {
      const big = "x".repeat(100_000);
      for (const name of ["a", "b", "c", "d"]) {
        writeItem(root, name, big);
        await whole.until(
          () => whole.rows().some((frame) => frame.data.includes(`"data/${name}.json"`)),
          name,
        );
      }
      // The newest frames whose data fits in 300,000 bytes are kept (the newest always): two
      // of the ~100 KB ones. Counted from the frames seen, as a write the watcher saw in two
      // steps sends one more frame.
      const rows = whole.rows();
      let keptCount = 0;
      for (let i = rows.length - 1, bytes = 0; i >= 0; i--) {
        bytes += Buffer.byteLength((rows[i] as { data: string }).data);
        if (keptCount > 0 && bytes > 300_000) break;
        keptCount++;
      }
      const firstKept = rows.length - keptCount;
      assert.ok(keptCount >= 2 && firstKept >= 1, `${keptCount} of ${rows.length} frames kept`);
      const [run, first] = (rows[firstKept]?.id as string).split("-") as [string, string];
      const after = (back: number) => ({ "Last-Event-ID": `${run}-${Number(first) - back}` });
      const kept = await openStream(server, { headers: after(1) });
      const gone = await openStream(server, { headers: after(2) });
      try {
        await kept.until(() => kept.rows().length >= keptCount, "the kept frames");
        assert.deepEqual(kept.rows(), rows.slice(firstKept));
        await gone.until(() => gone.frames.length >= 2, "a reset");
        assert.equal(gone.frames[1]?.event, "reset");
      } finally {
        kept.close();
        gone.close();
      }
    } finally {
      whole.close();
    }
  });

  it("a stuck subscriber that fell behind a history of large rows gets a reset", async () => {
    const { root, server } = await itemServer({
      DIRQ_EVENT_HISTORY_BYTES: "3000000",
      DIRQ_EVENT_STALL_MS: "200",
    });
    const stuck = await openStuckSubscriber("127.0.0.1", server.port);
    try {
      stuck.resume();
      await stuck.waitFor("event: ready", 60_000);
      // Reads nothing more from here on, as far as the server can tell.
      stuck.socket.pause();
      // 120 rows of 100 KB: more than the history and the kernel's socket buffers hold.
      const big = "y".repeat(100_000);
      for (let i = 0; i < 120; i++) writeItem(root, `big${i}`, big);
      await eventually(
        async () => (await queryRows(server, "SELECT count(*) AS n FROM items"))[0]?.n === 121,
        "the 120 rows in the index",
        30_000,
      );
      // Longer than the stall time: its socket took no bytes meanwhile, so it is cut off.
      await delay(1500);
      stuck.socket.resume();
      writeItem(root, "marker");
      await stuck.waitFor('"data/marker.json"', 60_000);
      const frames: Frame[] = [];
      new SseParser((frame) => frames.push(frameOf(frame))).push(
        decodeChunkedResponse(stuck.received()).body,
      );
      const events = frames.map((frame) => frame.event).join(" ");
      assert.ok(events.includes("reset"), events);
      // Rows numbered one after another; a reset's id skips the frames lost, and the rows
      // after it continue from there.
      const after = frames.slice(1);
      for (let k = 1; k < after.length; k++) {
        const step = idParts(after[k]?.id).n - idParts(after[k - 1]?.id).n;
        if (after[k]?.event === "reset") assert.ok(step > 1, `the reset at ${k} skips frames`);
        else assert.equal(step, 1, `frame ${k} of ${events}`);
      }
      assert.match(frames.at(-1)?.data ?? "", /"data\/marker\.json"/);
    } finally {
      stuck.close();
    }
  });
});
