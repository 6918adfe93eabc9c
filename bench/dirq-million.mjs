#!/usr/bin/env node
// A big tree, live: `dirq server` (and watchman beside it when installed) on N files in N/100
// folders, fully watched and then under a lowered inotify watch limit set in a user namespace
// (`unshare --user --map-root-user`, so the machine's own limit is untouched). For each:
//   - start: the time until "Running at" (watchman: until its first query answers) and the
//     first `SELECT count(*)`;
//   - writes: one file rewritten every 50 ms in spread folders, write → its row event p50/p99/max;
//   - a checkout: --renames folders renamed at once (like `git checkout`), with POST /query
//     probes beside it (p50/p99/max), the time until the live index equals a fresh one-shot
//     scan (count and path list), the time until the last row event, and memory before, at
//     its peak and after;
//   - idle: CPU used over 10 s with nothing at all (a check costs here), then over 20 s with
//     probes (statements one after another) and the probes' latencies.
// Under the limit, the writes are split by whether their folder has a watch (the server lists
// the folders without one in `GET /live/stats`), and the checks of those folders are timed
// (`unwatchedChecks.lastCheckMs`, each check while idle) beside a fresh one-shot scan of
// exactly those folders (their files' sizes and times: what a check reads), and the ratio.
// Prints the load average with each part.
//
//   node bench/dirq-million.mjs [--files 1000000] [--renames 1000] [--writes 100]
//                               [--watch-limit N] [--rename-ms 0] [--only full|limited|watchman]
//                               [--skip-checkout] [--checkout-only] [--warm-pool] [--checkouts 1]
//                               [--bin another build's bin/dirq.cjs, to compare]
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { Worker } from "node:worker_threads";
import { basename, join, resolve } from "node:path";
import {
  DEFAULT_BENCH_DIR,
  DIRQ_BIN,
  findExecutable,
  log,
  parseOptions,
  percentile,
  postQuery,
  requireDirqBuilt,
  serverPort,
} from "./lib.mjs";

const USAGE =
  "Usage: node bench/dirq-million.mjs [--files 1000000] [--renames 1000] [--writes 100] [--watch-limit N] [--rename-ms 0] [--only full|limited|watchman] [--skip-checkout] [--checkout-only] [--warm-pool] [--checkouts 1] [--bin path/to/dirq.cjs] [--node-args='--cpu-prof ...']\n";
const values = parseOptions(
  process.argv.slice(2),
  {
    files: { type: "string", default: "1000000" },
    renames: { type: "string", default: "1000" },
    writes: { type: "string", default: "100" },
    // Spreads a checkout's renames over this many ms (0: as fast as they go), as a slower
    // checkout (a bigger tree, a slower disk) does.
    "rename-ms": { type: "string", default: "0" },
    "watch-limit": { type: "string" },
    only: { type: "string" },
    // Start, writes, quiet and idle only (the checkout under the limit can take minutes).
    "skip-checkout": { type: "boolean", default: false },
    // The checkout alone (no writes, quiet or idle parts): to iterate on the burst.
    "checkout-only": { type: "boolean", default: false },
    // Two statements at once before the checkout: the query pool then has its second process
    // already (a statement handed to a process still starting waits for its start).
    "warm-pool": { type: "boolean", default: false },
    // Checkouts one after another on the same server (each renames the folders back): the
    // first runs on code the server has not run before, the later ones as a long-lived
    // server's do.
    checkouts: { type: "string", default: "1" },
    bin: { type: "string" },
    // Node's own options for the server (a profile: "--cpu-prof --cpu-prof-dir=DIR").
    "node-args": { type: "string", default: "" },
  },
  USAGE,
);
requireDirqBuilt();

const PER_FOLDER = 100;
const FILES = Number(values.files);
const FOLDERS = Math.ceil(FILES / PER_FOLDER);
const RENAMES = Math.min(Number(values.renames), FOLDERS);
const CHECKOUTS = Math.max(1, Number(values.checkouts));
const WRITES = Number(values.writes);
const RENAME_MS = Number(values["rename-ms"]);
// About half the folders get a watch, as in a tree twice the size of the limit.
const WATCH_LIMIT = Number(values["watch-limit"] ?? Math.max(16, Math.floor(FOLDERS / 2)));
const root = join(DEFAULT_BENCH_DIR, `million-${FILES}`);
const BIN = values.bin ? resolve(values.bin) : DIRQ_BIN;

const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const fmt = (ms) => (ms === undefined ? "n/a" : `${ms.toFixed(1)} ms`);
const spread = (samples) =>
  samples.length === 0
    ? "no samples"
    : `${samples.length} samples, p50 ${fmt(percentile(samples, 50))}, p99 ${fmt(percentile(samples, 99))}, max ${fmt(Math.max(...samples))}`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const mb = (bytes) => `${(bytes / 1e6).toFixed(0)} MB`;
const report = (line) => console.log(`${line}   [load ${loadAverage()}]`);

// ---------------------------------------------------------------------------------------------
// The tree: folders d0..d{FOLDERS-1}; a checkout renames d{i} to m{i} (and back next run).

function folderName(i) {
  const moved = existsSync(join(root, `m${i}`));
  return moved ? `m${i}` : `d${i}`;
}

function generateTree() {
  // Beside the tree, not in it: a file in it would be a row.
  const marker = `${root}.done`;
  if (existsSync(marker)) return;
  log(`generating ${FILES.toLocaleString("en-US")} files in ${FOLDERS} folders under ${root}`);
  for (let d = 0; d < FOLDERS; d++) {
    const dir = join(root, `d${d}`);
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < PER_FOLDER && d * PER_FOLDER + f < FILES; f++) {
      writeFileSync(join(dir, `f${f}.txt`), `file ${d}/${f}\n`);
    }
  }
  writeFileSync(marker, "");
}

/** The checkout's renames: d{i} to m{i}, or back after a run that made them m{i}. */
function checkoutPairs() {
  return Array.from({ length: RENAMES }, (_, i) => {
    const from = folderName(i);
    return [join(root, from), join(root, from.startsWith("d") ? `m${i}` : `d${i}`)];
  });
}

/** The thread that renames (see million-renamer.mjs), started once and kept unreferenced. */
const renamer = (() => {
  let thread = null;
  return {
    /** Renames `pairs` there; when the first began and how long all took (this clock). */
    rename(pairs, spreadMs) {
      thread ??= new Worker(new URL("./million-renamer.mjs", import.meta.url));
      thread.ref();
      return new Promise((resolve, reject) => {
        thread.once("error", reject);
        thread.once("message", ({ firstAt, lastAt }) => {
          thread.off("error", reject);
          thread.unref();
          const started = firstAt - performance.timeOrigin;
          resolve({ started, renameMs: lastAt - firstAt });
        });
        thread.postMessage({ pairs, spreadMs });
      });
    },
  };
})();

/** Every file path of a fresh one-shot scan, sorted, and how long the scan took. */
function oneShotPaths() {
  const started = performance.now();
  const result = spawnSync(
    process.execPath,
    [BIN, "query", "--format", "csv", "SELECT path FROM './' ORDER BY path"],
    {
      cwd: root,
      encoding: "utf8",
      maxBuffer: 1 << 30,
      env: { ...process.env, DIRQ_PROGRESS: "never" },
    },
  );
  const ms = performance.now() - started;
  if (result.status !== 0) throw new Error(`one-shot query failed: ${result.stderr}`);
  const lines = result.stdout.trim().split("\n").slice(1);
  return { paths: lines.map((line) => line.replace(/^"|"$/g, "")), ms };
}

// ---------------------------------------------------------------------------------------------
// Memory and CPU of a process and its children (the server's query processes count too)

function processTree(pid) {
  const children = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(entry));
    } catch {
      // gone
    }
  }
  const all = [];
  const stack = [pid];
  while (stack.length > 0) {
    const each = stack.pop();
    all.push(each);
    stack.push(...(children.get(each) ?? []));
  }
  return all;
}

/** Resident memory of `pid` alone (the server) and with its children. */
function memory(pid) {
  const tree = processTree(pid);
  return {
    own: residentBytes(pid),
    tree: tree.reduce((sum, each) => sum + residentBytes(each), 0),
  };
}

/** Resident memory of one process (0 once it is gone). */
function residentBytes(pid) {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** CPU seconds used so far by `pid`'s tree (user + system). */
function cpuSeconds(pid) {
  let ticks = 0;
  for (const each of processTree(pid)) {
    try {
      const stat = readFileSync(`/proc/${each}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone
    }
  }
  return ticks / 100;
}

/**
 * CPU seconds of the server's main thread (its first task: the event loop, where a burst's
 * numbering, sending and statements compete), not of its other threads or query processes.
 */
function mainThreadSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

// ---------------------------------------------------------------------------------------------
// dirq's server

/**
 * Starts `dirq server`, under a watch limit when `limit` is given: the user namespace's own
 * (`/proc/sys/user/max_inotify_watches`). Never `fs.inotify.max_user_watches`: that one is
 * the machine's, even written from inside a namespace.
 */
async function startDirq(limit) {
  const started = performance.now();
  const nodeArgs = values["node-args"].split(" ").filter((arg) => arg !== "");
  const args = [...nodeArgs, BIN, "server", "--host", "127.0.0.1", "--port", "0"];
  // A frozen server's statements are measured, not cut off at the usual 30 s.
  // `GET /live/stats` names the folders without a watch; it does not time live queries.
  const env = {
    ...process.env,
    DIRQ_PROGRESS: "never",
    DIRQ_QUERY_TIMEOUT_MS: "600000",
    DIRQ_LIVE_STATS: "1",
    DIRQ_LIVE_STATS_CPU: "0",
  };
  const child =
    limit === undefined
      ? spawn(process.execPath, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] })
      : spawn(
          "unshare",
          [
            "--user",
            "--map-root-user",
            "sh",
            "-c",
            `echo ${limit} > /proc/sys/user/max_inotify_watches && exec "$0" "$@"`,
            process.execPath,
            ...args,
          ],
          { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] },
        );
  process.on("exit", () => child.kill("SIGKILL"));
  let stderr = "";
  child.once("exit", (code, signal) => (stderr += `[server exited: ${signal ?? code}]\n`));
  child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
  const port = await serverPort(child).catch((error) => {
    throw new Error(`${error.message}\n${stderr}`);
  });
  const runningMs = performance.now() - started;
  // Frames are parsed on a thread of their own (see million-events-client.mjs).
  const client = new Worker(new URL("./million-events-client.mjs", import.meta.url), {
    workerData: { port },
  });
  const listening = new Set();
  const asked = [];
  client.on("message", (message) => {
    if (message.frames !== undefined) {
      // The thread's epoch time on this thread's clock, as the listeners take it.
      const at = message.at - performance.timeOrigin;
      for (const frame of message.frames) for (const listener of listening) listener(frame, at);
    } else if (message.stats !== undefined) asked.shift()?.(message.stats);
  });
  await new Promise((resolve, reject) => {
    client.once("error", reject);
    client.on("message", (message) => message.connected && resolve());
  });
  const listeners = {
    add(listener) {
      listening.add(listener);
      client.postMessage({ forward: true });
    },
    delete(listener) {
      listening.delete(listener);
      client.postMessage({ forward: listening.size > 0 });
    },
  };
  /** Row frames so far, why the stream ended (if it did), the last row frame's time (here). */
  const stats = () =>
    new Promise((resolve) => {
      asked.push((s) => resolve({ ...s, lastRowAt: s.lastRowAt - performance.timeOrigin }));
      client.postMessage({ ask: true });
    });
  const stop = async () => {
    await client.terminate();
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  };
  return {
    pid: child.pid,
    port,
    runningMs,
    listeners,
    stats,
    stderr: () => stderr,
    stop,
  };
}

async function timedQuery(server, sql) {
  const started = performance.now();
  const { status, text } = await postQuery(server.port, sql);
  if (status !== 200) throw new Error(`POST /query ${status}: ${text}`);
  return { ms: performance.now() - started, text };
}

/** Sends fresh probe statements one after another until `stop()`; returns their latencies. */
function probe(server) {
  const samples = [];
  // The probes over 100 ms: when each began (epoch ms) and took, to match a trace.
  const slow = [];
  let running = true;
  let n = 0;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      const startedAt = Date.now();
      await postQuery(server.port, `SELECT ${n++} AS probe`).catch(() => {});
      samples.push(performance.now() - started);
      if (samples.at(-1) > 100) slow.push([startedAt, Math.round(samples.at(-1))]);
      await sleep(10);
    }
  })();
  return {
    samples,
    slow,
    stop: async () => {
      running = false;
      await loop;
      return samples;
    },
  };
}

/** The server's `GET /live/stats` answer (the server runs with `DIRQ_LIVE_STATS=1`). */
async function liveStats(server) {
  const text = await new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: server.port, path: "/live/stats" }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (chunk) => (body += chunk));
      res.on("end", () => resolve(body));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
  return JSON.parse(text);
}

/**
 * Rewrites WRITES files in spread folders, 50 ms apart; latencies from write to row event, all
 * and split by whether the file's folder is one of `unwatched` (the server's own list).
 */
async function writes(server, timeoutMs, unwatched = new Set()) {
  const latencies = [];
  const split = { watched: [], unwatched: [] };
  const pending = new Map();
  const listener = (frame, at) => {
    for (const [path, wroteAt] of pending) {
      if (!frame.includes(`"${path}"`)) continue;
      latencies.push(at - wroteAt);
      const folder = path.slice(0, path.indexOf("/"));
      split[unwatched.has(folder) ? "unwatched" : "watched"].push(at - wroteAt);
      pending.delete(path);
    }
  };
  server.listeners.add(listener);
  for (let i = 0; i < WRITES; i++) {
    const d = Math.floor((i * FOLDERS) / WRITES);
    const path = `${folderName(d)}/f${i % PER_FOLDER}.txt`;
    pending.set(path, performance.now());
    writeFileSync(join(root, path), `written ${Date.now()} ${i}\n`);
    await sleep(50);
  }
  const deadline = performance.now() + timeoutMs;
  while (pending.size > 0 && performance.now() < deadline) await sleep(50);
  server.listeners.delete(listener);
  const missing = { watched: 0, unwatched: 0 };
  for (const path of pending.keys()) {
    missing[unwatched.has(path.slice(0, path.indexOf("/"))) ? "unwatched" : "watched"]++;
  }
  return { latencies, split, missing: pending.size, missingSplit: missing };
}

/** Renames RENAMES folders at once; probes beside it; waits until the index equals a scan. */
async function checkout(server, settleTimeoutMs) {
  const before = memory(server.pid);
  const eventsBefore = (await server.stats()).events;
  let peak = before.own;
  // The server's own memory only: listing the process tree (every /proc entry) ten times a
  // second took CPU from the two cores the burst runs on.
  const sampler = setInterval(() => (peak = Math.max(peak, residentBytes(server.pid))), 100);
  const probes = probe(server);
  const windowStart = Date.now();
  await sleep(200);
  // CPU the server spends on the burst: a figure a loaded machine changes less than wall time.
  const cpuBefore = cpuSeconds(server.pid);
  const mainBefore = mainThreadSeconds(server.pid);
  const pairs = checkoutPairs();
  const targets = pairs.map(([, to]) => basename(to));
  // On the renamer's thread: the probes and their timing go on here meanwhile.
  const { started, renameMs } = await renamer.rename(pairs, RENAME_MS);
  const expectedMoved = String(Math.min(FILES, targets.length * PER_FOLDER));
  // The index has every moved file under its new name and the total unchanged. Only the
  // renamed folders count (after a run that renamed them back, every other folder has the same
  // first letter too), each by a range of the path-table's lookup index: a `GLOB` of the
  // letter read every row of the tree when that letter was every folder's (`d`), so a check
  // then took a core for long and the settle was seen up to a check late.
  const names = targets.map((name) => `('${name}')`).join(",");
  const movedFiles = `WITH targets(name) AS (VALUES ${names}) SELECT count(*) FROM targets JOIN './' AS f ON f.path > targets.name || '/' AND f.path < targets.name || '0'`;
  // Counting the moved files reads an index entry per moved file (at 1M, 100,000: some 30 ms
  // of a query process), and a check every 25 ms took half a core of the two from the burst
  // it measures. So first the last folder renamed, which a watcher hands on last (a few
  // hundred entries); then the moved count; the total (a scan of the whole lookup index) only
  // once that is right: SQLite evaluates a CASE branch only when it is taken.
  const last = targets[targets.length - 1];
  const lastFolder = `SELECT count(*) FROM './' AS f WHERE f.path > '${last}/' AND f.path < '${last}0'`;
  const expectedLast = String(Math.min(FILES, PER_FOLDER));
  const notYet = "'not yet'";
  const whole = `CASE WHEN (${movedFiles}) = ${expectedMoved} THEN '${expectedMoved},' || (SELECT count(*) FROM './') ELSE ${notYet} END`;
  const check = `SELECT CASE WHEN (${lastFolder}) = ${expectedLast} THEN ${whole} ELSE ${notYet} END AS c`;
  let equalAt;
  const checkMs = [];
  while (performance.now() - started < settleTimeoutMs) {
    // A server frozen past Node's header timeout resets the connection: ask again.
    const text = await timedQuery(server, check).then(
      (answer) => {
        checkMs.push(answer.ms);
        return answer.text;
      },
      () => "",
    );
    if (text.includes(`"${expectedMoved},${FILES}"`)) {
      equalAt = performance.now() - started;
      break;
    }
    await sleep(25);
  }
  const cpuToEqual = cpuSeconds(server.pid) - cpuBefore;
  const mainToEqual = mainThreadSeconds(server.pid) - mainBefore;
  const probeSamples = await probes.stop();
  const window = [windowStart, Date.now()];
  const slowProbes = probes.slow.map(([at, ms]) => `+${at - windowStart}:${ms}`).join(" ");
  await sleep(1000);
  const streamed = await server.stats();
  const cpuToLastEvent = cpuSeconds(server.pid) - cpuBefore;
  const mainToLastEvent = mainThreadSeconds(server.pid) - mainBefore;
  clearInterval(sampler);
  // Memory once the burst has settled, taken before the path-list check below: that check
  // pulls every path (a million at 1M, tens of MB of JSON) through the server, so memory
  // after it measures that answer, not what the burst left. The server collects a burst's
  // garbage in rounds up to 9 s after its last change (a loaded machine's timers later); 15 s
  // after the index equals a scan leaves it time.
  await sleep(14000);
  const settled = memory(server.pid).own;
  const live = await timedQuery(server, "SELECT path FROM './' ORDER BY path");
  const fresh = oneShotPaths();
  const parsed = JSON.parse(live.text);
  const livePaths = (Array.isArray(parsed) ? parsed : parsed.rows).map((row) => row.path);
  const same =
    livePaths.length === fresh.paths.length && livePaths.every((p, i) => p === fresh.paths[i]);
  return {
    renameMs,
    equalAt,
    cpu: { toEqual: cpuToEqual, toLastEvent: cpuToLastEvent, mainToEqual, mainToLastEvent },
    lastEventMs: streamed.lastRowAt > started ? streamed.lastRowAt - started : undefined,
    events: streamed.events - eventsBefore,
    cutOff: streamed.cutOff,
    probeSamples,
    window,
    slowProbes,
    checkMs,
    memory: { before: before.own, peak, after: settled, afterCheck: memory(server.pid).own },
    oneShotMs: fresh.ms,
    same,
    livePaths: livePaths.length,
  };
}

/**
 * Over `seconds` with nothing changing and no statement: the server's CPU share, and the
 * checks of the folders without a watch that ended meanwhile (each one's length, files).
 */
async function quiet(server, seconds, limited) {
  const cpuBefore = cpuSeconds(server.pid);
  const checks = [];
  const started = performance.now();
  let last = limited ? (await liveStats(server)).unwatchedChecks : null;
  // Under the limit, until two checks ended too (a pause between checks can be long), 3 min at most.
  const more = () => limited && checks.length < 2 && performance.now() - started < 180_000;
  while (performance.now() - started < seconds * 1000 || more()) {
    await sleep(100);
    if (!limited) continue;
    const now = (await liveStats(server)).unwatchedChecks;
    if (now.checks !== last.checks) {
      checks.push({ ms: now.lastCheckMs, files: now.filesChecked - last.filesChecked });
    }
    last = now;
  }
  const elapsed = (performance.now() - started) / 1000;
  return { cpuShare: (cpuSeconds(server.pid) - cpuBefore) / elapsed, checks, stats: last, elapsed };
}

/**
 * A fresh one-shot scan of exactly `folders` (their files' sizes and times, which a check
 * reads too): a glob of the folders' names, as a user would select them.
 */
function oneShotOf(folders, whole = false) {
  // A glob takes at most 1,024 alternatives: one path-table per thousand folders.
  const sorted = [...folders].sort();
  const parts = [];
  for (let at = 0; at < sorted.length; at += 1000) {
    // One name alone is no alternation: `{name}` would be a capture (any folder).
    const names = sorted.slice(at, at + 1000);
    const glob = names.length === 1 ? `./${names[0]}/*` : `./{${names.join(",")}}/*`;
    parts.push(`SELECT size, mtime FROM '${glob}'`);
  }
  const from = whole ? "'./'" : `(${parts.join(" UNION ALL ")})`;
  const sql = `SELECT count(*) AS n, sum(size) AS bytes, max(mtime) AS newest FROM ${from}`;
  const started = performance.now();
  const result = spawnSync(process.execPath, [BIN, "query", "--format", "csv", sql], {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, DIRQ_PROGRESS: "never" },
  });
  const ms = performance.now() - started;
  if (result.status !== 0) throw new Error(`one-shot query failed: ${result.stderr}`);
  return { ms, files: Number(result.stdout.trim().split("\n")[1]?.split(",")[0]) };
}

async function idle(server, seconds) {
  const cpuBefore = cpuSeconds(server.pid);
  const probes = probe(server);
  await sleep(seconds * 1000);
  const samples = await probes.stop();
  return {
    cpuShare: (cpuSeconds(server.pid) - cpuBefore) / seconds,
    samples,
    memory: memory(server.pid),
  };
}

/** The folders the server has no watch for (top-level names), as it lists them. */
async function unwatchedFolders(server, label) {
  const folders = (await liveStats(server)).unwatchedFolders ?? [];
  const nested = folders.filter((folder) => folder.includes("/") || folder === "");
  report(
    `${label}: ${folders.length} folders without a watch (server's list)${nested.length > 0 ? `, ${nested.length} of them not top-level` : ""}`,
  );
  return folders;
}

/** The checks seen while quiet, beside a one-shot scan (best of 2) of the same folders. */
function reportChecks(label, still, unwatched) {
  const times = still.checks.map((check) => check.ms);
  const files = still.checks.map((check) => check.files);
  report(
    `${label}: checks while quiet: ${times.length} (${times.map((ms) => `${ms} ms`).join(", ")}), files each ${[...new Set(files)].join("/")}; the last one's CPU ${still.stats?.lastCheckCpuMs?.toFixed(0)} ms, pause after it ${still.stats?.periodMs?.toFixed(0)} ms; native ${still.stats?.native}; refused watches ${still.stats?.watchesRefused}`,
  );
  const check = times.length === 0 ? undefined : percentile(times, 50);
  // The whole tree's sizes and times, beside the check: a check's files' share of it.
  const whole = oneShotOf(unwatched, true);
  const share = (whole.ms * (still.checks[0]?.files ?? 0)) / whole.files;
  report(
    `${label}: one-shot scan of the whole tree (${whole.files} files, sizes and times): ${fmt(whole.ms)}; a check (median) / the checked files' share of it = ${check === undefined ? "n/a" : (check / share).toFixed(2)}`,
  );
  // Exactly those folders (the globs' matching is part of it).
  const shots = [0, 1].map(() => oneShotOf(unwatched));
  const best = Math.min(...shots.map((shot) => shot.ms));
  report(
    `${label}: one-shot scan of exactly those ${unwatched.size} folders (${shots[0].files} files): ${shots.map((shot) => fmt(shot.ms)).join(", ")}; a check (median) / the best one-shot = ${check === undefined ? "n/a" : (check / best).toFixed(2)}`,
  );
}

/** The writes, quiet and idle parts (before the checkout). */
async function beforeCheckout(server, label, limit, unwatched) {
  const written = await writes(server, limit === undefined ? 10_000 : 120_000, unwatched);
  const slow = written.latencies.filter((ms) => ms > 1000).length;
  report(
    `${label}: write → row event: ${spread(written.latencies)}; over 1 s ${slow}; never arrived ${written.missing}`,
  );
  if (limit !== undefined) {
    for (const part of ["watched", "unwatched"]) {
      const over = written.split[part].filter((ms) => ms > 1000).length;
      report(
        `${label}:   in ${part} folders: ${spread(written.split[part])}; over 1 s ${over}; never arrived ${written.missingSplit[part]}`,
      );
    }
  }
  const still = await quiet(server, limit === undefined ? 10 : 20, limit !== undefined);
  report(
    `${label}: quiet ${still.elapsed.toFixed(0)} s (no statements): CPU ${(still.cpuShare * 100).toFixed(1)}% of a core`,
  );
  if (limit !== undefined) reportChecks(label, still, unwatched);
  const idled = await idle(server, 20);
  report(
    `${label}: idle 20 s: CPU ${(idled.cpuShare * 100).toFixed(1)}% of a core; probes ${spread(idled.samples)}; memory ${mb(idled.memory.own)}`,
  );
}

async function runDirq(label, limit) {
  const server = await startDirq(limit);
  try {
    report(`${label}: "Running at" after ${fmt(server.runningMs)}`);
    const first = await timedQuery(server, "SELECT count(*) AS n FROM './'");
    report(
      `${label}: first SELECT count(*) ${fmt(first.ms)} (${first.text.trim()}); memory ${mb(memory(server.pid).own)} (with query processes ${mb(memory(server.pid).tree)})`,
    );
    if (limit !== undefined) {
      const warned = /inotify|watch/.exec(server.stderr()) ? server.stderr().trim() : "no warning";
      report(`${label}: stderr: ${warned}`);
    }
    const unwatched = new Set(limit === undefined ? [] : await unwatchedFolders(server, label));
    if (!values["checkout-only"]) await beforeCheckout(server, label, limit, unwatched);
    // The start's own garbage and first checks out of the way, as after the other parts.
    else await sleep(15_000);
    if (values["warm-pool"]) {
      const slow = "SELECT count(*) FROM './' AS a JOIN './' AS b ON a.path = b.path";
      await Promise.all([timedQuery(server, slow), timedQuery(server, slow)]);
    }
    if (values["skip-checkout"]) return;
    for (let round = 1; round <= CHECKOUTS; round++) {
      // The previous round's path-list answer (a million paths) collected first.
      if (round > 1) await sleep(5000);
      const burst = await checkout(server, limit === undefined ? 60_000 : 300_000);
      const of = CHECKOUTS === 1 ? label : `${label}, checkout ${round} of ${CHECKOUTS}`;
      report(
        `${of}: the probes' window (epoch ms, for a profile or trace): ${burst.window.join("-")}; probes over 100 ms (from its start, ms): ${burst.slowProbes || "none"}`,
      );
      report(
        `${of}: ${RENAMES} folders renamed (${(RENAMES * PER_FOLDER).toLocaleString("en-US")} files) in ${fmt(burst.renameMs)}; index equals a fresh scan after ${fmt(burst.equalAt)} from the first rename, ${fmt(burst.equalAt === undefined ? undefined : burst.equalAt - burst.renameMs)} from the last (one-shot scan ${fmt(burst.oneShotMs)}; path lists ${burst.same ? "equal" : `DIFFER: live ${burst.livePaths}`}); last row event after ${fmt(burst.lastEventMs)} (${burst.events} row events${burst.cutOff ? `; the event stream was cut off: ${burst.cutOff}` : ""})`,
      );
      report(
        `${of}: server CPU for the burst: ${burst.cpu.toEqual.toFixed(2)} s until the index equals a scan, ${burst.cpu.toLastEvent.toFixed(2)} s until 1 s after; its main thread ${burst.cpu.mainToEqual.toFixed(2)} s and ${burst.cpu.mainToLastEvent.toFixed(2)} s`,
      );
      report(`${of}: POST /query during the burst: ${spread(burst.probeSamples)}`);
      report(`${of}: the settle check's statements: ${spread(burst.checkMs)}`);
      report(
        `${of}: memory before ${mb(burst.memory.before)}, peak ${mb(burst.memory.peak)}, 15 s after (before the path-list check) ${mb(burst.memory.after)}, after that check ${mb(burst.memory.afterCheck)}`,
      );
    }
  } catch (error) {
    log(`${label}: ${error.message}; the server's stderr:\n${server.stderr()}`);
    throw error;
  } finally {
    await server.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// watchman, beside it

function watchmanCommand(sock, command) {
  const result = spawnSync("watchman", ["--sockname", sock, "--no-spawn", "-j"], {
    input: JSON.stringify(command),
    encoding: "utf8",
    maxBuffer: 1 << 30,
  });
  if (!result.stdout) return { error: result.error?.message ?? (result.stderr || "no answer") };
  return JSON.parse(result.stdout);
}

/**
 * Follows the subscription's messages after a checkout: the distinct old and new names of the
 * renamed folders' files, and when the last of each arrived. A message with
 * `is_fresh_instance` (watchman recrawled and lists every file again) counts apart: its names
 * say nothing of what the renames delivered.
 */
function watchRenames(listeners) {
  const renamed = {
    begun: 0,
    olds: new Set(),
    news: new Set(),
    newsAt: undefined,
    oldsAt: undefined,
    messages: 0,
    fresh: 0,
  };
  const all = RENAMES * PER_FOLDER;
  listeners.add((line, at) => {
    if (renamed.begun === 0 || !line.includes('"subscription"')) return;
    const message = JSON.parse(line);
    renamed.messages++;
    if (message.is_fresh_instance) {
      renamed.fresh++;
      return;
    }
    for (const name of message.files ?? []) {
      const match = /^([dm])(\d+)\/f\d+\.txt$/.exec(name);
      if (match === null || Number(match[2]) >= RENAMES) continue;
      // Each folder went d → m or m → d: the side the first folder went to is the new one.
      (match[1] === (folderName(0)[0] ?? "m") ? renamed.news : renamed.olds).add(name);
    }
    if (renamed.news.size === all) renamed.newsAt ??= at - renamed.begun;
    if (renamed.olds.size === all) renamed.oldsAt ??= at - renamed.begun;
  });
  return renamed;
}

async function runWatchman() {
  const dir = join(DEFAULT_BENCH_DIR, "watchman-state");
  mkdirSync(dir, { recursive: true });
  const sock = join(dir, "sock");
  const started = performance.now();
  const daemon = spawn(
    "watchman",
    [
      "--foreground",
      "--sockname",
      sock,
      "--statefile",
      join(dir, "state"),
      "--logfile",
      join(dir, "log"),
    ],
    { stdio: "ignore" },
  );
  process.on("exit", () => daemon.kill("SIGKILL"));
  try {
    while (!existsSync(sock)) await sleep(20);
    watchmanCommand(sock, ["watch", root]);
    const first = watchmanCommand(sock, [
      "query",
      root,
      { expression: ["type", "f"], fields: ["name"] },
    ]);
    report(
      `watchman: first query after ${fmt(performance.now() - started)} (${first.files?.length ?? first.error} files); memory ${mb(memory(daemon.pid).own)}`,
    );
    // The socket itself, in watchman's JSON encoding (a message a line): its CLI, on a pipe,
    // holds what it prints in a buffer, so the end of a burst sat there until later output
    // pushed it out (and a write's message with it).
    const sub = connect(sock);
    sub.setEncoding("utf8");
    const listeners = new Set();
    let buffer = "";
    sub.on("data", (chunk) => {
      buffer += chunk;
      const lines = buffer.split("\n");
      buffer = lines.pop() ?? "";
      const now = performance.now();
      for (const line of lines) for (const listener of listeners) listener(line, now);
    });
    // Its first message lists every file (a million names at 1M): writes are timed after it.
    const initial = new Promise((resolve) => {
      const first = (line) => {
        if (!line.includes('"subscription"') || !line.includes('"files"')) return;
        listeners.delete(first);
        resolve();
      };
      listeners.add(first);
    });
    sub.write(
      `${JSON.stringify(["subscribe", root, "bench", { expression: ["type", "f"], fields: ["name"] }])}\n`,
    );
    await Promise.race([initial, sleep(120_000)]);
    await sleep(500);
    const server = { listeners, pid: daemon.pid, events: () => 0 };
    const written = await writes(server, 10_000);
    report(
      `watchman: write → subscription: ${spread(written.latencies)}; never arrived ${written.missing}`,
    );
    const renamed = watchRenames(listeners);
    const before = memory(daemon.pid).own;
    const pairs = checkoutPairs();
    // Counted from the first rename; until the thread tells when that was, the time it was
    // asked stands in for it (messages come only after the renames begin).
    renamed.begun = performance.now();
    renamed.begun = (await renamer.rename(pairs, 0)).started;
    const all = RENAMES * PER_FOLDER;
    while (renamed.olds.size + renamed.news.size < 2 * all) {
      if (performance.now() - renamed.begun > 60_000) break;
      await sleep(50);
    }
    report(
      `watchman: ${RENAMES} folders renamed: new names ${renamed.news.size} of ${all} (all after ${fmt(renamed.newsAt)}), old names ${renamed.olds.size} of ${all} (all after ${fmt(renamed.oldsAt)}); ${renamed.messages} messages, ${renamed.fresh} of them a fresh instance (a recrawl: every name, not counted); memory before ${mb(before)}, after ${mb(memory(daemon.pid).own)}`,
    );
    sub.destroy();
  } finally {
    daemon.kill("SIGTERM");
  }
}

// ---------------------------------------------------------------------------------------------

generateTree();
report(
  `${FILES.toLocaleString("en-US")} files in ${FOLDERS} folders; ${RENAMES} folders renamed per checkout; watch limit ${WATCH_LIMIT}`,
);
const only = values.only;
if (!only || only === "full") await runDirq("dirq, every folder watched");
if (!only || only === "limited") await runDirq(`dirq, ${WATCH_LIMIT} watches`, WATCH_LIMIT);
if (!only || only === "watchman") {
  if (findExecutable("watchman")) await runWatchman();
  else report("watchman: not installed (apt-get install watchman)");
}
process.exit(0);
