// A subscriber that goes away and resumes (issue 56): `dirq server` over a tree of JSON files,
// a subscriber that keeps the table's state from a first query and the `/events` row frames,
// and `--changes` seeded file operations (create, rewrite, delete) spread over `--seconds`.
// A quarter of the way in the subscriber disconnects for `--away` seconds, then reconnects with
// `Last-Event-ID` (the id of the last frame it read). Once the server is quiet its state must
// equal the server's answer: missing (rows the server has that the subscriber does not, or
// has differently) and extra (the other way) must both be 0, and no `reset` may come.
//
//   node bench/dirq-resume.mjs [--runs 20] [--changes 5000] [--seconds 20] [--away 10]
//                              [--files 500] [--seed 1] [--json]
//
// A short check: node bench/dirq-resume.mjs --runs 2 --changes 500 --seconds 4 --away 2
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import {
  DIRQ_BIN,
  DIRQ_ENV,
  log,
  parseOptions,
  positiveInteger,
  requireDirqBuilt,
  seededRandom,
  serverPort,
} from "./lib.mjs";

const USAGE = `usage: node bench/dirq-resume.mjs [--runs 20] [--changes 5000] [--seconds 20] [--away 10] [--files 500] [--seed 1] [--json]`;
const options = parseOptions(
  process.argv.slice(2),
  {
    runs: { type: "string", default: "20" },
    changes: { type: "string", default: "5000" },
    seconds: { type: "string", default: "20" },
    away: { type: "string", default: "10" },
    files: { type: "string", default: "500" },
    seed: { type: "string", default: "1" },
    json: { type: "boolean", default: false },
  },
  USAGE,
);
const RUNS = positiveInteger(options.runs, "--runs");
const CHANGES = positiveInteger(options.changes, "--changes");
const SECONDS = Number(options.seconds);
const AWAY_MS = Number(options.away) * 1000;
const FILES = positiveInteger(options.files, "--files");
const SEED = positiveInteger(options.seed, "--seed");
requireDirqBuilt();

const CONFIG = `[[table]]
name = "items"
glob = "data/*.json"
format = "json"
schema = { name = "TEXT", v = "INTEGER" }
`;
/** How long the server must send nothing before the states are compared. */
const QUIET_MS = 1500;

async function startServer(root) {
  const child = spawn(
    process.execPath,
    [DIRQ_BIN, "server", "-c", "dirq.toml", "--host", "127.0.0.1", "--port", "0"],
    { cwd: root, env: DIRQ_ENV, stdio: ["ignore", "pipe", "inherit"] },
  );
  const port = await serverPort(child);
  return { child, url: `http://127.0.0.1:${port}` };
}

async function query(url, sql) {
  const response = await globalThis.fetch(`${url}/query`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ sql }),
  });
  if (!response.ok) throw new Error(`POST /query ${sql}: ${response.status}`);
  return response.json();
}

/**
 * One `/events` connection: calls `onFrame({event, id, data})` for each frame (the WHATWG
 * rules dirq's frames need: `field: value` lines, a blank line ends a frame). Resolves once
 * the `ready` frame is in; `close()` aborts it.
 */
async function connect(url, lastEventId, onFrame) {
  const controller = new globalThis.AbortController();
  const headers = lastEventId === undefined ? {} : { "Last-Event-ID": lastEventId };
  const response = await globalThis.fetch(`${url}/events`, {
    headers,
    signal: controller.signal,
  });
  let readyResolve;
  const ready = new Promise((resolve) => (readyResolve = resolve));
  void (async () => {
    const decoder = new globalThis.TextDecoder();
    let buffer = "";
    let frame = { event: "message", id: undefined, data: "" };
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk, { stream: true });
        let end;
        while ((end = buffer.indexOf("\n")) !== -1) {
          const line = buffer.slice(0, end);
          buffer = buffer.slice(end + 1);
          if (line === "") {
            if (frame.event === "ready") readyResolve();
            if (frame.data !== "" || frame.event !== "message") onFrame(frame);
            frame = { event: "message", id: undefined, data: "" };
          } else if (!line.startsWith(":")) {
            const colon = line.indexOf(":");
            const field = line.slice(0, colon);
            const value = line.slice(colon + 2);
            if (field === "event") frame.event = value;
            else if (field === "id") frame.id = value;
            else if (field === "data") frame.data += value;
          }
        }
      }
    } catch {
      // Aborted: the subscriber went away on purpose.
    }
  })();
  await ready;
  return { close: () => controller.abort() };
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function oneRun(run) {
  const seed = SEED + run;
  const random = seededRandom(seed);
  const root = mkdtempSync(join(tmpdir(), "dirq-resume-"));
  mkdirSync(join(root, "data"));
  writeFileSync(join(root, "dirq.toml"), CONFIG);
  const exists = new Set();
  for (let i = 0; i < FILES / 2; i++) {
    writeFileSync(join(root, "data", `f${i}.json`), JSON.stringify({ name: `f${i}`, v: 0 }));
    exists.add(i);
  }
  const server = await startServer(root);
  try {
    // The subscriber's state: name -> the row as JSON.
    const state = new Map();
    let lastId;
    let frames = 0;
    let framesAfterResume = 0;
    let resets = 0;
    let gaps = 0;
    let lastFrameAt = Date.now();
    let resumed = false;
    const onFrame = (frame) => {
      lastFrameAt = Date.now();
      if (frame.event === "reset") resets++;
      if (frame.id !== undefined) {
        const n = Number(frame.id.slice(frame.id.lastIndexOf("-") + 1));
        const last = lastId === undefined ? n : Number(lastId.slice(lastId.lastIndexOf("-") + 1));
        if (frame.event === "row" && n !== last + 1) gaps++;
        lastId = frame.id;
      }
      if (frame.event !== "row") return;
      frames++;
      if (resumed) framesAfterResume++;
      const change = JSON.parse(frame.data);
      if (change.action === "error") return;
      if (change.action === "delete") state.delete(change.row.name);
      else state.set(change.row.name, JSON.stringify(change.row));
    };
    let stream = await connect(server.url, undefined, onFrame);
    for (const row of await query(server.url, "SELECT * FROM items")) {
      state.set(row.name, JSON.stringify(row));
    }
    const perTick = Math.max(1, Math.round(CHANGES / ((SECONDS * 1000) / 20)));
    const awayAt = Math.floor(CHANGES / 4);
    let awayUntil = 0;
    let reconnecting = null;
    for (let done = 0; done < CHANGES;) {
      for (let k = 0; k < perTick && done < CHANGES; k++, done++) {
        if (done === awayAt) {
          stream.close();
          awayUntil = Date.now() + AWAY_MS;
        }
        const i = Math.floor(random() * FILES);
        const path = join(root, "data", `f${i}.json`);
        if (exists.has(i) && random() < 0.2) {
          unlinkSync(path);
          exists.delete(i);
        } else {
          writeFileSync(path, JSON.stringify({ name: `f${i}`, v: done }));
          exists.add(i);
        }
      }
      if (awayUntil !== 0 && Date.now() >= awayUntil && reconnecting === null) {
        resumed = true;
        reconnecting = connect(server.url, lastId, onFrame).then((next) => (stream = next));
      }
      await sleep(20);
    }
    if (reconnecting === null) {
      await sleep(Math.max(0, awayUntil - Date.now()));
      resumed = true;
      reconnecting = connect(server.url, lastId, onFrame).then((next) => (stream = next));
    }
    await reconnecting;
    while (Date.now() - lastFrameAt < QUIET_MS) await sleep(100);
    const serverRows = new Map(
      (await query(server.url, "SELECT * FROM items")).map((row) => [
        row.name,
        JSON.stringify(row),
      ]),
    );
    stream.close();
    let missing = 0;
    let extra = 0;
    for (const [name, row] of serverRows) if (state.get(name) !== row) missing++;
    for (const [name, row] of state) if (serverRows.get(name) !== row) extra++;
    return {
      run: run + 1,
      seed,
      rows: serverRows.size,
      frames,
      framesAfterResume,
      resets,
      gaps,
      missing,
      extra,
      load: loadavg()[0],
    };
  } finally {
    server.child.kill("SIGTERM");
    await new Promise((resolve) => server.child.once("exit", resolve));
    rmSync(root, { recursive: true, force: true });
  }
}

log(
  `${RUNS} runs: ${CHANGES} changes over ${SECONDS} s among ${FILES} files, the subscriber away for ${AWAY_MS / 1000} s; load average ${loadavg()[0].toFixed(2)} at start`,
);
const results = [];
for (let run = 0; run < RUNS; run++) {
  const result = await oneRun(run);
  results.push(result);
  log(
    `run ${result.run} (seed ${result.seed}): ${result.rows} rows, ${result.frames} row frames (${result.framesAfterResume} after resuming), resets ${result.resets}, id gaps ${result.gaps}, missing ${result.missing}, extra ${result.extra}, load ${result.load.toFixed(2)}`,
  );
}
const bad = results.filter((result) => result.missing + result.extra + result.resets > 0);
log(
  `${RUNS - bad.length} of ${RUNS} runs ended with exactly the server's state (0 missing, 0 extra, no reset); load average ${loadavg()
    .map((value) => value.toFixed(2))
    .join(" ")} at the end (the machine should be idle: near 0)`,
);
if (options.json) process.stdout.write(`${JSON.stringify({ results }, null, 2)}\n`);
process.exitCode = bad.length === 0 ? 0 : 1;
