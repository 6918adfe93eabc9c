// What taking in one file-by-file run costs against the size of the answer: one row leaves
// and one joins (with a key: one row changes in place) in an answer without an order of its
// own, of 1,000 to 300,000 rows. Two ways, the same diffs: `RowSlots` (what a live query
// holds: the cost of the changed rows) and `diffAnswers` over the whole answer (the way before
// it: linear in the answer). CPU microseconds per run on this thread, and the load average.
//
//   node bench/dirq-live-byfile.mjs [--runs 300] [--json]
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { log, parseOptions, positiveInteger, REPO_ROOT, requireDirqBuilt } from "./lib.mjs";

const USAGE = "usage: node bench/dirq-live-byfile.mjs [--runs 300] [--json]";
const options = parseOptions(
  process.argv.slice(2),
  { runs: { type: "string", default: "300" }, json: { type: "boolean", default: false } },
  USAGE,
);
const RUNS = positiveInteger(options.runs, "--runs");
requireDirqBuilt();

const live = join(REPO_ROOT, "packages", "dirq", "dist", "src", "live");
const { RowSlots } = await import(pathToFileURL(join(live, "row-slots.js")).href);
const { diffAnswers, keyOf } = await import(pathToFileURL(join(live, "live-diff.js")).href);

const rowText = (id, v) => JSON.stringify({ id, name: `n${id % 1000}`, v });

/** The runs: each moves one row's `v` (a row leaves, its changed self joins). */
function deltas(rows) {
  const out = [];
  for (let n = 0; n < RUNS; n++) {
    const id = (n * 7919) % rows;
    out.push({ id, v: n + 1 });
  }
  return out;
}

/** CPU microseconds per run for `take` (given the held rows and a run's delta). */
function measure(rows, runs, take) {
  const current = new Map(Array.from({ length: rows }, (_, id) => [id, rowText(id, 0)]));
  const step = ({ id, v }) => {
    const delta = { gone: [current.get(id)], joined: [rowText(id, v)] };
    current.set(id, delta.joined[0]);
    return delta;
  };
  const started = process.cpuUsage();
  for (const run of runs) take(step(run));
  const used = process.cpuUsage(started);
  return (used.user + used.system) / runs.length;
}

function slotsWay(rows, key) {
  const slots = new RowSlots(Array.from({ length: rows }, (_, id) => rowText(id, 0)));
  const pairBy = key === null ? null : (row) => keyOf(row, key);
  return (delta) => slots.take(delta, pairBy);
}

function wholeWay(rows, key) {
  let held = Array.from({ length: rows }, (_, id) => rowText(id, 0));
  return (delta) => {
    const made = diffAnswers(held, { delta }, { ordered: false, key });
    held = made.rows;
  };
}

const results = [];
for (const key of [null, ["id"]]) {
  for (const rows of [1000, 10000, 100000, 300000]) {
    const runs = deltas(rows);
    const slots = measure(rows, runs, slotsWay(rows, key));
    const whole = measure(rows, runs, wholeWay(rows, key));
    results.push({ key: key?.join(",") ?? null, rows, slotsMicros: slots, wholeMicros: whole });
  }
}
const loadAverage = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
if (options.json) console.log(JSON.stringify({ runs: RUNS, results, loadAverage }, null, 2));
else {
  log(`CPU µs per file-by-file run (${RUNS} runs, one row out and one in)`);
  console.log("key     rows   RowSlots  whole answer");
  for (const r of results) {
    const cells = [r.slotsMicros, r.wholeMicros].map((c) => c.toFixed(1).padStart(12));
    console.log(`${(r.key ?? "none").padEnd(5)} ${String(r.rows).padStart(6)} ${cells.join(" ")}`);
  }
  console.log(`load average: ${loadAverage}`);
}
