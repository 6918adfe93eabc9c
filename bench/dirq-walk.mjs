#!/usr/bin/env node
// Benchmarks dirq's directory walk against find, fd and sqlite3's fsdir on generated trees,
// plus dirq's start-up against a bare `node -e 0`. See bench/README.md for what it measures.
import { spawnSync } from "node:child_process";
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { cpus, tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const SCRIPT_DIR = dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = resolve(SCRIPT_DIR, "..");
const DIRQ_BIN = join(REPO_ROOT, "packages", "dirq", "bin", "dirq.js");
// bin/dirq.js only imports the compiled CLI; without it every dirq row would just fail.
const DIRQ_MAIN = join(REPO_ROOT, "packages", "dirq", "dist", "src", "cli", "main.js");

/** Bump when the generator changes, so trees built by an older version are rebuilt. */
const TREE_FORMAT = 1;
const MAX_FILE_SIZE = 4096;
const EXTENSIONS = [".txt", ".json", ".md", ".ts", ".log", ".bin"];

const TREES = [
  { name: "100k", files: 100_000, dirs: 1_000 },
  { name: "10k", files: 10_000, dirs: 100 },
];

/** The targets the summary checks; limits are ratios except for memory (MB). */
const TARGETS = {
  queriesVsFind: 2,
  startupVsNode: 3,
  peakMemoryMb: 250,
};

const USAGE = `Usage: node bench/dirq-walk.mjs [options]

  --runs N          timed runs per command, after one warm-up (default 7)
  --only 10k|100k   benchmark one tree only
  --dir PATH        where the generated trees live (default <repo>/.bench)
  --json            print machine-readable results instead of tables
  -h, --help        show this help
`;

// ---------------------------------------------------------------------------------------------
// Options

function fail(message) {
  process.stderr.write(`dirq-walk: ${message}\n`);
  process.exit(2);
}

function parseOptions(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      options: {
        runs: { type: "string", default: "7" },
        only: { type: "string" },
        dir: { type: "string" },
        json: { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
    });
  } catch (error) {
    fail(`${error.message}\n\n${USAGE}`);
  }
  const { values } = parsed;
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) fail(`--runs must be a positive integer`);
  if (values.only !== undefined && !TREES.some((tree) => tree.name === values.only)) {
    fail(`--only must be one of ${TREES.map((tree) => tree.name).join(", ")}`);
  }
  return {
    runs,
    only: values.only,
    dir: resolve(values.dir ?? join(REPO_ROOT, ".bench")),
    json: values.json,
  };
}

/** Progress goes to stderr so that `--json` output on stdout stays parseable. */
function log(message) {
  process.stderr.write(`${message}\n`);
}

// ---------------------------------------------------------------------------------------------
// Tree generation

/** A small seeded PRNG (mulberry32): the same tree on every machine, so results compare. */
function seededRandom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function treePaths(baseDir, tree) {
  return {
    root: join(baseDir, `files-${tree.name}`),
    // Outside the tree, so the marker never shows up in anyone's file count.
    marker: join(baseDir, `files-${tree.name}.complete.json`),
  };
}

function expectedMarker(tree) {
  return { format: TREE_FORMAT, files: tree.files, dirs: tree.dirs, maxFileSize: MAX_FILE_SIZE };
}

/** A tree is reused only if its marker matches and it still has all its directories. */
function isTreeComplete(baseDir, tree) {
  const { root, marker } = treePaths(baseDir, tree);
  if (!existsSync(marker) || !existsSync(root)) return false;
  try {
    const written = JSON.parse(readFileSync(marker, "utf8"));
    const expected = expectedMarker(tree);
    const matches = Object.keys(expected).every((key) => written[key] === expected[key]);
    return matches && readdirSync(root).length === tree.dirs;
  } catch {
    return false;
  }
}

function dirName(index) {
  return `d${String(index).padStart(4, "0")}`;
}

function generateTree(baseDir, tree) {
  const { root, marker } = treePaths(baseDir, tree);
  // A half-written tree (interrupted run) would skew counts: start again from nothing.
  rmSync(marker, { force: true });
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });

  const random = seededRandom(tree.files);
  const content = Buffer.alloc(MAX_FILE_SIZE);
  for (let i = 0; i < content.length; i++) content[i] = 97 + Math.floor(random() * 26);

  const perDir = tree.files / tree.dirs;
  for (let d = 0; d < tree.dirs; d++) {
    const dir = join(root, dirName(d));
    mkdirSync(dir);
    for (let f = 0; f < perDir; f++) {
      const size = Math.floor(random() * (MAX_FILE_SIZE + 1));
      const ext = EXTENSIONS[(d * perDir + f) % EXTENSIONS.length];
      writeFileSync(join(dir, `f${String(f).padStart(4, "0")}${ext}`), content.subarray(0, size));
    }
  }
  // Written last: its presence means every file above is on disk.
  writeFileSync(marker, `${JSON.stringify(expectedMarker(tree), null, 2)}\n`);
}

function ensureTree(baseDir, tree) {
  const { root } = treePaths(baseDir, tree);
  if (isTreeComplete(baseDir, tree)) {
    log(`tree ${tree.name}: reusing ${root}`);
    return root;
  }
  log(`tree ${tree.name}: generating ${tree.files} files in ${tree.dirs} directories at ${root}`);
  const started = performance.now();
  generateTree(baseDir, tree);
  log(`tree ${tree.name}: generated in ${((performance.now() - started) / 1000).toFixed(1)}s`);
  return root;
}

// ---------------------------------------------------------------------------------------------
// Tools

function findExecutable(name) {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // Not in this PATH entry; keep looking.
    }
  }
  return null;
}

/** First line of `<tool> --version`, for the report header; null when it prints nothing. */
function toolVersion(executable) {
  const result = spawnSync(executable, ["--version"], { encoding: "utf8" });
  const line = (result.stdout ?? "").split("\n")[0].trim();
  // sqlite3 appends its 64-character source hash, which only makes the header wrap.
  const words = line.split(/\s+/).filter((word) => word.length <= 32);
  return words.length === 0 ? null : words.join(" ");
}

function detectTools() {
  // Debian ships fd as `fdfind`, because `fd` was already taken by another package.
  const fd = findExecutable("fd") ?? findExecutable("fdfind");
  const tools = { find: findExecutable("find"), fd, sqlite3: findExecutable("sqlite3") };
  const versions = { node: process.version };
  for (const [name, path] of Object.entries(tools)) {
    versions[name] = path === null ? "not installed" : (toolVersion(path) ?? path);
  }
  return { tools, versions };
}

// ---------------------------------------------------------------------------------------------
// Commands

const DIRQ_ENV = { ...process.env, DIRQ_PROGRESS: "never" };

function dirqCommand(sql, check) {
  return {
    label: `dirq "${sql}"`,
    kind: "dirq",
    executable: process.execPath,
    args: [DIRQ_BIN, sql],
    env: DIRQ_ENV,
    check,
  };
}

function lineCount(stdout) {
  return stdout.split("\n").filter((line) => line !== "").length;
}

/** What each command should print for a tree; a wrong answer makes its timing meaningless. */
function treeCommands(tools, tree) {
  const fdName = tools.fd === null ? "fd" : tools.fd.split("/").pop();
  return [
    dirqCommand("SELECT count(*) FROM './'", (stdout) => {
      const count = JSON.parse(stdout)[0]?.["count(*)"];
      return count === tree.files ? null : `counted ${count}, expected ${tree.files}`;
    }),
    dirqCommand("SELECT path, size FROM './' ORDER BY size DESC LIMIT 10", (stdout) => {
      const rows = JSON.parse(stdout);
      return rows.length === 10 ? null : `returned ${rows.length} rows, expected 10`;
    }),
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
      label: `sqlite3 :memory: "SELECT count(*) FROM fsdir('.')"`,
      kind: "peer",
      executable: tools.sqlite3,
      args: [":memory:", "SELECT count(*) FROM fsdir('.')"],
      // fsdir lists directories and '.' itself as well as files.
      check: (stdout) => {
        const expected = tree.files + tree.dirs + 1;
        const count = Number(stdout.trim());
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

// ---------------------------------------------------------------------------------------------
// Timing

function describeFailure(result) {
  if (result.error) return result.error.message;
  const firstLine = (result.stderr ?? "").toString().trim().split("\n")[0];
  const status = result.status === null ? `signal ${result.signal}` : `exit ${result.status}`;
  return firstLine ? `${status}: ${firstLine}` : status;
}

/** One timed run: output discarded (as a user piping to /dev/null), wall clock only. */
function timeOnce(command, cwd) {
  const started = process.hrtime.bigint();
  const result = spawnSync(command.executable, command.args, {
    cwd,
    env: command.env ?? process.env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.error || result.status !== 0) return { error: describeFailure(result) };
  return { elapsedMs };
}

/** The untimed warm-up doubles as a correctness check, since only it keeps the output. */
function warmUp(command, cwd) {
  const result = spawnSync(command.executable, command.args, {
    cwd,
    env: command.env ?? process.env,
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  if (result.error || result.status !== 0) return { error: describeFailure(result) };
  try {
    return { warning: command.check(result.stdout) };
  } catch (error) {
    return { warning: `could not read its output: ${error.message}` };
  }
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/**
 * Warms every command up, then runs them round-robin: interleaving spreads background noise
 * (other processes, CPU frequency changes) over all commands instead of penalising one.
 */
function timeCommands(commands, cwd, runs) {
  const results = commands.map((command) => ({ command, samples: [], status: "ok" }));
  for (const result of results) {
    if (result.command.executable === null) {
      result.status = "not installed";
      continue;
    }
    const warm = warmUp(result.command, cwd);
    if (warm.error) result.status = `failed (${warm.error})`;
    else if (warm.warning) result.warning = warm.warning;
  }
  for (let run = 0; run < runs; run++) {
    for (const result of results) {
      if (result.status !== "ok") continue;
      const timing = timeOnce(result.command, cwd);
      if (timing.error) result.status = `failed (${timing.error})`;
      else result.samples.push(timing.elapsedMs);
    }
  }
  for (const result of results) {
    if (result.status !== "ok") continue;
    result.medianMs = median(result.samples);
    result.minMs = Math.min(...result.samples);
  }
  return results;
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

function addRatios(results, baselineKind) {
  const baseline = results.find((result) => result.command.kind === baselineKind);
  const baseMs = baseline?.status === "ok" ? baseline.medianMs : null;
  for (const result of results) {
    result.ratio = result.status === "ok" && baseMs ? result.medianMs / baseMs : null;
  }
  return baseline?.command.label ?? baselineKind;
}

function formatNumber(value, digits) {
  return value === null || value === undefined ? "n/a" : value.toFixed(digits);
}

function renderTable(title, ratioHeader, results) {
  const header = ["command", "median ms", "min ms", ratioHeader, "peak RSS MB"];
  const rows = results.map((result) => {
    if (result.status !== "ok") return [result.command.label, result.status, "", "", ""];
    const rss = result.command.kind === "dirq" ? formatNumber(result.peakRssMb, 1) : "";
    return [
      result.command.label,
      formatNumber(result.medianMs, 1),
      formatNumber(result.minMs, 1),
      result.ratio === null ? "n/a" : `${result.ratio.toFixed(2)}x`,
      rss,
    ];
  });
  // A status message ("not installed", "failed (...)") spans the numeric columns.
  const widths = header.map((cell, column) =>
    Math.max(
      cell.length,
      ...rows.filter((row) => row[2] !== "" || column === 0).map((row) => row[column].length),
    ),
  );
  const line = (cells) =>
    cells
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[0]) : cell.padStart(widths[column]),
      )
      .join("  ")
      .trimEnd();
  const out = [title, line(header), widths.map((width) => "-".repeat(width)).join("  ")];
  for (const row of rows) {
    out.push(row[2] === "" ? `${row[0].padEnd(widths[0])}  ${row[1]}` : line(row));
  }
  for (const result of results) {
    if (result.warning) out.push(`warning: ${result.command.label}: ${result.warning}`);
  }
  return out.join("\n");
}

function verdict(
  value,
  limit,
  unit,
  { strict = false, digits = 2, missing = "not measured" } = {},
) {
  if (value === null) return { value: null, limit, met: null, text: `n/a (${missing})` };
  // "within" a ratio allows equality; "under" a memory limit does not.
  const met = strict ? value < limit : value <= limit;
  return {
    value,
    limit,
    met,
    text: `${value.toFixed(digits)}${unit} (${met ? "met" : "not met"})`,
  };
}

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
  return [
    {
      name: "100k queries within 2x of find",
      ...verdict(worstRatio, TARGETS.queriesVsFind, "x", { missing }),
    },
    {
      name: "start-up within 3x of node -e 0",
      ...verdict(startup?.ratio ?? null, TARGETS.startupVsNode, "x"),
    },
    {
      name: "peak memory under 250 MB for 100k files",
      ...verdict(worstMemory, TARGETS.peakMemoryMb, " MB", { strict: true, digits: 1, missing }),
    },
  ];
}

function resultToJson(result) {
  const round = (value) => (typeof value === "number" ? Math.round(value * 100) / 100 : null);
  return {
    command: result.command.label,
    status: result.status,
    medianMs: round(result.medianMs),
    minMs: round(result.minMs),
    samplesMs: result.samples.map(round),
    ratio: round(result.ratio),
    peakRssMb: result.command.kind === "dirq" ? round(result.peakRssMb) : undefined,
    warning: result.warning ?? undefined,
  };
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
    startup: { ratioTo: report.startupBaseline, commands: report.startupResults.map(resultToJson) },
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
    out.push(renderTable(title, "vs find", results), "");
  }
  out.push(renderTable("start-up (empty directory)", "vs node -e 0", report.startupResults), "");
  for (const target of report.targets) out.push(`${target.name}: ${target.text}`);
  process.stdout.write(`${out.join("\n")}\n`);
}

// ---------------------------------------------------------------------------------------------
// Main

function main() {
  const options = parseOptions(process.argv.slice(2));
  if (!existsSync(DIRQ_MAIN)) {
    fail(`dirq is not built (${DIRQ_MAIN} is missing): run cd packages/dirq && npx tsc -p .`);
  }
  const { tools, versions } = detectTools();
  const scratch = mkdtempSync(join(tmpdir(), "dirq-bench-"));
  try {
    const meter = chooseMemoryMeter(scratch);
    const trees = TREES.filter((tree) => options.only === undefined || tree.name === options.only);
    const treeResults = trees.map((tree) => {
      const root = ensureTree(options.dir, tree);
      log(`tree ${tree.name}: timing ${options.runs} runs per command`);
      const results = timeCommands(treeCommands(tools, tree), root, options.runs);
      measureMemory(results, root, meter);
      const baseline = addRatios(results, "baseline");
      return { tree, root, results, baseline };
    });

    // An empty directory, so start-up is not mixed up with walking anything.
    const emptyDir = join(scratch, "empty");
    mkdirSync(emptyDir);
    log(`start-up: timing ${options.runs} runs per command`);
    const startupResults = timeCommands(startupCommands(), emptyDir, options.runs);
    measureMemory(startupResults, emptyDir, meter);
    const startupBaseline = addRatios(startupResults, "baseline");

    const targets = evaluateTargets(treeResults, startupResults);
    const report = { ...options, versions, meter, treeResults, startupResults, startupBaseline };
    report.targets = targets;
    if (options.json) printJson(report);
    else printText(report);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

main();
