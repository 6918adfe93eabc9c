import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  type LiveAsk,
  type LiveStream,
  openLive,
  untilLiveCurrent,
  multiset,
  openReadyEvents,
  postQuery,
  queryRows,
  request,
  type ServerProcess,
  serverFixtures,
} from "./server-support.js";
import { python3, saveWhole } from "./helpers.js";

/** `GET /live`: snapshot, diffs, keys, resuming, errors and limits (docs/live-queries.md). */

const { tree, serve } = serverFixtures();

const CONFIG = `[[table]]
name = "items"
glob = "data/*.json"
format = "json"
schema = { id = "INTEGER", name = "TEXT", v = "INTEGER" }

[[table]]
name = "docs"
glob = "docs/*.json"
format = "json"
schema = { id = "INTEGER", doc = "TEXT" }
`;

function items(...rows: [number, string, number][]): string {
  return JSON.stringify(rows.map(([id, name, v]) => ({ id, name, v })));
}

function liveTree(): string {
  return tree({
    ".dirq.toml": CONFIG,
    "data/a.json": items([1, "one", 10], [2, "two", 60]),
    "data/b.json": items([3, "three", 70]),
    "docs/d.json": JSON.stringify([{ id: 1, doc: '{"x":1}' }]),
  });
}

async function start(): Promise<{ root: string; server: ServerProcess }> {
  const root = liveTree();
  const server = await serve(root, ["-c", ".dirq.toml"]);
  return { root, server };
}

describe("GET /live", () => {
  it("sends a snapshot, then diffs that keep it equal to POST /query, with keys as updates", async () => {
    const { root, server } = await start();
    const filter: LiveAsk = { sql: "SELECT id, name FROM items WHERE v > 50", key: ["id"] };
    const ordered: LiveAsk = { sql: "SELECT id, v FROM items ORDER BY v DESC, id" };
    const live = await openLive(server, filter);
    const sorted = await openLive(server, ordered);
    const events = await openReadyEvents(server);
    try {
      assert.equal(live.status, 200);
      await live.until(() => live.snapshot !== null, "the snapshot");
      assert.equal(live.frames[0]?.event, "snapshot");
      assert.deepEqual(live.snapshot?.columns, ["id", "name"]);
      assert.equal(live.snapshot?.incremental, true);
      assert.deepEqual(
        multiset(live.rows),
        multiset([
          { id: 2, name: "two" },
          { id: 3, name: "three" },
        ]),
      );
      await sorted.until(() => sorted.snapshot !== null, "the ordered snapshot");
      assert.equal(sorted.snapshot?.ordered, true);

      // An edit that keeps the key is one update in place.
      writeFileSync(join(root, "data/a.json"), items([1, "one", 10], [2, "TWO", 65]));
      await live.until(() => live.frames.some((f) => f.event === "diff"), "a diff");
      const diff = JSON.parse(live.frames.find((f) => f.event === "diff")?.data ?? "{}");
      assert.deepEqual(diff.removed, []);
      assert.deepEqual(diff.added, []);
      assert.deepEqual(diff.updated, [
        { from: 0, at: 0, old_row: { id: 2, name: "two" }, row: { id: 2, name: "TWO" } },
      ]);
      // Its commit is the one /events numbered the change with.
      const row = await events.next((change) => change.file_path === "data/a.json");
      assert.equal(row.action, "update");
      const rowFrame = events.frames.find((f) => f.event === "row" && f.data.includes('"TWO"'));
      const rowCommit = JSON.parse(rowFrame?.data ?? "{}").commit as number;
      assert.ok(rowCommit > 0 && diff.commit >= rowCommit, `${rowCommit} ${diff.commit}`);

      // A new file, an atomic rewrite and a removal, each taken in.
      writeFileSync(join(root, "data/c.json"), items([4, "four", 99], [5, "five", 1]));
      writeFileSync(join(root, "data/.b.tmp"), items([3, "three", 5], [6, "six", 80]));
      renameSync(join(root, "data/.b.tmp"), join(root, "data/b.json"));
      rmSync(join(root, "data/a.json"));
      await untilLiveCurrent(server, live, filter.sql);
      await untilLiveCurrent(server, sorted, ordered.sql);
      const commits = [...live.frames, ...sorted.frames].map((f) => JSON.parse(f.data).commit);
      assert.ok(
        commits.every((n) => Number.isSafeInteger(n) && n >= 0),
        String(commits),
      );
      const ids = live.frames.map((f) => f.id);
      assert.ok(
        ids.every((id) => /^[0-9a-f]+-\d+$/.test(id ?? "")),
        ids.join(" "),
      );
    } finally {
      live.close();
      sorted.close();
      events.close();
    }
  });

  it("SELECT * file by file shows what POST /query shows: no hidden columns, a new key's column in a new snapshot", async () => {
    const root = tree({
      ".dirq.toml": '[[table]]\nname = "loose"\nglob = "data/*.json"\nformat = "json"\n',
      "data/a.json": JSON.stringify({ a: 1 }),
    });
    const server = await serve(root, ["-c", ".dirq.toml"]);
    const sql = "SELECT * FROM loose";
    const live = await openLive(server, { sql });
    try {
      await live.until(() => live.snapshot !== null, "the snapshot");
      assert.equal(live.snapshot?.incremental, true);
      writeFileSync(join(root, "data/a.json"), JSON.stringify({ a: 5 }));
      writeFileSync(join(root, "data/b.json"), JSON.stringify({ a: 2 }));
      const values = () => live.rows.map((row) => (row as { a: number }).a).sort();
      await live.until(() => values().join() === "2,5", "the edit and the new file");
      await untilLiveCurrent(server, live, sql);
      const diffs = live.frames.filter((f) => f.event === "diff").map((f) => f.data);
      assert.ok(diffs.length > 0, "a diff");
      assert.ok(!diffs.some((data) => data.includes("_dirq_")), diffs.join("\n"));
      // A file that brings a new key widens the table: the answer's columns change.
      writeFileSync(join(root, "data/c.json"), JSON.stringify({ a: 3, b: "x" }));
      await live.until(() => values().join() === "2,3,5", "the file with a new key");
      await untilLiveCurrent(server, live, sql);
      assert.deepEqual(live.snapshot?.columns, ["a", "b"]);
      assert.equal(live.frames.at(-1)?.event, "snapshot");
      writeFileSync(join(root, "data/d.json"), JSON.stringify({ a: 4, b: "y" }));
      await live.until(() => values().join() === "2,3,4,5", "one more file");
      await untilLiveCurrent(server, live, sql);
      assert.equal(live.frames.at(-1)?.event, "diff");
      assert.ok(!live.frames.some((f) => f.data.includes("_dirq_")));
    } finally {
      live.close();
    }
  });

  it("shares one evaluator among the subscribers of a statement", async () => {
    const { root, server } = await start();
    const ask = { sql: "SELECT name FROM items ORDER BY name" };
    const first = await openLive(server, ask);
    const second = await openLive(server, ask);
    try {
      await first.until(() => first.snapshot !== null, "the first snapshot");
      await second.until(() => second.snapshot !== null, "the second snapshot");
      const run = (stream: LiveStream) => stream.lastId?.replace(/-\d+$/, "");
      assert.equal(run(first), run(second));
      writeFileSync(join(root, "data/b.json"), items([3, "zz", 70]));
      await untilLiveCurrent(server, first, ask.sql);
      await untilLiveCurrent(server, second, ask.sql);
      assert.equal(first.frames.at(-1)?.data, second.frames.at(-1)?.data);
    } finally {
      first.close();
      second.close();
    }
  });

  it("resumes after Last-Event-ID with the diffs missed, else with a new snapshot", async () => {
    const { root, server } = await start();
    const ask = { sql: "SELECT id, name, v FROM items ORDER BY id" };
    const before = await openLive(server, ask);
    await before.until(() => before.snapshot !== null, "the snapshot");
    writeFileSync(join(root, "data/b.json"), items([3, "three", 71]));
    await untilLiveCurrent(server, before, ask.sql);
    const lastId = before.lastId as string;
    const held = before.rows;
    before.close();
    await before.ended;

    writeFileSync(join(root, "data/c.json"), items([9, "nine", 9]));
    rmSync(join(root, "data/a.json"));
    // Another subscriber keeps the evaluator busy with the same changes meanwhile.
    const watcher = await openLive(server, ask);
    await untilLiveCurrent(server, watcher, ask.sql);
    watcher.close();

    const resumed = await openLive(server, ask, { lastId, rows: held, snapshot: before.snapshot });
    try {
      await resumed.until(() => resumed.frames.length > 0, "the first frame");
      assert.equal(resumed.frames[0]?.event, "ready");
      assert.equal(resumed.frames[0]?.id, lastId);
      await untilLiveCurrent(server, resumed, ask.sql);
      assert.ok(!resumed.frames.some((f) => f.event === "snapshot"));
    } finally {
      resumed.close();
    }
    for (const stale of ["nonsense", `${lastId.replace(/-\d+$/, "")}-999999`, "0000-1"]) {
      const fresh = await openLive(server, ask, { lastId: stale });
      try {
        await fresh.until(() => fresh.frames.length > 0, "the first frame");
        assert.equal(fresh.frames[0]?.event, "snapshot", stale);
      } finally {
        fresh.close();
      }
    }
  });

  it("keeps one bound on every live query's history together (DIRQ_LIVE_HISTORY_BYTES)", async () => {
    const root = liveTree();
    const server = await serve(root, ["-c", ".dirq.toml"], {
      DIRQ_LIVE_HISTORY_BYTES: "1",
      DIRQ_LIVE_STATS: "1",
    });
    const asks = [
      { sql: "SELECT id, name, v FROM items ORDER BY id" },
      { sql: "SELECT id, name FROM items WHERE v > 50" },
    ];
    const [ordered, filter] = await Promise.all(asks.map((ask) => openLive(server, ask)));
    const streams = [ordered, filter] as LiveStream[];
    try {
      for (const stream of streams) await stream.until(() => stream.snapshot !== null, "snapshot");
      const lastId = ordered?.lastId as string;
      const has = (stream: LiveStream, id: number, v?: number) => () =>
        stream.rows.some((row) => row.id === id && (v === undefined || row.v === v));
      writeFileSync(join(root, "data/b.json"), items([3, "three", 71]));
      await ordered?.until(has(ordered, 3, 71), "row 3 changed");
      writeFileSync(join(root, "data/c.json"), items([9, "nine", 99]));
      for (const stream of streams) await stream.until(has(stream, 9), "row 9");
      // Over the bound, each keeps its newest frame only: the first diff is gone.
      const body = JSON.parse((await request(`${server.url}/live/stats`)).text) as {
        queries: { sql: string; historyChars: number }[];
      };
      const newest = (stream: LiveStream) => (stream.frames.at(-1)?.data ?? "").length;
      for (const [i, stream] of streams.entries()) {
        const kept = body.queries.find((q) => q.sql === asks[i]?.sql)?.historyChars;
        assert.equal(kept, newest(stream), asks[i]?.sql);
      }
      const resumed = await openLive(server, asks[0] as LiveAsk, { lastId });
      try {
        await resumed.until(() => resumed.frames.length > 0, "the first frame");
        assert.equal(resumed.frames[0]?.event, "snapshot");
      } finally {
        resumed.close();
      }
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  it("keeps frames for its bound in time (DIRQ_LIVE_HISTORY_MS): older ones leave as new ones come", async () => {
    const root = liveTree();
    const server = await serve(root, ["-c", ".dirq.toml"], {
      DIRQ_LIVE_HISTORY_MS: "1000",
      DIRQ_LIVE_STATS: "1",
    });
    const ask = { sql: "SELECT id, name, v FROM items ORDER BY id" };
    const live = await openLive(server, ask);
    try {
      await live.until(() => live.snapshot !== null, "the snapshot");
      const snapshotId = live.lastId as string;
      const has = (id: number, v: number) => () => live.rows.some((r) => r.id === id && r.v === v);
      saveWhole(root, "data/b.json", items([3, "three", 71]));
      await live.until(has(3, 71), "row 3 changed");
      const firstDiffId = live.lastId as string;
      await new Promise((resolve) => setTimeout(resolve, 1500));
      saveWhole(root, "data/c.json", items([9, "nine", 99]));
      await live.until(has(9, 99), "row 9");
      const body = JSON.parse((await request(`${server.url}/live/stats`)).text) as {
        queries: {
          sql: string;
          historyChars: number;
          historyDropped: number;
          historyHeldBytes: number;
        }[];
      };
      const stats = body.queries.find((q) => q.sql === ask.sql);
      assert.ok((stats?.historyDropped ?? 0) >= 1, JSON.stringify(stats));
      assert.equal(stats?.historyChars, (live.frames.at(-1)?.data ?? "").length);
      assert.ok((stats?.historyHeldBytes ?? 0) > (stats?.historyChars ?? 0), "its block");
      // The frames after the first diff are kept: a client that read it resumes.
      const resumed = await openLive(server, ask, { lastId: firstDiffId });
      // The first diff is gone: a client that read only the snapshot gets a new one.
      const fresh = await openLive(server, ask, { lastId: snapshotId });
      try {
        await resumed.until(() => resumed.frames.length >= 2, "ready and the diff");
        assert.deepEqual(
          resumed.frames.slice(0, 2).map((f) => [f.event, f.id]),
          [
            ["ready", firstDiffId],
            ["diff", live.lastId],
          ],
        );
        await fresh.until(() => fresh.frames.length > 0, "the first frame");
        assert.equal(fresh.frames[0]?.event, "snapshot");
      } finally {
        resumed.close();
        fresh.close();
      }
    } finally {
      live.close();
    }
  });

  it("sends an error frame when a later run fails, and diffs the next good answer against the last good one", async () => {
    const { root, server } = await start();
    for (const sql of [
      "SELECT id, json(doc) AS j FROM docs ORDER BY id",
      "SELECT id, json(doc) AS j FROM docs",
    ]) {
      // Whole files only (a rename): a refresh that read one half written would be a diff of its own.
      saveWhole(root, "docs/d.json", JSON.stringify([{ id: 1, doc: '{"x":1}' }]));
      for (let tries = 0; (await queryRows(server, "SELECT id FROM docs")).length !== 1; tries++) {
        assert.ok(tries < 600, "docs/d.json was not taken in");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const live = await openLive(server, { sql });
      try {
        await live.until(() => live.snapshot !== null, "the snapshot");
        saveWhole(root, "docs/d.json", JSON.stringify([{ id: 1, doc: "{broken" }]));
        await live.until(() => live.frames.some((f) => f.event === "error"), "an error frame");
        const error = JSON.parse(live.frames.find((f) => f.event === "error")?.data ?? "{}");
        assert.match(error.error, /malformed JSON/);
        assert.deepEqual(live.rows, [{ id: 1, j: '{"x":1}' }]);
        saveWhole(
          root,
          "docs/d.json",
          JSON.stringify([
            { id: 1, doc: '{"x":1}' },
            { id: 2, doc: "[2]" },
          ]),
        );
        await untilLiveCurrent(server, live, sql);
        const last = JSON.parse(live.frames.at(-1)?.data ?? "{}");
        assert.deepEqual(
          last.added.map((a: { row: unknown }) => a.row),
          [{ id: 2, j: "[2]" }],
        );
        assert.deepEqual(last.removed, []);
      } finally {
        live.close();
      }
    }
  });

  it("refuses what POST /query refuses, before the stream starts", async () => {
    const { server } = await start();
    const cases: [LiveAsk | string, number, RegExp][] = [
      ["", 400, /"sql" is missing/],
      ["?sql=%20", 400, /"sql" is empty/],
      [{ sql: "DELETE FROM items" }, 400, /read-only|not allowed|only/i],
      [{ sql: "SELECT * FROM nowhere" }, 400, /no such table: nowhere/],
      [{ sql: "SELECT id FROM items", key: ["nope"] }, 400, /key column "nope" is not a column/],
      [{ sql: "SELECT id FROM items WHERE v > ?" }, 400, /parameter/],
      [{ sql: "SELECT id FROM items WHERE v > ?", params: [1, 2] }, 400, /parameter/],
      ["?sql=SELECT%201&params=%7Bbroken", 400, /"params" is not valid JSON/],
      ["?sql=SELECT%201&key=a,,b", 400, /"key" must be/],
    ];
    for (const [ask, status, pattern] of cases) {
      const answer =
        typeof ask === "string"
          ? await request(`${server.url}/live${ask}`)
          : await openLive(server, ask).then((s) => ({ status: s.status, text: s.error }));
      assert.equal(answer.status, status, `${JSON.stringify(ask)}: ${answer.text}`);
      assert.match(JSON.parse(answer.text).error, pattern, JSON.stringify(ask));
    }
    const withParams = await openLive(server, {
      sql: "SELECT id FROM items WHERE v > ? ORDER BY id",
      params: [50],
    });
    await withParams.until(() => withParams.snapshot !== null, "the snapshot");
    assert.deepEqual(withParams.rows, [{ id: 2 }, { id: 3 }]);
    withParams.close();
    const post = await request(`${server.url}/live?sql=SELECT%201`, { method: "POST" });
    assert.equal(post.status, 405);
    // fetch sends its own Host: a raw request names another one.
    const refused = await new Promise<string>((resolve, reject) => {
      const socket = connect(server.port, "127.0.0.1", () =>
        socket.end(
          "GET /live?sql=SELECT%201 HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
        ),
      );
      let text = "";
      socket.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
      socket.once("close", () => resolve(text));
      socket.once("error", reject);
    });
    assert.match(refused, /^HTTP\/1\.1 403 /);
    assert.equal((await postQuery(server, "SELECT 1 AS one")).status, 200);
  });

  it("writes its frames as HTTP/1.1 chunks, or a body that ends at the close for HTTP/1.0 (Python's http.client reads both)", async () => {
    const { root, server } = await start();
    // Python's own HTTP client is the reference reader: it refuses a chunk whose size line
    // and bytes disagree. It prints the response's version and framing, `snapshot` once the
    // snapshot frame is in, then every frame's event and data up to the first diff.
    const script = `
import http.client, json, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
if sys.argv[2] == "1.0":
    conn._http_vsn, conn._http_vsn_str = 10, "HTTP/1.0"
conn.request("GET", "/live?sql=SELECT%20id%2C%20name%20FROM%20items%20WHERE%20v%20%3E%2050", headers={"Host": "127.0.0.1"})
resp = conn.getresponse()
print(json.dumps({"version": resp.version, "chunked": resp.chunked}), flush=True)
event = None
while True:
    line = resp.readline().decode()
    if line == "":
        sys.exit("the stream ended")
    if line.startswith("event: "):
        event = line[7:].strip()
    elif line.startswith("data: "):
        print(json.dumps({"event": event, "data": json.loads(line[6:])}), flush=True)
        if event == "snapshot":
            print("snapshot", flush=True)
        if event == "diff":
            break
`;
    let written = 0;
    for (const version of ["1.1", "1.0"]) {
      const child = spawn(python3(), ["-c", script, String(server.port), version]);
      let out = "";
      let err = "";
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      await new Promise<void>((resolve, reject) => {
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
          out += chunk;
          if (out.includes("snapshot\n")) resolve();
        });
        child.once("exit", () => reject(new Error(`python ended before the snapshot: ${err}`)));
      });
      written++;
      writeFileSync(join(root, `data/h${written}.json`), items([100 + written, "new", 99]));
      assert.equal(await exited, 0, err);
      const lines = out
        .trim()
        .split("\n")
        .filter((line) => line !== "snapshot");
      const [head, ...frames] = lines.map((line) => JSON.parse(line));
      // Node answers HTTP/1.1 either way; the framing follows what the client asked for.
      assert.deepEqual(head, { version: 11, chunked: version === "1.1" });
      assert.deepEqual(
        frames.map((frame) => frame.event),
        ["snapshot", "diff"],
      );
      assert.deepEqual(frames[1].data.added, [
        { at: frames[0].data.rows.length, row: { id: 100 + written, name: "new" } },
      ]);
    }
  });

  it("runs a volatile statement again on commits of its tables only, and keeps idle streams alive", async () => {
    const root = liveTree();
    const server = await serve(root, ["-c", ".dirq.toml"], { DIRQ_KEEP_ALIVE_MS: "200" });
    const live = await openLive(server, { sql: "SELECT id, random() AS r FROM docs" });
    const other = await openLive(server, { sql: "SELECT id FROM items ORDER BY id" });
    try {
      await live.until(() => live.snapshot !== null, "the snapshot");
      await other.until(() => other.snapshot !== null, "the other snapshot");
      assert.equal(live.snapshot?.incremental, false);
      writeFileSync(join(root, "data/z.json"), items([7, "seven", 7]));
      await untilLiveCurrent(server, other, "SELECT id FROM items ORDER BY id");
      const comments = live.comments.length;
      await live.until(() => live.comments.length >= comments + 2, "two keep-alive comments");
      assert.deepEqual(
        live.frames.map((f) => f.event),
        ["snapshot"],
      );
      writeFileSync(join(root, "docs/d.json"), JSON.stringify([{ id: 1, doc: "{}" }]));
      await live.until(() => live.frames.some((f) => f.event === "diff"), "a diff of docs");
    } finally {
      live.close();
      other.close();
    }
  });

  it("GET /live/stats (DIRQ_LIVE_STATS=1): one evaluator per statement, run again only on commits of its tables", async () => {
    const root = liveTree();
    const server = await serve(root, ["-c", ".dirq.toml"], { DIRQ_LIVE_STATS: "1" });
    const asks: LiveAsk[] = [
      { sql: "SELECT id, name FROM items WHERE v > 50" },
      { sql: "SELECT id, v FROM items ORDER BY v DESC, id" },
      { sql: "SELECT id, doc FROM docs ORDER BY id" },
    ];
    const streams = [...asks, asks[0] as LiveAsk].map((ask) => openLive(server, ask));
    const [filter, ordered, docs, again] = await Promise.all(streams);
    type Stats = {
      memory: { rss: number; heapUsed: number };
      eventHistory: { frames: number; bytes: number };
      queries: {
        sql: string;
        subscribers: number;
        runs: number;
        incremental: boolean;
        byFileCpuMs: number;
      }[];
    };
    let lastEventHistory = { frames: 0, bytes: 0 };
    const stats = async () => {
      const answer = await request(`${server.url}/live/stats`);
      assert.equal(answer.status, 200, answer.text);
      const body = JSON.parse(answer.text) as Stats;
      assert.ok(body.memory.heapUsed > 0 && body.memory.rss > body.memory.heapUsed);
      lastEventHistory = body.eventHistory;
      return new Map(body.queries.map((q) => [q.sql, q]));
    };
    try {
      for (const stream of [filter, ordered, docs, again]) {
        await stream?.until(() => stream.snapshot !== null, "a snapshot");
      }
      const before = await stats();
      assert.equal(before.size, 3);
      assert.equal(before.get(asks[0]?.sql as string)?.subscribers, 2);
      assert.equal(before.get(asks[0]?.sql as string)?.incremental, true);
      assert.equal(before.get(asks[2]?.sql as string)?.runs, 0);
      writeFileSync(join(root, "data/b.json"), items([3, "three", 80], [4, "four", 90]));
      const hasFour = (stream: LiveStream | undefined) => () =>
        (stream as LiveStream).rows.some((row) => row.id === 4);
      await filter?.until(hasFour(filter), "row 4 in the filter");
      await ordered?.until(hasFour(ordered), "row 4 in the ordered answer");
      const after = await stats();
      assert.ok((after.get(asks[0]?.sql as string)?.runs ?? 0) >= 1);
      assert.ok((after.get(asks[1]?.sql as string)?.runs ?? 0) >= 1);
      assert.equal(after.get(asks[2]?.sql as string)?.runs, 0, "docs ran on a commit of items");
      assert.ok(
        (after.get(asks[0]?.sql as string)?.byFileCpuMs ?? 0) > 0,
        "file by file, measured",
      );
      assert.equal(after.get(asks[1]?.sql as string)?.byFileCpuMs, 0, "re-run whole");
      // The /events history holds the row frames of the change just taken in.
      assert.ok(lastEventHistory.frames >= 1 && lastEventHistory.bytes > 0, "the /events history");
      writeFileSync(join(root, "docs/d.json"), JSON.stringify([{ id: 2, doc: "{}" }]));
      await docs?.until(() => docs.rows.some((row) => row.id === 2), "doc 2");
      assert.ok(((await stats()).get(asks[2]?.sql as string)?.runs ?? 0) >= 1);
    } finally {
      for (const stream of [filter, ordered, docs, again]) stream?.close();
    }
    const { server: plain } = await start();
    const hidden = await request(`${plain.url}/live/stats`);
    assert.equal(hidden.status, 404);
  });
});
