#!/usr/bin/env node
// Benchmarks `dirq server`: POST /query throughput and latency against a plain node:http
// server (the ceiling), the time from a file write to its `row` event at an /events client,
// and the server's memory with many /events clients. See bench/README.md for what it measures.
import { spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { request as httpRequest } from "node:http";
import { createRequire } from "node:module";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import {
  DIRQ_BIN,
  DIRQ_ENV,
  fail,
  fileTreeDirName,
  fileTreeMarker,
  fileTreePath,
  fileTreePaths,
  findExecutable,
  formatNumber,
  generateFileTree,
  log,
  markerMatches,
  MAX_FILE_SIZE,
  median,
  benchOptionsUsage,
  parseBenchOptions,
  percentile,
  positiveInteger,
  requireDirqBuilt,
  round,
  table,
} from "./lib.mjs";

/**
 * The first `n` of the distinct statements (`SELECT <n>`): seven digits, so the statements
 * keep one length for millions of requests, and none is a statement of another scenario.
 */
const DISTINCT_FIRST = 1_000_000;
/** The next `n` to send: it only grows, across warm-ups, runs and both servers. */
let distinctNext = DISTINCT_FIRST + 1;

/** The query tree (a 1,000-row answer) and the watched tree (events and memory). */
const QUERY_TREE = { name: "1k", files: 1_000, dirs: 10 };
const EVENT_TREE = { name: "10k", files: 10_000, dirs: 100 };

const QUERIES = [
  {
    key: "select1",
    name: "SELECT 1",
    sql: "SELECT 1",
    check: (rows) => (rows.length === 1 && rows[0]["1"] === 1 ? null : "unexpected answer"),
  },
  {
    key: "rows",
    name: "1,000-row path table",
    sql: "SELECT path, size FROM './'",
    check: (rows) =>
      rows.length === QUERY_TREE.files
        ? null
        : `returned ${rows.length} rows, expected ${QUERY_TREE.files}`,
  },
  // Uncached: random() makes the answer volatile, so the server runs the statement every time.
  {
    key: "select1-uncached",
    name: "SELECT 1, uncached",
    sql: "SELECT 1 WHERE random() IS NOT NULL",
    // Issue 18's targets for statements the server runs every time.
    shareOfCeiling: 0.3,
    check: (rows) => (rows.length === 1 && rows[0]["1"] === 1 ? null : "unexpected answer"),
  },
  {
    key: "rows-uncached",
    name: "1,000-row path table, uncached",
    sql: "SELECT path, size FROM './' WHERE random() IS NOT NULL",
    shareOfCeiling: 0.2,
    check: (rows) =>
      rows.length === QUERY_TREE.files
        ? null
        : `returned ${rows.length} rows, expected ${QUERY_TREE.files}`,
  },
  // Every request a statement never seen before: neither the server's memo of checked
  // statements nor the result cache nor a query process's prepared statements can help, so
  // each request pays for checking, planning and preparing a statement from scratch.
  {
    key: "distinct",
    name: "distinct statements, SELECT <n>",
    sql: `SELECT ${DISTINCT_FIRST}`,
    distinct: true,
    shareOfCeiling: 0.25,
    check: (rows) =>
      rows.length === 1 && rows[0][String(DISTINCT_FIRST)] === DISTINCT_FIRST
        ? null
        : "unexpected answer",
  },
];
/** How often the churned file of a `churn` query is rewritten. */
const CHURN_INTERVAL_MS = 50;

// A cached statement over one folder while a file of another folder, a path-table of its own,
// changes all the time: a change must not evict the answers over tables it did not touch.
{
  const read = `./${fileTreeDirName(0)}`;
  const churned = `./${fileTreeDirName(QUERY_TREE.dirs - 1)}`;
  const perDir = QUERY_TREE.files / QUERY_TREE.dirs;
  QUERIES.push({
    key: "churn",
    name: `100-row path table, ${churned} changing`,
    sql: `SELECT path, size FROM '${read}'`,
    churn: {
      materialize: `SELECT count(*) FROM '${churned}'`,
      table: churned,
      file: fileTreePath(QUERY_TREE, QUERY_TREE.dirs - 1, 0),
    },
    check: (rows) =>
      rows.length === perDir ? null : `returned ${rows.length} rows, expected ${perDir}`,
  });
}

/** Materializes the whole tree as a path-table, so every file of it is watched. */
const MATERIALIZE_SQL = "SELECT count(*) FROM './'";

const TARGETS = { shareOfCeiling: 0.6, eventMedianMs: 50, eventP99Ms: 200, slowHookP99Ms: 100 };

/** How long to wait for the server's `Running at` line (it indexes the tree first). */
const START_TIMEOUT_MS = 120_000;
/** After the last write, how long late events may still arrive before they count as missing. */
const SETTLE_MS = 2_000;

const USAGE = `Usage: node bench/dirq-server.mjs [options]

  --duration S      seconds of load per measured run (default 10)
  --warmup S        seconds of load before the first run of each server (default 2)
  --connections N   concurrent connections of the load generator (default 50)
  --runs N          measured runs per server and query; medians are reported (default 1)
  --tool NAME       load generator: autocannon or wrk (default: autocannon, else wrk)
  --writes N        file writes timed for event latency (default 200)
  --interval MS     pause between two writes (default 20)
  --clients N       /events clients open for the memory figure (default 100)
  --queries KEYS    throughput scenarios to run, comma-separated (default all): select1, rows,
                    select1-uncached, rows-uncached, distinct, churn
  --slow-writes N   file writes timed while a slow hook runs (default 200; half to a path-table,
                    half to a parsed table)
  --hook-seconds S  how long the slow hook takes (default 8)
  --only PART       query (throughput), events (event latency and memory) or slow-hook (event
                    latency while a slow hook runs)
  --dirq PATH       the dirq launcher to benchmark (default: this checkout's
                    packages/dirq/bin/dirq.cjs), to compare builds in alternating runs
${benchOptionsUsage(20, "where the generated trees live")}`;

// ---------------------------------------------------------------------------------------------
// Options

function parseOptions(argv) {
  const values = parseBenchOptions(
    argv,
    {
      duration: { type: "string", default: "10" },
      warmup: { type: "string", default: "2" },
      connections: { type: "string", default: "50" },
      runs: { type: "string", default: "1" },
      tool: { type: "string" },
      writes: { type: "string", default: "200" },
      interval: { type: "string", default: "20" },
      clients: { type: "string", default: "100" },
      queries: { type: "string" },
      "slow-writes": { type: "string", default: "200" },
      "hook-seconds": { type: "string", default: "8" },
      only: { type: "string" },
      dirq: { type: "string" },
    },
    USAGE,
  );
  if (values.tool !== undefined && !["autocannon", "wrk"].includes(values.tool)) {
    fail("--tool must be autocannon or wrk");
  }
  if (values.only !== undefined && !["query", "events", "slow-hook"].includes(values.only)) {
    fail("--only must be query, events or slow-hook");
  }
  const keys = QUERIES.map((query) => query.key);
  const queries = values.queries === undefined ? keys : values.queries.split(",");
  const unknown = queries.filter((key) => !keys.includes(key));
  if (unknown.length > 0)
    fail(`--queries: unknown ${unknown.join(", ")} (known: ${keys.join(", ")})`);
  const warmup = Number(values.warmup);
  if (!Number.isInteger(warmup) || warmup < 0) fail("--warmup must be an integer >= 0");
  const writes = positiveInteger(values.writes, "--writes");
  if (writes > EVENT_TREE.files) fail(`--writes must be at most ${EVENT_TREE.files}`);
  return {
    duration: positiveInteger(values.duration, "--duration"),
    warmup,
    connections: positiveInteger(values.connections, "--connections"),
    runs: positiveInteger(values.runs, "--runs"),
    tool: values.tool,
    writes,
    interval: positiveInteger(values.interval, "--interval"),
    clients: positiveInteger(values.clients, "--clients"),
    queries: new Set(queries),
    slowWrites: positiveInteger(values["slow-writes"], "--slow-writes"),
    hookSeconds: positiveInteger(values["hook-seconds"], "--hook-seconds"),
    only: values.only,
    dirq: values.dirq === undefined ? DIRQ_BIN : resolve(values.dirq),
    dir: values.dir,
    json: values.json,
  };
}

// ---------------------------------------------------------------------------------------------
// Numbers

function medianOrNull(values) {
  return values.length === 0 || values.some((value) => value === null) ? null : median(values);
}

function sleep(ms) {
  return new Promise((done) => setTimeout(done, ms));
}

// ---------------------------------------------------------------------------------------------
// Trees (dirq-walk's generator, own names: the event test rewrites files)

/** Reused only if its marker matches and every file is still there (sizes may have changed). */
function isTreeComplete(root, marker, tree) {
  if (!markerMatches(marker, fileTreeMarker(tree)) || !existsSync(root)) return false;
  try {
    const dirs = readdirSync(root);
    const files = dirs.reduce((sum, dir) => sum + readdirSync(join(root, dir)).length, 0);
    return dirs.length === tree.dirs && files === tree.files;
  } catch {
    return false;
  }
}

function ensureTree(baseDir, tree) {
  const { root, marker } = fileTreePaths(baseDir, "server", tree);
  if (isTreeComplete(root, marker, tree)) {
    log(`tree ${tree.name}: reusing ${root}`);
    return root;
  }
  log(`tree ${tree.name}: generating ${tree.files} files in ${tree.dirs} directories at ${root}`);
  generateFileTree(root, marker, tree);
  return root;
}

/**
 * A new size for a file, always different from its current one: the path-table row has the
 * size and a whole-second mtime, so only a size change is sure to make an `update` event.
 */
function nextContent(path) {
  const size = (statSync(path).size % MAX_FILE_SIZE) + 1;
  return Buffer.alloc(size, "w");
}

// ---------------------------------------------------------------------------------------------
// Tools

/** autocannon from the repo's devDependencies: `{ run, version }`, or null if not installed. */
async function loadAutocannon() {
  try {
    const require = createRequire(import.meta.url);
    const main = require.resolve("autocannon");
    const { version } = JSON.parse(readFileSync(join(dirname(main), "package.json"), "utf8"));
    const run = (await import("autocannon")).default;
    return { run, version };
  } catch {
    return null;
  }
}

function wrkVersion(wrk) {
  // wrk has no --version; `wrk -v` prints "wrk 4.x.y [...]" and exits 1.
  const result = spawnSync(wrk, ["-v"], { encoding: "utf8" });
  const line = `${result.stdout ?? ""}${result.stderr ?? ""}`.split("\n")[0].trim();
  return line.split(" [")[0] || wrk;
}

async function detectTools(options) {
  const autocannon = await loadAutocannon();
  const wrk = findExecutable("wrk");
  const ps = findExecutable("ps");
  const versions = {
    node: process.version,
    autocannon: autocannon ? autocannon.version : "not installed",
    wrk: wrk ? wrkVersion(wrk) : "not installed",
    ps: ps ? "installed" : "not installed",
  };
  let generator = null;
  if (options.tool === "autocannon" || options.tool === undefined) {
    if (autocannon) generator = { name: "autocannon", ...autocannon };
  }
  if (generator === null && (options.tool === "wrk" || options.tool === undefined) && wrk) {
    generator = { name: "wrk", path: wrk, version: versions.wrk };
  }
  return { generator, ps, versions };
}

// ---------------------------------------------------------------------------------------------
// Processes: the dirq server and the ceiling server

const children = new Set();

/**
 * Starts a server that prints `Running at <host>:<port>` once it listens; resolves with
 * `{ child, pid, base, stop() }`. Its stderr is kept (the tail) for error messages.
 */
function startServer(label, executable, args, cwd, env) {
  const child = spawn(executable, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const exited = new Promise((done) =>
    child.once("exit", (code, signal) => done({ code, signal })),
  );
  exited.then(() => children.delete(child));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return exited;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    const outcome = await exited;
    clearTimeout(timer);
    return outcome;
  };
  return new Promise((resolveStart, rejectStart) => {
    let stdout = "";
    const timer = setTimeout(() => {
      void stop();
      rejectStart(new Error(`${label}: no "Running at" line within ${START_TIMEOUT_MS} ms`));
    }, START_TIMEOUT_MS);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      if (stdout === null) return;
      stdout += chunk;
      const match = /Running at (\S+):(\d+)/.exec(stdout);
      if (!match) return;
      stdout = null;
      clearTimeout(timer);
      const base = `http://${match[1]}:${match[2]}`;
      resolveStart({ child, pid: child.pid, base, stop, stderr: () => stderr });
    });
    child.once("error", (error) => {
      clearTimeout(timer);
      rejectStart(new Error(`${label}: ${error.message}`));
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      const status = code === null ? `signal ${signal}` : `exit ${code}`;
      const detail = stderr.trim().split("\n").slice(-3).join(" | ");
      rejectStart(
        new Error(`${label}: ${status} before it listened${detail ? `: ${detail}` : ""}`),
      );
    });
  });
}

/** The launcher `startDirq` runs (`--dirq`). */
let dirqBin = DIRQ_BIN;

function startDirq(cwd, extraArgs = []) {
  return startServer(
    "dirq server",
    process.execPath,
    [dirqBin, "server", "--port", "0", ...extraArgs],
    cwd,
    DIRQ_ENV,
  );
}

/** SIGTERM must end the server with exit 0 (drained, streams closed); anything else is a warning. */
async function stopDirq(server, part, warnings) {
  const { code, signal } = await server.stop();
  if (code === 0) return;
  const status = code === null ? `signal ${signal}` : `exit ${code}`;
  // A crash prints `node:events:...` and the throwing line first: the Error line says more.
  const lines = server
    .stderr()
    .split("\n")
    .filter((line) => /error/i.test(line) && !/^\s+(at |throw )/.test(line));
  const detail = lines.length > 0 ? `; stderr: ${lines.slice(0, 2).join(" | ")}` : "";
  warnings.push(`${part}: dirq server ended with ${status} after SIGTERM${detail}`);
}

/** The ceiling: node:http answering every request with the bytes of one file, nothing else. */
const CEILING_JS = `
const { createServer } = require("node:http");
const body = require("node:fs").readFileSync(process.argv[1]);
const server = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
    res.end(body);
  });
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
server.listen(0, "localhost", () => {
  process.stdout.write("Running at localhost:" + server.address().port + "\\n");
});
`;

/**
 * Rewrites one file every `interval` ms, each time with another size (so every write is a row
 * change); prints how many writes it made when stopped. In a process of its own: the load
 * generator shares this one's event loop and would delay the writes.
 */
const CHURN_JS = `
const { writeFileSync } = require("node:fs");
const [path, interval] = process.argv.slice(1);
let writes = 0;
const timer = setInterval(() => {
  writeFileSync(path, Buffer.alloc(1 + (writes++ % 64), "c"));
}, Number(interval));
process.on("SIGTERM", () => {
  clearInterval(timer);
  process.stdout.write(writes + "\\n");
  process.exit(0);
});
process.stdout.write("Running at churn:0\\n");
`;

/** Starts rewriting `path`; `stop()` resolves with the number of writes made. */
async function startChurn(path) {
  const started = await startServer(
    "churn",
    process.execPath,
    ["-e", CHURN_JS, path, String(CHURN_INTERVAL_MS)],
    dirname(path),
    process.env,
  );
  let out = "";
  started.child.stdout.on("data", (chunk) => (out += chunk));
  return {
    async stop() {
      await started.stop();
      const writes = Number(out.trim().split("\n").pop());
      return Number.isInteger(writes) ? writes : null;
    },
  };
}

function startCeiling(bodyFile, cwd) {
  return startServer("ceiling", process.execPath, ["-e", CEILING_JS, bodyFile], cwd, process.env);
}

process.on("SIGINT", () => {
  for (const child of children) child.kill("SIGKILL");
  process.exit(130);
});

// ---------------------------------------------------------------------------------------------
// HTTP helpers

/** One POST /query; resolves with `{ status, body (Buffer), ms }`. */
function postQuery(base, sql) {
  const payload = JSON.stringify({ sql });
  const started = performance.now();
  return new Promise((done, reject) => {
    const request = httpRequest(
      `${base}/query`,
      {
        method: "POST",
        agent: false,
        headers: { "content-type": "application/json", "content-length": payload.length },
      },
      (response) => {
        const chunks = [];
        response.on("data", (chunk) => chunks.push(chunk));
        response.on("end", () =>
          done({
            status: response.statusCode,
            body: Buffer.concat(chunks),
            ms: performance.now() - started,
          }),
        );
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(payload);
  });
}

/** POST /query that must answer 200 with a JSON array; returns the answer and its timing. */
async function queryOrThrow(base, sql) {
  const answer = await postQuery(base, sql);
  if (answer.status !== 200) {
    throw new Error(`POST /query ${sql}: status ${answer.status}: ${answer.body.toString()}`);
  }
  return { ...answer, rows: JSON.parse(answer.body.toString("utf8")) };
}

/**
 * An /events client reading the raw SSE stream. `onFrame({ event, data }, receivedAt)` hears
 * every frame after `ready`; `ready` resolves when the server's `ready` frame arrives.
 */
function openEvents(base, onFrame) {
  let request;
  let buffer = "";
  const ready = new Promise((done, reject) => {
    request = httpRequest(`${base}/events`, { agent: false }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        reject(new Error(`GET /events: status ${response.statusCode}`));
        return;
      }
      response.setEncoding("utf8");
      response.on("data", (chunk) => {
        const receivedAt = performance.now();
        buffer += chunk;
        let end;
        while ((end = buffer.indexOf("\n\n")) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const frame = { event: "message", data: [] };
          for (const raw of block.split("\n")) {
            const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
            if (line === "" || line.startsWith(":")) continue; // keep-alive comment
            const colon = line.indexOf(":");
            const field = colon === -1 ? line : line.slice(0, colon);
            let value = colon === -1 ? "" : line.slice(colon + 1);
            if (value.startsWith(" ")) value = value.slice(1);
            if (field === "event") frame.event = value;
            else if (field === "data") frame.data.push(value);
          }
          if (frame.data.length === 0 && frame.event === "message") continue;
          const event = { event: frame.event, data: frame.data.join("\n") };
          if (event.event === "ready") done();
          else onFrame(event, receivedAt);
        }
      });
      response.on("error", () => {});
    });
    request.on("error", reject);
    request.end();
  });
  return { ready, close: () => request.destroy() };
}

// ---------------------------------------------------------------------------------------------
// Load generation

/**
 * Autocannon in this process. Latencies come from its `response` events (float ms, 2xx only):
 * its own histogram rounds to whole milliseconds, too coarse for fast answers.
 */
async function loadWithAutocannon(generator, base, query, seconds, connections) {
  const latencies = [];
  const headers = { "content-type": "application/json" };
  const instance = generator.run({
    url: `${base}/query`,
    method: "POST",
    headers,
    body: JSON.stringify({ sql: query.sql }),
    // A body of its own for every request (autocannon then builds each request anew, for
    // both servers alike).
    ...(query.distinct
      ? {
          requests: [
            {
              method: "POST",
              path: "/query",
              headers,
              setupRequest: (request) => ({
                ...request,
                body: JSON.stringify({ sql: `SELECT ${distinctNext++}` }),
              }),
            },
          ],
        }
      : {}),
    connections,
    duration: seconds,
  });
  instance.on("response", (_client, statusCode, _bytes, responseTime) => {
    if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
  });
  const result = await instance;
  const ok = result["2xx"];
  return {
    requestsPerSec: ok / result.duration,
    p50Ms: latencies.length > 0 ? median(latencies) : null,
    p99Ms: latencies.length > 0 ? percentile(latencies, 99) : null,
    responses: ok,
    problems: { non2xx: result.non2xx, errors: result.errors, timeouts: result.timeouts },
  };
}

function wrkMs(text) {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (!match) return null;
  const factor = { us: 0.001, ms: 1, s: 1000, m: 60_000 }[match[2]];
  return Number(match[1]) * factor;
}

/** wrk in a child process (`--latency` for the percentiles), POST body via a Lua script. */
async function loadWithWrk(generator, base, query, seconds, connections, scratch) {
  const script = join(scratch, "post.lua");
  const body = JSON.stringify({ sql: query.sql });
  const threads = Math.max(1, Math.min(availableParallelism(), connections));
  let lua = `wrk.method = "POST"\nwrk.body = [==[${body}]==]\nwrk.headers["Content-Type"] = "application/json"\n`;
  if (query.distinct) {
    // Thread t of T sends first + t, first + t + T, ...: no two requests share a statement.
    lua += [
      "local made = 0",
      "function setup(thread) thread:set('offset', made); made = made + 1 end",
      "local sent = 0",
      "request = function()",
      `  local n = ${distinctNext} + offset + sent * ${threads}`,
      "  sent = sent + 1",
      `  return wrk.format(nil, nil, nil, '{"sql":"SELECT ' .. string.format('%d', n) .. '"}')`,
      "end",
      "",
    ].join("\n");
  }
  writeFileSync(script, lua);
  const args = ["-t", String(threads), "-c", String(connections), "-d", `${seconds}s`];
  const child = spawn(generator.path, [...args, "--latency", "-s", script, `${base}/query`], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => (stdout += chunk));
  child.stderr.resume();
  const code = await new Promise((done) => child.once("exit", done));
  const number = (pattern) => {
    const match = pattern.exec(stdout);
    return match ? Number(match[1]) : 0;
  };
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(stdout);
  if (code !== 0 || !rps) throw new Error(`wrk failed (exit ${code}): ${stdout.trim()}`);
  const non2xx = number(/Non-2xx or 3xx responses:\s+(\d+)/);
  const total = number(/(\d+) requests in/);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(
    stdout,
  );
  const errors = socket ? Number(socket[1]) + Number(socket[2]) + Number(socket[3]) : 0;
  const latency = (p) => {
    const match = new RegExp(`^\\s+${p}%\\s+(\\S+)`, "m").exec(stdout);
    return match ? wrkMs(match[1]) : null;
  };
  // Past every n this run may have sent.
  if (query.distinct) distinctNext += (total + 1) * threads;
  const okShare = total > 0 ? (total - non2xx) / total : 1;
  return {
    requestsPerSec: Number(rps[1]) * okShare,
    // wrk's percentiles include non-2xx answers; a warning says when there were any.
    p50Ms: latency(50),
    p99Ms: latency(99),
    responses: total - non2xx,
    problems: { non2xx, errors, timeouts: socket ? Number(socket[4]) : 0 },
  };
}

function load(generator, base, query, seconds, options, scratch) {
  return generator.name === "autocannon"
    ? loadWithAutocannon(generator, base, query, seconds, options.connections)
    : loadWithWrk(generator, base, query, seconds, options.connections, scratch);
}

function problemText(problems) {
  const parts = Object.entries(problems)
    .filter(([, count]) => count > 0)
    .map(([name, count]) => `${count} ${name}`);
  return parts.length === 0 ? null : parts.join(", ");
}

// ---------------------------------------------------------------------------------------------
// 1. POST /query throughput against the ceiling

function summarizeRuns(runs) {
  return {
    requestsPerSec: medianOrNull(runs.map((run) => run.requestsPerSec)),
    p50Ms: medianOrNull(runs.map((run) => run.p50Ms)),
    p99Ms: medianOrNull(runs.map((run) => run.p99Ms)),
    serverUs: medianOrNull(runs.map((run) => run.serverUs ?? null)),
    queryProcessesUs: medianOrNull(runs.map((run) => run.queryProcessesUs ?? null)),
    runs,
  };
}

/** For each query: dirq's answer becomes the ceiling's fixed body, then both are loaded. */
async function measureThroughput(options, generator, scratch, warnings, ps) {
  const root = ensureTree(options.dir, QUERY_TREE);
  log(`query: starting dirq server in ${root}`);
  const dirq = await startDirq(root);
  const results = [];
  try {
    for (const [index, query] of QUERIES.entries()) {
      if (!options.queries.has(query.key)) continue;
      const result = { query, bodyBytes: null, dirq: null, ceiling: null, ratio: null };
      results.push(result);
      if (query.churn) await queryOrThrow(dirq.base, query.churn.materialize);
      const answer = await queryOrThrow(dirq.base, query.sql);
      const wrong = query.check(answer.rows);
      if (wrong) warnings.push(`${query.name}: dirq ${wrong}`);
      result.bodyBytes = answer.body.length;
      const bodyFile = join(scratch, `answer-${index}.json`);
      writeFileSync(bodyFile, answer.body);
      const ceiling = await startCeiling(bodyFile, scratch);
      try {
        const check = await postQuery(ceiling.base, query.sql);
        if (check.body.length !== answer.body.length) {
          warnings.push(`${query.name}: the ceiling's body is ${check.body.length} bytes`);
        }
        const servers = [
          { key: "dirq", server: dirq, runs: [] },
          { key: "ceiling", server: ceiling, runs: [] },
        ];
        // The writes go on through both servers' runs, so both share the machine with them.
        const churn = query.churn ? await startChurn(join(root, query.churn.file)) : null;
        const churnStarted = performance.now();
        for (const entry of servers) {
          if (options.warmup === 0) continue;
          log(`query: ${query.name}: ${entry.key}: warm-up ${options.warmup} s`);
          await load(generator, entry.server.base, query, options.warmup, options, scratch);
        }
        // Round-robin, so background noise is shared by both servers.
        for (let run = 0; run < options.runs; run++) {
          for (const entry of servers) {
            // CPU per answer of the server and of its query processes; for the churn query,
            // busy query processes mean statements ran instead of coming from the cache.
            const isDirq = entry.key === "dirq";
            const serverBefore = isDirq ? processCpuSeconds(dirq.pid) : null;
            const cpuBefore = isDirq ? childCpuSeconds(dirq.pid, ps) : null;
            const measured = await load(
              generator,
              entry.server.base,
              query,
              options.duration,
              options,
              scratch,
            );
            if (isDirq) {
              const serverAfter = processCpuSeconds(dirq.pid);
              const cpuAfter = childCpuSeconds(dirq.pid, ps);
              const perAnswer = (before, after) =>
                before === null || after === null || measured.responses === 0
                  ? null
                  : ((after - before) * 1e6) / measured.responses;
              measured.serverUs = perAnswer(serverBefore, serverAfter);
              measured.queryProcessesUs = perAnswer(cpuBefore, cpuAfter);
              if (query.churn) {
                measured.queryCpuShare =
                  cpuAfter === null || cpuBefore === null
                    ? null
                    : (cpuAfter - cpuBefore) / options.duration;
              }
            }
            entry.runs.push(measured);
            const problems = problemText(measured.problems);
            if (problems) warnings.push(`${query.name}: ${entry.key} run ${run + 1}: ${problems}`);
            log(
              `query: ${query.name}: ${entry.key}: run ${run + 1}/${options.runs}: ` +
                `${Math.round(measured.requestsPerSec)} req/s`,
            );
          }
        }
        if (churn) {
          const writes = await churn.stop();
          const seconds = (performance.now() - churnStarted) / 1000;
          result.churn = {
            writes,
            perSecond: writes === null ? null : writes / seconds,
            queryCpuShare: medianOrNull(servers[0].runs.map((run) => run.queryCpuShare ?? null)),
          };
          const behind = await churnLag(dirq.base, root, query.churn);
          if (behind) warnings.push(`${query.name}: ${behind}`);
        }
        result.dirq = summarizeRuns(servers[0].runs);
        result.ceiling = summarizeRuns(servers[1].runs);
        const base = result.ceiling.requestsPerSec;
        result.ratio = base ? result.dirq.requestsPerSec / base : null;
      } finally {
        await ceiling.stop();
      }
    }
  } finally {
    await stopDirq(dirq, "query", warnings);
  }
  return { root, results };
}

/** Clock ticks per second of /proc's CPU times. */
const CLOCK_TICKS = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout) || 100;

/**
 * Clock ticks of a process from /proc: its own (utime + stime) and its children's that it
 * has waited for (cutime + cstime); null when it is gone.
 */
function procTicks(pid) {
  try {
    // After the command name: state is field 3, utime to cstime fields 14 to 17.
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return {
      own: Number(fields[11]) + Number(fields[12]),
      waited: Number(fields[13]) + Number(fields[14]),
    };
  } catch {
    return null;
  }
}

/** CPU seconds used so far by a process itself (the server's main process). */
function processCpuSeconds(pid) {
  const ticks = procTicks(pid);
  return ticks === null ? null : ticks.own / CLOCK_TICKS;
}

/**
 * CPU seconds used so far by a process's children (the query processes): the ones alive now,
 * and the ones that ended and were waited for (a query process killed when its client went
 * away, as at the end of every load run); null without ps.
 */
function childCpuSeconds(pid, ps) {
  if (!ps) return null;
  const listed = spawnSync(ps, ["--ppid", String(pid), "-o", "pid="], { encoding: "utf8" });
  let ticks = procTicks(pid)?.waited ?? 0;
  for (const line of (listed.stdout ?? "").split("\n")) {
    const child = Number(line.trim());
    if (!Number.isInteger(child) || child <= 0) continue;
    // One that ends between the listing and this read loses what it used since the last read.
    ticks += procTicks(child)?.own ?? 0;
  }
  return ticks / CLOCK_TICKS;
}

/**
 * Whether dirq caught up with the churned file once the writes stopped: `null` when its row
 * shows the file's last size within a few seconds, else what it shows. Without this a server
 * that dropped the changes would look fast.
 */
async function churnLag(base, root, churn) {
  const size = statSync(join(root, churn.file)).size;
  const sql = `SELECT size FROM '${churn.table}' WHERE path = '${churn.file}'`;
  const deadline = performance.now() + 5_000;
  let shown;
  do {
    shown = (await queryOrThrow(base, sql)).rows[0]?.size;
    if (shown === size) return null;
    await sleep(50);
  } while (performance.now() < deadline);
  return `${churn.file} has size ${size}, dirq shows ${shown} after the writes stopped`;
}

// ---------------------------------------------------------------------------------------------
// 2. Event latency and 3. memory, on one server over the 10,000-file tree

/** VmRSS (or another `Vm*` field) of a process in kB, from /proc; null if it cannot be read. */
function rssKb(pid, field = "VmRSS") {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/** The server's RSS and its children's (the query processes), in MB. */
function memorySnapshot(pid, ps) {
  const serverKb = rssKb(pid);
  const peakKb = rssKb(pid, "VmHWM");
  let children = null;
  if (ps) {
    const listed = spawnSync(ps, ["--ppid", String(pid), "-o", "pid="], { encoding: "utf8" });
    children = (listed.stdout ?? "")
      .split("\n")
      .map((line) => Number(line.trim()))
      .filter((child) => Number.isInteger(child) && child > 0)
      .map((child) => ({ pid: child, kb: rssKb(child) }))
      .filter((child) => child.kb !== null);
  }
  const childrenKb = children?.reduce((sum, child) => sum + child.kb, 0) ?? null;
  return {
    serverMb: serverKb === null ? null : serverKb / 1024,
    serverPeakMb: peakKb === null ? null : peakKb / 1024,
    childrenMb: childrenKb === null ? null : childrenKb / 1024,
    children: children?.length ?? null,
    totalMb: serverKb === null || childrenKb === null ? null : (serverKb + childrenKb) / 1024,
  };
}

/** Times each write (from just before writeFileSync) to its `row` frame at one client. */
async function measureEventLatency(base, root, options) {
  const pending = new Map(); // file_path -> { startedAt, latencyMs }
  let rowFrames = 0;
  let otherFrames = 0;
  let unexpected = 0;
  const client = openEvents(base, (frame, receivedAt) => {
    if (frame.event !== "row") {
      otherFrames++;
      return;
    }
    rowFrames++;
    const path = JSON.parse(frame.data).file_path;
    const entry = pending.get(path);
    if (entry === undefined) unexpected++;
    else if (entry.latencyMs === null) entry.latencyMs = receivedAt - entry.startedAt;
  });
  await client.ready;
  // Different files, spread over the directories: write i goes to directory i % dirs.
  const perDir = EVENT_TREE.files / EVENT_TREE.dirs;
  const writes = Array.from({ length: options.writes }, (_, i) => {
    const d = i % EVENT_TREE.dirs;
    return fileTreePath(EVENT_TREE, d, Math.floor(i / EVENT_TREE.dirs) % perDir);
  });
  for (const path of writes) {
    const absolute = join(root, path);
    const content = nextContent(absolute);
    const entry = { startedAt: performance.now(), latencyMs: null };
    pending.set(path, entry);
    writeFileSync(absolute, content);
    await sleep(options.interval);
  }
  const deadline = performance.now() + SETTLE_MS;
  while (performance.now() < deadline && [...pending.values()].some((e) => e.latencyMs === null)) {
    await sleep(20);
  }
  await sleep(100); // a last moment for duplicate frames, so the frame count is complete
  client.close();
  const latencies = [...pending.values()].map((entry) => entry.latencyMs);
  const received = latencies.filter((ms) => ms !== null);
  // A write whose event never came counts as infinitely late in the percentiles.
  const all = latencies.map((ms) => (ms === null ? Infinity : ms));
  return {
    writes: writes.length,
    received: received.length,
    rowFrames,
    otherFrames,
    unexpected,
    medianMs: median(all),
    p99Ms: percentile(all, 99),
    minMs: received.length > 0 ? Math.min(...received) : null,
    maxMs: received.length > 0 ? Math.max(...received) : null,
    latenciesMs: latencies,
  };
}

/** Opens `count` more /events clients, measures memory, then checks one write reaches all. */
async function measureMemory(server, root, options, ps) {
  const before = memorySnapshot(server.pid, ps);
  const fanoutPath = fileTreePath(
    EVENT_TREE,
    EVENT_TREE.dirs - 1,
    EVENT_TREE.files / EVENT_TREE.dirs - 1,
  );
  let writtenAt = null;
  const arrivals = new Map(); // client index -> ms from the write to its first frame
  const clients = Array.from({ length: options.clients }, (_, i) =>
    openEvents(server.base, (frame, receivedAt) => {
      if (writtenAt === null || frame.event !== "row" || arrivals.has(i)) return;
      if (JSON.parse(frame.data).file_path === fanoutPath) arrivals.set(i, receivedAt - writtenAt);
    }),
  );
  try {
    await Promise.all(clients.map((client) => client.ready));
    await sleep(500);
    const after = memorySnapshot(server.pid, ps);
    log(`memory: ${options.clients} clients attached; one write to ${fanoutPath}`);
    const absolute = join(root, fanoutPath);
    const content = nextContent(absolute);
    writtenAt = performance.now();
    writeFileSync(absolute, content);
    const deadline = performance.now() + SETTLE_MS;
    while (performance.now() < deadline && arrivals.size < options.clients) await sleep(20);
    return {
      clients: options.clients,
      noClients: before,
      withClients: after,
      fanout: {
        path: fanoutPath,
        reached: arrivals.size,
        of: options.clients,
        lastMs: arrivals.size > 0 ? Math.max(...arrivals.values()) : null,
      },
    };
  } finally {
    for (const client of clients) client.close();
  }
}

async function measureEventsAndMemory(options, ps, warnings) {
  const root = ensureTree(options.dir, EVENT_TREE);
  log(`events: starting dirq server in ${root}`);
  const started = performance.now();
  const server = await startDirq(root);
  const readyMs = performance.now() - started;
  try {
    const materialized = await queryOrThrow(server.base, MATERIALIZE_SQL);
    const count = materialized.rows[0]?.["count(*)"];
    if (count !== EVENT_TREE.files) {
      warnings.push(`${MATERIALIZE_SQL} counted ${count}, expected ${EVENT_TREE.files}`);
    }
    log(`events: ${options.writes} writes, ${options.interval} ms apart`);
    const events = await measureEventLatency(server.base, root, options);
    events.serverReadyMs = readyMs;
    events.materializeMs = materialized.ms;
    if (events.received < events.writes) {
      warnings.push(`events: ${events.writes - events.received} of ${events.writes} never arrived`);
    }
    if (events.unexpected > 0) {
      warnings.push(`events: ${events.unexpected} row frames for files that were not written`);
    }
    log(`memory: opening ${options.clients} /events clients`);
    const memory = await measureMemory(server, root, options, ps);
    if (memory.fanout.reached < memory.fanout.of) {
      warnings.push(
        `memory: the fan-out write reached ${memory.fanout.reached} of ${memory.fanout.of} clients`,
      );
    }
    return { root, events, memory };
  } finally {
    await stopDirq(server, "events", warnings);
  }
}

// ---------------------------------------------------------------------------------------------
// 4. Event latency while a slow hook runs

/** Files of the slow-hook tree: a path-table's folder, a parsed table's folder, the slow file. */
const SLOW_TREE = { dataFiles: 100, parsedFiles: 100, slowFile: "slow.json" };
/** How often the slow file is rewritten: sooner than its hook ends, so one always runs. */
const RETRIGGER_MS = 2_000;
/** How often the benchmark looks for the slow hook's `sleep` under the server. */
const SLOW_SAMPLE_MS = 250;

/**
 * A parser whose time depends on the file: one that says "sleep" takes `seconds`, any other
 * answers at once. Its one row holds the file's size, so every size change is a row change.
 */
function slowHookScript(seconds) {
  return [
    "#!/bin/sh",
    `if grep -q sleep "$1"; then sleep ${seconds}; fi`,
    `printf '[{"size":%d}]' "$(wc -c < "$1")"`,
    "",
  ].join("\n");
}

/**
 * Rewrites the slow file every `interval` ms with a new size, each time saying "sleep": every
 * write stops the hook still running for it and starts another.
 */
const RETRIGGER_JS = `
const { writeFileSync } = require("node:fs");
const [path, interval] = process.argv.slice(1);
let writes = 0;
const write = () => writeFileSync(path, "sleep" + "z".repeat(writes++ % 64));
write();
const timer = setInterval(write, Number(interval));
process.on("SIGTERM", () => {
  clearInterval(timer);
  process.stdout.write(writes + "\\n");
  process.exit(0);
});
process.stdout.write("Running at retrigger:0\\n");
`;

function slowTreeFile(kind, i) {
  const name = String(i).padStart(4, "0");
  return kind === "data" ? `data/f${name}.txt` : `parsed/p${name}.json`;
}

/** A fresh tree (it is small) and the config whose table parses its JSON files. */
function makeSlowTree(scratch, hookSeconds) {
  const root = join(scratch, "slow-hook-tree");
  mkdirSync(join(root, "data"), { recursive: true });
  mkdirSync(join(root, "parsed"), { recursive: true });
  for (let i = 0; i < SLOW_TREE.dataFiles; i++) {
    writeFileSync(join(root, slowTreeFile("data", i)), "d");
  }
  for (let i = 0; i < SLOW_TREE.parsedFiles; i++) {
    writeFileSync(join(root, slowTreeFile("parsed", i)), "{}");
  }
  // Fast at start-up (the server builds config tables first): it says "sleep" only later.
  writeFileSync(join(root, SLOW_TREE.slowFile), "{}");
  const hook = join(scratch, "slow-hook.sh");
  writeFileSync(hook, slowHookScript(hookSeconds));
  const config = join(scratch, "slow-hook.dirq.toml");
  writeFileSync(
    config,
    [
      "[[table]]",
      'name = "parsed"',
      'glob = "**/*.json"',
      `on-file = "sh ${hook} {path}"`,
      "",
    ].join("\n"),
  );
  return { root, config };
}

/** Whether a `sleep` runs somewhere under `pid` (the slow hook: `sh` and its `sleep`). */
function slowHookRunning(pid, ps) {
  const listed = spawnSync(ps, ["-e", "-o", "pid=,ppid=,comm="], { encoding: "utf8" });
  const parent = new Map();
  const sleeping = [];
  for (const line of (listed.stdout ?? "").split("\n")) {
    const [child, ppid, comm] = line.trim().split(/\s+/);
    parent.set(Number(child), Number(ppid));
    if (comm === "sleep") sleeping.push(Number(child));
  }
  return sleeping.some((child) => {
    for (let at = child, hops = 0; at > 1 && hops < 10; hops++) {
      at = parent.get(at) ?? 0;
      if (at === pid) return true;
    }
    return false;
  });
}

function latencySummary(entries) {
  const latencies = entries.map((entry) => entry.latencyMs);
  const received = latencies.filter((ms) => ms !== null);
  const all = latencies.map((ms) => (ms === null ? Infinity : ms));
  return {
    writes: entries.length,
    received: received.length,
    medianMs: all.length > 0 ? median(all) : null,
    p99Ms: all.length > 0 ? percentile(all, 99) : null,
    maxMs: received.length > 0 ? Math.max(...received) : null,
    latenciesMs: latencies,
  };
}

/**
 * A server with a config table whose hook takes `--hook-seconds` for one file, kept busy on it
 * (rewritten every RETRIGGER_MS); meanwhile writes alternate between a path-table's files and
 * the parsed table's other files, each timed from just before the write to its `row` frame.
 */
async function measureSlowHook(options, scratch, warnings, ps) {
  const { root, config } = makeSlowTree(scratch, options.hookSeconds);
  log(`slow hook: starting dirq server in ${root}`);
  const server = await startDirq(root, ["-c", config]);
  let retrigger = null;
  let sampler = null;
  const samples = { taken: 0, running: 0 };
  try {
    await queryOrThrow(server.base, "SELECT count(*) FROM './data'");
    await queryOrThrow(server.base, "SELECT count(*) FROM parsed");
    const pending = new Map(); // file_path -> { kind, startedAt, latencyMs }
    let unexpected = 0;
    const client = openEvents(server.base, (frame, receivedAt) => {
      if (frame.event !== "row") return;
      const path = JSON.parse(frame.data).file_path;
      const entry = pending.get(path);
      if (entry === undefined) {
        if (path !== SLOW_TREE.slowFile) unexpected++;
      } else if (entry.latencyMs === null) {
        entry.latencyMs = receivedAt - entry.startedAt;
      }
    });
    await client.ready;
    retrigger = await startServer(
      "retrigger",
      process.execPath,
      ["-e", RETRIGGER_JS, join(root, SLOW_TREE.slowFile), String(RETRIGGER_MS)],
      root,
      process.env,
    );
    // Until its hook is seen running: the measurement starts with a slow hook under way.
    const waitUntil = performance.now() + 10_000;
    while (ps && !slowHookRunning(server.pid, ps) && performance.now() < waitUntil) {
      await sleep(50);
    }
    if (ps) {
      sampler = setInterval(() => {
        samples.taken++;
        if (slowHookRunning(server.pid, ps)) samples.running++;
      }, SLOW_SAMPLE_MS);
    }
    log(`slow hook: ${options.slowWrites} writes, ${options.interval} ms apart`);
    const kinds = { data: [], parsed: [] };
    const counts = { data: 0, parsed: 0 };
    for (let i = 0; i < options.slowWrites; i++) {
      const kind = i % 2 === 0 ? "data" : "parsed";
      const total = kind === "data" ? SLOW_TREE.dataFiles : SLOW_TREE.parsedFiles;
      const path = slowTreeFile(kind, counts[kind]++ % total);
      const absolute = join(root, path);
      // A new size each time, within a path-table's whole-second mtime: always a row change.
      const content =
        kind === "data"
          ? Buffer.alloc((statSync(absolute).size % 64) + 1, "d")
          : `{"pad":"${"p".repeat(statSync(absolute).size % 64)}"}`;
      const entry = { startedAt: performance.now(), latencyMs: null };
      pending.set(path, entry);
      kinds[kind].push(entry);
      writeFileSync(absolute, content);
      await sleep(options.interval);
    }
    const deadline = performance.now() + SETTLE_MS;
    while (
      performance.now() < deadline &&
      [...pending.values()].some((e) => e.latencyMs === null)
    ) {
      await sleep(20);
    }
    client.close();
    if (unexpected > 0) warnings.push(`slow hook: ${unexpected} row frames for files not written`);
    const result = {
      root,
      hookSeconds: options.hookSeconds,
      pathTable: latencySummary(kinds.data),
      parsed: latencySummary(kinds.parsed),
      slowHookSeen: ps ? samples.running / Math.max(1, samples.taken) : null,
      samples: samples.taken,
    };
    for (const [label, summary] of [
      ["path-table", result.pathTable],
      ["parsed table", result.parsed],
    ]) {
      if (summary.received < summary.writes) {
        warnings.push(
          `slow hook: ${summary.writes - summary.received} of ${summary.writes} ${label} writes never arrived`,
        );
      }
    }
    if (result.slowHookSeen !== null && result.slowHookSeen < 0.9) {
      warnings.push(
        `slow hook: running in only ${(result.slowHookSeen * 100).toFixed(0)}% of ${samples.taken} samples`,
      );
    }
    return result;
  } finally {
    if (sampler !== null) clearInterval(sampler);
    await retrigger?.stop();
    await stopDirq(server, "slow hook", warnings);
  }
}

// ---------------------------------------------------------------------------------------------
// Targets and report

/** A target's outcome: `{ value, limit, met, text }`, `met` null when it was not measured. */
function verdict(
  value,
  limit,
  { atLeast = false, percent = false, unit = "", digits = 2, missing } = {},
) {
  if (value === null || value === undefined) {
    return { value: null, limit, met: null, text: `n/a (${missing ?? "not measured"})` };
  }
  const met = atLeast ? value >= limit : value < limit;
  let shown = `${value.toFixed(digits)}${unit}`;
  if (percent) shown = `${(value * 100).toFixed(1)}%`;
  if (value === Infinity) shown = "events missing";
  return { value, limit, met, text: `${shown} (${met ? "met" : "not met"})` };
}

function evaluateTargets(report) {
  const targets = [];
  for (const query of QUERIES) {
    // Reported, with no target of its own in the spec.
    if (query.churn || !report.options.queries.has(query.key)) continue;
    const result = report.throughput?.results.find((entry) => entry.query === query);
    const limit = query.shareOfCeiling ?? TARGETS.shareOfCeiling;
    targets.push({
      name: `${query.name}: dirq at least ${Math.round(limit * 100)}% of the ceiling's requests/s`,
      ...verdict(result?.ratio ?? null, limit, {
        atLeast: true,
        percent: true,
        missing: report.throughputStatus,
      }),
    });
  }
  const events = report.eventsResult?.events;
  targets.push(
    {
      name: `event latency median under ${TARGETS.eventMedianMs} ms`,
      ...verdict(events?.medianMs ?? null, TARGETS.eventMedianMs, {
        unit: " ms",
        digits: 1,
        missing: report.eventsStatus,
      }),
    },
    {
      name: `event latency p99 under ${TARGETS.eventP99Ms} ms`,
      ...verdict(events?.p99Ms ?? null, TARGETS.eventP99Ms, {
        unit: " ms",
        digits: 1,
        missing: report.eventsStatus,
      }),
    },
  );
  const slow = report.slowHook;
  targets.push({
    name: `path-table event p99 under ${TARGETS.slowHookP99Ms} ms while a slow hook runs`,
    ...verdict(slow?.pathTable.p99Ms ?? null, TARGETS.slowHookP99Ms, {
      unit: " ms",
      digits: 1,
      missing: report.slowHookStatus,
    }),
  });
  return targets;
}

function mb(value) {
  return formatNumber(value, 1);
}

function printText(report) {
  const { versions, options } = report;
  const generator = report.generator;
  const out = [
    "dirq server benchmark",
    `node ${versions.node} | autocannon: ${versions.autocannon} | wrk: ${versions.wrk} | ` +
      `ps: ${versions.ps} | cpus: ${availableParallelism()} | ` +
      `load average before: ${report.loadBefore.toFixed(2)}`,
    ...(options.dirq === DIRQ_BIN ? [] : [`dirq: ${options.dirq}`]),
    "",
  ];

  const runs = options.runs === 1 ? "1 run" : `median of ${options.runs} runs`;
  out.push(
    `1. POST /query, ${QUERY_TREE.files.toLocaleString("en-US")}-file tree: ` +
      `${generator ? generator.name : "no load generator"}, ${options.connections} connections, ` +
      `${options.duration} s per run (${runs}) after ${options.warmup} s warm-up`,
  );
  if (report.throughput) {
    const rows = [];
    for (const result of report.throughput.results) {
      for (const key of ["dirq", "ceiling"]) {
        const entry = result[key];
        rows.push([
          `${result.query.distinct ? "SELECT <n>, a new n each request" : result.query.sql}: ` +
            `${key === "dirq" ? "dirq server" : "node:http ceiling"}`,
          formatNumber(result.bodyBytes, 0),
          formatNumber(entry?.requestsPerSec ?? null, 0),
          formatNumber(entry?.p50Ms ?? null, 2),
          formatNumber(entry?.p99Ms ?? null, 2),
          key === "dirq"
            ? formatNumber(result.ratio === null ? null : result.ratio * 100, 1) + "%"
            : "",
        ]);
      }
    }
    out.push(...table(["request", "body B", "req/s", "p50 ms", "p99 ms", "of ceiling"], rows));
    const cpuText = (us) => (us === null ? "n/a" : `${formatNumber(us, 0)} µs`);
    out.push(
      "dirq's CPU per answer (from /proc, over its runs): server process, query processes",
      ...report.throughput.results.map(
        (result) =>
          `  ${result.query.name}: ${cpuText(result.dirq?.serverUs ?? null)}, ` +
          `${cpuText(result.dirq?.queryProcessesUs ?? null)}`,
      ),
    );
    for (const result of report.throughput.results) {
      if (!result.churn) continue;
      const rate = result.churn.perSecond;
      const cpu = result.churn.queryCpuShare;
      out.push(
        `${result.query.sql}: meanwhile ${result.query.churn.file} was rewritten ` +
          `${result.churn.writes ?? "n/a"} times (${rate === null ? "n/a" : rate.toFixed(1)}/s, ` +
          `one every ${CHURN_INTERVAL_MS} ms asked); query processes busy ` +
          `${cpu === null ? "n/a" : `${(cpu * 100).toFixed(1)}%`} of one core during dirq's runs`,
      );
    }
  } else {
    out.push(report.throughputStatus);
  }
  out.push("");

  const events = report.eventsResult?.events;
  out.push(
    `2. Event latency, ${EVENT_TREE.files.toLocaleString("en-US")} files in ${EVENT_TREE.dirs} ` +
      `directories: ${options.writes} writes to different files, ${options.interval} ms apart, ` +
      "write -> row frame at one /events client",
  );
  if (events) {
    out.push(
      `server ready after ${formatNumber(events.serverReadyMs / 1000, 2)} s; ` +
        `"${MATERIALIZE_SQL}" answered in ${formatNumber(events.materializeMs, 0)} ms`,
      `events: ${events.received} of ${events.writes} writes arrived ` +
        `(${events.rowFrames} row frames in all, ${events.unexpected} for other files)`,
      `latency ms: median ${formatNumber(events.medianMs, 1)}, p99 ${formatNumber(events.p99Ms, 1)}, ` +
        `min ${formatNumber(events.minMs, 1)}, max ${formatNumber(events.maxMs, 1)}`,
    );
  } else {
    out.push(report.eventsStatus);
  }
  out.push("");

  const memory = report.eventsResult?.memory;
  out.push(
    `3. Memory (VmRSS), ${EVENT_TREE.files.toLocaleString("en-US")} indexed files, ` +
      "path-table materialized",
  );
  if (memory) {
    const row = (label, snapshot) => [
      label,
      mb(snapshot.serverMb),
      mb(snapshot.serverPeakMb),
      snapshot.children === null ? "n/a" : String(snapshot.children),
      mb(snapshot.childrenMb),
      mb(snapshot.totalMb),
    ];
    out.push(
      ...table(
        ["/events clients", "server MB", "server peak MB", "query procs", "their MB", "total MB"],
        [row("0", memory.noClients), row(String(memory.clients), memory.withClients)],
      ),
      `fan-out: one write reached ${memory.fanout.reached} of ${memory.fanout.of} clients, ` +
        `the last after ${formatNumber(memory.fanout.lastMs, 1)} ms`,
    );
  } else {
    out.push(report.eventsStatus);
  }
  out.push("");

  const slow = report.slowHook;
  out.push(
    `4. Event latency while a ${options.hookSeconds}-second hook runs for ${SLOW_TREE.slowFile} ` +
      `(rewritten every ${RETRIGGER_MS / 1000} s): ${options.slowWrites} writes, ` +
      `${options.interval} ms apart, alternately to a path-table's files and the parsed table's`,
  );
  if (slow) {
    const row = (label, summary) => [
      label,
      `${summary.received} of ${summary.writes}`,
      formatNumber(summary.medianMs, 1),
      formatNumber(summary.p99Ms, 1),
      formatNumber(summary.maxMs, 1),
    ];
    out.push(
      ...table(
        ["written file", "arrived", "p50 ms", "p99 ms", "max ms"],
        [row("path-table './data'", slow.pathTable), row("parsed table", slow.parsed)],
      ),
      slow.slowHookSeen === null
        ? "slow hook: not sampled (no ps)"
        : `slow hook seen running in ${(slow.slowHookSeen * 100).toFixed(0)}% of ` +
            `${slow.samples} samples (every ${SLOW_SAMPLE_MS} ms)`,
    );
  } else {
    out.push(report.slowHookStatus);
  }
  out.push("");

  for (const warning of report.warnings) out.push(`warning: ${warning}`);
  if (report.warnings.length > 0) out.push("");
  for (const target of report.targets) out.push(`${target.name}: ${target.text}`);
  process.stdout.write(`${out.join("\n")}\n`);
}

function loadJson(entry) {
  return entry === null
    ? null
    : {
        requestsPerSec: round(entry.requestsPerSec),
        p50Ms: round(entry.p50Ms),
        p99Ms: round(entry.p99Ms),
        ...(entry.serverUs !== null
          ? { serverUs: round(entry.serverUs), queryProcessesUs: round(entry.queryProcessesUs) }
          : {}),
        runs: entry.runs.map((run) => ({
          requestsPerSec: round(run.requestsPerSec),
          p50Ms: round(run.p50Ms),
          p99Ms: round(run.p99Ms),
          responses: run.responses,
          ...run.problems,
        })),
      };
}

function snapshotJson(snapshot) {
  return {
    serverMb: round(snapshot.serverMb),
    serverPeakMb: round(snapshot.serverPeakMb),
    queryProcesses: snapshot.children,
    queryProcessesMb: round(snapshot.childrenMb),
    totalMb: round(snapshot.totalMb),
  };
}

function summaryJson(summary) {
  return {
    writes: summary.writes,
    received: summary.received,
    medianMs: round(summary.medianMs),
    p99Ms: round(summary.p99Ms),
    maxMs: round(summary.maxMs),
    latenciesMs: summary.latenciesMs.map(round),
  };
}

function printJson(report) {
  const { options } = report;
  const events = report.eventsResult?.events;
  const memory = report.eventsResult?.memory;
  const json = {
    environment: {
      ...report.versions,
      cpus: availableParallelism(),
      platform: process.platform,
      loadAverageBefore: round(report.loadBefore),
      dirq: options.dirq,
    },
    options: {
      duration: options.duration,
      warmup: options.warmup,
      connections: options.connections,
      runs: options.runs,
      writes: options.writes,
      intervalMs: options.interval,
      clients: options.clients,
      queries: [...options.queries],
      slowWrites: options.slowWrites,
      hookSeconds: options.hookSeconds,
    },
    throughput: report.throughput
      ? {
          tool: report.generator.name,
          path: report.throughput.root,
          queries: report.throughput.results.map((result) => ({
            name: result.query.name,
            sql: result.query.sql,
            bodyBytes: result.bodyBytes,
            dirq: loadJson(result.dirq),
            ceiling: loadJson(result.ceiling),
            ratio: round(result.ratio),
            ...(result.churn
              ? {
                  churn: {
                    file: result.query.churn.file,
                    intervalMs: CHURN_INTERVAL_MS,
                    writes: result.churn.writes,
                    perSecond: round(result.churn.perSecond),
                    queryCpuShare: round(result.churn.queryCpuShare),
                  },
                }
              : {}),
          })),
        }
      : { status: report.throughputStatus },
    events: events
      ? {
          path: report.eventsResult.root,
          files: EVENT_TREE.files,
          dirs: EVENT_TREE.dirs,
          serverReadyMs: round(events.serverReadyMs),
          materializeMs: round(events.materializeMs),
          writes: events.writes,
          received: events.received,
          rowFrames: events.rowFrames,
          unexpectedFrames: events.unexpected,
          medianMs: round(events.medianMs),
          p99Ms: round(events.p99Ms),
          minMs: round(events.minMs),
          maxMs: round(events.maxMs),
          latenciesMs: events.latenciesMs.map(round),
        }
      : { status: report.eventsStatus },
    memory: memory
      ? {
          files: EVENT_TREE.files,
          noClients: snapshotJson(memory.noClients),
          withClients: { clients: memory.clients, ...snapshotJson(memory.withClients) },
          fanout: { ...memory.fanout, lastMs: round(memory.fanout.lastMs) },
        }
      : { status: report.eventsStatus },
    slowHook: report.slowHook
      ? {
          hookSeconds: report.slowHook.hookSeconds,
          retriggerMs: RETRIGGER_MS,
          slowHookSeen: round(report.slowHook.slowHookSeen),
          pathTable: summaryJson(report.slowHook.pathTable),
          parsed: summaryJson(report.slowHook.parsed),
        }
      : { status: report.slowHookStatus },
    warnings: report.warnings,
    targets: report.targets.map(({ name, value, limit, met }) => ({
      name,
      value: value === Infinity ? null : round(value),
      limit,
      met,
    })),
  };
  process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
}

// ---------------------------------------------------------------------------------------------
// Main

async function main() {
  const options = parseOptions(process.argv.slice(2));
  dirqBin = options.dirq;
  if (dirqBin === DIRQ_BIN) requireDirqBuilt();
  else if (!existsSync(dirqBin)) fail(`--dirq: ${dirqBin} does not exist`);
  const { generator, ps, versions } = await detectTools(options);
  const scratch = mkdtempSync(join(tmpdir(), "dirq-bench-server-"));
  const warnings = [];
  // Other processes skew every figure here; the report shows how busy the machine was.
  const report = { options, versions, generator, warnings, loadBefore: loadavg()[0] };
  try {
    if (options.only !== undefined && options.only !== "query") {
      report.throughputStatus = `skipped with --only ${options.only}`;
    } else if (generator === null) {
      const wanted = options.tool ?? "autocannon or wrk";
      report.throughputStatus = `not installed (${wanted}): run npm ci, or apt-get install -y wrk`;
    } else {
      try {
        report.throughput = await measureThroughput(options, generator, scratch, warnings, ps);
      } catch (error) {
        report.throughputStatus = `failed (${error.message})`;
      }
    }
    if (options.only !== undefined && options.only !== "events") {
      report.eventsStatus = `skipped with --only ${options.only}`;
    } else {
      try {
        report.eventsResult = await measureEventsAndMemory(options, ps, warnings);
      } catch (error) {
        report.eventsStatus = `failed (${error.message})`;
      }
    }
    if (options.only !== undefined && options.only !== "slow-hook") {
      report.slowHookStatus = `skipped with --only ${options.only}`;
    } else {
      try {
        report.slowHook = await measureSlowHook(options, scratch, warnings, ps);
      } catch (error) {
        report.slowHookStatus = `failed (${error.message})`;
      }
    }
    if (!ps) warnings.push("ps not installed: query processes' memory is not measured");
    report.targets = evaluateTargets(report);
    if (options.json) printJson(report);
    else printText(report);
  } finally {
    for (const child of children) child.kill("SIGKILL");
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
