#!/usr/bin/env node
// How long `dirq server` takes to end after SIGTERM, sent at a chosen phase: a delay after the
// spawn (the start-up walk and build) or after `Running at` (a first fill when --query starts
// one, a burst, the watch fallback's checks). Each run: the server in a process group and a
// TMPDIR of its own; reported are its exit, the time from the signal to the exit, what is left
// of its process group and whether its temporary index folder is gone.
//
//   node bench/dirq-stop.mjs --tree DIR [--at MS | --at running+MS] [--query SQL]
//                            [--watch-limit N] [--runs N]
//
// --watch-limit runs it in a user namespace whose own watch limit is N (as dirq-million.mjs).
// Trees: `node bench/dirq-million.mjs --files 100000 --only full` makes one under
// $TMPDIR/dirq-bench. Figures go with the load average; the machine's state moves them.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { DIRQ_BIN, log, parseOptions, postQuery, requireDirqBuilt } from "./lib.mjs";

const USAGE =
  "Usage: node bench/dirq-stop.mjs --tree DIR [--at MS | --at running+MS] [--query SQL] [--watch-limit N] [--runs N]\n";
const values = parseOptions(
  process.argv.slice(2),
  {
    tree: { type: "string" },
    at: { type: "string", default: "1000" },
    query: { type: "string" },
    "watch-limit": { type: "string" },
    runs: { type: "string", default: "1" },
  },
  USAGE,
);
if (values.tree === undefined) {
  process.stderr.write(USAGE);
  process.exit(2);
}
requireDirqBuilt();
const tree = resolve(values.tree);
const afterRunning = values.at.startsWith("running");
const delayMs = Number(values.at.replace(/^running\+?/, ""));
const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

function startServer(tmp) {
  const args = [DIRQ_BIN, "server", "--host", "127.0.0.1", "--port", "0"];
  const env = { ...process.env, TMPDIR: tmp, DIRQ_PROGRESS: "never" };
  const options = { cwd: tree, env, detached: true, stdio: ["ignore", "pipe", "pipe"] };
  const limit = values["watch-limit"];
  if (limit === undefined) return spawn(process.execPath, args, options);
  const script = `echo ${Number(limit)} > /proc/sys/user/max_inotify_watches && exec "$0" "$@"`;
  const namespace = ["--user", "--map-root-user", "sh", "-c", script, process.execPath];
  return spawn("unshare", [...namespace, ...args], options);
}

function groupLeft(pgid) {
  try {
    return execFileSync("ps", ["-o", "pid=,args=", "-g", String(pgid)], {
      encoding: "utf8",
    }).trim();
  } catch {
    return "";
  }
}

async function oneRun() {
  const tmp = mkdtempSync(join(tmpdir(), "dirq-stop-bench-"));
  const child = startServer(tmp);
  const spawnedAt = performance.now();
  let stdout = "";
  child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
  child.stderr.resume();
  const exited = new Promise((done) => child.once("exit", (code, signal) => done(code ?? signal)));
  while (afterRunning && !/Running at \S+:(\d+)/.test(stdout)) await sleep(10);
  const port = /Running at \S+:(\d+)/.exec(stdout)?.[1];
  if (values.query !== undefined && port !== undefined) {
    postQuery(Number(port), values.query)
      .then((answer) => log(`query answered ${answer.status}`))
      .catch((error) => log(`query failed: ${error.message}`));
  }
  await sleep(delayMs);
  const phase = /Running at/.test(stdout) ? "after Running at" : "before Running at";
  const sentAt = performance.now();
  child.kill("SIGTERM");
  const killer = setTimeout(() => process.kill(-child.pid, "SIGKILL"), 60_000);
  const exit = await exited;
  const stopMs = performance.now() - sentAt;
  clearTimeout(killer);
  await sleep(500);
  const left = groupLeft(child.pid);
  const folder = readdirSync(tmp);
  console.log(
    `SIGTERM ${(sentAt - spawnedAt).toFixed(0)} ms after the spawn (${phase}): exit ${exit} after ${stopMs.toFixed(0)} ms; process group left: ${left || "none"}; temporary folder left: ${folder.join(", ") || "none"}   [load ${loadAverage()}]`,
  );
  rmSync(tmp, { recursive: true, force: true });
}

for (let run = 0; run < Number(values.runs); run++) await oneRun();
