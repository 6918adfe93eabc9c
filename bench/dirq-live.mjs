// Live queries: `dirq server` over a table of `--files` JSON files of `--rows` rows each
// (100,000 rows by default). One file changes at a time (one row's `v` crosses the filter's
// threshold); the time from the write to the `diff` frame on `GET /live` is measured for
//   - a filter read file by file (incremental):  SELECT ... FROM items WHERE v > 90
//   - a GROUP BY (the whole statement re-runs):  SELECT grp, count(*), sum(v) ... GROUP BY grp
// Then the CPU per change (server and query processes together, each thread's nanoseconds
// from /proc/<pid>/task/<tid>/schedstat, less what the same changes cost with no live query)
// of the incremental filter against the same filter re-run whole (`LIMIT -1`, which answers
// the same and is not read file by file), and of the incremental filter with `--fanout`
// subscribers: the evaluator is shared, so the slope from one to that many is one frame's
// delivery to one subscriber. The four ways alternate in short blocks: each cycle runs one
// block of `--block-changes` changes per way (the order rotates from cycle to cycle), the
// way's subscriptions opened before its block and closed after it, for `--cpu-changes`
// changes per way in all, after `--warm-cycles` cycles not counted (V8 still optimizes the
// refresh's and the live query's code then, on its compiler threads: tens of milliseconds a
// function, which land in whichever block is running). Changes come at a steady pace (`--pace-ms` apart, then
// `--settle-ms` quiet: every block lasts as long, so the server's idle CPU cancels). Each
// cycle's differences from its own block without a live query are what the ratio is made of:
// their medians and spreads, and the ratio of the medians with its spread (a seeded bootstrap
// over the cycles). Until 2026-11-27 the ways ran in three long rounds, so a drift of the
// refresh's own cost between two ways' rounds landed in their difference; the pooled figures
// (every block of a way together, less every block without a live query) are still printed
// and mean what the figures of those rounds meant. The file-by-file runs' own CPU is also
// read in the server (the main thread's own CPU time around each run, `GET /live/stats`;
// `--no-own-cpu` turns that clock off).
// Prints p50/p99 and the load average.
//
// Then, on a server of its own over `--large-rows` rows (files of 1,000), the longest
// event-loop delay of the server's main thread while a live query's large answer (re-run whole
// after one file changed: ORDER BY) is diffed, with the diff thread (the default) and with the
// diff on the main thread (DIRQ_LIVE_DIFF_THREAD_BYTES larger than any answer), beside the same
// changes with no live query (the refresh's own delay). `--large-rows 0` skips it.
//
//   node bench/dirq-live.mjs [--files 1000] [--rows 100] [--changes 100]
//                            [--cpu-changes 300] [--pace-ms 100] [--block-changes 20]
//                            [--settle-ms 1000] [--warm-cycles 1] [--fanout 10] [--no-own-cpu] [--large-rows 200000] [--large-changes 10] [--json]
//                            [--bin path/to/dirq.cjs]
// `--bin` runs another build's launcher (a copy of main's `packages/dirq` beside this one, say),
// so that two builds' runs can alternate on a shared machine.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  DIRQ_BIN,
  DIRQ_ENV,
  log,
  parseOptions,
  percentile,
  positiveInteger,
  readSseFrames,
  requireDirqBuilt,
  seededRandom,
} from "./lib.mjs";

const USAGE =
  "usage: node bench/dirq-live.mjs [--files 1000] [--rows 100] [--changes 100] [--cpu-changes 300] [--pace-ms 100] [--block-changes 20] [--settle-ms 1000] [--warm-cycles 1] [--fanout 10] [--no-own-cpu] [--large-rows 200000] [--large-changes 10] [--json] [--bin path/to/dirq.cjs]";
const options = parseOptions(
  process.argv.slice(2),
  {
    files: { type: "string", default: "1000" },
    rows: { type: "string", default: "100" },
    changes: { type: "string", default: "100" },
    "cpu-changes": { type: "string", default: "300" },
    "pace-ms": { type: "string", default: "100" },
    "block-changes": { type: "string", default: "20" },
    "settle-ms": { type: "string", default: "1000" },
    "warm-cycles": { type: "string", default: "1" },
    fanout: { type: "string", default: "10" },
    "no-own-cpu": { type: "boolean", default: false },
    "large-rows": { type: "string", default: "200000" },
    "large-changes": { type: "string", default: "10" },
    json: { type: "boolean", default: false },
    bin: { type: "string", default: DIRQ_BIN },
  },
  USAGE,
);
const FILES = positiveInteger(options.files, "--files");
const ROWS = positiveInteger(options.rows, "--rows");
const CHANGES = positiveInteger(options.changes, "--changes");
const CPU_CHANGES = positiveInteger(options["cpu-changes"], "--cpu-changes");
const PACE_MS = positiveInteger(options["pace-ms"], "--pace-ms");
const BLOCK_CHANGES = positiveInteger(options["block-changes"], "--block-changes");
const CYCLES = Math.ceil(CPU_CHANGES / BLOCK_CHANGES);
const SETTLE_MS = positiveInteger(options["settle-ms"], "--settle-ms");
const WARM_CYCLES =
  options["warm-cycles"] === "0" ? 0 : positiveInteger(options["warm-cycles"], "--warm-cycles");
const FANOUT = positiveInteger(options.fanout, "--fanout");
const LARGE_ROWS =
  options["large-rows"] === "0" ? 0 : positiveInteger(options["large-rows"], "--large-rows");
const LARGE_CHANGES = positiveInteger(options["large-changes"], "--large-changes");
requireDirqBuilt();

const CONFIG = `[[table]]
name = "items"
glob = "data/*.json"
format = "json"
schema = { id = "INTEGER", grp = "TEXT", v = "INTEGER", name = "TEXT" }
`;
const FILTER = "SELECT id, name, v FROM items WHERE v > 90";
const FILTER_WHOLE = `${FILTER} LIMIT -1`;
const GROUP_BY = "SELECT grp, count(*) AS n, sum(v) AS s FROM items GROUP BY grp";

function fileRows(file, hot) {
  return Array.from({ length: ROWS }, (_, i) => ({
    id: file * ROWS + i,
    grp: `g${(file + i) % 20}`,
    // Row 0 of each file is the one that moves; the others never pass the filter's threshold.
    v: i === 0 && hot ? 95 : (i * 7 + file) % 90,
    name: `n${i}`,
  }));
}

function writeFile(root, file, hot) {
  writeFileSync(join(root, "data", `f${file}.json`), JSON.stringify(fileRows(file, hot)));
}

const LOOP_DELAY = join(dirname(fileURLToPath(import.meta.url)), "server-loop-delay.cjs");

/** `env`: more of the server's environment; `onStderr(line)`: its stderr lines, else passed on. */
async function startServer(root, env = {}, onStderr = null) {
  const args = [options.bin, "server", "-c", "dirq.toml", "--host", "127.0.0.1", "--port", "0"];
  const child = spawn(process.execPath, args, {
    cwd: root,
    // A live query stops at once when its phase ends: the next phase's CPU is its own.
    env: {
      ...DIRQ_ENV,
      DIRQ_LIVE_LINGER_MS: "1",
      DIRQ_LIVE_STATS: "1",
      // The runs' own clock costs them about as much as their work: off, the CPU per change
      // from outside is the runs' alone (and the in-server figure reads 0).
      ...(options["no-own-cpu"] ? { DIRQ_LIVE_STATS_CPU: "0" } : {}),
      ...env,
    },
    stdio: ["ignore", "pipe", onStderr === null ? "inherit" : "pipe"],
  });
  if (onStderr !== null) {
    let rest = "";
    child.stderr.setEncoding("utf8").on("data", (chunk) => {
      const lines = (rest + chunk).split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) onStderr(line);
    });
  }
  let out = "";
  const port = await new Promise((resolve, reject) => {
    child.stdout.setEncoding("utf8").on("data", (chunk) => {
      out += chunk;
      const match = /Running at \S+:(\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once("exit", () => reject(new Error(`server exited: ${out}`)));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

/** One `/live` stream: `onFrame(event, data)` for each frame; resolves at its snapshot. */
async function subscribe(url, sql, onFrame) {
  const controller = new globalThis.AbortController();
  const response = await globalThis.fetch(`${url}/live?sql=${encodeURIComponent(sql)}`, {
    signal: controller.signal,
  });
  if (response.status !== 200) throw new Error(`/live ${sql}: ${await response.text()}`);
  let snapshot;
  const ready = new Promise((resolve) => (snapshot = resolve));
  void readSseFrames(response.body, (event, data) => {
    if (event === "snapshot") snapshot();
    onFrame(event, data);
  });
  await ready;
  return { close: () => controller.abort() };
}

/**
 * CPU seconds of one process's threads alive now, its main thread apart, from each thread's
 * scheduler statistics (`/proc/<pid>/task/<tid>/schedstat`: nanoseconds on the CPU; `stat`'s
 * 10 ms ticks, over a few hundred changes, left differences of a few tenths of a millisecond
 * per change to chance). A thread that ended meanwhile takes its time with it: the server's
 * threads (V8's, libuv's pool, the watcher and diff threads) and its query processes last.
 */
function processCpu(pid) {
  const seconds = (tid) =>
    Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]) / 1e9;
  let all = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      all += seconds(tid);
    } catch {
      // A thread that ended meanwhile.
    }
  }
  return { all, main: seconds(pid) };
}

/**
 * CPU seconds of the server by part, from /proc: its main thread, its other threads (V8's
 * collector and compiler threads, libuv's pool, the watcher and diff threads) and its child
 * processes (the query processes).
 */
function treeCpuParts(pid) {
  const parts = { main: 0, threads: 0, children: 0 };
  const visit = (id, isServer) => {
    try {
      const cpu = processCpu(id);
      if (isServer) {
        parts.main += cpu.main;
        parts.threads += cpu.all - cpu.main;
      } else parts.children += cpu.all;
      const children = readFileSync(`/proc/${id}/task/${id}/children`, "utf8").trim();
      for (const child of children ? children.split(" ") : []) visit(Number(child), false);
    } catch {
      // A process that ended meanwhile.
    }
  };
  visit(pid, true);
  return parts;
}

/**
 * Makes `CHANGES` changes one after another, each waiting for `waitFor()` (the diff frames of
 * the live queries subscribed); the latencies.
 */
async function changes(root, waitFor) {
  const latencies = new Map();
  for (let n = 0; n < CHANGES; n++) {
    const file = (n * 7919) % FILES;
    const started = performance.now();
    const arrived = waitFor();
    writeFile(root, file, true);
    for (const [name, at] of Object.entries(await arrived)) {
      if (!latencies.has(name)) latencies.set(name, []);
      latencies.get(name).push(at - started);
    }
    // The file goes back, so that every change moves the answer.
    const back = waitFor();
    writeFile(root, file, false);
    await back;
  }
  return { latencies };
}

/** Waits for the next diff frame of every stream in `names`; their arrival times. */
function diffWaiter(streams) {
  return () =>
    new Promise((resolve) => {
      const times = {};
      for (const [name, stream] of streams) {
        stream.next = () => {
          times[name] = performance.now();
          stream.next = null;
          if (Object.keys(times).length === streams.size) resolve(times);
        };
      }
    });
}

/** A phase with the live queries `named` subscribed: each one's write-to-diff latencies. */
async function phase(root, server, named) {
  const streams = new Map();
  const closers = [];
  for (const [name, sql] of Object.entries(named)) {
    const stream = { next: null };
    streams.set(name, stream);
    const sub = await subscribe(server.url, sql, (event) => event === "diff" && stream.next?.());
    closers.push(sub);
  }
  const result = await changes(root, diffWaiter(streams));
  for (const sub of closers) sub.close();
  await new Promise((resolve) => setTimeout(resolve, 500));
  return result;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Which files are hot now: each paced change flips one, so every change moves the answer. */
const hotFiles = new Set();

/**
 * `count` changes `PACE_MS` apart with the live query `sql` subscribed (`null`: none), then
 * `SETTLE_MS` quiet for the last one to be taken in; the server tree's CPU seconds over it all, and
 * the file-by-file runs' own CPU milliseconds (`GET /live/stats`).
 */
async function pacedPhase(root, server, sql, count, first, subscribers = 1) {
  const subs = [];
  for (let n = 0; sql !== null && n < subscribers; n++) {
    subs.push(await subscribe(server.url, sql, () => {}));
  }
  const cpuBefore = treeCpuParts(server.child.pid);
  const started = performance.now();
  for (let n = 0; n < count; n++) {
    await sleep(started + n * PACE_MS - performance.now());
    const file = ((first + n) * 7919) % FILES;
    const hot = !hotFiles.has(file);
    if (hot) hotFiles.add(file);
    else hotFiles.delete(file);
    writeFile(root, file, hot);
  }
  await sleep(started + count * PACE_MS + SETTLE_MS - performance.now());
  const cpuAfter = treeCpuParts(server.child.pid);
  const parts = Object.fromEntries(
    Object.keys(cpuAfter).map((part) => [part, cpuAfter[part] - cpuBefore[part]]),
  );
  const cpu = parts.main + parts.threads + parts.children;
  const stats = await (await globalThis.fetch(`${server.url}/live/stats`)).json();
  const query = stats.queries.find((q) => q.sql === sql);
  for (const sub of subs) sub.close();
  await sleep(500);
  return { cpu, parts, byFileCpuMs: query?.byFileCpuMs ?? 0, runs: query?.runs ?? 0 };
}

/** The ways the CPU per change is measured: the live query subscribed (`null`: none), and how many. */
const WAYS = {
  baseline: { sql: null, subscribers: 1 },
  incremental: { sql: FILTER, subscribers: 1 },
  whole: { sql: FILTER_WHOLE, subscribers: 1 },
  fanout: { sql: FILTER, subscribers: FANOUT },
};

/** `values` at the percentiles the spreads are given with: median, quartiles, extremes. */
function spread(values) {
  return {
    median: percentile(values, 50),
    p25: percentile(values, 25),
    p75: percentile(values, 75),
    min: Math.min(...values),
    max: Math.max(...values),
    n: values.length,
  };
}

/**
 * The ratio of the medians of two per-cycle series (`top[i]`, `bottom[i]` from cycle i), and
 * its spread: the 10th and 90th percentiles of the same ratio over cycles drawn again with
 * replacement (a seeded bootstrap of 2,000 draws, the same on every run of the same figures).
 */
function ratioOfMedians(top, bottom) {
  const ratio = (a, b) => {
    const below = percentile(b, 50);
    return below > 0 ? percentile(a, 50) / below : Infinity;
  };
  const random = seededRandom(65);
  const draws = [];
  for (let draw = 0; draw < 2000; draw++) {
    const picked = Array.from({ length: top.length }, () => Math.floor(random() * top.length));
    draws.push(
      ratio(
        picked.map((i) => top[i]),
        picked.map((i) => bottom[i]),
      ),
    );
  }
  return { ratio: ratio(top, bottom), p10: percentile(draws, 10), p90: percentile(draws, 90) };
}

/**
 * CPU per change of the four ways, measured in short blocks that alternate: `CYCLES` cycles,
 * each one block of `BLOCK_CHANGES` changes per way (the order rotates from cycle to cycle),
 * the way's subscriptions opened before its block and closed after it. A drift of the
 * refresh's own cost (the machine's load, the collector's rhythm) then lands on every way of a
 * cycle alike, and each cycle's differences (file by file less none, whole less none) are
 * read within the cycle. Returns the pooled figures (every block of a way together: what the
 * bench printed when it ran each way in long rounds) and the per-cycle ones.
 */
async function cpuPhases(root, server) {
  const names = Object.keys(WAYS);
  const emptyTotal = () => ({
    cpu: 0,
    byFileCpuMs: 0,
    runs: 0,
    parts: { main: 0, threads: 0, children: 0 },
  });
  const totals = Object.fromEntries(names.map((name) => [name, emptyTotal()]));
  const cycles = [];
  let first = 0;
  for (let cycle = -WARM_CYCLES; cycle < CYCLES; cycle++) {
    const warming = cycle < 0;
    const figures = {};
    for (let i = 0; i < names.length; i++) {
      const name = names[(i + cycle + WARM_CYCLES) % names.length];
      const { sql, subscribers } = WAYS[name];
      const result = await pacedPhase(root, server, sql, BLOCK_CHANGES, first, subscribers);
      first += BLOCK_CHANGES;
      if (warming) continue;
      figures[name] = (result.cpu / BLOCK_CHANGES) * 1000;
      for (const field of ["cpu", "byFileCpuMs", "runs"]) totals[name][field] += result[field];
      for (const part of Object.keys(result.parts)) totals[name].parts[part] += result.parts[part];
    }
    if (!warming) cycles.push(figures);
  }
  return { ...pooledCpu(totals, BLOCK_CHANGES * CYCLES), ...perCycleCpu(cycles) };
}

/** The per-cycle differences from the refresh alone, their spreads, and the ratio's. */
function perCycleCpu(cycles) {
  const beyond = (name) => cycles.map((c) => c[name] - c.baseline);
  const incremental = beyond("incremental");
  const whole = beyond("whole");
  const delivery = cycles.map((c) => (c.fanout - c.incremental) / (FANOUT - 1));
  const evaluator = incremental.map((v, i) => v - delivery[i]);
  return {
    cycles,
    perCycle: {
      baseline: spread(cycles.map((c) => c.baseline)),
      incremental: spread(incremental),
      whole: spread(whole),
      delivery: spread(delivery),
      ratio: ratioOfMedians(whole, incremental),
      ratioWithoutDelivery: ratioOfMedians(
        whole.map((v, i) => v - delivery[i]),
        evaluator,
      ),
    },
  };
}

/** Every block of a way together: CPU per change beyond the refresh's own, and by part. */
function pooledCpu(totals, changes) {
  const perChange = (name) => (totals[name].cpu / changes) * 1000;
  const incremental = perChange("incremental") - perChange("baseline");
  const whole = perChange("whole") - perChange("baseline");
  const own = totals.incremental.byFileCpuMs / changes;
  // Each subscriber more costs one frame's delivery (the evaluator is shared): the slope
  // between one and FANOUT subscribers is the delivery's cost, the rest the evaluator's.
  const delivery = (perChange("fanout") - perChange("incremental")) / (FANOUT - 1);
  // Where each way's CPU beyond the refresh goes: main thread, other threads, query processes.
  const partsPerChange = (name) =>
    Object.fromEntries(
      Object.entries(totals[name].parts).map(([part, s]) => [
        part,
        ((s - totals.baseline.parts[part]) / changes) * 1000,
      ]),
    );
  return {
    baselineParts: Object.fromEntries(
      Object.entries(totals.baseline.parts).map(([part, s]) => [part, (s / changes) * 1000]),
    ),
    incrementalParts: partsPerChange("incremental"),
    fanoutParts: partsPerChange("fanout"),
    fanout: FANOUT,
    deliveryPerSubscriber: delivery,
    evaluatorOnly: incremental - delivery,
    ratioWithoutDelivery:
      incremental - delivery > 0 ? (whole - delivery) / (incremental - delivery) : null,
    wholeParts: partsPerChange("whole"),
    changes,
    blockChanges: BLOCK_CHANGES,
    paceMs: PACE_MS,
    baseline: perChange("baseline"),
    incremental,
    whole,
    ratio: incremental > 0 ? whole / incremental : null,
    byFileOwn: own,
    byFileRuns: totals.incremental.runs,
    ownRatio: own > 0 ? whole / own : null,
  };
}

function summary(values) {
  return { p50: percentile(values, 50), p99: percentile(values, 99), n: values.length };
}

const LARGE_SQL = "SELECT id, grp, v, name FROM items ORDER BY id";
const LARGE_FILE_ROWS = 1000;

function writeLargeFile(root, file, hot) {
  const rows = Array.from({ length: LARGE_FILE_ROWS }, (_, i) => {
    const id = file * LARGE_FILE_ROWS + i;
    return { id, grp: `g${id % 20}`, v: i === 0 && hot ? 95 : (id * 7) % 90, name: `n${i}` };
  });
  writeFileSync(join(root, "data", `f${file}.json`), JSON.stringify(rows));
}

/**
 * A `/live` stream read for its event names only (a large snapshot is not parsed):
 * `onEvent(name)` for each frame; resolves at the snapshot.
 */
async function watchEvents(url, sql, onEvent) {
  const controller = new globalThis.AbortController();
  const response = await globalThis.fetch(`${url}/live?sql=${encodeURIComponent(sql)}`, {
    signal: controller.signal,
  });
  if (response.status !== 200) throw new Error(`/live ${sql}: ${await response.text()}`);
  let snapshot;
  const ready = new Promise((resolve) => (snapshot = resolve));
  void (async () => {
    const decoder = new globalThis.TextDecoder();
    let tail = "";
    try {
      for await (const chunk of response.body) {
        const text = tail + decoder.decode(chunk, { stream: true });
        for (const match of text.matchAll(/(?:^|\n)event: (\w+)\n/g)) {
          if (match[1] === "snapshot") snapshot();
          onEvent(match[1]);
        }
        tail = text.slice(-24);
        // A name cut by the chunk's end is found again in the next one; not a whole one twice.
        const lastLine = tail.lastIndexOf("\n");
        tail = lastLine === -1 ? tail : tail.slice(lastLine);
      }
    } catch {
      // Aborted at the end of the phase.
    }
  })();
  await ready;
  return { close: () => controller.abort() };
}

/**
 * The longest main-thread event-loop delay the server reported while each change was taken in
 * (from the write to the diff frame, or to a quiet moment without a live query, and the report
 * that follows), with the diff thread from `threadBytes` bytes up (`null`: the server's default).
 */
async function largeAnswerDelays(threadBytes) {
  const root = mkdtempSync(join(tmpdir(), "dirq-live-large-bench-"));
  mkdirSync(join(root, "data"));
  writeFileSync(join(root, "dirq.toml"), CONFIG);
  const files = Math.ceil(LARGE_ROWS / LARGE_FILE_ROWS);
  for (let file = 0; file < files; file++) writeLargeFile(root, file, false);
  const reports = [];
  const server = await startServer(
    root,
    {
      ...(threadBytes === null ? {} : { DIRQ_LIVE_DIFF_THREAD_BYTES: String(threadBytes) }),
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --require ${LOOP_DELAY}`.trim(),
    },
    (line) => {
      const match = /^dirq-loop-delay (\S+)$/.exec(line);
      if (match) reports.push({ at: performance.now(), ms: Number(match[1]) });
      else process.stderr.write(`${line}\n`);
    },
  );
  try {
    const run = async (waitFor) => {
      const worst = [];
      for (let n = 0; n < LARGE_CHANGES; n++) {
        for (const hot of [true, false]) {
          const file = (n * 37) % files;
          const started = performance.now();
          const done = waitFor();
          writeLargeFile(root, file, hot);
          await done;
          // The report that covers the end comes within its interval.
          await new Promise((resolve) => setTimeout(resolve, 300));
          const during = reports.filter((r) => r.at >= started).map((r) => r.ms);
          worst.push(Math.max(0, ...during));
        }
      }
      return worst;
    };
    const refreshOnly = await run(() => new Promise((resolve) => setTimeout(resolve, 1500)));
    let onDiff = null;
    const live = await watchEvents(server.url, LARGE_SQL, (event) => {
      if (event === "diff") onDiff?.();
    });
    const withLive = await run(() => new Promise((resolve) => (onDiff = resolve)));
    live.close();
    return { refreshOnly, withLive };
  } finally {
    server.child.kill("SIGTERM");
    await new Promise((resolve) => server.child.once("exit", resolve));
    rmSync(root, { recursive: true, force: true });
  }
}

async function largeAnswerPhase() {
  if (LARGE_ROWS === 0) return null;
  log(`${LARGE_ROWS} rows re-run whole (ORDER BY); ${LARGE_CHANGES} changes, each made and undone`);
  const thread = await largeAnswerDelays(null);
  const mainThread = await largeAnswerDelays(Number.MAX_SAFE_INTEGER);
  const worst = (list) => ({ p50: percentile(list, 50), max: Math.max(...list), n: list.length });
  return {
    rows: LARGE_ROWS,
    refreshOnly: worst([...thread.refreshOnly, ...mainThread.refreshOnly]),
    diffThread: worst(thread.withLive),
    mainThread: worst(mainThread.withLive),
  };
}

function printCpu(cpu) {
  const ms = (v) => `${v.toFixed(2)} ms`;
  const range = (r) =>
    `median ${ms(r.median)} (quartiles ${r.p25.toFixed(2)}-${r.p75.toFixed(2)}, extremes ${r.min.toFixed(2)}-${r.max.toFixed(2)}, ${r.n} cycles)`;
  const times = (r) =>
    `${Number.isFinite(r.ratio) ? r.ratio.toFixed(1) : "-"}x (10th-90th percentile ${r.p10.toFixed(1)}-${Number.isFinite(r.p90) ? r.p90.toFixed(1) : "inf"}x)`;
  const c = cpu.perCycle;
  console.log(
    `CPU per change, per cycle of alternating blocks (${cpu.blockChanges} changes each, ${cpu.paceMs} ms apart): the refresh's own ${range(c.baseline)}`,
  );
  console.log(`  file by file beyond it: ${range(c.incremental)}`);
  console.log(`  whole re-run beyond it: ${range(c.whole)}`);
  console.log(`  whole re-run / file by file, ratio of medians: ${times(c.ratio)}`);
  console.log(
    `  one frame's delivery per subscriber: ${range(c.delivery)}; ratio with one delivery taken out of both: ${times(c.ratioWithoutDelivery)}`,
  );
  console.log(
    `pooled (every block of a way together, ${cpu.changes} changes per way), beyond the refresh's own ${ms(cpu.baseline)}: file by file ${ms(cpu.incremental)}, whole re-run ${ms(cpu.whole)} (${cpu.ratio === null ? "file by file within the noise" : `${cpu.ratio.toFixed(1)}x`})`,
  );
  console.log(
    `file-by-file runs' own CPU in the server: ${ms(cpu.byFileOwn)} per change (${cpu.byFileRuns} runs); whole re-run ${cpu.ownRatio === null ? "-" : `${cpu.ownRatio.toFixed(1)}x`} that`,
  );
  const cycles = cpu.cycles.map(
    (r) =>
      `${r.baseline.toFixed(2)}/${r.incremental.toFixed(2)}/${r.whole.toFixed(2)}/${r.fanout.toFixed(2)}`,
  );
  console.log(
    `per cycle, ms per change (none/file by file/whole/file by file x${cpu.fanout}): ${cycles.join(", ")}`,
  );
  const parts = (p) =>
    `main thread ${ms(p.main)}, other threads ${ms(p.threads)}, query processes ${ms(p.children)}`;
  console.log(`the refresh's own, by part: ${parts(cpu.baselineParts)}`);
  console.log(`file by file beyond the refresh, by part: ${parts(cpu.incrementalParts)}`);
  console.log(`whole re-run beyond the refresh, by part: ${parts(cpu.wholeParts)}`);
  console.log(
    `file by file with ${cpu.fanout} subscribers beyond the refresh, by part: ${parts(cpu.fanoutParts)}`,
  );
  console.log(
    `pooled: one frame's delivery per subscriber (slope from 1 to ${cpu.fanout}): ${ms(cpu.deliveryPerSubscriber)}; file by file less one delivery ${ms(cpu.evaluatorOnly)}; whole re-run less one delivery / that: ${cpu.ratioWithoutDelivery === null ? "-" : `${cpu.ratioWithoutDelivery.toFixed(1)}x`}`,
  );
}

async function main() {
  const root = mkdtempSync(join(tmpdir(), "dirq-live-bench-"));
  mkdirSync(join(root, "data"));
  writeFileSync(join(root, "dirq.toml"), CONFIG);
  for (let file = 0; file < FILES; file++) writeFile(root, file, false);
  const server = await startServer(root);
  try {
    log(
      `${FILES * ROWS} rows in ${FILES} files; ${CHANGES} changes per phase (each made and undone)`,
    );
    const latency = await phase(root, server, { filter: FILTER, groupBy: GROUP_BY });
    log(
      `CPU: ${CYCLES} cycles of one block of ${BLOCK_CHANGES} changes per way, ${PACE_MS} ms apart (no live query, file by file, whole, file by file x${FANOUT}), ways alternating`,
    );
    const cpu = await cpuPhases(root, server);
    const result = {
      rows: FILES * ROWS,
      filterLatencyMs: summary(latency.latencies.get("filter")),
      groupByLatencyMs: summary(latency.latencies.get("groupBy")),
      cpuPerChangeMs: cpu,
      largeAnswerLoopDelayMs: await largeAnswerPhase(),
      loadAverage: readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" "),
    };
    if (options.json) console.log(JSON.stringify(result, null, 2));
    else {
      const ms = (s) => `p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms (${s.n} changes)`;
      console.log(`filter (incremental), write -> diff frame: ${ms(result.filterLatencyMs)}`);
      console.log(`GROUP BY (whole re-run), write -> diff frame: ${ms(result.groupByLatencyMs)}`);
      printCpu(result.cpuPerChangeMs);
      const large = result.largeAnswerLoopDelayMs;
      if (large !== null) {
        const delay = (d) =>
          `p50 ${d.p50.toFixed(1)} ms, max ${d.max.toFixed(1)} ms (${d.n} changes)`;
        console.log(
          `longest main-thread event-loop delay per change, ${large.rows} rows re-run whole: diff thread ${delay(large.diffThread)}; diff on the main thread ${delay(large.mainThread)}; no live query ${delay(large.refreshOnly)}`,
        );
      }
      console.log(`load average: ${result.loadAverage}`);
    }
  } finally {
    server.child.kill("SIGTERM");
    await new Promise((resolve) => server.child.once("exit", resolve));
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
