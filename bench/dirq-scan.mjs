#!/usr/bin/env node
// One-shot scans against find, pair by pair: each dirq statement runs alternately with its
// reference (A B A B ...) so both see the same background, and the report gives the ratio of
// medians, the peak memory, and the load average before and after. See bench/README.md
// ("Scan benchmark").
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import {
  DIRQ_BIN,
  DIRQ_ENV,
  REPO_ROOT,
  fail,
  fileTreeMarker,
  fileTreePaths,
  generateFileTree,
  log,
  markerMatches,
  median,
  parseBenchOptions,
  positiveInteger,
  benchOptionsUsage,
  table,
} from "./lib.mjs";

const TREES = {
  "100k": { name: "100k", files: 100_000, dirs: 1_000 },
  "1m": { name: "1m", files: 1_000_000, dirs: 10_000 },
};

/** The issue's targets (#36): ratio of medians to the reference, and memory. */
const TARGETS = {
  "100k": { pathsOnly: 2, topBySize: 1.3 },
  "1m": { pathsOnly: 1.3, topBySize: 1.3 },
  startup: 1.25,
  memoryVsNode: 1.5,
  memoryMb1m: 200,
};

const USAGE = `usage: node bench/dirq-scan.mjs [options]

  --runs N             timed runs of each command of a pair (default 7)
  --tree 100k|1m       the tree to scan (default 100k; 1m takes minutes and ~4 GB to generate)
  --startup-runs N     runs of the start-up pair (default 21)
  --dirq PATH          the dirq launcher to time (default: this checkout's packages/dirq/bin)
  --packed             npm pack this checkout's dirq and install the tarball into a temporary
                       prefix, and time that (the package as users get it)
  --without-extra-ca   run every command without NODE_EXTRA_CA_CERTS (Node 20 parses that
                       file at every start, before any JavaScript: see bench/README.md)
${benchOptionsUsage(23, "where the trees live")}`;

function parseArgs(argv) {
  const values = parseBenchOptions(
    argv,
    {
      runs: { type: "string", default: "7" },
      tree: { type: "string", default: "100k" },
      "startup-runs": { type: "string", default: "21" },
      dirq: { type: "string" },
      packed: { type: "boolean", default: false },
      "without-extra-ca": { type: "boolean", default: false },
    },
    USAGE,
  );
  if (!TREES[values.tree]) fail(`--tree must be 100k or 1m, not ${values.tree}`);
  return {
    dir: values.dir,
    json: values.json,
    runs: positiveInteger(values.runs, "--runs"),
    tree: values.tree,
    startupRuns: positiveInteger(values["startup-runs"], "--startup-runs"),
    dirq: values.dirq ?? null,
    packed: values.packed,
    withoutExtraCa: values["without-extra-ca"],
  };
}

/** Packs dirq and installs the tarball into a fresh prefix: returns its launcher's path. */
function installPacked() {
  const scratch = mkdtempSync(join(tmpdir(), "dirq-scan-pack-"));
  log(`packing dirq into ${scratch}`);
  const packed = execFileSync(
    "npm",
    ["pack", "-w", "packages/dirq", "--pack-destination", scratch, "--silent"],
    { cwd: REPO_ROOT, encoding: "utf8" },
  )
    .trim()
    .split("\n")
    .pop();
  const prefix = join(scratch, "prefix");
  // Installed by the Node that runs the benchmark, as a user installs with the Node they run:
  // the install script records SQLite's addon for that Node's ABI (another Node searches).
  const path = `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}`;
  execFileSync(
    "npm",
    ["install", "--prefix", prefix, "--no-audit", "--no-fund", join(scratch, packed)],
    { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, PATH: path } },
  );
  return join(prefix, "node_modules", "dirq", "bin", "dirq.cjs");
}

function ensureTree(baseDir, tree) {
  const { root, marker } = fileTreePaths(baseDir, "files", tree);
  if (!markerMatches(marker, fileTreeMarker(tree)) || !existsSync(root)) {
    log(`tree ${tree.name}: generating ${tree.files} files in ${tree.dirs} directories`);
    generateFileTree(root, marker, tree);
  }
  return root;
}

/** Wall time of one run (output discarded) in ms, or throws with the command's stderr. */
function timeOnce(command, cwd) {
  const started = process.hrtime.bigint();
  const result = spawnSync(command.executable, command.args, {
    cwd,
    env: command.env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0) {
    fail(`${command.label} failed (exit ${result.status}): ${String(result.stderr).trim()}`);
  }
  return ms;
}

/** Peak RSS in MB through GNU time, or null without it. */
function peakMb(command, cwd) {
  if (!existsSync("/usr/bin/time")) return null;
  const result = spawnSync("/usr/bin/time", ["-f", "%M", command.executable, ...command.args], {
    cwd,
    env: command.env,
    stdio: ["ignore", "ignore", "pipe"],
    encoding: "utf8",
  });
  const kilobytes = Number(result.stderr.trim().split("\n").pop());
  return Number.isFinite(kilobytes) && kilobytes > 0 ? kilobytes / 1024 : null;
}

/** The lines a command prints, sorted: dirq's JSON rows or find's lines, to compare counts. */
function outputLines(command, cwd) {
  return spawnSync(command.executable, command.args, {
    cwd,
    env: command.env,
    encoding: "utf8",
    maxBuffer: 1024 * 1024 * 1024,
  }).stdout;
}

/** A and B alternately, `runs` times each after one warm-up of each. */
function timePair(pair, cwd, runs) {
  for (const command of [pair.a, pair.b]) timeOnce(command, cwd);
  const a = [];
  const b = [];
  for (let run = 0; run < runs; run++) {
    a.push(timeOnce(pair.a, cwd));
    b.push(timeOnce(pair.b, cwd));
  }
  const medianA = median(a);
  const medianB = median(b);
  return {
    label: pair.label,
    a: pair.a.label,
    b: pair.b.label,
    medianA,
    medianB,
    ratio: medianA / medianB,
    peakA: peakMb(pair.a, cwd),
    peakB: peakMb(pair.b, cwd),
    target: pair.target ?? null,
  };
}

/**
 * The environment every command of the run gets: this process's, or without
 * NODE_EXTRA_CA_CERTS (`--without-extra-ca`). Node 20 reads and parses that file when it
 * starts, before any JavaScript, whether or not the program uses TLS (Node 22 and later parse
 * it when TLS first needs it), so it weighs on dirq and `node -e 0` alike.
 */
let baseEnv = process.env;

function withoutExtraCa(env) {
  const copy = { ...env };
  delete copy.NODE_EXTRA_CA_CERTS;
  return copy;
}

function dirqCommand(launcher, sql) {
  return {
    label: `dirq "${sql}"`,
    executable: process.execPath,
    args: [launcher, sql],
    env: { ...baseEnv, DIRQ_PROGRESS: DIRQ_ENV.DIRQ_PROGRESS },
  };
}

function nodeCommand(label, env) {
  return { label, executable: process.execPath, args: ["-e", "0"], env };
}

function findCommand(args) {
  return {
    label: `find ${args
      .map((arg) => (/[\s%*]/.test(arg) ? `'${arg.replaceAll("\n", "\\n")}'` : arg))
      .join(" ")}`,
    executable: "find",
    args,
    env: baseEnv,
  };
}

/** What NODE_EXTRA_CA_CERTS costs Node's start here: `node -e 0` with it against without. */
function extraCaPair() {
  return {
    label: "NODE_EXTRA_CA_CERTS",
    a: nodeCommand("node -e 0", process.env),
    b: nodeCommand("node -e 0 without it", withoutExtraCa(process.env)),
  };
}

function treePairs(launcher, treeName) {
  const targets = TARGETS[treeName];
  return [
    {
      label: "count(*), no stat",
      a: dirqCommand(launcher, "SELECT count(*) FROM './'"),
      b: findCommand([".", "-type", "f", "-printf", "%p\n"]),
      target: targets.pathsOnly,
    },
    {
      label: "path-only glob",
      a: dirqCommand(launcher, "SELECT path FROM './**/*.md'"),
      b: findCommand([".", "-type", "f", "-name", "*.md", "-printf", "%p\n"]),
      target: targets.pathsOnly,
    },
    {
      label: "count(*) vs a stat-every-file find",
      a: dirqCommand(launcher, "SELECT count(*) FROM './'"),
      b: findCommand([".", "-type", "f", "-printf", "%s\n"]),
    },
    {
      label: "top 10 by size",
      a: dirqCommand(launcher, "SELECT path, size FROM './' ORDER BY size DESC LIMIT 10"),
      b: findCommand([".", "-type", "f", "-printf", "%s %p\n"]),
      target: targets.topBySize,
    },
  ];
}

/** Checks, once, that each dirq statement and its reference agree on how many files match. */
function checkCounts(pairs, cwd) {
  for (const pair of pairs.slice(0, 2)) {
    const dirqOut = outputLines(pair.a, cwd);
    const findCount = outputLines(pair.b, cwd).split("\n").filter(Boolean).length;
    const rows = JSON.parse(dirqOut);
    const dirqCount = "count(*)" in (rows[0] ?? {}) ? rows[0]["count(*)"] : rows.length;
    if (dirqCount !== findCount) {
      fail(`${pair.a.label} found ${dirqCount} files, ${pair.b.label} ${findCount}`);
    }
  }
}

function loadText() {
  return loadavg()
    .map((value) => value.toFixed(2))
    .join(" ");
}

function report(results, startup, extraCa, tree, before, after) {
  const rows = [...results, startup, ...(extraCa ? [extraCa] : [])].map((result) => [
    result.label,
    result.a,
    result.medianA.toFixed(1),
    result.b,
    result.medianB.toFixed(1),
    `${result.ratio.toFixed(2)}x`,
    result.target === null
      ? ""
      : `<= ${result.target}x ${result.ratio <= result.target ? "met" : "NOT met"}`,
    result.peakA === null ? "n/a" : result.peakA.toFixed(1),
    result.peakB === null ? "n/a" : result.peakB.toFixed(1),
  ]);
  const lines = [
    `dirq scan benchmark: ${tree.files.toLocaleString("en")} files in ${tree.dirs} folders, node ${process.version}`,
    `load average before: ${before}`,
    ...table(["pair", "A", "A ms", "B (reference)", "B ms", "A/B", "target", "A MB", "B MB"], rows),
    `load average after: ${after}`,
    extraCaNote(extraCa),
  ];
  const memoryRatio =
    Math.max(...results.map((result) => result.peakA ?? 0)) / (startup.peakB ?? 1);
  if (tree.name === "100k") {
    lines.push(
      `peak memory of the dirq scans vs node -e 0: ${memoryRatio.toFixed(2)}x (target <= ${TARGETS.memoryVsNode}x)`,
    );
  } else {
    const peak = Math.max(...results.map((result) => result.peakA ?? 0));
    lines.push(
      `peak memory of the dirq scans: ${peak.toFixed(1)} MB (target < ${TARGETS.memoryMb1m} MB)`,
    );
  }
  return lines.join("\n");
}

function extraCaNote(extraCa) {
  if (baseEnv.NODE_EXTRA_CA_CERTS === undefined) {
    return process.env.NODE_EXTRA_CA_CERTS === undefined
      ? "NODE_EXTRA_CA_CERTS: not set"
      : "NODE_EXTRA_CA_CERTS: set here, left out of every command (--without-extra-ca)";
  }
  const cost = extraCa
    ? `: ${(extraCa.medianA - extraCa.medianB).toFixed(1)} ms of each start`
    : "";
  return `NODE_EXTRA_CA_CERTS: set, every command pays for it${cost}`;
}

function main() {
  const options = parseArgs(process.argv.slice(2));
  if (options.withoutExtraCa) baseEnv = withoutExtraCa(process.env);
  const launcher = options.packed ? installPacked() : (options.dirq ?? DIRQ_BIN);
  if (!existsSync(launcher)) fail(`no dirq launcher at ${launcher}: build dirq first`);
  const tree = TREES[options.tree];
  const root = ensureTree(options.dir, tree);
  const empty = mkdtempSync(join(tmpdir(), "dirq-scan-empty-"));
  try {
    const pairs = treePairs(launcher, tree.name);
    checkCounts(pairs, root);
    const before = loadText();
    const results = pairs.map((pair) => {
      log(`timing: ${pair.label}`);
      return timePair(pair, root, options.runs);
    });
    log("timing: start-up");
    const startup = timePair(
      {
        label: "start-up",
        a: dirqCommand(launcher, "SELECT 1"),
        b: nodeCommand("node -e 0", baseEnv),
        target: TARGETS.startup,
      },
      empty,
      options.startupRuns,
    );
    const extraCa =
      baseEnv.NODE_EXTRA_CA_CERTS === undefined
        ? null
        : timePair(extraCaPair(), empty, options.startupRuns);
    const after = loadText();
    const text = report(results, startup, extraCa, tree, before, after);
    if (options.json) {
      process.stdout.write(
        `${JSON.stringify({ tree: tree.name, before, after, results, startup, extraCa }, null, 2)}\n`,
      );
    } else {
      process.stdout.write(`${text}\n`);
    }
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
}

main();
