// Live queries at scale: `dirq server` over `--tables` tables of JSON files while `--rate` files
// change per second (each an atomic rewrite of one file of a random table), in three phases of
// the same change rate:
//   1. no live query (what the refresh itself costs),
//   2. one subscriber per statement (`--statements` distinct statements, spread over the tables),
//   3. `--subscribers` subscribers to the same statements, for `--minutes`.
// It prints the server's CPU per second in each phase (the server and its query processes,
// from /proc/<pid>/stat: CPU must grow with distinct statements, not with subscribers), its
// memory and open fds (/proc/<pid>/fd) sampled through phase 3 (flat), how many times the
// statements were evaluated again per file change, and whether any statement ran more often
// than commits touched the table it reads (`GET /live/stats`, which the server answers with
// DIRQ_LIVE_STATS=1, against the commits `/events` row frames name). At the end every
// subscriber's snapshot with its diffs applied is compared with a fresh `POST /query`.
//
//   node bench/dirq-live-scale.mjs [--minutes 10] [--subscribers 1000] [--statements 100]
//     [--tables 10] [--rate 20] [--files 50] [--rows 20] [--compare-seconds 60]
//     [--sample-seconds 10] [--server-node-options "--max-old-space-size=64"]
//     [--event-history-frames N] [--event-history-ms N] [--live-history-bytes N]
//     [--live-history-ms N] [--json]
// Memory by process: the server's own RSS (its main thread, worker threads and native code;
// beside it V8's heap and `external`, and what is neither), and each query process's RSS.
// Both histories (`/events`' and the live queries') grow until they reach their bounds (in
// time, frames and bytes): a history is full once it has dropped frames. Flatness is judged
// so that a filling history fools neither way: RSS less the memory the histories hold (the
// blocks their frames lie in) over phase 3 and from 2 minutes in (V8 sizes its heap to the
// 900 subscribers that join at its start meanwhile), and RSS itself from the time both
// histories were full and 2 minutes had passed (printed); each "flat" when
// its mean over the later half is at most 5 % above its mean over the earlier half. The query
// processes come and go with the statements' pace (the pool starts more while statements are
// slow): their RSS is judged per process.
import { spawn } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import {
  DIRQ_BIN,
  DIRQ_ENV,
  log,
  parseOptions,
  positiveInteger,
  readSseFrames,
  requireDirqBuilt,
  seededRandom,
  serverPort,
} from "./lib.mjs";

const USAGE = `usage: node bench/dirq-live-scale.mjs [options]
  --minutes N          how long phase 3 (every subscriber) runs (default 10; fractions allowed)
  --subscribers N      subscribers in phase 3 (default 1000)
  --statements N       distinct statements (default 100; at most 10 per table)
  --tables N           tables (default 10)
  --rate N             files changed per second (default 20)
  --files N            files per table (default 50)
  --rows N             rows per file (default 20)
  --compare-seconds N  length of phases 1 and 2 (default 60)
  --sample-seconds N   RSS, fds and history sampled this often (default 10)
  --server-node-options "..."  NODE_OPTIONS of the server (e.g. --max-old-space-size=64)
  --event-history-frames N  the row frames /events keeps (server default 65536)
  --event-history-ms N      how long /events keeps a frame (server default 2 minutes)
  --live-history-bytes N    the bytes of frames all live queries keep (server default 32 MiB)
  --live-history-ms N       how long a live query keeps a frame (server default 2 minutes)
  --json               print machine-readable results
`;
const options = parseOptions(
  process.argv.slice(2),
  {
    minutes: { type: "string", default: "10" },
    subscribers: { type: "string", default: "1000" },
    statements: { type: "string", default: "100" },
    tables: { type: "string", default: "10" },
    rate: { type: "string", default: "20" },
    files: { type: "string", default: "50" },
    rows: { type: "string", default: "20" },
    "compare-seconds": { type: "string", default: "60" },
    "sample-seconds": { type: "string", default: "10" },
    "server-node-options": { type: "string" },
    "event-history-frames": { type: "string" },
    "event-history-ms": { type: "string" },
    "live-history-bytes": { type: "string" },
    "live-history-ms": { type: "string" },
    json: { type: "boolean", default: false },
  },
  USAGE,
);
const MINUTES = Number(options.minutes);
if (!(MINUTES > 0)) {
  log("--minutes must be a positive number");
  process.exit(2);
}
const SUBSCRIBERS = positiveInteger(options.subscribers, "--subscribers");
const STATEMENTS = positiveInteger(options.statements, "--statements");
const TABLES = positiveInteger(options.tables, "--tables");
const RATE = positiveInteger(options.rate, "--rate");
const FILES = positiveInteger(options.files, "--files");
const ROWS = positiveInteger(options.rows, "--rows");
const COMPARE_S = positiveInteger(options["compare-seconds"], "--compare-seconds");
const SAMPLE_S = positiveInteger(options["sample-seconds"], "--sample-seconds");
requireDirqBuilt();

/** Ten shapes per table: read file by file (no ORDER BY), or re-run whole. */
const SHAPES = [
  (t) => `SELECT id, name, v FROM ${t} WHERE v > 90`,
  (t) => `SELECT id, v * 2 AS w FROM ${t} WHERE grp = 'g3'`,
  (t) => `SELECT id, upper(name) AS n FROM ${t} WHERE v < 5`,
  (t) => `SELECT id, name FROM ${t} WHERE v BETWEEN 40 AND 45`,
  (t) => `SELECT id, v FROM ${t} WHERE name = 'n7'`,
  (t) => `SELECT grp, count(*) AS n, sum(v) AS s FROM ${t} GROUP BY grp ORDER BY grp`,
  (t) => `SELECT id, v FROM ${t} ORDER BY v DESC, id LIMIT 10`,
  (t) => `SELECT DISTINCT grp FROM ${t} ORDER BY grp`,
  (t) => `SELECT count(*) AS n, max(v) AS m FROM ${t}`,
  (t) => `SELECT grp, avg(v) AS a FROM ${t} WHERE v > 50 GROUP BY grp ORDER BY grp`,
];
if (STATEMENTS > TABLES * SHAPES.length) {
  log(`--statements can be at most ${TABLES * SHAPES.length} (${SHAPES.length} per table)`);
  process.exit(2);
}
const tableName = (t) => `t${t}`;
/** Statement `k` reads table `k % TABLES`. */
const statements = Array.from({ length: STATEMENTS }, (_, k) => ({
  table: tableName(k % TABLES),
  sql: SHAPES[Math.floor(k / TABLES)](tableName(k % TABLES)),
}));

const CONFIG = Array.from(
  { length: TABLES },
  (_, t) => `[[table]]
name = "${tableName(t)}"
glob = "${tableName(t)}/*.json"
format = "json"
schema = { id = "INTEGER", grp = "TEXT", v = "INTEGER", name = "TEXT" }
`,
).join("\n");

const random = seededRandom(65);

function fileRows(table, file) {
  return Array.from({ length: ROWS }, (_, i) => ({
    id: (table * FILES + file) * ROWS + i,
    grp: `g${Math.floor(random() * 10)}`,
    v: Math.floor(random() * 100),
    name: `n${Math.floor(random() * 20)}`,
  }));
}

/** Written aside and renamed into place: the watcher never reads half a file. */
function writeFile(root, table, file) {
  const aside = join(root, "tmp", `next.json`);
  writeFileSync(aside, JSON.stringify(fileRows(table, file)));
  renameSync(aside, join(root, tableName(table), `f${file}.json`));
}

let stopping = false;

/** The server's environment variable each history option sets. */
const HISTORY_OPTIONS = {
  "event-history-frames": "DIRQ_EVENT_HISTORY_FRAMES",
  "event-history-ms": "DIRQ_EVENT_HISTORY_MS",
  "live-history-bytes": "DIRQ_LIVE_HISTORY_BYTES",
  "live-history-ms": "DIRQ_LIVE_HISTORY_MS",
};

/** The server's history bounds the options set (unset: the server's defaults). */
function historyBoundsEnv() {
  const env = {};
  for (const [option, name] of Object.entries(HISTORY_OPTIONS)) {
    if (options[option] !== undefined)
      env[name] = String(positiveInteger(options[option], `--${option}`));
  }
  return env;
}

/**
 * Whether `value(sample)` levelled off over `samples`: its mean over the later half against its
 * mean over the earlier half. V8 lets garbage pile up to a limit and then collects it, so RSS
 * rises and falls by tens of MB within a minute or two; over halves of several such cycles the
 * mean is the level, where one sample's peak, or a line fitted through them, is mostly where
 * the last collection fell. Flat: the later mean at most 5 % above the earlier one. The peaks
 * are given beside the means.
 */
function levelTrend(samples, value) {
  const cut = Math.floor(samples.length / 2);
  if (cut < 2) return { flat: null, samples: samples.length };
  const mean = (list) => sum(list.map(value)) / list.length;
  const peak = (list) => Math.max(...list.map(value));
  const [first, last] = [samples.slice(0, cut), samples.slice(cut)];
  return {
    flat: mean(last) <= 1.05 * mean(first),
    firstMeanMb: mean(first),
    lastMeanMb: mean(last),
    firstPeakMb: peak(first),
    lastPeakMb: peak(last),
    halfSeconds: samples[cut].at - samples[0].at,
    samples: samples.length,
  };
}

/**
 * The share of the live queries' kept bytes in histories that dropped frames for their bounds:
 * an evaluator that has dropped keeps what its bounds let it, one that has not is still filling
 * (evaluators whose answer never changes keep nothing and do not count).
 */
function liveFullShare(queries) {
  const kept = sum(queries.map((q) => q.historyChars));
  if (kept === 0) return 1;
  return sum(queries.filter((q) => q.historyDropped > 0).map((q) => q.historyChars)) / kept;
}

/** A history counts as full once 90 % of its bytes are in histories at their bounds. */
const FULL_SHARE = 0.9;

/**
 * When each history was full in phase 3 (seconds; `null`: not within it): `/events`' once it
 * dropped a frame, the live queries' once `FULL_SHARE` of their bytes were in full histories.
 */
function fillTimes(samples) {
  const first = (full) => samples.find(full)?.at ?? null;
  const events = first((s) => s.eventDropped > 0);
  const live = first((s) => s.liveFullShare >= FULL_SHARE);
  const both = events === null || live === null ? null : Math.max(events, live);
  return { events, live, both };
}

/** The server's RSS less the memory both histories hold (their blocks, whole). */
const rssLessHistories = (s) => s.rssMb - s.historyHeldMb - s.eventHeldMb;

/**
 * Phase 3 opens with 900 more subscribers: V8 sizes its heap to their pace over the first
 * minutes, whatever the histories do. The verdicts from then on leave that step out; RSS itself
 * is judged from then, or later, once both histories are full.
 */
const SETTLE_S = 120;

/** What the verdicts judge: RSS less the histories, and RSS from the time both were full. */
function memoryTrends(samples) {
  const fill = fillTimes(samples);
  const from = fill.both === null ? null : Math.max(fill.both, SETTLE_S);
  const afterFill = from === null ? [] : samples.filter((s) => s.at >= from);
  const settled = samples.filter((s) => s.at >= SETTLE_S);
  return {
    fill,
    from,
    rssLessHistoriesSettled: levelTrend(settled, rssLessHistories),
    rssLessHistories: levelTrend(samples, rssLessHistories),
    rssAfterFill: levelTrend(afterFill, (s) => s.rssMb),
    queryProcessRss: levelTrend(
      samples.filter((s) => s.queryProcesses > 0),
      (s) => s.queryProcessesRssMb / s.queryProcesses,
    ),
  };
}

async function startServer(root) {
  const args = [DIRQ_BIN, "server", "-c", "dirq.toml", "--host", "127.0.0.1", "--port", "0"];
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: {
      ...DIRQ_ENV,
      DIRQ_LIVE_STATS: "1",
      // A capped heap tells memory kept from the heap's own slack.
      NODE_OPTIONS: options["server-node-options"] ?? "",
      ...historyBoundsEnv(),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  // Said at once: a server that dies mid-run is the finding, not the requests that then fail.
  child.once("exit", (code, signal) => {
    if (!stopping) log(`the server exited during the run: code ${code}, signal ${signal}`);
  });
  // Whatever ends this script ends the server too.
  process.once("exit", () => child.kill("SIGKILL"));
  const port = await serverPort(child);
  return { child, port, url: `http://127.0.0.1:${port}` };
}

// ---------------------------------------------------------------------------------------------
// The server process, from /proc

const TICKS = 100;

function statFields(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/**
 * CPU seconds of the server, its query processes running now, and the children it reaped
 * (cutime, cstime): query processes that came and went count too.
 */
function treeCpuSeconds(pid) {
  let total = 0;
  const visit = (id, root) => {
    try {
      const fields = statFields(id);
      total += Number(fields[11]) + Number(fields[12]);
      if (root) total += Number(fields[13]) + Number(fields[14]);
      for (const child of childPids(id)) visit(child, false);
    } catch {
      // A process that ended meanwhile.
    }
  };
  visit(pid, true);
  return total / TICKS;
}

/** The children of every thread of `pid` (a worker thread may start a process too). */
function childPids(pid) {
  const pids = [];
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const listed = readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim();
    if (listed) pids.push(...listed.split(" ").map(Number));
  }
  return pids;
}

/** RSS and its anonymous part in MB, and threads, of one process, from /proc/<pid>/status. */
function processMemory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? 0);
  return {
    rssMb: field("VmRSS") / 1024,
    anonMb: field("RssAnon") / 1024,
    threads: field("Threads"),
  };
}

/** What a child of the server runs: the script it was started with (`query-process.js`, ...). */
function roleOf(pid) {
  const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  const script = args.slice(1).find((arg) => /\.[cm]?js$/.test(arg));
  return script === undefined ? args[0] : basename(script);
}

/** The server's memory and each of its child processes' (by what they run). */
function treeMemory(pid) {
  const server = processMemory(pid);
  const children = [];
  for (const child of childPids(pid)) {
    try {
      children.push({ role: roleOf(child), ...processMemory(child) });
    } catch {
      // A process that ended meanwhile.
    }
  }
  return { server, children };
}

function openFds(pid) {
  return readdirSync(`/proc/${pid}/fd`).length;
}

function loadAverage() {
  return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
}

// ---------------------------------------------------------------------------------------------
// SSE clients

/** The documented steps (docs/live-queries.md, "Applying a diff"). */
function applyDiff(rows, diff) {
  const out = [...diff.removed.map((r) => r.at), ...diff.updated.map((u) => u.from)];
  for (const at of out.sort((a, b) => b - a)) rows.splice(at, 1);
  const put = [...diff.added, ...diff.updated].sort((a, b) => a.at - b.at);
  for (const { at, row } of put) rows.splice(at, 0, row);
}

/** One `/live` subscriber holding the answer its frames make. */
async function subscribe(url, statement) {
  const controller = new globalThis.AbortController();
  const response = await globalThis.fetch(`${url}/live?sql=${encodeURIComponent(statement.sql)}`, {
    signal: controller.signal,
  });
  if (response.status !== 200) throw new Error(`/live ${statement.sql}: ${await response.text()}`);
  const subscriber = { statement, rows: [], ordered: true, frames: 0, errors: 0 };
  let snapshot;
  const ready = new Promise((resolve) => (snapshot = resolve));
  void readSseFrames(response.body, (event, data) => {
    subscriber.frames++;
    if (event === "snapshot") {
      const parsed = JSON.parse(data);
      subscriber.rows = parsed.rows;
      subscriber.ordered = parsed.ordered;
      snapshot();
    } else if (event === "diff") applyDiff(subscriber.rows, JSON.parse(data));
    else if (event === "error") subscriber.errors++;
  });
  await ready;
  subscriber.close = () => controller.abort();
  return subscriber;
}

/** `/events`: the commits that touched each table (row frames name both). */
async function followCommits(url) {
  const controller = new globalThis.AbortController();
  const response = await globalThis.fetch(`${url}/events`, { signal: controller.signal });
  const byTable = new Map();
  let rowFrames = 0;
  // A reader cut off as too slow gets a `reset`: the commits it missed go uncounted.
  let resets = 0;
  void readSseFrames(response.body, (event, data) => {
    if (event === "reset") resets++;
    if (event !== "row") return;
    rowFrames++;
    const row = JSON.parse(data);
    if (row.table === null || row.commit === undefined) return;
    if (!byTable.has(row.table)) byTable.set(row.table, new Set());
    byTable.get(row.table).add(row.commit);
  });
  return {
    commitsOf: (table) => byTable.get(table)?.size ?? 0,
    rowFrames: () => rowFrames,
    resets: () => resets,
    close: () => controller.abort(),
  };
}

/**
 * A JSON answer from the server on a connection of its own (a pooled one may be closed under
 * it), asked again after a failed connection (each failure logged); `body` makes it a POST.
 */
async function askJson(url, path, body) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await askJsonOnce(url, path, body);
    } catch (error) {
      log(`${path}: ${error.message}`);
      if (attempt === 3) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

function askJsonOnce(url, path, body) {
  return new Promise((resolve, reject) => {
    const headers = body === undefined ? {} : { "content-type": "application/json" };
    const method = body === undefined ? "GET" : "POST";
    const req = request(`${url}${path}`, { agent: false, method, headers }, (response) => {
      let text = "";
      response.setEncoding("utf8").on("data", (chunk) => (text += chunk));
      response.on("error", reject);
      response.on("end", () =>
        response.statusCode === 200
          ? resolve(JSON.parse(text))
          : reject(new Error(`${response.statusCode} ${text}`)),
      );
    });
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

const liveStats = (url) => askJson(url, "/live/stats");

// ---------------------------------------------------------------------------------------------
// Phases

/** Changes `RATE` files a second for `seconds`; `onSecond(elapsed)` once a second. */
async function changeFiles(root, seconds, counts, onSecond = () => {}) {
  const started = performance.now();
  const total = Math.round(seconds * RATE);
  for (let n = 0; n < total; n++) {
    const due = started + (n * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const table = Math.floor(random() * TABLES);
    writeFile(root, table, Math.floor(random() * FILES));
    counts.set(tableName(table), (counts.get(tableName(table)) ?? 0) + 1);
    if (n % RATE === RATE - 1) await onSecond((performance.now() - started) / 1000);
  }
  return (performance.now() - started) / 1000;
}

/**
 * A phase of changes: CPU seconds per second of the server tree, the changes made, and the
 * server's RSS, fds and live query history sampled every `SAMPLE_S`.
 */
async function phase(name, root, server, seconds) {
  log(`${name}: ${seconds} s of ${RATE} changes a second`);
  const counts = new Map();
  const memory = sampler(server);
  await memory.take(0);
  let nextSample = SAMPLE_S;
  const cpuBefore = treeCpuSeconds(server.child.pid);
  const elapsed = await changeFiles(root, seconds, counts, async (at) => {
    if (at < nextSample) return;
    await memory.take(at);
    nextSample += SAMPLE_S;
  });
  const cpu = treeCpuSeconds(server.child.pid) - cpuBefore;
  return {
    cpuPerSecond: cpu / elapsed,
    elapsed,
    counts,
    samples: memory.samples,
    bounds: memory.bounds(),
  };
}

const sum = (values) => values.reduce((a, b) => a + b, 0);
const runsByStatement = (stats) => new Map(stats.queries.map((q) => [q.sql, q.runs]));

/** Waits until no evaluator has run for a while (everything taken in). */
async function untilQuiet(url) {
  let last = -1;
  for (let quiet = 0; quiet < 3;) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const runs = sum((await liveStats(url)).queries.map((q) => q.runs));
    quiet = runs === last ? quiet + 1 : 0;
    last = runs;
  }
}

function sameAnswer(subscriber, fresh) {
  if (subscriber.ordered) return JSON.stringify(subscriber.rows) === JSON.stringify(fresh);
  const texts = (rows) => rows.map((row) => JSON.stringify(row)).sort();
  return JSON.stringify(texts(subscriber.rows)) === JSON.stringify(texts(fresh));
}

/** Subscribers whose rows are not a fresh `POST /query` answer (asked again a few times). */
async function wrongAnswers(server, subscribers) {
  let wrong = subscribers;
  for (let attempt = 0; attempt < 5 && wrong.length > 0; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 2000));
    const fresh = new Map();
    for (const { statement } of wrong) {
      if (fresh.has(statement.sql)) continue;
      fresh.set(statement.sql, await askJson(server.url, "/query", { sql: statement.sql }));
    }
    wrong = wrong.filter((s) => !sameAnswer(s, fresh.get(s.statement.sql)));
  }
  return wrong;
}

/** Runs beyond the commits that touched each statement's table (a first-run fold allowed). */
function runsBeyondCommits(stats, commits) {
  const beyond = [];
  for (const query of stats.queries) {
    const table = statements.find((s) => s.sql === query.sql).table;
    const allowed = commits.commitsOf(table) + 1;
    if (query.runs > allowed) beyond.push({ sql: query.sql, runs: query.runs, allowed });
  }
  return beyond;
}

function sampler(server) {
  const samples = [];
  const take = async (at) => {
    const stats = await liveStats(server.url);
    const tree = treeMemory(server.child.pid);
    const queryProcesses = tree.children.filter((c) => c.role.startsWith("query-process"));
    const mb = (bytes) => bytes / 1024 / 1024;
    const heapTotalMb = mb(stats.memory.heapTotal);
    const externalMb = mb(stats.memory.external);
    samples.push({
      at: Math.round(at),
      rssMb: tree.server.rssMb,
      anonMb: tree.server.anonMb,
      threads: tree.server.threads,
      fds: openFds(server.child.pid),
      historyMb: mb(sum(stats.queries.map((q) => q.historyChars))),
      // What the histories' frames hold: the blocks they lie in, whole.
      historyHeldMb: mb(sum(stats.queries.map((q) => q.historyHeldBytes))),
      eventHeldMb: mb(stats.eventHistory.heldBytes),
      liveFullShare: liveFullShare(stats.queries),
      eventFrames: stats.eventHistory.frames,
      eventHistoryMb: mb(stats.eventHistory.bytes),
      eventDropped: stats.eventHistory.dropped,
      // The heap in use beside RSS: memory kept, or a heap V8 has not collected yet.
      heapUsedMb: mb(stats.memory.heapUsed),
      heapTotalMb,
      // Off the JS heap: buffers (SSE frames, the histories' blocks, answers).
      externalMb,
      arrayBuffersMb: mb(stats.memory.arrayBuffers),
      // Neither: worker threads' heaps, SQLite's caches, code, stacks, allocator slack.
      otherMb: tree.server.rssMb - heapTotalMb - externalMb,
      queryProcesses: queryProcesses.length,
      queryProcessesRssMb: sum(queryProcesses.map((c) => c.rssMb)),
      otherChildren: tree.children
        .filter((c) => !queryProcesses.includes(c))
        .map((c) => `${c.role} ${c.rssMb.toFixed(0)}`),
      load: loadAverage(),
    });
    bounds = stats.historyBounds;
  };
  let bounds = null;
  return { samples, take, bounds: () => bounds };
}

async function openSubscribers(url, from, to) {
  const opened = [];
  // A few at a time: a burst of 1,000 connections is not what is measured.
  for (let s = from; s < to; s += 50) {
    const batch = [];
    for (let i = s; i < Math.min(to, s + 50); i++)
      batch.push(subscribe(url, statements[i % STATEMENTS]));
    opened.push(...(await Promise.all(batch)));
  }
  return opened;
}

async function measure(root, server) {
  const commits = await followCommits(server.url);
  const idle = await phase("phase 1, no live query", root, server, COMPARE_S);
  log(`opening ${STATEMENTS} subscribers (one per statement)`);
  const subscribers = await openSubscribers(server.url, 0, STATEMENTS);
  const few = await phase(`phase 2, ${STATEMENTS} subscribers`, root, server, COMPARE_S);
  log(`opening ${SUBSCRIBERS - STATEMENTS} more subscribers`);
  subscribers.push(...(await openSubscribers(server.url, STATEMENTS, SUBSCRIBERS)));
  const runsBefore = runsByStatement(await liveStats(server.url));
  const many = await phase(`phase 3, ${SUBSCRIBERS} subscribers`, root, server, MINUTES * 60);
  log("waiting for the last changes to be taken in");
  await untilQuiet(server.url);
  const stats = await liveStats(server.url);
  const runsAfter = runsByStatement(stats);
  const wrong = await wrongAnswers(server, subscribers);
  const beyond = runsBeyondCommits(stats, commits);
  const eventResets = commits.resets();
  for (const subscriber of subscribers) subscriber.close();
  commits.close();
  const changes = sum([...many.counts.values()]);
  const runs = sum([...runsAfter].map(([sql, n]) => n - (runsBefore.get(sql) ?? 0)));
  return {
    idle,
    few,
    many,
    memory: many.samples,
    stats,
    changes,
    runs,
    wrong,
    beyond,
    eventResets,
    subscribers,
    commits: stats.commit,
  };
}

function trendVerdict(what, over, trend) {
  if (trend.flat === null) return `${what} ${over}: too few samples to tell whether it is flat`;
  const rise = ((trend.lastMeanMb / trend.firstMeanMb - 1) * 100).toFixed(1);
  const mb = (value) => value.toFixed(0);
  return `${what} ${over}: mean over the first half ${mb(trend.firstMeanMb)} MB, last half ${mb(trend.lastMeanMb)} MB (${rise} %; peaks ${mb(trend.firstPeakMb)} and ${mb(trend.lastPeakMb)} MB; halves of ${trend.halfSeconds} s): ${trend.flat ? "flat" : "NOT flat"} (flat: the later mean at most 5 % higher)`;
}

const seconds = (at) => (at === null ? "not within phase 3" : `${at} s`);

/** The verdict lines: when the histories were full, and whether memory was flat. */
function memoryVerdicts(trends, bounds) {
  const { fill } = trends;
  return [
    `history bounds in force: ${JSON.stringify(bounds)}`,
    `histories full (dropping frames) from: /events ${seconds(fill.events)}, live queries ${seconds(fill.live)} (${FULL_SHARE * 100} % of their bytes in full histories) into phase 3`,
    trendVerdict("server RSS less both histories' memory", "over phase 3", trends.rssLessHistories),
    trendVerdict(
      "server RSS less both histories' memory",
      `from ${SETTLE_S} s (V8 sized to phase 3's pace)`,
      trends.rssLessHistoriesSettled,
    ),
    trendVerdict(
      "server RSS",
      trends.from === null
        ? "once both histories were full"
        : `from ${trends.from} s (both histories full, and from ${SETTLE_S} s)`,
      trends.rssAfterFill,
    ),
    trendVerdict(
      "a query process's RSS (mean of those running)",
      "over phase 3",
      trends.queryProcessRss,
    ),
  ];
}

/** Phase 3's samples of `format(sample)`, one line. */
const series = (samples, format) => samples.map(format).join(" ");

function report(result) {
  const evaluators = result.stats.queries.length;
  const shared = sum(result.stats.queries.map((q) => q.subscribers));
  const perTable = STATEMENTS / TABLES;
  const rss = result.memory.map((s) => s.rssMb);
  const fds = result.memory.map((s) => s.fds);
  const summary = {
    tables: TABLES,
    statements: STATEMENTS,
    subscribers: SUBSCRIBERS,
    ratePerSecond: RATE,
    minutes: MINUTES,
    evaluators,
    subscribersOnEvaluators: shared,
    phase3Changes: result.changes,
    commits: result.commits,
    runsPerChange: result.runs / result.changes,
    statementsPerTable: perTable,
    runsBeyondTheirTablesCommits: result.beyond.length,
    eventResets: result.eventResets,
    cpuPerSecond: {
      noLiveQuery: result.idle.cpuPerSecond,
      oneSubscriberPerStatement: result.few.cpuPerSecond,
      allSubscribers: result.many.cpuPerSecond,
    },
    rssMb: { first: rss[0], last: rss.at(-1), min: Math.min(...rss), max: Math.max(...rss) },
    memoryTrends: memoryTrends(result.memory),
    historyBoundsEnv: historyBoundsEnv(),
    historyBounds: result.many.bounds,
    fds: { first: fds[0], last: fds.at(-1), min: Math.min(...fds), max: Math.max(...fds) },
    samples: result.memory,
    phaseSamples: {
      noLiveQuery: result.idle.samples,
      oneSubscriberPerStatement: result.few.samples,
    },
    errorFrames: sum(result.subscribers.map((s) => s.errors)),
    wrongSubscribers: result.wrong.length,
    wrong: result.wrong.slice(0, 5).map((s) => s.statement.sql),
    beyond: result.beyond.slice(0, 5),
    loadAverage: loadAverage(),
  };
  if (options.json) {
    console.log(JSON.stringify(summary, null, 2));
    return;
  }
  const cpu = summary.cpuPerSecond;
  const m = result.memory;
  const lines = [
    `${TABLES} tables of ${FILES} files x ${ROWS} rows; ${RATE} file changes a second`,
    `evaluators: ${evaluators} for ${STATEMENTS} statements, shared by ${shared} subscribers`,
    `statement runs per file change (phase 3): ${summary.runsPerChange.toFixed(2)} (${result.runs} runs, ${result.changes} changes, ${perTable} statements read each table; commits fold changes)`,
    `statements that ran more often than commits touched their table: ${result.beyond.length}${result.eventResets > 0 ? ` (the /events reader was reset ${result.eventResets} times: commits it missed are not counted)` : ""}`,
    `server CPU (server + query processes), s per s: no live query ${cpu.noLiveQuery.toFixed(3)}, ${STATEMENTS} subscribers ${cpu.oneSubscriberPerStatement.toFixed(3)}, ${SUBSCRIBERS} subscribers ${cpu.allSubscribers.toFixed(3)} (x${(cpu.allSubscribers / cpu.oneSubscriberPerStatement).toFixed(2)} for x${(SUBSCRIBERS / STATEMENTS).toFixed(0)} subscribers)`,
    `server RSS MB over phase 1 (no live query): ${result.idle.samples.map((m) => m.rssMb.toFixed(0)).join(" ")}`,
    `server RSS MB over phase 2: ${result.few.samples.map((m) => m.rssMb.toFixed(0)).join(" ")}`,
    `phase 3 sampled every ${SAMPLE_S} s, from 0 s:`,
    `server RSS MB: ${series(m, (s) => s.rssMb.toFixed(0))}`,
    `server RSS less both histories' memory (their blocks) MB: ${series(m, (s) => rssLessHistories(s).toFixed(0))}`,
    `server heap used / heap total MB: ${series(m, (s) => `${s.heapUsedMb.toFixed(0)}/${s.heapTotalMb.toFixed(0)}`)}`,
    `server external / array buffers MB: ${series(m, (s) => `${s.externalMb.toFixed(0)}/${s.arrayBuffersMb.toFixed(0)}`)}`,
    `server RSS neither heap nor external MB (worker threads, SQLite, code): ${series(m, (s) => s.otherMb.toFixed(0))}`,
    `server threads: ${series(m, (s) => s.threads)}`,
    `query processes / their RSS MB together: ${series(m, (s) => `${s.queryProcesses}/${s.queryProcessesRssMb.toFixed(0)}`)}`,
    `query processes' RSS MB each (mean): ${series(m, (s) => (s.queryProcesses === 0 ? "-" : (s.queryProcessesRssMb / s.queryProcesses).toFixed(0)))}`,
    `other child processes (RSS MB) at the end: ${m.at(-1)?.otherChildren.join(", ") || "none"}`,
    `server open fds: ${fds.join(" ")}`,
    `live query history kept (MB of frame data, all evaluators): ${series(m, (s) => s.historyMb.toFixed(1))}`,
    `live query history held (MB of blocks, all evaluators): ${series(m, (s) => s.historyHeldMb.toFixed(1))}`,
    `/events history kept (frames): ${series(m, (s) => s.eventFrames)}`,
    `/events history kept (MB): ${series(m, (s) => s.eventHistoryMb.toFixed(1))}`,
    `/events history held (MB of blocks): ${series(m, (s) => s.eventHeldMb.toFixed(1))}`,
    ...memoryVerdicts(summary.memoryTrends, summary.historyBounds),
    `error frames: ${summary.errorFrames}`,
    `wrong final answers: ${result.wrong.length} of ${result.subscribers.length} subscribers${result.wrong.length > 0 ? ` (${summary.wrong.join("; ")})` : ""}`,
    `load average: ${summary.loadAverage}`,
  ];
  console.log(lines.join("\n"));
}

async function main() {
  const root = mkdtempSync(join(tmpdir(), "dirq-live-scale-"));
  writeFileSync(join(root, "dirq.toml"), CONFIG);
  mkdirSync(join(root, "tmp"));
  for (let t = 0; t < TABLES; t++) {
    mkdirSync(join(root, tableName(t)));
    for (let f = 0; f < FILES; f++) writeFile(root, t, f);
  }
  const server = await startServer(root);
  let failed = false;
  try {
    const result = await measure(root, server);
    report(result);
    failed = result.wrong.length > 0 || result.beyond.length > 0;
  } finally {
    stopping = true;
    server.child.kill("SIGTERM");
    await new Promise((resolve) => server.child.once("exit", resolve));
    rmSync(root, { recursive: true, force: true });
  }
  if (failed) process.exitCode = 1;
}

await main();
