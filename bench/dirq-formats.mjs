#!/usr/bin/env node
// Benchmarks dirq's built-in formats (`format = "json"` on a config table, `--parse csv` and
// `--parse markdown` on path-tables) against DuckDB and Python reading the same files, in the
// same run, plus the time from a file write to its `row` frame at a dirq server's /events.
// See bench/README.md for what it measures.
import { spawn, spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { request as httpRequest } from "node:http";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  DIRQ_BIN,
  DIRQ_ENV,
  fail,
  findExecutable,
  formatNumber,
  log,
  markerMatches,
  median,
  parseOptions,
  percentile,
  positiveInteger,
  requireDirqBuilt,
  round,
  seededRandom,
  verdict,
  writeMarker,
  dirqCommand,
  duckdbCommand,
  memoryMeters,
  ratioOf,
  requireDuckdb,
  timeSection,
  loadText,
  sectionTable,
} from "./lib.mjs";

/** Bump when a generator changes, so trees built by an older version are rebuilt. */
const TREE_FORMAT = 1;
/** Its own folder, outside the repository (see DEFAULT_BENCH_DIR in lib.mjs for why). */
const DEFAULT_DIR = join(tmpdir(), "dirq-formats-bench");
const SECTIONS = ["json10k", "json100k", "csv", "markdown", "server"];
/** Full sizes; `--scale` multiplies them (a smoke run: `--scale 0.01`). */
const SIZES = {
  json10k: 10_000,
  json100k: 100_000,
  csvBytes: 200_000_000,
  markdown: 2_000,
  server: 10_000,
};
/** The targets: ratios to the reference (within), memory (at most), p99 (under). */
const TARGETS = { json: 1.5, peakMemoryMb: 200, csv: 3, markdown: 1.5, serverP99Ms: 50 };
const DEFAULT_RUNS = 5;
/** A CSV run of dirq takes tens of seconds: fewer runs unless --runs says otherwise. */
const DEFAULT_CSV_RUNS = 2;
const DEFAULT_WRITES = 100;
const DEFAULT_INTERVAL_MS = 100;
/** How long the server may take to print `Running at` (it indexes the tree first). */
const START_TIMEOUT_MS = 120_000;
/** How long after the last write the server section waits for late frames. */
const SETTLE_MS = 5_000;
const POSTS_PER_DIR = 100;

const JSON_SQL = "SELECT count(*), sum(words) FROM posts";
const POSTS_TOML = `[[table]]\nname = "posts"\nglob = "posts/**/*.json"\nformat = "json"\n`;
const CSV_COUNT_SQL = "SELECT count(*) FROM './big.csv'";
const CSV_GROUP_SQL = "SELECT city, count(*), sum(amount) FROM './big.csv' GROUP BY city";
const MARKDOWN_SQL = "SELECT count(*), count(title) FROM './docs'";

const USAGE = `Usage: node bench/dirq-formats.mjs [options]

Times dirq's built-in formats (whole process, one-shot CLI) against DuckDB (json, csv) and
Python (markdown) on the same generated files in the same run, and the write-to-event
latency of a dirq server over a config table with format = "json".

  --runs N        timed runs per command after one warm-up (default ${DEFAULT_RUNS}; the CSV
                  section ${DEFAULT_CSV_RUNS} unless --runs is given)
  --only LIST     sections to run, comma-separated: ${SECTIONS.join(", ")}
                  (default all)
  --scale F       multiply every size by F (default 1; a smoke run: 0.01); targets are
                  for the full sizes
  --writes N      server: files rewritten one at a time (default ${DEFAULT_WRITES})
  --interval MS   server: pause between two writes (default ${DEFAULT_INTERVAL_MS})
  --generate-only generate the sections' trees (or check they are there) and exit, so that
                  a later timed run on an idle machine writes nothing first
  --dir PATH      where the generated trees live (default $TMPDIR/dirq-formats-bench,
                  outside the repository)
  --json          print machine-readable results instead of tables
  -h, --help      show this help
`;

// ---------------------------------------------------------------------------------------------
// Options

function parseCommandLine(argv) {
  const values = parseOptions(
    argv,
    {
      runs: { type: "string" },
      only: { type: "string" },
      scale: { type: "string", default: "1" },
      writes: { type: "string", default: String(DEFAULT_WRITES) },
      interval: { type: "string", default: String(DEFAULT_INTERVAL_MS) },
      "generate-only": { type: "boolean", default: false },
      dir: { type: "string" },
      json: { type: "boolean", default: false },
    },
    USAGE,
  );
  const only = values.only === undefined ? SECTIONS : values.only.split(",").filter(Boolean);
  for (const name of only) {
    if (!SECTIONS.includes(name)) fail(`--only: unknown section ${name} (${SECTIONS.join(", ")})`);
  }
  const scale = Number(values.scale);
  if (!Number.isFinite(scale) || scale <= 0) fail("--scale must be a positive number");
  const interval = Number(values.interval);
  if (!Number.isFinite(interval) || interval < 0) fail("--interval must be a number of ms");
  const runs = values.runs === undefined ? null : positiveInteger(values.runs, "--runs");
  const size = (n) => Math.max(1, Math.round(n * scale));
  return {
    runs: runs ?? DEFAULT_RUNS,
    csvRuns: runs ?? DEFAULT_CSV_RUNS,
    only,
    scale,
    sizes: Object.fromEntries(Object.entries(SIZES).map(([key, n]) => [key, size(n)])),
    writes: positiveInteger(values.writes, "--writes"),
    interval,
    generateOnly: values["generate-only"],
    dir: resolve(values.dir ?? DEFAULT_DIR),
    json: values.json,
  };
}

// ---------------------------------------------------------------------------------------------
// Generated trees. Each lives in `<dir>/<name>` with its marker `<dir>/<name>.complete.json`
// beside it (never inside, so it is not a row), written last; the marker also holds the
// answers the generator knows (counts, sums), which every engine's answer is checked against.

function treePaths(baseDir, name) {
  return { root: join(baseDir, name), marker: join(baseDir, `${name}.complete.json`) };
}

function readMarker(marker) {
  return JSON.parse(readFileSync(marker, "utf8"));
}

/** Number of entries in each subfolder of `dir`, summed; null when `dir` is not there. */
function filesInSubdirs(dir) {
  try {
    return readdirSync(dir).reduce((sum, sub) => sum + readdirSync(join(dir, sub)).length, 0);
  } catch {
    return null;
  }
}

/** Starts a tree again from nothing: a half-written one (interrupted run) would skew counts. */
function clearTree(root, marker) {
  rmSync(marker, { force: true });
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
}

function timed(label, generate) {
  const started = performance.now();
  const result = generate();
  log(`${label}: generated in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return result;
}

const WORDS = (
  "notes on walking trees with sql a week of small files parsing json in parallel why hooks " +
  "are slow fast the shell index query table column row event server watch build cache glob"
).split(" ");
const AUTHORS = ["ada", "brian", "grace", "ken", "linus", "margaret", "rob", "barbara"];
const TAGS = ["sql", "json", "cli", "node", "sqlite", "perf", "howto", "release"];

function picker(random) {
  return (list) => list[Math.floor(random() * list.length)];
}

function sentence(random, min, max) {
  const pick = picker(random);
  const length = min + Math.floor(random() * (max - min + 1));
  return Array.from({ length }, () => pick(WORDS)).join(" ");
}

// JSON posts: posts/<dddd>/<i>.json, one object each, 100 files a folder.

function postPath(i) {
  return `posts/${String(Math.floor(i / POSTS_PER_DIR)).padStart(4, "0")}/${i}.json`;
}

function* posts(files) {
  const random = seededRandom(files);
  const pick = picker(random);
  for (let i = 0; i < files; i++) {
    const post = {
      title: sentence(random, 3, 7),
      author: pick(AUTHORS),
      words: 100 + Math.floor(random() * 4900),
      tags: Array.from({ length: Math.floor(random() * 4) }, () => pick(TAGS)),
    };
    yield { path: postPath(i), post };
  }
}

/** `prefix` keeps the server's tree (which its runs rewrite) apart from the timed ones. */
function ensurePostsTree(baseDir, prefix, files) {
  const { root, marker } = treePaths(baseDir, `${prefix}-${files}`);
  const key = { format: TREE_FORMAT, files };
  // posts.toml is written every run (it is not a post): the tree's own copy is the config.
  const writeConfig = () => writeFileSync(join(root, "posts.toml"), POSTS_TOML);
  if (markerMatches(marker, key) && filesInSubdirs(join(root, "posts")) === files) {
    log(`${prefix} tree: reusing ${root}`);
    writeConfig();
    return { root, expected: readMarker(marker) };
  }
  log(`${prefix} tree: generating ${files} JSON files at ${root}`);
  return timed(`${prefix} tree`, () => {
    clearTree(root, marker);
    let words = 0;
    let dir = null;
    for (const { path, post } of posts(files)) {
      const folder = join(root, path, "..");
      if (folder !== dir) mkdirSync((dir = folder), { recursive: true });
      writeFileSync(join(root, path), `${JSON.stringify(post)}\n`);
      words += post.words;
    }
    writeConfig();
    const expected = { ...key, words };
    writeMarker(marker, expected);
    return { root, expected };
  });
}

// CSV: one file, big.csv, rows until it reaches the size. Sums are kept in cents (exact).

const CITIES = ["Amsterdam", "Berlin", "Lisbon", "Madrid", "Oslo", "Paris", "Prague", "Vienna"];
const CATEGORIES = ["books", "garden", "kitchen", "music", "sports", "toys"];
const FIRST_NAMES = ["Ada", "Alan", "Barbara", "Edsger", "Frances", "Grace", "John", "Radia"];
const LAST_NAMES = ["Allen", "Hopper", "Kay", "Knuth", "Liskov", "Perlman", "Ritchie", "Wirth"];

function ensureCsv(baseDir, bytes) {
  const { root, marker } = treePaths(baseDir, `csv-${bytes}`);
  const file = join(root, "big.csv");
  const key = { format: TREE_FORMAT, bytes };
  if (markerMatches(marker, key) && existsSync(file)) {
    const expected = readMarker(marker);
    if (statSync(file).size === expected.fileBytes) {
      log(`csv: reusing ${file}`);
      return { root, expected };
    }
  }
  log(`csv: generating ${(bytes / 1e6).toFixed(1)} MB at ${file}`);
  return timed("csv", () => {
    clearTree(root, marker);
    const random = seededRandom(bytes);
    const pick = picker(random);
    const cities = Object.fromEntries(CITIES.map((city) => [city, { count: 0, cents: 0 }]));
    const fd = openSync(file, "w");
    let chunk = "id,name,city,category,amount,qty,note\n";
    let written = 0;
    let rows = 0;
    while (written + chunk.length < bytes) {
      const id = rows + 1;
      const city = pick(CITIES);
      const cents = Math.floor(random() * 100_000);
      const amount = `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, "0")}`;
      const qty = 1 + Math.floor(random() * 50);
      // Commas inside the quotes always; now and then a doubled quote too.
      let note = `${sentence(random, 2, 5)}, ${sentence(random, 2, 5)}, ${sentence(random, 1, 4)}`;
      if (id % 25 === 0) note = `${note}, ""${pick(WORDS)}""`;
      chunk +=
        `${id},${pick(FIRST_NAMES)} ${pick(LAST_NAMES)},${city},${pick(CATEGORIES)},` +
        `${amount},${qty},"${note}"\n`;
      cities[city].count++;
      cities[city].cents += cents;
      rows++;
      if (chunk.length >= 1 << 20) {
        written += writeSync(fd, chunk);
        chunk = "";
      }
    }
    written += writeSync(fd, chunk);
    closeSync(fd);
    const expected = { ...key, fileBytes: written, rows, cities };
    writeMarker(marker, expected);
    return { root, expected };
  });
}

// Markdown: docs/<dd>/<i>.md, YAML front matter (title, date, tags, draft) and paragraphs.
// Every 10th file has no title; every 100th no front matter at all (still a file, a row);
// every 7th body has a `---` rule (only the first closing `---` ends the front matter).

function markdownFile(random, i) {
  const pick = picker(random);
  const paragraphs = Array.from({ length: 3 + Math.floor(random() * 3) }, () => {
    const sentences = Array.from({ length: 3 + Math.floor(random() * 4) }, () => {
      const text = sentence(random, 6, 14);
      return `${text[0].toUpperCase()}${text.slice(1)}.`;
    });
    return sentences.join(" ");
  });
  if (i % 7 === 3) paragraphs.splice(1, 0, "---");
  const heading = sentence(random, 2, 5);
  const body = `# ${heading}\n\n${paragraphs.join("\n\n")}\n`;
  if (i % 100 === 99) return { text: body, title: false };
  const month = String(1 + Math.floor(random() * 12)).padStart(2, "0");
  const day = String(1 + Math.floor(random() * 28)).padStart(2, "0");
  const tags = Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(TAGS));
  const lines = [];
  const hasTitle = i % 10 !== 9;
  if (hasTitle) {
    // A colon in a title needs quotes in YAML; every 5th title has one.
    lines.push(i % 5 === 0 ? `title: "Why: ${heading}"` : `title: ${heading}`);
  }
  lines.push(`date: 2024-${month}-${day}`);
  if (i % 2 === 0) lines.push(`tags: [${tags.join(", ")}]`);
  else lines.push("tags:", ...tags.map((tag) => `  - ${tag}`));
  lines.push(`draft: ${random() < 0.2}`);
  return { text: `---\n${lines.join("\n")}\n---\n\n${body}`, title: hasTitle };
}

function ensureMarkdown(baseDir, files) {
  const { root, marker } = treePaths(baseDir, `markdown-${files}`);
  const key = { format: TREE_FORMAT, files };
  if (markerMatches(marker, key) && filesInSubdirs(join(root, "docs")) === files) {
    log(`markdown: reusing ${root}`);
    return { root, expected: readMarker(marker) };
  }
  log(`markdown: generating ${files} Markdown files at ${root}`);
  return timed("markdown", () => {
    clearTree(root, marker);
    const random = seededRandom(files);
    let titles = 0;
    for (let i = 0; i < files; i++) {
      const dir = join(root, "docs", String(Math.floor(i / POSTS_PER_DIR)).padStart(2, "0"));
      if (i % POSTS_PER_DIR === 0) mkdirSync(dir, { recursive: true });
      const { text, title } = markdownFile(random, i);
      writeFileSync(join(dir, `${i}.md`), text);
      if (title) titles++;
    }
    const expected = { ...key, titles };
    writeMarker(marker, expected);
    return { root, expected };
  });
}

// ---------------------------------------------------------------------------------------------
// The engines. Every command prints its answer; `read(stdout)` turns it into rows (arrays of
// values, in column order) that the section checks against what the generator knows.

/** Python references print a JSON array of rows too. */
const PYTHON_JSON = `
import json, os
count = words = 0
for folder, _, names in os.walk("posts"):
    for name in names:
        if name.endswith(".json"):
            with open(os.path.join(folder, name), "rb") as f:
                post = json.load(f)
            count += 1
            words += post["words"]
print(json.dumps([[count, words]]))
`;

const PYTHON_CSV = `
import csv, json
groups = {}
with open("big.csv", newline="", encoding="utf-8") as f:
    reader = csv.reader(f)
    header = next(reader)
    city, amount = header.index("city"), header.index("amount")
    for row in reader:
        group = groups.get(row[city])
        if group is None:
            group = groups[row[city]] = [0, 0.0]
        group[0] += 1
        group[1] += float(row[amount])
print(json.dumps([[name, n, total] for name, (n, total) in groups.items()]))
`;

/** One process: read every file, split off the front matter, yaml.safe_load it. */
const PYTHON_MARKDOWN = `
import json, os, yaml
count = titles = 0
for folder, _, names in os.walk("docs"):
    for name in names:
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            text = f.read()
        count += 1
        meta = None
        if text.startswith("---\\n"):
            end = text.find("\\n---\\n", 3)
            if end != -1:
                meta = yaml.safe_load(text[4:end])
        if isinstance(meta, dict) and meta.get("title") is not None:
            titles += 1
print(json.dumps([[count, titles]]))
`;

function pythonCommand(id, label, code, python, role, ref) {
  return {
    id,
    label,
    role,
    ref,
    executable: python,
    args: ["-c", code],
    env: process.env,
    read: (stdout) => JSON.parse(stdout),
  };
}

/** python3 and whether it has PyYAML (the markdown reference needs it). */
function detectPython() {
  const python = findExecutable("python3");
  if (python === null) return { python: null, version: "not installed", yaml: null };
  const version = spawnSync(python, ["--version"], { encoding: "utf8" }).stdout.trim();
  const yaml = spawnSync(python, ["-c", "import yaml; print(yaml.__version__)"], {
    encoding: "utf8",
  });
  return { python, version, yaml: yaml.status === 0 ? yaml.stdout.trim() : null };
}

/**
 * Whether the built CLI knows `--parse` (and so `format`). Without it the dirq rows fail; the
 * references are still measured, and the report says why dirq's rows failed.
 */
function formatsBuilt() {
  const help = spawnSync(process.execPath, [DIRQ_BIN, "--help"], {
    encoding: "utf8",
    env: DIRQ_ENV,
  });
  return help.stdout.includes("--parse");
}

// ---------------------------------------------------------------------------------------------
// Sections

function checkJson(expected) {
  return (rows) => {
    const [count, words] = rows[0] ?? [];
    return count === expected.files && words === expected.words
      ? null
      : `answered count ${count}, sum(words) ${words}; ` +
          `the files hold ${expected.files} and ${expected.words}`;
  };
}

function jsonSection(name, options, tools, failures, meter) {
  const files = options.sizes[name];
  const { root, expected } = ensurePostsTree(options.dir, "json", files);
  const section = {
    name,
    commands: [
      dirqCommand("dirq", JSON_SQL, ["-c", "posts.toml"], "duckdb"),
      duckdbCommand(
        "duckdb",
        "DuckDB read_json('posts/**/*.json')",
        "SELECT count(*), sum(words) FROM read_json('posts/**/*.json')",
        tools.duckdb,
      ),
      pythonCommand(
        "python",
        "python3 json.load per file",
        PYTHON_JSON,
        tools.python,
        "info",
        "duckdb",
      ),
    ],
    check: checkJson(expected),
  };
  const results = timeSection(section, root, options.runs, meter, failures);
  const dirq = results[0];
  const targets = [
    {
      name: `${name}: dirq within ${TARGETS.json}x of DuckDB read_json`,
      ...verdict(ratioOf(results, "dirq"), TARGETS.json, "x"),
    },
  ];
  if (name === "json100k") {
    targets.push({
      name: `${name}: dirq peak RSS at most ${TARGETS.peakMemoryMb} MB`,
      ...verdict(dirq.peakRssMb ?? null, TARGETS.peakMemoryMb, " MB", { digits: 1 }),
    });
  }
  return {
    name,
    title: `${files.toLocaleString("en-US")} JSON files (posts/**/*.json, ${POSTS_PER_DIR} a folder)`,
    refName: "DuckDB",
    root,
    runs: options.runs,
    results,
    targets,
  };
}

function checkCsvCount(expected) {
  return (rows) => {
    const count = rows[0]?.[0];
    return count === expected.rows ? null : `counted ${count} rows; the file has ${expected.rows}`;
  };
}

/** Sums are REAL in dirq and DOUBLE in DuckDB: equal to the exact cents within rounding. */
function checkCsvGroups(expected) {
  return (rows) => {
    const names = Object.keys(expected.cities).sort();
    const got = rows.map((row) => row[0]).sort();
    if (got.join() !== names.join())
      return `cities ${got.join(", ")}; expected ${names.join(", ")}`;
    for (const [city, count, sum] of rows) {
      const want = expected.cities[city];
      const exact = want.cents / 100;
      if (count !== want.count || !(Math.abs(Number(sum) - exact) <= 1e-9 * exact + 0.01)) {
        return `${city}: count ${count}, sum ${sum}; expected ${want.count}, ${exact.toFixed(2)}`;
      }
    }
    return null;
  };
}

function csvSection(options, tools, failures, meter) {
  const { root, expected } = ensureCsv(options.dir, options.sizes.csvBytes);
  const count = checkCsvCount(expected);
  const groups = checkCsvGroups(expected);
  const commands = [
    {
      ...dirqCommand("dirq-count", CSV_COUNT_SQL, ["--parse", "csv"], "duckdb-count"),
      check: count,
    },
    {
      ...dirqCommand("dirq-group", CSV_GROUP_SQL, ["--parse", "csv"], "duckdb-group"),
      check: groups,
    },
    {
      ...duckdbCommand(
        "duckdb-count",
        "DuckDB SELECT count(*) FROM read_csv('big.csv')",
        "SELECT count(*) FROM read_csv('big.csv')",
        tools.duckdb,
      ),
      check: count,
    },
    {
      ...duckdbCommand(
        "duckdb-group",
        "DuckDB SELECT city, count(*), sum(amount) FROM read_csv('big.csv') GROUP BY city",
        "SELECT city, count(*), sum(amount) FROM read_csv('big.csv') GROUP BY city",
        tools.duckdb,
      ),
      check: groups,
    },
    {
      ...pythonCommand(
        "python-group",
        "python3 csv.reader, count and sum by city",
        PYTHON_CSV,
        tools.python,
        "info",
        "duckdb-group",
      ),
      check: groups,
    },
  ];
  const results = timeSection(
    { name: "csv", commands, check: null },
    root,
    options.csvRuns,
    meter,
    failures,
  );
  const ratios = [ratioOf(results, "dirq-count"), ratioOf(results, "dirq-group")];
  const worst = ratios.every((ratio) => ratio !== null) ? Math.max(...ratios) : null;
  return {
    name: "csv",
    title:
      `one CSV file, big.csv: ${(expected.fileBytes / 1e6).toFixed(1)} MB, ` +
      `${expected.rows.toLocaleString("en-US")} rows`,
    refName: "DuckDB",
    root,
    runs: options.csvRuns,
    results,
    targets: [
      {
        name: `csv: both dirq statements within ${TARGETS.csv}x of DuckDB read_csv (worst)`,
        ...verdict(worst, TARGETS.csv, "x"),
      },
    ],
  };
}

function markdownSection(options, tools, failures, meter) {
  const files = options.sizes.markdown;
  const { root, expected } = ensureMarkdown(options.dir, files);
  const python = tools.yaml === null ? null : tools.python;
  const section = {
    name: "markdown",
    commands: [
      dirqCommand("dirq", MARKDOWN_SQL, ["--parse", "markdown"], "python"),
      pythonCommand(
        "python",
        "python3, PyYAML yaml.safe_load per file, one process",
        PYTHON_MARKDOWN,
        python,
        "reference",
      ),
    ],
    check: (rows) => {
      const [count, titles] = rows[0] ?? [];
      return count === files && titles === expected.titles
        ? null
        : `answered count ${count}, count(title) ${titles}; the files hold ${files} and ${expected.titles}`;
    },
  };
  const results = timeSection(section, root, options.runs, meter, failures);
  return {
    name: "markdown",
    title: `${files.toLocaleString("en-US")} Markdown files with YAML front matter (docs/)`,
    refName: "Python",
    root,
    runs: options.runs,
    results,
    targets: [
      {
        name: `markdown: dirq within ${TARGETS.markdown}x of Python + PyYAML`,
        ...verdict(ratioOf(results, "dirq"), TARGETS.markdown, "x"),
      },
    ],
  };
}

// ---------------------------------------------------------------------------------------------
// The server section: processes, HTTP and SSE helpers (as bench/dirq-server.mjs).

const children = new Set();

process.on("SIGINT", () => {
  for (const child of children) child.kill("SIGKILL");
  process.exit(130);
});

function sleep(ms) {
  return new Promise((done) => setTimeout(done, ms));
}

/** Starts `dirq server --port 0 ...`; resolves once it prints `Running at <host>:<port>`. */
function startDirqServer(cwd, extraArgs) {
  const child = spawn(process.execPath, [DIRQ_BIN, "server", "--port", "0", ...extraArgs], {
    cwd,
    env: DIRQ_ENV,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk) => (stderr = (stderr + chunk).slice(-4000)));
  const exited = new Promise((done) =>
    child.once("exit", (code, signal) => {
      children.delete(child);
      done({ code, signal });
    }),
  );
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return exited;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    const outcome = await exited;
    clearTimeout(timer);
    return outcome;
  };
  return new Promise((resolveStart, rejectStart) => {
    let stdout = "";
    const timer = setTimeout(() => {
      void stop();
      rejectStart(new Error(`dirq server: no "Running at" line within ${START_TIMEOUT_MS} ms`));
    }, START_TIMEOUT_MS);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      if (stdout === null) return;
      stdout += chunk;
      const match = /Running at (\S+):(\d+)/.exec(stdout);
      if (!match) return;
      stdout = null;
      clearTimeout(timer);
      resolveStart({ base: `http://${match[1]}:${match[2]}`, stop, stderr: () => stderr });
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      const status = code === null ? `signal ${signal}` : `exit ${code}`;
      const detail = stderr.trim().split("\n").slice(-3).join(" | ");
      rejectStart(new Error(`dirq server: ${status} before it listened: ${detail}`));
    });
  });
}

/** POST /query with a JSON body; resolves with the rows, or rejects unless status 200. */
function postQuery(base, sql) {
  const payload = JSON.stringify({ sql });
  return new Promise((done, reject) => {
    const request = httpRequest(
      `${base}/query`,
      {
        method: "POST",
        agent: false,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(payload),
        },
      },
      (response) => {
        const chunks = [];
        response.on("data", (chunk) => chunks.push(chunk));
        response.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8");
          if (response.statusCode !== 200) {
            reject(new Error(`POST /query ${sql}: status ${response.statusCode}: ${body}`));
          } else {
            done(JSON.parse(body));
          }
        });
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(payload);
  });
}

/**
 * An /events client reading the raw SSE stream: `onFrame({ event, data }, receivedAt)` hears
 * every frame after `ready`; `ready` resolves when the server's `ready` frame arrives.
 */
function openEvents(base, onFrame) {
  let request;
  let buffer = "";
  const ready = new Promise((done, reject) => {
    request = httpRequest(`${base}/events`, { agent: false }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        reject(new Error(`GET /events: status ${response.statusCode}`));
        return;
      }
      response.setEncoding("utf8");
      response.on("data", (chunk) => {
        const receivedAt = performance.now();
        buffer += chunk;
        let end;
        while ((end = buffer.indexOf("\n\n")) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const frame = { event: "message", data: [] };
          for (const raw of block.split("\n")) {
            const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
            if (line === "" || line.startsWith(":")) continue; // keep-alive comment
            const colon = line.indexOf(":");
            const field = colon === -1 ? line : line.slice(0, colon);
            let value = colon === -1 ? "" : line.slice(colon + 1);
            if (value.startsWith(" ")) value = value.slice(1);
            if (field === "event") frame.event = value;
            else if (field === "data") frame.data.push(value);
          }
          if (frame.data.length === 0 && frame.event === "message") continue;
          const event = { event: frame.event, data: frame.data.join("\n") };
          if (event.event === "ready") done();
          else onFrame(event, receivedAt);
        }
      });
      response.on("error", () => {});
    });
    request.on("error", reject);
    request.end();
  });
  return { ready, close: () => request.destroy() };
}

/**
 * `dirq server -c posts.toml` over its own posts tree (its runs rewrite files, so it is not
 * the json10k tree): after `ready` and a first POST /query that builds the table, rewrites one
 * file at a time (its `words` one more) and times each write to its `update` row frame.
 */
async function serverSection(options, failures) {
  const files = options.sizes.server;
  const { root } = ensurePostsTree(options.dir, "server", files);
  log(`server: starting dirq server -c posts.toml in ${root}`);
  const startedAt = performance.now();
  const server = await startDirqServer(root, ["-c", "posts.toml"]);
  const listenMs = performance.now() - startedAt;
  const pending = new Map(); // file_path -> { startedAt, words, latencyMs }
  const counts = { rowFrames: 0, otherFrames: 0, unexpected: 0, wrongRow: 0 };
  const otherSamples = [];
  const entries = []; // in write order
  const client = openEvents(server.base, (frame, receivedAt) => {
    let data = null;
    try {
      data = JSON.parse(frame.data);
    } catch {
      // Counted below as another frame.
    }
    if (frame.event !== "row" || data?.action !== "update" || data.table !== "posts") {
      counts.otherFrames++;
      if (otherSamples.length < 3) otherSamples.push(`${frame.event} ${frame.data.slice(0, 160)}`);
      return;
    }
    counts.rowFrames++;
    const entry = pending.get(data.file_path);
    if (entry === undefined || entry.latencyMs !== null) {
      counts.unexpected++;
      return;
    }
    if (data.row?.words !== entry.words) counts.wrongRow++;
    entry.latencyMs = receivedAt - entry.startedAt;
  });
  let report;
  try {
    await client.ready;
    const queryStarted = performance.now();
    const rows = await postQuery(server.base, "SELECT count(*) FROM posts");
    const firstQueryMs = performance.now() - queryStarted;
    const count = Object.values(rows[0] ?? {})[0];
    if (count !== files) throw new Error(`server: counted ${count} posts, the tree has ${files}`);
    await sleep(500);
    log(`server: ${options.writes} rewrites, ${options.interval} ms apart`);
    // Different files while there are enough, spread over the folders.
    const stride = files > 1 ? 7919 % files || 1 : 1;
    for (let i = 0; i < options.writes; i++) {
      const path = postPath((i * stride) % files);
      const absolute = join(root, path);
      const post = JSON.parse(readFileSync(absolute, "utf8"));
      post.words += 1;
      const entry = { startedAt: 0, words: post.words, latencyMs: null };
      const earlier = pending.get(path);
      if (earlier && earlier.latencyMs === null) await sleep(SETTLE_MS); // same file again
      pending.set(path, entry);
      const text = `${JSON.stringify(post)}\n`;
      entry.startedAt = performance.now();
      writeFileSync(absolute, text);
      entries.push(entry);
      await sleep(options.interval);
    }
    const deadline = performance.now() + SETTLE_MS;
    while (performance.now() < deadline && entries.some((entry) => entry.latencyMs === null)) {
      await sleep(20);
    }
    await sleep(100); // a last moment for duplicate frames
    const latencies = entries.map((entry) => entry.latencyMs ?? Infinity);
    const received = entries.filter((entry) => entry.latencyMs !== null).length;
    report = {
      name: "server",
      files,
      root,
      listenMs,
      firstQueryMs,
      writes: entries.length,
      received,
      ...counts,
      otherSamples,
      p50Ms: median(latencies),
      p99Ms: percentile(latencies, 99),
      maxMs: Math.max(...latencies),
      latenciesMs: latencies,
    };
    if (received < entries.length) {
      failures.push(
        `server: ${entries.length - received} of ${entries.length} writes had no row frame`,
      );
    }
    if (counts.wrongRow > 0) {
      failures.push(`server: ${counts.wrongRow} row frames did not carry the written words`);
    }
  } finally {
    client.close();
    const { code, signal } = await server.stop();
    if (code !== 0) {
      const status = code === null ? `signal ${signal}` : `exit ${code}`;
      failures.push(`server: dirq server ended with ${status} after SIGTERM`);
    }
  }
  return {
    ...report,
    targets: [
      {
        name: `server: p99 write -> row frame under ${TARGETS.serverP99Ms} ms`,
        ...verdict(
          Number.isFinite(report.p99Ms) ? report.p99Ms : null,
          TARGETS.serverP99Ms,
          " ms",
          { strict: true, digits: 1, missing: "a write had no row frame" },
        ),
      },
    ],
  };
}
// ---------------------------------------------------------------------------------------------
// Report

function printText(report) {
  const { versions } = report;
  const out = [
    `dirq formats benchmark: median of the runs after 1 warm-up, whole process wall clock,` +
      ` warm cache, output to /dev/null`,
    `node ${versions.node} | DuckDB ${versions.duckdb} | ${versions.python}, PyYAML ` +
      `${versions.yaml ?? "not installed"} | cpus: ${cpus().length}`,
    `peak RSS (warm-up run) via: ${report.meter ?? "n/a (no way to measure)"}`,
    `load average at start: ${loadText(report.loadStart)}`,
  ];
  if (report.scale !== 1) out.push(`scale ${report.scale}: the targets are for the full sizes`);
  out.push("");
  for (const section of report.sections) {
    if (section.name === "server") continue;
    out.push(
      `${section.title}, ${section.runs} run${section.runs === 1 ? "" : "s"} (${section.root})`,
    );
    out.push(...sectionTable(section), "");
  }
  const server = report.sections.find((section) => section.name === "server");
  if (server) {
    out.push(
      `server: ${server.files.toLocaleString("en-US")} JSON files (-c posts.toml, format = "json"),` +
        ` ${server.writes} rewrites ${report.interval} ms apart (${server.root})`,
      `  listening after ${formatNumber(server.listenMs, 0)} ms; first POST /query (table built)` +
        ` ${formatNumber(server.firstQueryMs, 0)} ms`,
      `  write -> update row frame: p50 ${formatNumber(server.p50Ms, 1)} ms, p99 ` +
        `${formatNumber(server.p99Ms, 1)} ms, max ${formatNumber(server.maxMs, 1)} ms; ` +
        `${server.received}/${server.writes} received`,
      `  frames: ${server.rowFrames} update rows, ${server.unexpected} unexpected or repeated,` +
        ` ${server.wrongRow} with other words, ${server.otherFrames} others`,
    );
    for (const sample of server.otherSamples) out.push(`    other frame: ${sample}`);
    out.push("");
  }
  out.push(`load average at end: ${loadText(report.loadEnd)}`, "");
  for (const target of report.targets) out.push(`${target.name}: ${target.text}`);
  for (const failure of report.failures) out.push(`FAILED: ${failure}`);
  process.stdout.write(`${out.join("\n")}\n`);
}

function printJson(report) {
  const sectionJson = (section) =>
    section.name === "server"
      ? {
          name: "server",
          files: section.files,
          path: section.root,
          listenMs: round(section.listenMs),
          firstQueryMs: round(section.firstQueryMs),
          writes: section.writes,
          received: section.received,
          rowFrames: section.rowFrames,
          unexpected: section.unexpected,
          wrongRow: section.wrongRow,
          otherFrames: section.otherFrames,
          p50Ms: round(section.p50Ms),
          p99Ms: round(section.p99Ms),
          maxMs: round(section.maxMs),
          latenciesMs: section.latenciesMs.map(round),
        }
      : {
          name: section.name,
          title: section.title,
          path: section.root,
          runs: section.runs,
          commands: section.results.map((result) => ({
            command: result.command.label,
            role: result.command.role,
            status: result.status,
            medianMs: round(result.medianMs),
            minMs: round(result.minMs),
            samplesMs: result.samples.map(round),
            ratio: round(result.ratio),
            ratioTo: result.refLabel ?? undefined,
            peakRssMb: round(result.peakRssMb),
            answer: result.rows,
          })),
        };
  const json = {
    scale: report.scale,
    environment: { ...report.versions, cpus: cpus().length, platform: process.platform },
    memoryMeter: report.meter,
    loadAverage: { start: report.loadStart, end: report.loadEnd },
    sections: report.sections.map(sectionJson),
    targets: report.targets.map(({ name, value, limit, met }) => ({
      name,
      value: round(value),
      limit,
      met,
    })),
    failures: report.failures,
  };
  process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
}

// ---------------------------------------------------------------------------------------------
// Main

/** `--generate-only`: every tree the chosen sections read, and nothing else. */
function generateOnly(options) {
  const { only, sizes, dir } = options;
  if (only.includes("json10k")) ensurePostsTree(dir, "json", sizes.json10k);
  if (only.includes("json100k")) ensurePostsTree(dir, "json", sizes.json100k);
  if (only.includes("csv")) ensureCsv(dir, sizes.csvBytes);
  if (only.includes("markdown")) ensureMarkdown(dir, sizes.markdown);
  if (only.includes("server")) ensurePostsTree(dir, "server", sizes.server);
}

async function main() {
  const options = parseCommandLine(process.argv.slice(2));
  if (options.generateOnly) {
    generateOnly(options);
    return;
  }
  const loadStart = loadavg();
  requireDirqBuilt();
  const wants = (name) => options.only.includes(name);
  const duckdb =
    wants("json10k") || wants("json100k") || wants("csv") ? await requireDuckdb() : null;
  const py = detectPython();
  const tools = { duckdb, python: py.python, yaml: py.yaml };
  const versions = {
    node: process.version,
    duckdb: duckdb?.version ?? "not used",
    python: py.version,
    yaml: py.yaml,
  };
  mkdirSync(options.dir, { recursive: true });
  const scratch = mkdtempSync(join(tmpdir(), "dirq-formats-"));
  const failures = [];
  if (!formatsBuilt()) {
    const message =
      "the built dirq has no --parse option (built-in formats): its rows will fail; " +
      "build it with `npm run build -w dirq` once the formats are in the source";
    log(`warning: ${message}`);
    failures.push(message);
  }
  const sections = [];
  try {
    const meter = memoryMeters(scratch);
    // Quick sections first; the CSV one (minutes at full size) last.
    if (wants("json10k")) sections.push(jsonSection("json10k", options, tools, failures, meter));
    if (wants("json100k")) sections.push(jsonSection("json100k", options, tools, failures, meter));
    if (wants("markdown")) sections.push(markdownSection(options, tools, failures, meter));
    if (wants("server")) {
      try {
        sections.push(await serverSection(options, failures));
      } catch (error) {
        log(`server: ${error.message}`);
        failures.push(`server: ${error.message}`);
      }
    }
    if (wants("csv")) sections.push(csvSection(options, tools, failures, meter));
    sections.sort((a, b) => SECTIONS.indexOf(a.name) - SECTIONS.indexOf(b.name));
    const report = {
      scale: options.scale,
      interval: options.interval,
      versions,
      meter: meter?.name ?? null,
      loadStart,
      loadEnd: loadavg(),
      sections,
      targets: sections.flatMap((section) => section.targets),
      failures,
    };
    if (options.json) printJson(report);
    else printText(report);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  if (failures.length > 0) process.exitCode = 1;
}

await main();
