#!/usr/bin/env node
// What a query process costs to start (Linux): the one a server, a REPL, `dirq watch` or `dirq sdk`
// starts (`node bin/dirq.cjs --dirq-query-process …`: the CLI bundle's copy, compiled from its
// V8 code cache) against the ES module the library starts (`dist/src/runner/query-process.js`).
// Runs alternate between the two; each process starts, answers one statement over a small index
// and its channel ends. Per process: its CPU (user + system, from /proc/<pid>/stat once it
// answered; 10 ms ticks, so medians of many runs) and the time from spawn to the answer. The
// first launcher run writes the code cache (in a folder of this run's own), so it is left out.
// Prints the load average: figures from a busy machine are rough.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { DIRQ_BIN, median, parseOptions, positiveInteger, REPO_ROOT } from "./lib.mjs";

const USAGE = `usage: node bench/dirq-query-process.mjs [--runs N]

  --runs N   processes started by each route, alternating (default 20)
`;

const options = parseOptions(
  process.argv.slice(2),
  { runs: { type: "string", default: "20" } },
  USAGE,
);
const runs = positiveInteger(options.runs, "--runs");
const DIST = join(REPO_ROOT, "packages", "dirq", "dist", "src");
const { encodeFrame, FrameReader, RequestKind, REAPED } = await import(
  pathToFileURL(join(DIST, "runner", "query-frames.js")).href
);
const ROUTES = {
  module: [join(DIST, "runner", "query-process.js")],
  launcher: [DIRQ_BIN, "--dirq-query-process"],
};
const TICK_MS = 10;

/** CPU of a process so far (ms), from /proc. */
function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

/** Starts one query process, asks one statement, ends its channel: its CPU and answer time. */
function oneProcess(route, database, env) {
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [...ROUTES[route], database, "1000000", '{"extensions":[],"functions":[]}', REAPED],
    { env, stdio: ["ignore", "inherit", "inherit", "pipe"] },
  );
  const channel = child.stdio[3];
  const reader = new FrameReader();
  return new Promise((resolve, reject) => {
    let asked = false;
    let figures = null;
    channel.on("data", (chunk) => {
      for (let frames = reader.push(chunk).length; frames > 0; frames--) {
        if (!asked) {
          asked = true; // the ready frame
          const sql = "SELECT name, count(*) AS n FROM t GROUP BY name";
          channel.write(encodeFrame(1, RequestKind.Json, sql));
          continue;
        }
        figures = { cpu: cpuMs(child.pid), answeredMs: performance.now() - started };
        channel.end();
      }
    });
    child.on("error", reject);
    child.on("exit", (code) => {
      if (figures === null) reject(new Error(`${route}: exited (${code}) before answering`));
      else resolve(figures);
    });
  });
}

const work = mkdtempSync(join(tmpdir(), "dirq-query-process-"));
try {
  const database = join(work, "index.db");
  const Database = createRequire(join(DIST, "index.js"))("@rocicorp/zero-sqlite3");
  const db = new Database(database);
  db.exec("CREATE TABLE t(name TEXT); INSERT INTO t VALUES ('a'), ('b'), ('a');");
  db.close();
  const env = { ...process.env, XDG_CACHE_HOME: join(work, "cache"), DIRQ_PROGRESS: "never" };
  await oneProcess("launcher", database, env); // writes the code cache
  const results = { module: [], launcher: [] };
  for (let i = 0; i < runs; i++) {
    for (const route of i % 2 === 0 ? ["module", "launcher"] : ["launcher", "module"]) {
      results[route].push(await oneProcess(route, database, env));
    }
  }
  console.log(
    `load average ${loadavg()
      .map((n) => n.toFixed(2))
      .join(" ")}; ${runs} runs each`,
  );
  for (const [route, figures] of Object.entries(results)) {
    const cpu = median(figures.map((f) => f.cpu));
    const answered = median(figures.map((f) => f.answeredMs));
    console.log(
      `${route.padEnd(8)}  CPU until answered: median ${cpu.toFixed(0)} ms   spawn to answer: median ${answered.toFixed(1)} ms`,
    );
  }
  const ratio =
    median(results.module.map((f) => f.cpu)) / median(results.launcher.map((f) => f.cpu));
  console.log(`module / launcher CPU: ${ratio.toFixed(2)}x`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
