#!/usr/bin/env node
// Benchmarks dirq's `--on-file` parser hooks (a Node script and jq) against the same per-file
// work run by `find | xargs -P` with no database. See bench/README.md for what it measures.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import {
  addRatios,
  DIRQ_BIN,
  DIRQ_ENV,
  findExecutable,
  formatNumber,
  formatRatio,
  log,
  markerMatches,
  benchOptionsUsage,
  parseBenchOptions,
  positiveInteger,
  renderTable,
  requireDirqBuilt,
  resultToJson,
  seededRandom,
  timeCommands,
  toolVersions,
  verdict,
  writeMarker,
} from "./lib.mjs";

/** Bump when the generator changes, so trees built by an older version are rebuilt. */
const TREE_FORMAT = 1;
const DEFAULT_FILES = 2_000;
const DIRS = 20;

const SQL = "SELECT count(*), sum(words) FROM './posts/**/*.json'";
/** dirq runs as many hooks at once as there are cores; xargs -P gets the same number. */
const PARALLEL = availableParallelism();
/** dirq, walk + hooks + SQLite, against the hooks alone: "within" allows equality. */
const TARGET_RATIO = 1.25;

/**
 * The hooks: `args` is the command without its file argument; dirq appends `{path}`, xargs
 * appends the path it read. `program` must be on PATH or both rows say "not installed".
 */
const HOOKS = [
  { name: "node", program: "node", args: "node parse.js" },
  { name: "jq", program: "jq", args: "jq -c '[.]'" },
];

/** The Node hook: one file's object as a one-row array. CommonJS: Node's quickest start. */
const PARSE_JS = `// Written by bench/dirq-hooks.mjs: prints the post in argv[2] as a one-row JSON array.
const { readFileSync } = require("node:fs");

const post = JSON.parse(readFileSync(process.argv[2], "utf8"));
process.stdout.write(\`\${JSON.stringify([post])}\\n\`);
`;
/** Pins parse.js to CommonJS whatever package.json is above --dir (the repo's says "module"). */
const PACKAGE_JSON = `{ "private": true, "type": "commonjs" }\n`;

const USAGE = `Usage: node bench/dirq-hooks.mjs [options]

  --runs N      timed runs per command, after one warm-up (default 3)
  --files N     number of JSON files to parse (default ${DEFAULT_FILES}); fewer is faster
${benchOptionsUsage(16, "where the generated tree lives")}`;

// ---------------------------------------------------------------------------------------------
// Options

function parseOptions(argv) {
  const values = parseBenchOptions(
    argv,
    {
      runs: { type: "string", default: "3" },
      files: { type: "string", default: String(DEFAULT_FILES) },
    },
    USAGE,
  );
  return {
    runs: positiveInteger(values.runs, "--runs"),
    files: positiveInteger(values.files, "--files"),
    dir: values.dir,
    json: values.json,
  };
}

// ---------------------------------------------------------------------------------------------
// Tree generation

const TITLE_WORDS = (
  "notes on walking trees with sql a week of small files parsing json in parallel why hooks " +
  "are slow fast the shell"
).split(" ");
const AUTHORS = ["ada", "brian", "grace", "ken", "linus", "margaret", "rob", "barbara"];

function dirName(index) {
  return String(index).padStart(2, "0");
}

/** The posts, from a seeded PRNG: the same files on every machine. File i goes to dir i % 20. */
function* posts(files) {
  const random = seededRandom(files);
  const pick = (list) => list[Math.floor(random() * list.length)];
  for (let i = 0; i < files; i++) {
    const title = Array.from({ length: 3 + Math.floor(random() * 5) }, () => pick(TITLE_WORDS));
    const post = {
      title: title.join(" "),
      author: pick(AUTHORS),
      words: 100 + Math.floor(random() * 4900),
    };
    yield { dir: dirName(i % DIRS), name: `${i}.json`, post };
  }
}

function treePaths(baseDir, files) {
  return {
    root: join(baseDir, `hooks-${files}`),
    // Outside the tree, like dirq-walk's markers.
    marker: join(baseDir, `hooks-${files}.complete.json`),
  };
}

/** What the tree holds, including the sum of `words` that every command must reproduce. */
function expectedMarker(files) {
  let words = 0;
  for (const { post } of posts(files)) words += post.words;
  return { format: TREE_FORMAT, files, dirs: Math.min(DIRS, files), words };
}

/** Reused only if the marker matches and every file is still there. */
function isTreeComplete(root, marker, expected) {
  if (!markerMatches(marker, expected)) return false;
  try {
    const dirs = readdirSync(join(root, "posts"));
    const count = dirs.reduce((sum, dir) => sum + readdirSync(join(root, "posts", dir)).length, 0);
    return dirs.length === expected.dirs && count === expected.files;
  } catch {
    return false;
  }
}

function generateTree(root, marker, expected) {
  // A half-written tree (interrupted run) would skew counts: start again from nothing.
  rmSync(marker, { force: true });
  rmSync(root, { recursive: true, force: true });
  for (let d = 0; d < expected.dirs; d++) {
    mkdirSync(join(root, "posts", dirName(d)), { recursive: true });
  }
  for (const { dir, name, post } of posts(expected.files)) {
    writeFileSync(join(root, "posts", dir, name), `${JSON.stringify(post)}\n`);
  }
  writeMarker(marker, expected);
}

/** The tree, generated once; parse.js is rewritten every time so it always matches this script. */
function ensureTree(baseDir, files) {
  const { root, marker } = treePaths(baseDir, files);
  const expected = expectedMarker(files);
  if (isTreeComplete(root, marker, expected)) {
    log(`tree: reusing ${root}`);
  } else {
    log(`tree: generating ${files} JSON files in ${expected.dirs} directories at ${root}`);
    const started = performance.now();
    generateTree(root, marker, expected);
    log(`tree: generated in ${((performance.now() - started) / 1000).toFixed(1)}s`);
  }
  writeFileSync(join(root, "parse.js"), PARSE_JS);
  writeFileSync(join(root, "package.json"), PACKAGE_JSON);
  return { root, expected };
}

// ---------------------------------------------------------------------------------------------
// Commands

function detectTools() {
  const tools = {
    find: findExecutable("find"),
    xargs: findExecutable("xargs"),
    sh: findExecutable("sh"),
  };
  for (const hook of HOOKS) tools[hook.program] = findExecutable(hook.program);
  return { tools, versions: toolVersions(tools) };
}

/** One line per file, each `[{...}]`: the lines must add up to the tree's files and words. */
function checkHookLines(stdout, expected) {
  const lines = stdout.split("\n").filter((line) => line !== "");
  let words = 0;
  for (const line of lines) words += JSON.parse(line)[0].words;
  if (lines.length !== expected.files) {
    return `printed ${lines.length} lines, expected ${expected.files}`;
  }
  return words === expected.words ? null : `words add up to ${words}, expected ${expected.words}`;
}

function checkDirqCount(stdout, expected) {
  const row = JSON.parse(stdout)[0] ?? {};
  const count = row["count(*)"];
  const words = row["sum(words)"];
  if (count !== expected.files) return `counted ${count}, expected ${expected.files}`;
  return words === expected.words ? null : `sum(words) is ${words}, expected ${expected.words}`;
}

/** dirq with the hook, then the pipeline doing the same per-file work (the ratio's base). */
function hookCommands(hook, tools, expected) {
  const installed = tools[hook.program] !== null;
  const onFile = `${hook.args} {path}`;
  const pipeline = `find posts -name '*.json' -print0 | xargs -0 -P${PARALLEL} -n1 ${hook.args}`;
  const pipelineReady = installed && tools.find !== null && tools.xargs !== null;
  return [
    {
      label: `dirq "${SQL}" --on-file "${onFile}"`,
      kind: "dirq",
      short: "dirq",
      executable: installed ? process.execPath : null,
      args: [DIRQ_BIN, SQL, "--on-file", onFile],
      env: DIRQ_ENV,
      check: (stdout) => checkDirqCount(stdout, expected),
    },
    {
      label: pipeline,
      kind: "baseline",
      short: "find | xargs",
      executable: pipelineReady ? tools.sh : null,
      args: ["-c", pipeline],
      check: (stdout) => checkHookLines(stdout, expected),
    },
  ];
}

// ---------------------------------------------------------------------------------------------
// Report

const COLUMNS = [
  { header: "median s", cell: (result) => formatNumber(result.medianMs / 1000, 2) },
  { header: "min s", cell: (result) => formatNumber(result.minMs / 1000, 2) },
  { header: "vs xargs", cell: (result) => formatRatio(result.ratio) },
];

function evaluateTarget(hook, results, tools) {
  const dirq = results.find((result) => result.command.kind === "dirq");
  const missing =
    tools[hook.program] === null ? `${hook.program} not installed` : "a command failed";
  return {
    name: `${hook.name} hook: dirq within ${TARGET_RATIO}x of the xargs pipeline`,
    ...verdict(dirq?.ratio ?? null, TARGET_RATIO, "x", { missing }),
  };
}

function printJson(report) {
  const json = {
    runs: report.runs,
    files: report.expected.files,
    dirs: report.expected.dirs,
    path: report.root,
    sql: SQL,
    environment: {
      ...report.versions,
      cpus: PARALLEL,
      parallelHooks: PARALLEL,
      platform: process.platform,
    },
    hooks: report.hookResults.map(({ hook, results, baseline, target }) => ({
      name: hook.name,
      onFile: `${hook.args} {path}`,
      ratioTo: baseline,
      commands: results.map((result) => resultToJson(result)),
      target: { name: target.name, value: target.value, limit: target.limit, met: target.met },
    })),
  };
  process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
}

function printText(report) {
  const { versions, expected } = report;
  const tools = HOOKS.map((hook) => `${hook.program}: ${versions[hook.program]}`);
  const out = [
    `dirq hook benchmark: median of ${report.runs} runs after 1 warm-up, wall clock, warm cache`,
    `${tools.join(" | ")} | ${versions.find} | ${versions.xargs}`,
    `cpus: ${PARALLEL} (hooks at once: dirq ${PARALLEL}, xargs -P${PARALLEL}) | tree: ${report.root}`,
    "",
  ];
  for (const { hook, results } of report.hookResults) {
    const title = `${hook.name} hook, ${expected.files.toLocaleString("en-US")} files`;
    out.push(renderTable(title, COLUMNS, results), "");
  }
  for (const { target } of report.hookResults) out.push(`${target.name}: ${target.text}`);
  process.stdout.write(`${out.join("\n")}\n`);
}

// ---------------------------------------------------------------------------------------------
// Main

function main() {
  const options = parseOptions(process.argv.slice(2));
  requireDirqBuilt();
  const { tools, versions } = detectTools();
  const { root, expected } = ensureTree(options.dir, options.files);
  const hookResults = HOOKS.map((hook) => {
    log(`${hook.name} hook: 1 warm-up + ${options.runs} runs of each command`);
    const results = timeCommands(hookCommands(hook, tools, expected), root, options.runs, {
      onProgress: (message) => log(`${hook.name} hook: ${message}`),
    });
    const baseline = addRatios(results, "baseline");
    return { hook, results, baseline, target: evaluateTarget(hook, results, tools) };
  });
  const report = { ...options, versions, root, expected, hookResults };
  if (options.json) printJson(report);
  else printText(report);
}

main();
