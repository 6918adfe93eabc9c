// Where a live query's whole answer should be diffed: on the main thread, or on the diff
// thread (packages/dirq/src/live/large-diff.ts, LARGE_DIFF_BYTES). For answers of growing size
// (one row changed between two runs, ordered and unordered), the main thread's busy time per
// answer (event-loop utilization: what every other request waits for) and the wall time to the
// diff, each way. Prints a table and the load average.
//
//   node bench/dirq-live-diff.mjs [--repeats 10] [--json]
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { log, parseOptions, positiveInteger, REPO_ROOT, requireDirqBuilt } from "./lib.mjs";

const USAGE = "usage: node bench/dirq-live-diff.mjs [--repeats 10] [--json]";
const options = parseOptions(
  process.argv.slice(2),
  { repeats: { type: "string", default: "10" }, json: { type: "boolean", default: false } },
  USAGE,
);
const REPEATS = positiveInteger(options.repeats, "--repeats");
requireDirqBuilt();

const live = join(REPO_ROOT, "packages", "dirq", "dist", "src", "live");
const { DiffThread } = await import(pathToFileURL(join(live, "large-diff.js")).href);
const { LiveAnswer } = await import(pathToFileURL(join(live, "live-answer.js")).href);

/** Two answers of `n` rows that differ in one row, as a query process writes them. */
function answers(n) {
  const rows = Array.from({ length: n }, (_, i) =>
    JSON.stringify({ id: i, grp: `g${i % 20}`, v: (i * 7) % 90, name: `n${i % 1000}` }),
  );
  return [0, 1].map((k) => {
    const copy = [...rows];
    copy[n >> 1] = JSON.stringify({ id: n >> 1, grp: "x", v: k, name: "changed" });
    return Buffer.from(`[${copy.join(",")}]`);
  });
}

/** Mean main-thread busy and wall milliseconds per answer, after a warm-up. */
async function measure(answer, bodies) {
  await answer.whole(Buffer.from(bodies[0]), true);
  for (let n = 0; n < 3; n++) await answer.whole(Buffer.from(bodies[n % 2]), false);
  let busy = 0;
  let wall = 0;
  for (let n = 0; n < REPEATS; n++) {
    const body = Buffer.from(bodies[n % 2]);
    const before = performance.eventLoopUtilization();
    const started = performance.now();
    await answer.whole(body, false);
    wall += performance.now() - started;
    busy += performance.eventLoopUtilization(before).active;
  }
  answer.close();
  return { busyMs: busy / REPEATS, wallMs: wall / REPEATS };
}

const thread = new DiffThread();
const results = [];
try {
  for (const ordered of [true, false]) {
    for (const rows of [300, 1000, 3000, 10000, 30000, 100000]) {
      const bodies = answers(rows);
      const shape = { ordered, key: null };
      const main = await measure(new LiveAnswer(shape, null, 0), bodies);
      const onThread = await measure(new LiveAnswer(shape, thread, 0), bodies);
      results.push({ ordered, rows, bytes: bodies[0].length, main, thread: onThread });
    }
  }
} finally {
  thread.close();
}
const loadAverage = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
if (options.json) console.log(JSON.stringify({ results, loadAverage }, null, 2));
else {
  log("main-thread busy / wall ms per answer, diffed here and on the diff thread");
  console.log("order      rows      bytes   main busy  main wall  thread busy  thread wall");
  for (const r of results) {
    const cells = [r.main.busyMs, r.main.wallMs, r.thread.busyMs, r.thread.wallMs];
    console.log(
      `${(r.ordered ? "ordered" : "unordered").padEnd(9)} ${String(r.rows).padStart(6)} ${String(r.bytes).padStart(10)} ${cells.map((c) => c.toFixed(2).padStart(10)).join(" ")}`,
    );
  }
  console.log(`load average: ${loadAverage}`);
}
