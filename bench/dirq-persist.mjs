#!/usr/bin/env node
// Benchmarks `--persist`: a cold run, a warm run with no change, a warm run after 10 files
// changed (parsed files, a Node hook with a --log argument that imports a local module), and
// count(*) over a 100,000-file tree cold vs warm.
// See bench/README.md.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import {
  benchOptionsUsage,
  DIRQ_BIN,
  DIRQ_ENV,
  fileTreeMarker,
  fileTreePaths,
  formatNumber,
  generateFileTree,
  log,
  markerMatches,
  median,
  parseBenchOptions,
  positiveInteger,
  requireDirqBuilt,
  seededRandom,
  table,
  writeMarker,
} from "./lib.mjs";

const DEFAULT_FILES = 2_000;
const DIRS = 100;
const CHANGED = 10;
const SQL = "SELECT count(*) AS files, sum(words) AS words FROM posts";
const COUNT_SQL = "SELECT count(*) AS c FROM './'";
const BIG_TREE = { name: "100k", files: 100_000, dirs: 1_000 };
/** Warm (no change) against cold: issue 35's target on 2,000 files with this hook. */
const TARGET = 50;
const AIM = 50;

const USAGE = `Usage: node bench/dirq-persist.mjs [options]

  --files N     parsed JSON files (default ${DEFAULT_FILES}); the cold run spawns a Node hook
                per file, so it takes minutes at the default
  --runs N      timed warm runs of each kind (default 5)
  --skip-tree   leave out the 100,000-file count(*) part
${benchOptionsUsage(16, "where the generated trees and caches live")}`;

/**
 * The hook, as a real one looks: a script that imports a local module and takes a `--log`
 * argument (a file outside the tree it appends each parsed file to: the parse count). The
 * argument's file changes on every run, so it must not be part of the table's definition.
 */
const PARSE_JS = `// Written by bench/dirq-persist.mjs.
const { appendFileSync, readFileSync } = require("node:fs");
const { toRow } = require("./lib/post.js");
const log = process.argv[process.argv.indexOf("--log") + 1];
appendFileSync(log, process.argv[2] + "\\n");
process.stdout.write(JSON.stringify([toRow(JSON.parse(readFileSync(process.argv[2], "utf8")))]) + "\\n");
`;
const POST_JS = `// Written by bench/dirq-persist.mjs.
exports.toRow = (post) => ({ id: post.id, words: post.words });
`;
const config = (parseLog) => `[[table]]
name = "posts"
glob = "posts/**/*.json"
on-file = "node parse.js {path} --log ${parseLog}"
`;

function parseOptions(argv) {
  const values = parseBenchOptions(
    argv,
    {
      files: { type: "string", default: String(DEFAULT_FILES) },
      runs: { type: "string", default: "5" },
      "skip-tree": { type: "boolean", default: false },
    },
    USAGE,
  );
  return {
    files: positiveInteger(values.files, "--files"),
    runs: positiveInteger(values.runs, "--runs"),
    skipTree: values["skip-tree"],
    dir: values.dir,
    json: values.json,
  };
}

function post(random, i) {
  return { id: i, words: 100 + Math.floor(random() * 4900) };
}

/** The parsed tree: `files` JSON posts in 100 folders, the hook and the config. */
function ensurePostsTree(baseDir, files, parseLog) {
  const root = join(baseDir, `persist-${files}`);
  const marker = join(baseDir, `persist-${files}.complete.json`);
  const expected = { format: 1, files, dirs: DIRS };
  if (!markerMatches(marker, expected) || !existsSync(root)) {
    log(`tree: generating ${files} JSON files at ${root}`);
    rmSync(root, { recursive: true, force: true });
    const random = seededRandom(files);
    for (let d = 0; d < DIRS; d++) mkdirSync(join(root, "posts", String(d)), { recursive: true });
    for (let i = 0; i < files; i++) {
      writeFileSync(
        join(root, "posts", String(i % DIRS), `${i}.json`),
        JSON.stringify(post(random, i)),
      );
    }
    writeMarker(marker, expected);
  } else {
    log(`tree: reusing ${root}`);
  }
  writeFileSync(join(root, "parse.js"), PARSE_JS);
  mkdirSync(join(root, "lib"), { recursive: true });
  writeFileSync(join(root, "lib", "post.js"), POST_JS);
  writeFileSync(join(root, "package.json"), `{ "private": true, "type": "commonjs" }\n`);
  writeFileSync(join(root, "dirq.toml"), config(parseLog));
  return root;
}

function ensureBigTree(baseDir) {
  const { root, marker } = fileTreePaths(baseDir, "files", BIG_TREE);
  if (!markerMatches(marker, fileTreeMarker(BIG_TREE)) || !existsSync(root)) {
    log(`tree: generating ${BIG_TREE.files} files at ${root}`);
    generateFileTree(root, marker, BIG_TREE);
  }
  return root;
}

/** Runs dirq once; returns wall milliseconds and the parsed rows. */
function timeDirq(args, cwd, env = {}) {
  const started = performance.now();
  const run = spawnSync(process.execPath, [DIRQ_BIN, ...args], {
    cwd,
    env: { ...DIRQ_ENV, ...env },
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  const ms = performance.now() - started;
  if (run.status !== 0) throw new Error(`dirq ${args.join(" ")} failed: ${run.stderr}`);
  return { ms, rows: JSON.parse(run.stdout) };
}

function parsedSince(logPath, before) {
  const lines = readFileSync(logPath, "utf8").split("\n").filter(Boolean).length;
  return lines - before;
}

function logLines(logPath) {
  return readFileSync(logPath, "utf8").split("\n").filter(Boolean).length;
}

function benchParsed(options) {
  const parseLog = join(options.dir, `persist-${options.files}.parsed.log`);
  const root = ensurePostsTree(options.dir, options.files, parseLog);
  const cache = join(options.dir, `persist-${options.files}.cache.db`);
  for (const suffix of ["", "-wal", "-shm", ".lock"]) rmSync(`${cache}${suffix}`, { force: true });
  writeFileSync(parseLog, "");
  const args = [SQL, "-c", "dirq.toml", `--persist=${cache}`, "--format", "json"];
  const env = {};
  log(`cold: parsing ${options.files} files with a Node hook (one process per file)...`);
  const cold = timeDirq(args, root, env);
  const coldParsed = parsedSince(parseLog, 0);
  // Each phase's figure as it is known: a run cut short still leaves them.
  log(`cold: ${seconds(cold.ms)} s, ${coldParsed} files parsed`);
  const warm = [];
  const warmParsed = [];
  for (let run = 0; run < options.runs; run++) {
    const before = logLines(parseLog);
    warm.push(timeDirq(args, root, env).ms);
    warmParsed.push(parsedSince(parseLog, before));
  }
  log(
    `warm, no change: median ${seconds(median(warm))} s of ${warm.map(seconds).join(", ")}, ` +
      `parsed ${warmParsed.join(",")}, ${formatNumber(cold.ms / median(warm), 1)}x faster than cold`,
  );
  const changed = [];
  const changedParsed = [];
  let answer = cold.rows[0];
  for (let run = 0; run < options.runs; run++) {
    for (let k = 0; k < CHANGED; k++) {
      const i = ((run * CHANGED + k) * 97) % options.files;
      const file = join(root, "posts", String(i % DIRS), `${i}.json`);
      const body = JSON.parse(readFileSync(file, "utf8"));
      body.words += 1;
      writeFileSync(file, JSON.stringify(body));
    }
    const before = logLines(parseLog);
    const result = timeDirq(args, root, env);
    changed.push(result.ms);
    changedParsed.push(parsedSince(parseLog, before));
    answer = result.rows[0];
  }
  // A fresh scan must agree with the last persisted answer.
  const fresh = timeDirq([SQL, "-c", "dirq.toml", "--format", "json"], root);
  const agrees = JSON.stringify(fresh.rows[0]) === JSON.stringify(answer);
  return {
    files: options.files,
    coldMs: cold.ms,
    coldParsed,
    warmMs: median(warm),
    warmParsed,
    changedMs: median(changed),
    changedParsed,
    agreesWithFreshScan: agrees,
    freshMs: fresh.ms,
  };
}

function benchTree(options) {
  const root = ensureBigTree(options.dir);
  const cache = join(options.dir, "files-100k.cache.db");
  for (const suffix of ["", "-wal", "-shm", ".lock"]) rmSync(`${cache}${suffix}`, { force: true });
  const args = [COUNT_SQL, `--persist=${cache}`, "--format", "json"];
  const plain = [];
  for (let run = 0; run < options.runs; run++)
    plain.push(timeDirq([COUNT_SQL, "--format", "json"], root).ms);
  const cold = timeDirq(args, root);
  const warm = [];
  for (let run = 0; run < options.runs; run++) warm.push(timeDirq(args, root).ms);
  return {
    files: BIG_TREE.files,
    plainMs: median(plain),
    coldMs: cold.ms,
    warmMs: median(warm),
    count: cold.rows[0].c,
  };
}

function seconds(ms) {
  return formatNumber(ms / 1000, 3);
}

function main() {
  const options = parseOptions(process.argv.slice(2));
  requireDirqBuilt();
  mkdirSync(options.dir, { recursive: true });
  const parsed = benchParsed(options);
  const tree = options.skipTree ? null : benchTree(options);
  const warmRatio = parsed.coldMs / parsed.warmMs;
  if (options.json) {
    process.stdout.write(`${JSON.stringify({ parsed, tree, warmRatio }, null, 2)}\n`);
    return;
  }
  const rows = [
    ["cold (empty cache)", seconds(parsed.coldMs), String(parsed.coldParsed), "1.0x"],
    [
      "warm, no change",
      seconds(parsed.warmMs),
      parsed.warmParsed.join(","),
      `${formatNumber(warmRatio, 1)}x faster`,
    ],
    [
      `warm, ${CHANGED} files changed`,
      seconds(parsed.changedMs),
      parsed.changedParsed.join(","),
      `${formatNumber(parsed.coldMs / parsed.changedMs, 1)}x faster`,
    ],
  ];
  const [load1, load5] = loadavg();
  process.stdout.write(
    `load average ${formatNumber(load1, 2)} ${formatNumber(load5, 2)} (1, 5 min) at the end\n` +
      `${parsed.files} parsed files, Node hook, medians of ${options.runs} warm runs\n` +
      `${table(["run", "wall s", "files parsed", "vs cold"], rows).join("\n")}\n` +
      `persisted answer agrees with a fresh scan: ${parsed.agreesWithFreshScan ? "yes" : "NO"}\n` +
      `target: warm no-change at least ${TARGET}x faster than cold (aim ${AIM}x): ` +
      `${warmRatio >= TARGET ? "met" : "missed"} (${formatNumber(warmRatio, 1)}x); ` +
      `${CHANGED}-change runs parse exactly ${CHANGED}: ${parsed.changedParsed.every((n) => n === CHANGED) ? "yes" : "NO"}\n`,
  );
  if (tree) {
    const treeRows = [
      ["no --persist", seconds(tree.plainMs), "1.00x"],
      ["--persist, cold", seconds(tree.coldMs), `${formatNumber(tree.coldMs / tree.plainMs, 2)}x`],
      ["--persist, warm", seconds(tree.warmMs), `${formatNumber(tree.warmMs / tree.plainMs, 2)}x`],
    ];
    process.stdout.write(
      `\n${COUNT_SQL} over ${tree.files} files (count ${tree.count}), medians of ${options.runs}\n` +
        `${table(["run", "wall s", "vs no --persist"], treeRows).join("\n")}\n`,
    );
  }
}

main();
