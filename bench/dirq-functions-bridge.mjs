#!/usr/bin/env node
// The design question behind worker-backed functions: SQLite calls a scalar function
// synchronously, the worker answers asynchronously. This compares, in one process and with the
// worker already running, the two ways to bridge that on 10,000 distinct calls:
//   - a synchronous bridge: the function blocks (Atomics.wait) while a helper thread does one
//     round trip with the worker per call;
//   - dirq's passes (WorkerFunctions): calls are collected and streamed to the worker during a
//     first pass, answered in one pipelined exchange, and the statement runs again.
// Run bench/dirq-functions.mjs first: it writes the echo worker this script uses.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { DEFAULT_BENCH_DIR, fail, REPO_ROOT, requireDirqBuilt } from "./lib.mjs";

const ROWS = 10_000;
const RUNS = 5;
const SQL = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${ROWS}) SELECT count(*) AS n, sum(echo(i)) AS total FROM n`;
const dir = join(DEFAULT_BENCH_DIR, "functions");
if (!existsSync(join(dir, "echo-worker.js")))
  fail(`run bench/dirq-functions.mjs first (no ${dir})`);
requireDirqBuilt();

const HELPER = `
const { workerData } = require("node:worker_threads");
const { spawn } = require("node:child_process");
const state = new Int32Array(workerData.sab, 0, 2);
const bytes = new Uint8Array(workerData.sab, 8);
const child = spawn("node", ["echo-worker.js"], { cwd: workerData.dir, stdio: ["pipe", "pipe", "inherit"] });
let buffer = "";
let id = 0;
child.stdout.setEncoding("utf8").on("data", (chunk) => {
  buffer += chunk;
  let newline;
  while ((newline = buffer.indexOf("\\n")) >= 0) {
    const out = Buffer.from(buffer.slice(0, newline));
    buffer = buffer.slice(newline + 1);
    bytes.set(out);
    Atomics.store(state, 1, out.length);
    Atomics.store(state, 0, 2);
    Atomics.notify(state, 0);
    waitForRequest();
  }
});
function waitForRequest() {
  const current = Atomics.load(state, 0);
  const go = () => {
    if (Atomics.load(state, 0) !== 1) return waitForRequest();
    const args = JSON.parse(Buffer.from(bytes.subarray(0, Atomics.load(state, 1))).toString());
    child.stdin.write(JSON.stringify({ id: ++id, args }) + "\\n");
  };
  if (current === 1) return go();
  const waited = Atomics.waitAsync(state, 0, current);
  if (waited.async) waited.value.then(go);
  else go();
}
waitForRequest();
`;

function syncBridge() {
  const sab = new SharedArrayBuffer(8 + 65536);
  const state = new Int32Array(sab, 0, 2);
  const bytes = new Uint8Array(sab, 8);
  const helper = new Worker(HELPER, { eval: true, workerData: { sab, dir } });
  helper.unref();
  return (args) => {
    const request = Buffer.from(JSON.stringify(args.map(Number)));
    bytes.set(request);
    Atomics.store(state, 1, request.length);
    Atomics.store(state, 0, 1);
    Atomics.notify(state, 0);
    Atomics.wait(state, 0, 1);
    const reply = JSON.parse(Buffer.from(bytes.subarray(0, Atomics.load(state, 1))).toString());
    Atomics.store(state, 0, 0);
    return reply.result;
  };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function main() {
  const require = createRequire(join(REPO_ROOT, "packages", "dirq", "package.json"));
  const Database = require("@rocicorp/zero-sqlite3");
  const call = syncBridge();
  const db = new Database(":memory:");
  db.function("echo", { varargs: true }, (...args) => call(args));
  db.prepare("SELECT echo(1)").get(); // the worker is started before timing
  const bridge = [];
  for (let run = 0; run < RUNS; run++) {
    const started = performance.now();
    db.prepare(SQL).get();
    bridge.push(performance.now() - started);
  }

  const dist = join(REPO_ROOT, "packages", "dirq", "dist", "src");
  const { openIndex } = await import(pathToFileURL(join(dist, "engine.js")).href);
  const { loadConfigs } = await import(pathToFileURL(join(dist, "config", "load-config.js")).href);
  const index = openIndex({ root: dir, config: loadConfigs(["dirq.toml"], dir), progress: false });
  await index.query("SELECT echo(1)");
  const passes = [];
  for (let run = 0; run < RUNS; run++) {
    const started = performance.now();
    await index.query(SQL);
    passes.push(performance.now() - started);
  }
  index.close();
  const b = median(bridge);
  const p = median(passes);
  process.stdout.write(
    `${ROWS.toLocaleString("en-US")} distinct calls, worker running, median of ${RUNS}:\n` +
      `  synchronous bridge (Atomics.wait + helper thread): ${b.toFixed(0)} ms\n` +
      `  dirq's passes (streamed, pipelined):               ${p.toFixed(0)} ms\n` +
      `  bridge / passes: ${(b / p).toFixed(1)}x\n`,
  );
  process.exit(0);
}

await main();
