#!/usr/bin/env node
// Benchmarks dirq's directory walk against find, fd and sqlite3's fsdir on generated trees,
// plus dirq's start-up against a bare `node -e 0`. See bench/README.md for what it measures.
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import {
  addRatios,
  DIRQ_BIN,
  DIRQ_ENV,
  fail,
  fileTreeMarker,
  fileTreePaths,
  findExecutable,
  formatNumber,
  formatRatio,
  generateFileTree,
  log,
  markerMatches,
  benchOptionsUsage,
  parseBenchOptions,
  positiveInteger,
  renderTable,
  requireDirqBuilt,
  resultToJson as baseResultToJson,
  round,
  timeCommands,
  toolVersions,
  verdict,
} from "./lib.mjs";

const TREES = [
  { name: "100k", files: 100_000, dirs: 1_000 },
  { name: "10k", files: 10_000, dirs: 100 },
  // Opt-in (`--only 1m`): generating it takes minutes and about 4 GB of disk.
  { name: "1m", files: 1_000_000, dirs: 10_000, optIn: true },
];

/** The targets the summary checks; limits are ratios except for memory (MB). */
const TARGETS = {
  queriesVsFind: 2,
  startupVsNode: 1.5,
  peakMemoryMb: 200,
  countVsFindWc: 1.5,
  statVsFsdir: 1.1,
};

/**
 * Runs of the start-up pair at least: each takes under 0.1 s, and a median of 5 moved by a
 * tenth of the ratio between two runs of the benchmark on this 2-core machine (1.27x, 1.52x).
 */
const MIN_STARTUP_RUNS = 21;

const USAGE = `Usage: node bench/dirq-walk.mjs [options]

  --runs N          timed runs per command, after one warm-up (default 7)
  --only 10k|100k|1m  benchmark one tree only (1m: 1,000,000 files, only when named)
  --node-fs         also time dirq's two fill queries with DIRQ_NATIVE_FS=0 (Node's fs instead
                    of dirq's native extension), for comparison; targets ignore them
${benchOptionsUsage(20, "where the generated trees live")}`;

// ---------------------------------------------------------------------------------------------
// Options

function parseOptions(argv) {
  const values = parseBenchOptions(
    argv,
    {
      runs: { type: "string", default: "7" },
      only: { type: "string" },
      "node-fs": { type: "boolean", default: false },
    },
    USAGE,
  );
  const runs = positiveInteger(values.runs, "--runs");
  if (values.only !== undefined && !TREES.some((tree) => tree.name === values.only)) {
    fail(`--only must be one of ${TREES.map((tree) => tree.name).join(", ")}`);
  }
  return {
    runs,
    only: values.only,
    nodeFs: values["node-fs"],
    dir: values.dir,
    json: values.json,
  };
}

// ---------------------------------------------------------------------------------------------
// Tree generation

/** A tree is reused only if its marker matches and it still has all its directories. */
function isTreeComplete(root, marker, tree) {
  if (!markerMatches(marker, fileTreeMarker(tree)) || !existsSync(root)) return false;
  try {
    return readdirSync(root).length === tree.dirs;
  } catch {
    return false;
  }
}

function ensureTree(baseDir, tree) {
  const { root, marker } = fileTreePaths(baseDir, "files", tree);
  if (isTreeComplete(root, marker, tree)) {
    log(`tree ${tree.name}: reusing ${root}`);
    return root;
  }
  log(`tree ${tree.name}: generating ${tree.files} files in ${tree.dirs} directories at ${root}`);
  const started = performance.now();
  generateFileTree(root, marker, tree);
  log(`tree ${tree.name}: generated in ${((performance.now() - started) / 1000).toFixed(1)}s`);
  return root;
}

// ---------------------------------------------------------------------------------------------
// Tools

function detectTools() {
  // Debian ships fd as `fdfind`, because `fd` was already taken by another package.
  const fd = findExecutable("fd") ?? findExecutable("fdfind");
  const tools = { find: findExecutable("find"), fd, sqlite3: findExecutable("sqlite3") };
  const versions = toolVersions(tools);
  return { tools: { ...tools, sh: findExecutable("sh") }, versions };
}

// ---------------------------------------------------------------------------------------------
// Commands

/** `ref`: the label of the peer the issue compares this query with (the "vs ref" column). */
function dirqCommand(sql, check, ref) {
  return {
    label: `dirq "${sql}"`,
    kind: "dirq",
    ref,
    executable: process.execPath,
    args: [DIRQ_BIN, sql],
    env: DIRQ_ENV,
    check,
  };
}

/**
 * The same query with `DIRQ_NATIVE_FS=0`: Node's `fs` instead of dirq's native extension
 * (`--node-fs`). Its own kind, so the targets ignore it.
 */
function nodeFsVariant(command) {
  return {
    ...command,
    label: `${command.label} (DIRQ_NATIVE_FS=0)`,
    kind: "dirq-node-fs",
    env: { ...command.env, DIRQ_NATIVE_FS: "0" },
  };
}

function lineCount(stdout) {
  return stdout.split("\n").filter((line) => line !== "").length;
}

/** What each command should print for a tree; a wrong answer makes its timing meaningless. */
const FIND_COUNT_LABEL = "find . -type f | wc -l";
const FSDIR_LABEL = `sqlite3 :memory: "SELECT count(*), sum(mtime) FROM fsdir('.')"`;

function treeCommands(tools, tree) {
  const fdName = tools.fd === null ? "fd" : tools.fd.split("/").pop();
  return [
    dirqCommand(
      "SELECT count(*) FROM './'",
      (stdout) => {
        const count = JSON.parse(stdout)[0]?.["count(*)"];
        return count === tree.files ? null : `counted ${count}, expected ${tree.files}`;
      },
      FIND_COUNT_LABEL,
    ),
    dirqCommand(
      "SELECT count(*), sum(size) FROM './'",
      (stdout) => {
        const count = JSON.parse(stdout)[0]?.["count(*)"];
        return count === tree.files ? null : `counted ${count}, expected ${tree.files}`;
      },
      FSDIR_LABEL,
    ),
    dirqCommand(
      "SELECT path, size FROM './' ORDER BY size DESC LIMIT 10",
      (stdout) => {
        const rows = JSON.parse(stdout);
        return rows.length === 10 ? null : `returned ${rows.length} rows, expected 10`;
      },
      FSDIR_LABEL,
    ),
    {
      label: "find . -type f -printf '%s %p\\n'",
      kind: "baseline",
      executable: tools.find,
      args: [".", "-type", "f", "-printf", "%s %p\\n"],
      check: (stdout) => {
        const lines = lineCount(stdout);
        return lines === tree.files ? null : `printed ${lines} lines, expected ${tree.files}`;
      },
    },
    {
      label: `${fdName} --type f`,
      kind: "peer",
      executable: tools.fd,
      args: ["--type", "f"],
      check: (stdout) => {
        const lines = lineCount(stdout);
        return lines === tree.files ? null : `printed ${lines} lines, expected ${tree.files}`;
      },
    },
    {
      label: FIND_COUNT_LABEL,
      kind: "peer",
      executable: tools.sh,
      args: ["-c", "find . -type f | wc -l"],
      check: (stdout) => {
        const count = Number(stdout.trim());
        return count === tree.files ? null : `counted ${count}, expected ${tree.files}`;
      },
    },
    {
      label: FSDIR_LABEL,
      kind: "peer",
      executable: tools.sqlite3,
      // fsdir lstats every entry whatever the columns read; mtime makes that visible.
      args: [":memory:", "SELECT count(*), sum(mtime) FROM fsdir('.')"],
      // fsdir lists directories and '.' itself as well as files.
      check: (stdout) => {
        const expected = tree.files + tree.dirs + 1;
        const count = Number(stdout.trim().split("|")[0]);
        return count === expected ? null : `counted ${count}, expected ${expected}`;
      },
    },
  ];
}

function startupCommands() {
  return [
    dirqCommand("SELECT 1", (stdout) =>
      JSON.parse(stdout)[0]?.["1"] === 1 ? null : `unexpected output ${stdout.trim()}`,
    ),
    {
      label: "node -e 0",
      kind: "baseline",
      executable: process.execPath,
      args: ["-e", "0"],
      env: DIRQ_ENV,
      check: () => null,
    },
  ];
}

/** Each dirq query against the peer the issue names for it (`ref`), same run, medians. */
function addReferenceRatios(results) {
  for (const result of results) {
    const ref = results.find((other) => other.command.label === result.command.ref);
    result.refRatio =
      result.status === "ok" && ref?.status === "ok" ? result.medianMs / ref.medianMs : null;
    if (result.refRatio !== null) result.refLabel = ref.command.label;
  }
}

// ---------------------------------------------------------------------------------------------
// Peak memory

/**
 * Node cannot read a child's max RSS (process.resourceUsage() covers only the current
 * process), so GNU time measures it. Without it, a preload inside the dirq process itself
 * records its own maxRSS at exit, which covers dirq's worker threads too (same process).
 */
const MAX_RSS_PRELOAD = `
import { writeFileSync } from "node:fs";
process.on("exit", () => {
  writeFileSync(process.env.DIRQ_BENCH_RSS_FILE, String(process.resourceUsage().maxRSS));
});
`;

function readKilobytes(file) {
  try {
    // GNU time writes "Command exited with non-zero status N" before %M on failure.
    const lines = readFileSync(file, "utf8").trim().split("\n");
    const value = Number(lines[lines.length - 1]);
    return Number.isFinite(value) && value > 0 ? value : null;
  } catch {
    return null;
  }
}

function gnuTimeMeter(timeBin, scratch) {
  const outFile = join(scratch, "max-rss.txt");
  return {
    name: "/usr/bin/time -f %M",
    measure(command, cwd) {
      rmSync(outFile, { force: true });
      spawnSync(timeBin, ["-f", "%M", "-o", outFile, command.executable, ...command.args], {
        cwd,
        env: command.env,
        stdio: "ignore",
      });
      return readKilobytes(outFile);
    },
  };
}

function preloadMeter(scratch) {
  const preload = join(scratch, "max-rss-preload.mjs");
  const outFile = join(scratch, "max-rss.txt");
  writeFileSync(preload, MAX_RSS_PRELOAD);
  return {
    name: "in-process process.resourceUsage().maxRSS",
    measure(command, cwd) {
      rmSync(outFile, { force: true });
      spawnSync(command.executable, ["--import", preload, ...command.args], {
        cwd,
        env: { ...command.env, DIRQ_BENCH_RSS_FILE: outFile },
        stdio: "ignore",
      });
      return readKilobytes(outFile);
    },
  };
}

/** Picks the first way of measuring max RSS that works here, tested on a trivial command. */
function chooseMemoryMeter(scratch) {
  const probe = { executable: process.execPath, args: ["-e", "0"], env: process.env };
  const candidates = [];
  if (existsSync("/usr/bin/time")) candidates.push(gnuTimeMeter("/usr/bin/time", scratch));
  candidates.push(preloadMeter(scratch));
  for (const meter of candidates) {
    if (meter.measure(probe, scratch) !== null) return meter;
  }
  return null;
}

function measureMemory(results, cwd, meter) {
  for (const result of results) {
    if (result.command.kind !== "dirq" || result.status !== "ok" || meter === null) continue;
    const kilobytes = meter.measure(result.command, cwd);
    result.peakRssMb = kilobytes === null ? null : kilobytes / 1024;
  }
}

// ---------------------------------------------------------------------------------------------
// Report

/** The three targets, each null-valued (n/a) when its inputs were not measured. */
function evaluateTargets(treeResults, startupResults) {
  const big = treeResults.find((entry) => entry.tree.name === "100k");
  const dirqRows = big?.results.filter((result) => result.command.kind === "dirq") ?? [];
  const ratios = dirqRows.map((result) => result.ratio);
  const worstRatio =
    ratios.length > 0 && ratios.every((ratio) => ratio !== null) ? Math.max(...ratios) : null;
  const memories = dirqRows.map((result) => result.peakRssMb);
  const worstMemory =
    memories.length > 0 && memories.every((mb) => typeof mb === "number")
      ? Math.max(...memories)
      : null;
  const startup = startupResults.find((result) => result.command.kind === "dirq");
  const missing = big ? "a command failed or was not measured" : "100k tree not run";
  const million = treeResults.find((entry) => entry.tree.name === "1m");
  const millionTargets = [];
  if (million) {
    const dirq = million.results.filter((result) => result.command.kind === "dirq");
    const worstRef = (ref) => {
      const ratios = dirq.filter((r) => r.command.ref === ref).map((r) => r.refRatio);
      return ratios.length > 0 && ratios.every((r) => r !== null) ? Math.max(...ratios) : null;
    };
    const mb = dirq.map((result) => result.peakRssMb);
    millionTargets.push(
      {
        name: "1m count(*) within 1.5x of find | wc -l",
        ...verdict(worstRef(FIND_COUNT_LABEL), TARGETS.countVsFindWc, "x"),
      },
      {
        name: "1m stat queries within 1.1x of fsdir",
        ...verdict(worstRef(FSDIR_LABEL), TARGETS.statVsFsdir, "x"),
      },
      {
        name: "1m peak memory under 200 MB",
        ...verdict(
          mb.every((value) => typeof value === "number") ? Math.max(...mb) : null,
          TARGETS.peakMemoryMb,
          " MB",
          { strict: true, digits: 1 },
        ),
      },
    );
  }
  return [
    ...millionTargets,
    {
      name: "100k queries within 2x of find",
      ...verdict(worstRatio, TARGETS.queriesVsFind, "x", { missing }),
    },
    {
      name: "start-up within 1.5x of node -e 0",
      ...verdict(startup?.ratio ?? null, TARGETS.startupVsNode, "x"),
    },
    {
      name: "peak memory under 200 MB for 100k files",
      ...verdict(worstMemory, TARGETS.peakMemoryMb, " MB", { strict: true, digits: 1, missing }),
    },
  ];
}

function resultToJson(result) {
  return baseResultToJson(result, {
    peakRssMb: result.command.kind === "dirq" ? round(result.peakRssMb) : undefined,
    ratioToRef: result.refRatio ? round(result.refRatio) : undefined,
    ref: result.refLabel,
  });
}

/** Columns of the tree and start-up tables: times in ms, ratio, peak RSS of dirq rows. */
function tableColumns(ratioHeader) {
  return [
    { header: "median ms", cell: (result) => formatNumber(result.medianMs, 1) },
    { header: "min ms", cell: (result) => formatNumber(result.minMs, 1) },
    { header: ratioHeader, cell: (result) => formatRatio(result.ratio) },
    { header: "vs ref", cell: (result) => (result.refRatio ? formatRatio(result.refRatio) : "") },
    {
      header: "peak RSS MB",
      cell: (result) => (result.command.kind === "dirq" ? formatNumber(result.peakRssMb, 1) : ""),
    },
  ];
}

function printJson(report) {
  const json = {
    runs: report.runs,
    environment: { ...report.versions, cpus: cpus().length, platform: process.platform },
    memoryMeter: report.meter?.name ?? null,
    trees: report.treeResults.map(({ tree, root, results, baseline }) => ({
      name: tree.name,
      files: tree.files,
      dirs: tree.dirs,
      path: root,
      ratioTo: baseline,
      commands: results.map(resultToJson),
    })),
    startup: {
      runs: report.startupRuns,
      ratioTo: report.startupBaseline,
      commands: report.startupResults.map(resultToJson),
    },
    targets: report.targets.map(({ name, value, limit, met }) => ({ name, value, limit, met })),
  };
  process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
}

function printText(report) {
  const { versions } = report;
  const out = [
    `dirq walk benchmark: median of ${report.runs} runs after 1 warm-up, wall clock, warm cache`,
    `node ${versions.node} | ${versions.find} | fd: ${versions.fd} | sqlite3: ${versions.sqlite3}`,
    `cpus: ${cpus().length} | peak RSS via: ${report.meter?.name ?? "n/a (no way to measure)"}`,
    "",
  ];
  for (const { tree, results } of report.treeResults) {
    const title = `${tree.files.toLocaleString("en-US")} files in ${tree.dirs} directories`;
    out.push(renderTable(title, tableColumns("vs find"), results), "");
  }
  out.push(
    renderTable(
      `start-up (empty directory, median of ${report.startupRuns} runs)`,
      tableColumns("vs node -e 0"),
      report.startupResults,
    ),
    "",
  );
  for (const target of report.targets) out.push(`${target.name}: ${target.text}`);
  process.stdout.write(`${out.join("\n")}\n`);
}

// ---------------------------------------------------------------------------------------------
// Main

function main() {
  const options = parseOptions(process.argv.slice(2));
  requireDirqBuilt();
  const { tools, versions } = detectTools();
  const scratch = mkdtempSync(join(tmpdir(), "dirq-bench-"));
  try {
    const meter = chooseMemoryMeter(scratch);
    const trees = TREES.filter((tree) =>
      options.only === undefined ? !tree.optIn : tree.name === options.only,
    );
    const treeResults = trees.map((tree) => {
      const root = ensureTree(options.dir, tree);
      log(`tree ${tree.name}: timing ${options.runs} runs per command`);
      const commands = treeCommands(tools, tree);
      if (options.nodeFs) {
        commands.splice(2, 0, ...commands.slice(0, 2).map(nodeFsVariant));
      }
      const results = timeCommands(commands, root, options.runs);
      measureMemory(results, root, meter);
      const baseline = addRatios(results, "baseline");
      addReferenceRatios(results);
      return { tree, root, results, baseline };
    });

    // An empty directory, so start-up is not mixed up with walking anything.
    const emptyDir = join(scratch, "empty");
    mkdirSync(emptyDir);
    const startupRuns = Math.max(options.runs, MIN_STARTUP_RUNS);
    log(`start-up: timing ${startupRuns} runs per command`);
    const startupResults = timeCommands(startupCommands(), emptyDir, startupRuns);
    measureMemory(startupResults, emptyDir, meter);
    const startupBaseline = addRatios(startupResults, "baseline");

    const targets = evaluateTargets(treeResults, startupResults);
    const report = {
      ...options,
      versions,
      meter,
      treeResults,
      startupRuns,
      startupResults,
      startupBaseline,
    };
    report.targets = targets;
    if (options.json) printJson(report);
    else printText(report);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

main();
