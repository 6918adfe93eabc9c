#!/usr/bin/env node
// Start-up of the npm launcher: `dirq "SELECT 1"` in an empty folder against `node -e 0`, with
// and without the V8 code cache (bin/dirq.cjs keeps one per Node build in the user's cache
// folder; DIRQ_CODE_CACHE=0 turns it off), as a table, and after a first `dirq --version`.
// Medians of alternating runs and peak RSS (GNU time's %M, in separate runs so that its own
// start does not count in the times). Prints the load average first: figures taken on a busy
// machine are rough.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { DIRQ_BIN, median, parseOptions, positiveInteger } from "./lib.mjs";

const USAGE = `usage: node bench/dirq-startup.mjs [--runs N] [--node PATH] [--bin PATH] [--json]

  --runs N     alternating runs of each command (default 21)
  --node PATH  the Node binary to start everything with (default: this one)
  --bin PATH   the dirq launcher to measure (default: this checkout's bin/dirq.cjs)
  --json       print the results as JSON
`;

const options = parseOptions(
  process.argv.slice(2),
  {
    runs: { type: "string", default: "21" },
    node: { type: "string", default: process.execPath },
    bin: { type: "string", default: DIRQ_BIN },
    json: { type: "boolean", default: false },
  },
  USAGE,
);
const runs = positiveInteger(options.runs, "--runs");
const node = options.node;
const cwd = mkdtempSync(join(tmpdir(), "dirq-startup-"));
// A cache folder of the benchmark's own, so the first cached run starts from nothing.
const cacheHome = mkdtempSync(join(tmpdir(), "dirq-startup-cache-"));
// Another, whose first run is `dirq --version`, as after an install (see the warm-up).
const versionFirstHome = mkdtempSync(join(tmpdir(), "dirq-startup-cache-"));
const baseEnv = {
  ...process.env,
  DIRQ_PROGRESS: "never",
  DIRQ_NO_PLUGIN: "1",
  XDG_CACHE_HOME: cacheHome,
};

const commands = [
  { name: "node -e 0", argv: ["-e", "0"], env: baseEnv },
  {
    name: 'dirq "SELECT 1", no code cache',
    argv: [resolve(options.bin), "SELECT 1"],
    env: { ...baseEnv, DIRQ_CODE_CACHE: "0" },
  },
  { name: 'dirq "SELECT 1", code cache', argv: [resolve(options.bin), "SELECT 1"], env: baseEnv },
  // What a terminal gets (`--format auto` on a TTY): the table's width measurement.
  {
    name: 'dirq "SELECT 1" --format table, code cache',
    argv: [resolve(options.bin), "SELECT 1", "--format", "table"],
    env: baseEnv,
  },
  // The code cache a first `dirq --version` wrote, and the query runs that came after it.
  {
    name: 'dirq "SELECT 1" after a first --version',
    argv: [resolve(options.bin), "SELECT 1"],
    env: { ...baseEnv, XDG_CACHE_HOME: versionFirstHome },
  },
];

function runOnce(command, wrapper = []) {
  const argv = [...wrapper, node, ...command.argv];
  const started = process.hrtime.bigint();
  const result = spawnSync(argv[0], argv.slice(1), { cwd, env: command.env, encoding: "utf8" });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0) {
    throw new Error(`${command.name} exited ${result.status}: ${result.stderr}`);
  }
  return { ms, stderr: result.stderr };
}

try {
  const load = loadavg().map((value) => value.toFixed(2));
  process.stderr.write(`node ${spawnSync(node, ["--version"]).stdout}`.trim() + "\n");
  process.stderr.write(`load average before: ${load.join(" ")}\n`);
  // Warm-up: file cache, and the first cached run writes the code cache.
  runOnce({
    name: "dirq --version",
    argv: [resolve(options.bin), "--version"],
    env: { ...baseEnv, XDG_CACHE_HOME: versionFirstHome },
  });
  for (const command of commands) runOnce(command);
  const times = commands.map(() => []);
  for (let run = 0; run < runs; run++) {
    commands.forEach((command, index) => times[index].push(runOnce(command).ms));
  }
  const rss = commands.map((command) => {
    const peaks = [];
    for (let run = 0; run < 5; run++) {
      const { stderr } = runOnce(command, ["/usr/bin/time", "-f", "%M"]);
      peaks.push(Number(stderr.trim().split("\n").at(-1)));
    }
    return median(peaks) / 1024;
  });
  const baseline = median(times[0]);
  const results = commands.map((command, index) => ({
    command: command.name,
    medianMs: Number(median(times[index]).toFixed(1)),
    ratio: Number((median(times[index]) / baseline).toFixed(2)),
    peakRssMb: Number(rss[index].toFixed(1)),
  }));
  const after = loadavg().map((value) => value.toFixed(2));
  if (options.json) {
    process.stdout.write(JSON.stringify({ runs, load: { before: load, after }, results }) + "\n");
  } else {
    process.stdout.write(`${runs} alternating runs each; load average after: ${after.join(" ")}\n`);
    for (const result of results) {
      process.stdout.write(
        `${result.command.padEnd(44)} ${String(result.medianMs).padStart(7)} ms  ` +
          `${result.ratio.toFixed(2)}x  ${result.peakRssMb} MB\n`,
      );
    }
  }
} finally {
  rmSync(cwd, { recursive: true, force: true });
  rmSync(cacheHome, { recursive: true, force: true });
  rmSync(versionFirstHome, { recursive: true, force: true });
}
