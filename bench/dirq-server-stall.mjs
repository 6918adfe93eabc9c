#!/usr/bin/env node
// Does a big first build stall `dirq server`? Starts the server on a generated tree (default
// the 1,000,000-file tree of dirq-walk.mjs), sends `SELECT count(*) FROM './'` (which builds
// the whole path-table), and meanwhile measures, until that answer arrives: the latency of
// `SELECT 1` from other clients (a fresh statement each time, so no cache answers it), the
// gaps between /events keep-alives (sent every 100 ms here), and the server's peak RSS.
//
//   node bench/dirq-server-stall.mjs [--files 1000000] [--clients 4] [--dir PATH]
import { spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { request } from "node:http";
import { parseArgs } from "node:util";
import {
  DEFAULT_BENCH_DIR,
  DIRQ_BIN,
  fileTreeMarker,
  fileTreePaths,
  generateFileTree,
  log,
  markerMatches,
  percentile,
  requireDirqBuilt,
  postQuery,
  serverPort,
} from "./lib.mjs";

const { values } = parseArgs({
  options: {
    files: { type: "string", default: "1000000" },
    clients: { type: "string", default: "4" },
    dir: { type: "string", default: DEFAULT_BENCH_DIR },
    help: { type: "boolean", short: "h" },
  },
});
if (values.help) {
  process.stdout.write(
    "Usage: node bench/dirq-server-stall.mjs [--files N] [--clients N] [--dir PATH]\n",
  );
  process.exit(0);
}
requireDirqBuilt();
const files = Number(values.files);
const tree = {
  // The same names as dirq-walk.mjs's trees, so they are generated once for both.
  name: files === 1_000_000 ? "1m" : files % 1000 === 0 ? `${files / 1000}k` : String(files),
  files,
  dirs: Math.max(1, files / 100),
};
const { root, marker } = fileTreePaths(values.dir, "files", tree);
const complete =
  markerMatches(marker, fileTreeMarker(tree)) &&
  existsSync(root) &&
  readdirSync(root).length === tree.dirs;
if (!complete) {
  log(`generating ${files} files in ${root} (minutes for a million)`);
  generateFileTree(root, marker, tree);
}

const KEEP_ALIVE_MS = 100;
const child = spawn(process.execPath, [DIRQ_BIN, "server", "--host", "127.0.0.1", "--port", "0"], {
  cwd: root,
  env: { ...process.env, DIRQ_PROGRESS: "never", DIRQ_KEEP_ALIVE_MS: String(KEEP_ALIVE_MS) },
  stdio: ["ignore", "pipe", "inherit"],
});
// A bench that fails half-way must not leave its server running.
process.on("exit", () => child.kill("SIGKILL"));
const started = performance.now();
const port = await serverPort(child);
log(`server ready in ${((performance.now() - started) / 1000).toFixed(1)} s`);

const post = (sql) => postQuery(port, sql);

/** Peak resident memory of the server process (VmHWM), in MB. */
function peakRssMb() {
  const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1]);
  return kb / 1024;
}

const keepAliveGaps = [];
let lastKeepAlive = null;
/** Whether the big first query is still waiting for its answer. */
let building = false;
let events = null;
await new Promise((resolve) => {
  events = request({ host: "127.0.0.1", port, path: "/events" }, (res) => {
    res.setEncoding("utf8").on("data", (chunk) => {
      for (const line of chunk.split("\n")) {
        if (!line.startsWith(":")) continue;
        const now = performance.now();
        if (lastKeepAlive !== null && building) keepAliveGaps.push(now - lastKeepAlive);
        lastKeepAlive = now;
      }
    });
    resolve();
  });
  events.end();
});
await new Promise((resolve) => setTimeout(resolve, 3 * KEEP_ALIVE_MS));

// Warm-up: the pool starts a query process per concurrent client on demand (a process
// start-up is not a stall), so every client has one before the build begins.
let counter = 0;
for (let round = 0; round < 3; round++) {
  await Promise.all(
    Array.from({ length: Number(values.clients) }, () => post(`SELECT ${++counter} AS n`)),
  );
}
// The same load with nothing building, for comparison on a shared machine.
const idleLatencies = [];
const idleUntil = performance.now() + 2000;
await Promise.all(
  Array.from({ length: Number(values.clients) }, async () => {
    while (performance.now() < idleUntil) {
      const sent = performance.now();
      await post(`SELECT ${++counter} AS n`);
      idleLatencies.push(performance.now() - sent);
    }
  }),
);
building = true;
const latencies = [];
const buildStart = performance.now();
const big = post("SELECT count(*) AS n FROM './'").then((answer) => {
  building = false;
  return answer;
});
async function client() {
  while (building) {
    const sent = performance.now();
    const answer = await post(`SELECT ${++counter} AS n`);
    if (answer.status !== 200) throw new Error(`SELECT answered ${answer.status}: ${answer.text}`);
    if (building) latencies.push(performance.now() - sent);
  }
}
await Promise.all(Array.from({ length: Number(values.clients) }, client));
const answer = await big;
const buildSeconds = (performance.now() - buildStart) / 1000;
const rss = peakRssMb();
child.kill("SIGINT");
events.destroy();

const count = JSON.parse(answer.text)[0]?.n;
const fmt = (ms) => (ms === undefined ? "n/a" : `${ms.toFixed(1)} ms`);
process.stdout.write(
  [
    `dirq server, ${files.toLocaleString("en-US")} files: first build answered in ${buildSeconds.toFixed(2)} s (count ${count})`,
    `SELECT n from ${values.clients} clients during the build: ${latencies.length} answers, p50 ${fmt(percentile(latencies, 50))}, p99 ${fmt(percentile(latencies, 99))}, max ${fmt(Math.max(...latencies))}`,
    `SELECT n from ${values.clients} clients with nothing building (2 s): ${idleLatencies.length} answers, p50 ${fmt(percentile(idleLatencies, 50))}, p99 ${fmt(percentile(idleLatencies, 99))}`,
    `/events keep-alives (every ${KEEP_ALIVE_MS} ms) during the build: ${keepAliveGaps.length}, longest gap ${fmt(Math.max(...keepAliveGaps))}`,
    `server peak RSS (VmHWM, main process): ${rss.toFixed(0)} MB`,
    `load average: ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`,
    "",
  ].join("\n"),
);
