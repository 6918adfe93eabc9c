#!/usr/bin/env node
// Soak test of `dirq server` under mixed load on loopback: queries at a fixed rate, many
// /events subscribers, and a writer creating, rewriting and deleting files. It checks that no
// request fails, that every subscriber sees every change the writer made, that the final index
// equals a fresh scan, and reports the server's memory and open files over time. Subscribers
// that never read (--stuck) hold their connections throughout. See bench/README.md.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { Agent, request as httpRequest } from "node:http";
import { connect } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  DIRQ_BIN,
  DIRQ_ENV,
  fail,
  log,
  parseOptions,
  percentile,
  positiveInteger,
  requireDirqBuilt,
  table,
} from "./lib.mjs";

const USAGE = `usage: node bench/dirq-soak.mjs [options]

  --minutes N       how long the load runs (default 30; fractions allowed)
  --qps N           POST /query requests per second (default 200)
  --subscribers N   /events clients that read (default 50)
  --stuck N         /events clients that never read a byte (default 0)
  --sample S        seconds between two samples of the server's memory and files (default 30)
  --writes N        file changes per second by the writer (default 20)
  --files N         files in the tree at the start (default 2000)
  --json            results as JSON on stdout
`;

const options = parseOptions(
  process.argv.slice(2),
  {
    minutes: { type: "string", default: "30" },
    qps: { type: "string", default: "200" },
    subscribers: { type: "string", default: "50" },
    stuck: { type: "string", default: "0" },
    sample: { type: "string", default: "30" },
    writes: { type: "string", default: "20" },
    files: { type: "string", default: "2000" },
    json: { type: "boolean", default: false },
  },
  USAGE,
);
const MINUTES = Number(options.minutes);
if (!(MINUTES > 0)) fail(`--minutes must be a positive number, got ${options.minutes}`);
const QPS = positiveInteger(options.qps, "--qps");
const SUBSCRIBERS = positiveInteger(options.subscribers, "--subscribers");
const STUCK = Number(options.stuck);
if (!Number.isSafeInteger(STUCK) || STUCK < 0)
  fail(`--stuck must be 0 or more, got ${options.stuck}`);
const SAMPLE_MS = Number(options.sample) * 1000;
if (!(SAMPLE_MS > 0)) fail(`--sample must be a positive number, got ${options.sample}`);
const WRITES = positiveInteger(options.writes, "--writes");
const FILES = positiveInteger(options.files, "--files");
const DURATION_MS = MINUTES * 60_000;
/** Requests in flight at most; past it a tick's requests are counted as not sent. */
const MAX_IN_FLIGHT = 256;
/** How long after the writer stops every change must have reached every subscriber. */
const SETTLE_MS = 10_000;

requireDirqBuilt();

// ---------------------------------------------------------------------------------------------
// The tree and the server

const root = mkdtempSync(join(tmpdir(), "dirq-soak-"));
for (let d = 0; d < 20; d++) mkdirSync(join(root, `d${d}`));
for (let i = 0; i < FILES; i++)
  writeFileSync(join(root, `d${i % 20}`, `f${i}.txt`), "x".repeat(i % 97));
mkdirSync(join(root, "w"));

function startServer() {
  const child = spawn(
    process.execPath,
    [DIRQ_BIN, "server", "--host", "127.0.0.1", "--port", "0"],
    {
      cwd: root,
      env: DIRQ_ENV,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => {
      stdout += chunk;
      const match = /Running at (\S+):(\d+)/.exec(stdout);
      if (match) resolve({ child, port: Number(match[2]), stderr: () => stderr });
    });
    child.once("exit", (code) => reject(new Error(`server exited (${code}): ${stderr}`)));
  });
}

/** Resident memory of a process and its descendants (query processes), in MB. */
function treeRssMb(pid) {
  const parents = new Map();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // ended meanwhile
    }
  }
  const members = [pid];
  for (let i = 0; i < members.length; i++) {
    for (const [child, parent] of parents) if (parent === members[i]) members.push(child);
  }
  let kb = 0;
  let serverKb = 0;
  for (const member of members) {
    try {
      const status = readFileSync(`/proc/${member}/status`, "utf8");
      const value = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      kb += value;
      if (member === pid) serverKb = value;
    } catch {
      // ended meanwhile
    }
  }
  return { server: Math.round(serverKb / 1024), tree: Math.round(kb / 1024) };
}

/** Open file descriptors of the server process (sockets, the index, watches' descriptor...). */
function openFiles(pid) {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return null;
  }
}

/** The server's memory and open files now. */
function sample(pid, at) {
  return { at, ...treeRssMb(pid), files: openFiles(pid) };
}

// ---------------------------------------------------------------------------------------------
// Queries

const agent = new Agent({ keepAlive: true, maxSockets: 64 });
const QUERIES = [
  "SELECT 1 AS one",
  "SELECT count(*) AS n FROM './'",
  "SELECT path, size FROM './w/*.txt' ORDER BY size DESC LIMIT 10",
  "SELECT dir, count(*) AS n, sum(size) AS bytes FROM './' GROUP BY dir",
  "SELECT path FROM './d3' WHERE size > 50",
];

function post(port, sql) {
  return new Promise((resolve) => {
    const started = performance.now();
    const body = JSON.stringify({ sql });
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port,
        path: "/query",
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () =>
          resolve({ status: res.statusCode, text, ms: performance.now() - started }),
        );
      },
    );
    req.on("error", (error) =>
      resolve({ status: 0, text: error.message, ms: performance.now() - started }),
    );
    req.end(body);
  });
}

// ---------------------------------------------------------------------------------------------
// Subscribers

function subscribe(port, id) {
  /** Change key -> when it first arrived (ms since the epoch). */
  const seen = new Map();
  let buffer = "";
  let closed = false;
  const state = { id, seen, frames: 0, ready: false, closed: () => closed };
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path: "/events", agent: false }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`/events answered ${res.statusCode}`));
      res.setEncoding("utf8");
      res.on("data", (chunk) => {
        buffer += chunk;
        let end;
        while ((end = buffer.indexOf("\n\n")) !== -1) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = /^event: (\w+)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (event === "ready") {
            state.ready = true;
            resolve(state);
          } else if (event === "row" && data) {
            state.frames++;
            const change = JSON.parse(data);
            const key = changeKey(change.action, change.file_path, change.row?.size);
            if (!seen.has(key)) seen.set(key, Date.now());
          }
        }
      });
      res.on("close", () => (closed = true));
    });
    req.on("error", reject);
    req.end();
    state.close = () => req.destroy();
  });
}

/** What identifies a change the writer made: action, file and (for updates) the new size. */
function changeKey(action, path, size) {
  return action === "update" ? `update ${path} ${size}` : `${action} ${path}`;
}

/**
 * An /events client that sends its request and never reads a byte: to the server, a client
 * stuck for the whole run, whose socket buffers fill.
 */
function subscribeStuck(port) {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => {
      socket.pause();
      socket.write(`GET /events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      resolve({ close: () => socket.destroy(), closed: () => socket.destroyed });
    });
    socket.on("error", () => {});
    socket.once("error", reject);
  });
}

// ---------------------------------------------------------------------------------------------
// The writer: creates files, rewrites them to a size of its own, deletes old ones

function startWriter() {
  const expected = [];
  /** When each expected change was made (ms since the epoch). */
  const madeAt = new Map();
  const live = new Map(); // path -> time of its last change
  let seq = 0;
  const step = () => {
    const now = Date.now();
    seq++;
    const settled = [...live].filter(([, at]) => now - at > 2_000).map(([path]) => path);
    // Two deletions, one rewrite and two new files in five changes: once files have
    // settled the tree keeps its size, so memory that grows is not the index growing.
    const roll = seq % 5;
    if (roll < 2 && settled.length > 0) {
      const path = settled[seq % settled.length];
      unlinkSync(join(root, path));
      live.delete(path);
      expected.push(changeKey("delete", path));
    } else if (roll === 2 && settled.length > 0) {
      const path = settled[(seq * 7) % settled.length];
      // Each rewrite gives the file a size no earlier write of it had.
      const size = 1_000 + seq;
      writeFileSync(join(root, path), "y".repeat(size));
      live.set(path, now);
      expected.push(changeKey("update", path, size));
    } else {
      const path = `w/n${seq}.txt`;
      writeFileSync(join(root, path), "z".repeat(seq % 500));
      live.set(path, now);
      expected.push(changeKey("insert", path));
    }
  };
  const timer = setInterval(() => {
    const before = expected.length;
    step();
    for (let i = before; i < expected.length; i++) madeAt.set(expected[i], Date.now());
  }, 1000 / WRITES);
  return { expected, madeAt, stop: () => clearInterval(timer), writes: () => seq };
}

// ---------------------------------------------------------------------------------------------
// The run

const server = await startServer();
log(`dirq-soak: server on port ${server.port}, tree ${root} (${FILES} files)`);
// A query names the path-table: from then on the server keeps it and streams its changes.
const primed = await post(server.port, "SELECT count(*) AS n FROM './'");
if (primed.status !== 200) fail(`priming query failed: ${primed.status} ${primed.text}`);

const subscribers = await Promise.all(
  Array.from({ length: SUBSCRIBERS }, (_, id) => subscribe(server.port, id)),
);
const stuck = await Promise.all(Array.from({ length: STUCK }, () => subscribeStuck(server.port)));
const memory = [sample(server.child.pid, 0)];
const statuses = new Map();
const latencies = [];
let sent = 0;
let notSent = 0;
let inFlight = 0;
const failures = [];

const loopDelay = monitorEventLoopDelay({ resolution: 20 });
loopDelay.enable();
const writer = startWriter();
const started = Date.now();
let issued = 0;
const queryTimer = setInterval(() => {
  // Open loop, paced by the clock (timers drift): the requests due by now are sent now.
  const due = Math.floor(((Date.now() - started) / 1000) * QPS);
  for (; issued < due; issued++) {
    if (inFlight >= MAX_IN_FLIGHT) {
      notSent++;
      continue;
    }
    inFlight++;
    sent++;
    const sql = QUERIES[sent % QUERIES.length];
    void post(server.port, sql).then((answer) => {
      inFlight--;
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      latencies.push(answer.ms);
      if (answer.status !== 200 && failures.length < 10) {
        failures.push(`${answer.status} ${answer.text}`);
      }
    });
  }
}, 10);
const memoryTimer = setInterval(() => {
  memory.push(sample(server.child.pid, Math.round((Date.now() - started) / 1000)));
  const last = memory[memory.length - 1];
  log(
    `dirq-soak: ${last.at} s: ${sent} queries, ${writer.writes()} writes, server RSS ${last.server} MB (with query processes ${last.tree} MB), ${last.files} open files`,
  );
}, SAMPLE_MS);

await new Promise((resolve) => setTimeout(resolve, DURATION_MS));
clearInterval(queryTimer);
writer.stop();
while (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 50));
clearInterval(memoryTimer);
memory.push(sample(server.child.pid, Math.round((Date.now() - started) / 1000)));
const elapsedS = (Date.now() - started) / 1000;

// Every change must reach every subscriber that is still connected.
const settleBy = Date.now() + SETTLE_MS;
const missingFor = (subscriber) => writer.expected.filter((key) => !subscriber.seen.has(key));
while (Date.now() < settleBy && subscribers.some((s) => missingFor(s).length > 0)) {
  await new Promise((resolve) => setTimeout(resolve, 200));
}
loopDelay.disable();
const disconnected = subscribers.filter((s) => s.closed()).length;
/**
 * The longest a change took to reach a subscriber. The server queues 1,024 frames for each
 * subscriber and silently drops what comes beyond (the spec's rule for lagging subscribers):
 * one whose changes took longer than that queue lasts was lagging, and may miss changes.
 */
const maxDelayMs = (subscriber) => {
  let max = 0;
  for (const [key, at] of subscriber.seen) {
    const made = writer.madeAt.get(key);
    if (made !== undefined) max = Math.max(max, at - made);
  }
  return max;
};
const FRAMES_PER_CHANGE = 2; // every change is in './' and in one of the narrower tables
const queueLastsMs = (1024 / (WRITES * FRAMES_PER_CHANGE)) * 1000;
const incomplete = subscribers
  .map((s) => ({ id: s.id, missing: missingFor(s), maxDelayMs: maxDelayMs(s) }))
  .filter((s) => s.missing.length > 0);
const lagging = incomplete.filter((s) => s.maxDelayMs >= queueLastsMs);
const losing = incomplete.filter((s) => s.maxDelayMs < queueLastsMs);
const delays = subscribers.map(maxDelayMs);

// The final index must equal a fresh scan of the same tree.
const FINAL_SQL = "SELECT path, size, mtime FROM './' ORDER BY path";
const served = await post(server.port, FINAL_SQL);
const fresh = spawnSync(process.execPath, [DIRQ_BIN, FINAL_SQL, "--format", "json"], {
  cwd: root,
  env: DIRQ_ENV,
  encoding: "utf8",
  maxBuffer: 256 * 1024 * 1024,
});
const identical = served.status === 200 && served.text === fresh.stdout;

const stuckDropped = stuck.filter((client) => client.closed()).length;
for (const subscriber of subscribers) subscriber.close();
for (const client of stuck) client.close();
agent.destroy();
server.child.kill("SIGTERM");
const exitCode = await new Promise((resolve) => server.child.once("exit", (code) => resolve(code)));
rmSync(root, { recursive: true, force: true });

// ---------------------------------------------------------------------------------------------
// Report

latencies.sort((a, b) => a - b);
const middle = memory[Math.floor(memory.length / 2)];
const result = {
  minutes: Math.round((elapsedS / 60) * 100) / 100,
  queries: sent,
  queriesPerSecond: Math.round(sent / elapsedS),
  notSentBacklog: notSent,
  statuses: Object.fromEntries(statuses),
  latencyMs: {
    p50: Math.round(percentile(latencies, 50) * 10) / 10,
    p99: Math.round(percentile(latencies, 99) * 10) / 10,
    max: Math.round((latencies[latencies.length - 1] ?? 0) * 10) / 10,
  },
  writes: writer.expected.length,
  subscribers: SUBSCRIBERS,
  stuckSubscribers: STUCK,
  stuckSubscribersDroppedByServer: stuckDropped,
  subscribersDisconnected: disconnected,
  subscribersMissingChanges: incomplete.length,
  subscribersLaggingThenMissing: lagging.length,
  nonLaggingSubscribersMissingChanges: losing.length,
  missingChangesTotal: incomplete.reduce((n, s) => n + s.missing.length, 0),
  maxChangeDelayMs: Math.max(...delays),
  benchEventLoopDelayMaxMs: Math.round(loopDelay.max / 1e6),
  framesPerSubscriber: Math.round(subscribers.reduce((n, s) => n + s.frames, 0) / SUBSCRIBERS),
  finalIndexEqualsFreshScan: identical,
  rssMb: {
    start: memory[0],
    middle,
    end: memory[memory.length - 1],
    maxServer: Math.max(...memory.map((m) => m.server)),
  },
  openFiles: { start: memory[0].files, middle: middle.files, end: memory[memory.length - 1].files },
  samples: memory,
  serverExit: exitCode,
  serverStderr: server.stderr().trim().split("\n").filter(Boolean).slice(0, 5),
  failures,
  missingExamples: incomplete
    .slice(0, 3)
    .map((s) => ({ id: s.id, missing: s.missing.slice(0, 5) })),
};
const ok =
  (statuses.get(200) ?? 0) === sent &&
  losing.length === 0 &&
  disconnected === 0 &&
  identical &&
  exitCode === 0;

if (options.json) {
  process.stdout.write(`${JSON.stringify({ ok, ...result }, null, 2)}\n`);
} else {
  process.stdout.write(
    table(
      ["figure", "value"],
      [
        ["duration", `${result.minutes} min`],
        [
          "queries (200 / sent)",
          `${statuses.get(200) ?? 0} / ${sent} (${result.queriesPerSecond}/s)`,
        ],
        [
          "other statuses",
          JSON.stringify(Object.fromEntries([...statuses].filter(([s]) => s !== 200))),
        ],
        ["not sent (backlog)", String(notSent)],
        [
          "latency p50 / p99 / max",
          `${result.latencyMs.p50} / ${result.latencyMs.p99} / ${result.latencyMs.max} ms`,
        ],
        ["writer changes", String(result.writes)],
        ["non-lagging subscribers missing a change", `${losing.length} of ${SUBSCRIBERS}`],
        [
          "lagging subscribers (missed changes, as the spec allows)",
          `${lagging.length} (${result.missingChangesTotal} changes missed in all)`,
        ],
        ["longest change -> event delay", `${result.maxChangeDelayMs} ms`],
        ["bench's own event-loop stall, max", `${result.benchEventLoopDelayMaxMs} ms`],
        ["subscribers disconnected", String(disconnected)],
        ["final index = fresh scan", String(identical)],
        [
          "server RSS start / middle / end (max)",
          `${memory[0].server} / ${middle.server} / ${memory[memory.length - 1].server} MB (${result.rssMb.maxServer})`,
        ],
        [
          "with query processes",
          `${memory[0].tree} / ${middle.tree} / ${memory[memory.length - 1].tree} MB`,
        ],
        [
          "server open files start / middle / end",
          `${memory[0].files} / ${middle.files} / ${memory[memory.length - 1].files}`,
        ],
        ["stuck subscribers (never read) closed by the server", `${stuckDropped} of ${STUCK}`],
        ["server exit after SIGTERM", String(exitCode)],
      ],
    ).join("\n") + "\n",
  );
  log("dirq-soak: samples (s: server MB, with query processes MB, open files):");
  log(memory.map((m) => `  ${m.at}: ${m.server}, ${m.tree}, ${m.files}`).join("\n"));
  if (failures.length > 0) log(`dirq-soak: failed requests, first ones: ${failures.join(" | ")}`);
  if (incomplete.length > 0)
    log(`dirq-soak: missing changes: ${JSON.stringify(result.missingExamples)}`);
  if (result.serverStderr.length > 0)
    log(`dirq-soak: server stderr: ${result.serverStderr.join(" | ")}`);
  log(ok ? "dirq-soak: OK" : "dirq-soak: FAILED");
}
process.exit(ok ? 0 : 1);
