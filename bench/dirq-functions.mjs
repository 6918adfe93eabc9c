#!/usr/bin/env node
// Benchmarks dirq's worker-backed SQL functions: a query that calls an echo worker (Node) on
// 10,000 distinct rows against the same 10,000 request lines piped through the same worker by a
// shell one-liner. See bench/README.md for what it measures.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  addRatios,
  benchOptionsUsage,
  DIRQ_BIN,
  DIRQ_ENV,
  findExecutable,
  formatNumber,
  formatRatio,
  log,
  parseBenchOptions,
  positiveInteger,
  renderTable,
  requireDirqBuilt,
  resultToJson,
  timeCommands,
  toolVersions,
  verdict,
} from "./lib.mjs";

const DEFAULT_ROWS = 10_000;
/** dirq (query, passes, one pipelined exchange) against the bare pipe: "within" allows equality. */
const TARGET_RATIO = 2;

/** The worker both sides run: one JSON line in, one out; ends with its input. */
const ECHO_WORKER = `// Written by bench/dirq-functions.mjs: answers {"id", "args"} with the first argument.
const { createInterface } = require("node:readline");

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const { id, args } = JSON.parse(line);
  process.stdout.write(JSON.stringify({ id, result: args[0] }) + "\\n");
});
// At end of input nothing is left to do: Node exits once stdout is flushed.
`;
/**
 * The least any Node program that starts the worker itself can take: its own start-up, then the
 * worker's, then the 10,000 exchanges (no SQL, no passes). dirq pays the same two start-ups in
 * a row; the pipe pays one.
 */
const SPAWN_CLIENT = `// Written by bench/dirq-functions.mjs: starts the echo worker, sends n requests, sums replies.
const { spawn } = require("node:child_process");

const rows = Number(process.argv[2]);
const worker = spawn("node", ["echo-worker.js"], { stdio: ["pipe", "pipe", "inherit"] });
let pending = "";
let received = 0;
let total = 0;
worker.stdout.setEncoding("utf8").on("data", (chunk) => {
  const lines = (pending + chunk).split("\\n");
  pending = lines.pop();
  for (const line of lines) {
    total += JSON.parse(line).result;
    if (++received === rows) {
      process.stdout.write(JSON.stringify({ total }) + "\\n");
      worker.kill();
    }
  }
});
const requests = [];
for (let i = 1; i <= rows; i++) requests.push(JSON.stringify({ id: i, args: [i] }));
worker.stdin.end(requests.join("\\n") + "\\n");
`;
/** Pins the worker to CommonJS whatever package.json is above --dir (the repo's says "module"). */
const PACKAGE_JSON = `{ "private": true, "type": "commonjs" }\n`;
const CONFIG = `[[dirq.function]]\nname = "echo"\ncommand = "node echo-worker.js"\n`;

const USAGE = `Usage: node bench/dirq-functions.mjs [options]

  --runs N      timed runs per command, after one warm-up (default 5)
  --rows N      distinct rows, one worker call each (default ${DEFAULT_ROWS})
${benchOptionsUsage(16, "where the worker and its input live")}`;

function parseOptions(argv) {
  const values = parseBenchOptions(
    argv,
    {
      runs: { type: "string", default: "5" },
      rows: { type: "string", default: String(DEFAULT_ROWS) },
    },
    USAGE,
  );
  return {
    runs: positiveInteger(values.runs, "--runs"),
    rows: positiveInteger(values.rows, "--rows"),
    dir: values.dir,
    json: values.json,
  };
}

/** `n` distinct integers 1..n from SQLite itself: no file tree, so only the calls are timed. */
function numbers(rows) {
  return `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${rows})`;
}

function setUp(dir, rows) {
  const root = join(dir, "functions");
  mkdirSync(root, { recursive: true });
  writeFileSync(join(root, "echo-worker.js"), ECHO_WORKER);
  writeFileSync(join(root, "spawn-client.js"), SPAWN_CLIENT);
  writeFileSync(join(root, "package.json"), PACKAGE_JSON);
  writeFileSync(join(root, "dirq.toml"), CONFIG);
  const requests = [];
  for (let i = 1; i <= rows; i++) requests.push(JSON.stringify({ id: i, args: [i] }));
  writeFileSync(join(root, "requests.ndjson"), `${requests.join("\n")}\n`);
  return root;
}

/** Every number 1..n came back, once. */
function checkSum(total, rows) {
  const expected = (rows * (rows + 1)) / 2;
  return total === expected ? null : `sum is ${total}, expected ${expected}`;
}

function commands(rows, tools) {
  const withWorker = `${numbers(rows)} SELECT count(*) AS n, sum(echo(i)) AS total FROM n`;
  const without = `${numbers(rows)} SELECT count(*) AS n, sum(i) AS total FROM n`;
  const pipe = "node echo-worker.js < requests.ndjson";
  const checkDirq = (stdout) => checkSum(JSON.parse(stdout)[0]?.total, rows);
  return [
    {
      label: `dirq "... SELECT sum(echo(i)) FROM n" -c dirq.toml`,
      kind: "dirq",
      short: "dirq with worker",
      executable: process.execPath,
      args: [DIRQ_BIN, withWorker, "-c", "dirq.toml", "--format", "json"],
      env: DIRQ_ENV,
      check: checkDirq,
    },
    {
      label: pipe,
      kind: "baseline",
      short: "pipe",
      executable: tools.sh,
      args: ["-c", pipe],
      check: (stdout) => {
        const lines = stdout.split("\n").filter(Boolean);
        return checkSum(
          lines.reduce((sum, line) => sum + JSON.parse(line).result, 0),
          rows,
        );
      },
    },
    {
      label: `dirq "... SELECT sum(i) FROM n" (no worker, for reference)`,
      kind: "reference",
      short: "dirq without worker",
      executable: process.execPath,
      args: [DIRQ_BIN, without, "--format", "json"],
      env: DIRQ_ENV,
      check: checkDirq,
    },
    {
      label: "node spawn-client.js (starts the worker itself: the floor for a Node tool)",
      kind: "floor",
      short: "node spawn client",
      executable: process.execPath,
      args: ["spawn-client.js", String(rows)],
      check: (stdout) => checkSum(JSON.parse(stdout).total, rows),
    },
  ];
}

function main() {
  const options = parseOptions(process.argv.slice(2));
  requireDirqBuilt();
  const tools = { sh: findExecutable("sh"), node: findExecutable("node") };
  const versions = toolVersions(tools);
  const root = setUp(options.dir, options.rows);
  log(`functions: 1 warm-up + ${options.runs} runs of each command in ${root}`);
  const results = timeCommands(commands(options.rows, tools), root, options.runs, {
    onProgress: (message) => log(`functions: ${message}`),
  });
  const baseline = addRatios(results, "baseline");
  const dirq = results.find((result) => result.command.kind === "dirq");
  const target = {
    name: `dirq within ${TARGET_RATIO}x of the pipe`,
    ...verdict(dirq?.ratio ?? null, TARGET_RATIO, "x", { missing: "a command failed" }),
  };
  // dirq's own start-up (Node, modules, config) is about as long as the whole pipe run; what
  // the worker calls add on top of it is compared to the pipe as well.
  const reference = results.find((result) => result.command.kind === "reference");
  const added =
    dirq?.status === "ok" && reference?.status === "ok" ? dirq.medianMs - reference.medianMs : null;
  const pipe = results.find((result) => result.command.kind === "baseline");
  const floor = results.find((result) => result.command.kind === "floor");
  const overFloor =
    dirq?.status === "ok" && floor?.status === "ok" ? dirq.medianMs / floor.medianMs : null;
  const addedRatio = added !== null && pipe?.status === "ok" ? added / pipe.medianMs : null;
  const callsPerSecond = (result) =>
    result.status === "ok" && result.command.kind !== "reference"
      ? options.rows / (result.medianMs / 1000)
      : null;
  if (options.json) {
    const json = {
      runs: options.runs,
      rows: options.rows,
      environment: { ...versions, platform: process.platform },
      ratioTo: baseline,
      commands: results.map((result) =>
        resultToJson(result, { callsPerSecond: callsPerSecond(result) }),
      ),
      target: { name: target.name, value: target.value, limit: target.limit, met: target.met },
      workerCallsAddedMs: added === null ? null : Math.round(added),
      workerCallsAddedRatio: addedRatio === null ? null : Math.round(addedRatio * 100) / 100,
      dirqOverSpawnClient: overFloor === null ? null : Math.round(overFloor * 100) / 100,
    };
    process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
    return;
  }
  const columns = [
    { header: "median s", cell: (result) => formatNumber(result.medianMs / 1000, 3) },
    { header: "min s", cell: (result) => formatNumber(result.minMs / 1000, 3) },
    { header: "calls/s", cell: (result) => formatNumber(callsPerSecond(result), 0) },
    { header: "vs pipe", cell: (result) => formatRatio(result.ratio) },
  ];
  const title = `${options.rows.toLocaleString("en-US")} distinct rows through an echo worker`;
  const out = [
    `dirq worker-function benchmark: median of ${options.runs} runs after 1 warm-up, wall clock`,
    `node: ${versions.node}`,
    "",
    renderTable(title, columns, results),
    "",
    `${target.name}: ${target.text}`,
    `time the worker calls add to dirq (with worker - without): ${formatNumber(
      added === null ? null : added / 1000,
      3,
    )} s, ${formatRatio(addedRatio)} of the pipe`,
    `dirq against a bare Node program that starts the same worker: ${formatRatio(overFloor)}`,
  ];
  process.stdout.write(`${out.join("\n")}\n`);
}

main();
