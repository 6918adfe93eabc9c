#!/usr/bin/env node
// Benchmarks the dirq SDK ingesting JSON files with an in-process `extract` function against
// DuckDB's `read_json` over the same files, in the same run. See bench/README.md.
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  benchOptionsUsage,
  formatNumber,
  formatRatio,
  log,
  markerMatches,
  median,
  parseBenchOptions,
  positiveInteger,
  REPO_ROOT,
  requireDirqBuilt,
  round,
  seededRandom,
  table,
  writeMarker,
} from "./lib.mjs";

const TREE_FORMAT = 1;
const DEFAULT_FILES = 2_000;
const DIRS = 20;
/** The target: no slower than DuckDB (ratio <= 1); the aim is 2x faster (<= 0.5). */
const TARGET_RATIO = 1;
const AIM_RATIO = 0.5;
const SDK_ENTRY = join(REPO_ROOT, "packages", "dirq", "dist", "src", "index.js");

const USAGE = `Usage: node bench/dirq-sdk-ingest.mjs [options]

Times ingesting N JSON files and answering count(*), sum(words): the dirq SDK with an
in-process extract function against DuckDB's read_json. Each run is a fresh process.

  --runs N      timed runs per engine, after one warm-up (default 5)
  --files N     number of JSON files (default ${DEFAULT_FILES})
${benchOptionsUsage(16, "where the generated tree lives")}`;

// ---------------------------------------------------------------------------------------------
// One measured run, in a child process: `--child dirq|duckdb <root>` prints one JSON line.

async function runDirq(root) {
  const { open } = await import(SDK_ENTRY);
  const cpu = process.cpuUsage();
  const started = performance.now();
  const db = open({
    root,
    progress: false,
    tables: [
      {
        name: "posts",
        glob: "posts/**/*.json",
        extract: (_path, content) => [JSON.parse(content.toString("utf8"))],
      },
    ],
  });
  const [row] = await db.query("SELECT count(*) AS files, sum(words) AS words FROM posts");
  const ms = performance.now() - started;
  const cpuMs = cpuSince(cpu);
  await db.close();
  return { ms, cpuMs, files: row.files, words: row.words };
}

/**
 * DuckDB is the peer, installed only to run this benchmark: its npm package lists platform
 * binaries that this machine's npm leaves out of the lockfile, which would break `npm ci`.
 */
async function requireDuckdb() {
  try {
    await import("@duckdb/node-api");
  } catch {
    console.error(
      "bench: DuckDB is not installed. Run `npm install --no-save @duckdb/node-api` at the repository root first.",
    );
    process.exit(2);
  }
}

async function runDuckdb(root) {
  const { DuckDBInstance } = await import("@duckdb/node-api");
  const cpu = process.cpuUsage();
  const started = performance.now();
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  const glob = join(root, "posts", "**", "*.json").replaceAll("'", "''");
  const reader = await connection.runAndReadAll(
    `SELECT count(*)::INTEGER AS files, sum(words)::BIGINT AS words FROM read_json('${glob}')`,
  );
  const [row] = reader.getRowObjectsJS();
  const ms = performance.now() - started;
  const cpuMs = cpuSince(cpu);
  connection.closeSync();
  instance.closeSync();
  return { ms, cpuMs, files: Number(row.files), words: Number(row.words) };
}

/** CPU time of the whole process (every thread: DuckDB's workers count too) since `start`. */
function cpuSince(start) {
  const { user, system } = process.cpuUsage(start);
  return (user + system) / 1000;
}

async function child(engine, root) {
  const result = engine === "dirq" ? await runDirq(root) : await runDuckdb(root);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

// ---------------------------------------------------------------------------------------------
// The tree: the same posts as bench/dirq-hooks.mjs generates (seeded), in its own folder.

const TITLE_WORDS = (
  "notes on walking trees with sql a week of small files parsing json in parallel why hooks " +
  "are slow fast the shell"
).split(" ");
const AUTHORS = ["ada", "brian", "grace", "ken", "linus", "margaret", "rob", "barbara"];

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
    yield { dir: String(i % DIRS).padStart(2, "0"), name: `${i}.json`, post };
  }
}

function ensureTree(baseDir, files) {
  const root = join(baseDir, `sdk-ingest-${files}`);
  const marker = join(baseDir, `sdk-ingest-${files}.complete.json`);
  let words = 0;
  for (const { post } of posts(files)) words += post.words;
  const expected = { format: TREE_FORMAT, files, words };
  const complete = () => {
    try {
      const dirs = readdirSync(join(root, "posts"));
      return (
        dirs.reduce((sum, dir) => sum + readdirSync(join(root, "posts", dir)).length, 0) === files
      );
    } catch {
      return false;
    }
  };
  if (markerMatches(marker, expected) && complete()) {
    log(`tree: reusing ${root}`);
    return { root, expected };
  }
  log(`tree: generating ${files} JSON files at ${root}`);
  rmSync(marker, { force: true });
  rmSync(root, { recursive: true, force: true });
  for (const { dir, name, post } of posts(files)) {
    mkdirSync(join(root, "posts", dir), { recursive: true });
    writeFileSync(join(root, "posts", dir, name), `${JSON.stringify(post)}\n`);
  }
  writeMarker(marker, expected);
  return { root, expected };
}

// ---------------------------------------------------------------------------------------------
// The parent: warm-up, round-robin runs, medians, ratio.

function measure(engine, root) {
  const started = performance.now();
  const result = spawnSync(
    process.execPath,
    [fileURLToPath(import.meta.url), "--child", engine, root],
    {
      encoding: "utf8",
      env: { ...process.env, DIRQ_PROGRESS: "never" },
    },
  );
  const wallMs = performance.now() - started;
  if (result.status !== 0) throw new Error(`${engine} failed: ${result.stderr.trim()}`);
  return { ...JSON.parse(result.stdout), wallMs };
}

async function main(argv) {
  const values = parseBenchOptions(
    argv,
    {
      runs: { type: "string", default: "5" },
      files: { type: "string", default: String(DEFAULT_FILES) },
    },
    USAGE,
  );
  const runs = positiveInteger(values.runs, "--runs");
  const files = positiveInteger(values.files, "--files");
  requireDirqBuilt();
  await requireDuckdb();
  const { root, expected } = ensureTree(values.dir, files);
  const engines = ["dirq", "duckdb"];
  const samples = Object.fromEntries(engines.map((engine) => [engine, []]));
  for (const engine of engines) {
    log(`warm-up: ${engine}`);
    const warm = measure(engine, root);
    if (warm.files !== expected.files || warm.words !== expected.words) {
      throw new Error(
        `${engine} answered ${warm.files} files, ${warm.words} words; expected ${expected.files}, ${expected.words}`,
      );
    }
  }
  for (let run = 1; run <= runs; run++) {
    for (const engine of engines) {
      log(`run ${run}/${runs}: ${engine}`);
      samples[engine].push(measure(engine, root));
    }
  }
  const summary = engines.map((engine) => ({
    engine,
    ingestMs: median(samples[engine].map((s) => s.ms)),
    cpuMs: median(samples[engine].map((s) => s.cpuMs)),
    wallMs: median(samples[engine].map((s) => s.wallMs)),
  }));
  const [dirq, duckdb] = summary;
  const ratio = dirq.ingestMs / duckdb.ingestMs;
  const wallRatio = dirq.wallMs / duckdb.wallMs;
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({
        files,
        runs,
        results: summary.map((s) => ({
          engine: s.engine,
          ingestMs: round(s.ingestMs),
          cpuMs: round(s.cpuMs),
          wallMs: round(s.wallMs),
        })),
        ratio: round(ratio),
        wallRatio: round(wallRatio),
        target: {
          ratio: TARGET_RATIO,
          met: ratio <= TARGET_RATIO,
          aim: AIM_RATIO,
          aimMet: ratio <= AIM_RATIO,
        },
      })}\n`,
    );
    return;
  }
  process.stdout.write(
    `\n${files} JSON files, median of ${runs} runs (each a fresh process)\n\n` +
      table(
        ["engine", "ingest + query (ms)", "its CPU (ms)", "whole process (ms)", "ratio to DuckDB"],
        summary.map((s) => [
          s.engine === "dirq" ? "dirq SDK, in-process extract" : "DuckDB read_json",
          formatNumber(s.ingestMs, 0),
          formatNumber(s.cpuMs, 0),
          formatNumber(s.wallMs, 0),
          formatRatio(s.ingestMs / duckdb.ingestMs),
        ]),
      ).join("\n") +
      `\n\nratio dirq/DuckDB: ${ratio.toFixed(2)} in-process, ${wallRatio.toFixed(2)} whole process` +
      ` (target <= ${TARGET_RATIO}: ${ratio <= TARGET_RATIO ? "met" : "not met"};` +
      ` aim <= ${AIM_RATIO}: ${ratio <= AIM_RATIO ? "met" : "not met"})\n`,
  );
}

const [flag, engine, root] = process.argv.slice(2);
if (flag === "--child") await child(engine, root);
else await main(process.argv.slice(2));
