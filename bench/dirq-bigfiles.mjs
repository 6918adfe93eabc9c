#!/usr/bin/env node
// Benchmarks one-shot dirq queries over one big file (JSON Lines, a JSON array, CSV) and over
// 10,000 small JSON files against DuckDB and the sqlite3 shell on the same files, in the same
// run: whole-process wall clock and peak RSS. See bench/README.md for what it measures.
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  DIRQ_BIN,
  dirqCommand,
  duckdbCommand,
  fail,
  findExecutable,
  loadText,
  log,
  markerMatches,
  memoryMeters,
  parseBenchOptions,
  positiveInteger,
  ratioOf,
  readMarkerFile,
  requireDirqBuilt,
  requireDuckdb,
  resultToJson,
  round,
  sectionTable,
  seededRandom,
  timeSection,
  toolVersion,
  verdict,
  writeMarker,
} from "./lib.mjs";

/** Bump when a generator changes, so files written by an older version are rebuilt. */
const FILES_FORMAT = 1;
const MB = 1_000_000;
/** Full sizes; `--scale` multiplies them (a smoke run: `--scale 0.01`). */
const SIZES = { bytes: 200 * MB, bigBytes: 1000 * MB, smallFiles: 10_000, longBytes: 100 * MB };
const SECTIONS = ["jsonl", "json", "csv", "small", "long"];
/** The targets: ratios to the reference named beside each. */
const TARGETS = { jsonl: 2, json: 2, csvCount: 2, csvGroupVsSqlite: 0.4, small: 1, long: 2 };
const DEFAULT_RUNS = 3;

const SUM_SQL = (from) => `SELECT count(*), sum(amount) FROM ${from}`;
const GROUP_SQL = (from) => `SELECT city, count(*), sum(amount) FROM ${from} GROUP BY city`;

const USAGE = `Usage: node bench/dirq-bigfiles.mjs [options]

Times one-shot dirq statements over one big file against DuckDB (read_json, read_csv) and the
sqlite3 shell (.import --csv) on the same generated files in the same run, with each one's
peak RSS: 200 MB of JSON Lines, the same rows as one JSON array, a 200 MB CSV file,
10,000 small JSON files, and (long) the peak RSS a 100 MB JSON Lines line or CSV field costs.

  --runs N        timed runs per command after one warm-up (default ${DEFAULT_RUNS})
  --only LIST     sections to run, comma-separated: ${SECTIONS.join(", ")} (default all)
  --big           also 1 GB of JSON Lines and a 1 GB JSON array
  --scale F       multiply every size by F (default 1; a smoke run: 0.01); the targets are
                  for the full sizes
  --dirq PATH     the dirq to time (its bin/dirq.cjs; default this repository's), e.g.
                  another worktree's build for a before-and-after comparison
  --generate-only write the files the chosen sections read (or check they are there), exit
`;

function parseCommandLine(argv) {
  const values = parseBenchOptions(
    argv,
    {
      runs: { type: "string", default: String(DEFAULT_RUNS) },
      only: { type: "string", default: SECTIONS.join(",") },
      big: { type: "boolean", default: false },
      scale: { type: "string", default: "1" },
      "generate-only": { type: "boolean", default: false },
      dirq: { type: "string" },
    },
    USAGE,
  );
  const only = values.only.split(",").filter(Boolean);
  for (const name of only) {
    if (!SECTIONS.includes(name)) fail(`--only: unknown section ${name} (${SECTIONS.join(", ")})`);
  }
  const scale = Number(values.scale);
  if (!Number.isFinite(scale) || scale <= 0) fail("--scale must be a positive number");
  const size = (n) => Math.max(1, Math.round(n * scale));
  return {
    runs: positiveInteger(values.runs, "--runs"),
    only,
    big: values.big,
    scale,
    sizes: Object.fromEntries(Object.entries(SIZES).map(([key, n]) => [key, size(n)])),
    generateOnly: values["generate-only"],
    dirq: values.dirq === undefined ? DIRQ_BIN : resolve(values.dirq),
    dir: join(values.dir, "bigfiles"),
    json: values.json,
  };
}

// ---------------------------------------------------------------------------------------------
// Generated files: the same seeded rows written as JSON Lines, a JSON array, CSV (no tags), or
// one small JSON file each. Each file's marker (beside it) holds what the generator knows.

const USERS = ["ada", "alan", "barbara", "edsger", "frances", "grace", "john", "radia"];
const CITIES = ["Amsterdam", "Berlin", "Lisbon", "Madrid", "Oslo", "Paris", "Prague", "Vienna"];
const WORDS = (
  "logs exports datasets one big file read only what the statement needs in parallel " +
  "bounded memory line column row sum count group city amount native parser"
).split(" ");

function* rows(seed) {
  const random = seededRandom(seed);
  const pick = (list) => list[Math.floor(random() * list.length)];
  for (let id = 1; ; id++) {
    const words = 4 + Math.floor(random() * 12);
    yield {
      id,
      user: pick(USERS),
      city: pick(CITIES),
      amount: Math.floor(random() * 100_000),
      score: Math.round(random() * 10_000) / 100,
      ok: random() < 0.7,
      tags: Array.from({ length: Math.floor(random() * 3) }, () => pick(WORDS)),
      note: Array.from({ length: words }, () => pick(WORDS)).join(" "),
    };
  }
}

const WRITERS = {
  jsonl: { head: "", line: (row) => `${JSON.stringify(row)}\n`, tail: "" },
  json: {
    head: "[\n",
    line: (row, index) => `${index === 0 ? "" : ",\n"}${JSON.stringify(row)}`,
    tail: "\n]\n",
  },
  csv: {
    head: "id,user,city,amount,score,ok,note\n",
    line: (row) =>
      `${row.id},${row.user},${row.city},${row.amount},${row.score},${row.ok},"${row.note}, ${row.tags.join(" ")}"\n`,
    tail: "",
  },
};

/** What a file of `rows` holds: counts and sums in all and per city. */
function tally() {
  const cities = Object.fromEntries(CITIES.map((city) => [city, { count: 0, amount: 0 }]));
  return {
    rows: 0,
    amount: 0,
    cities,
    add(row) {
      this.rows++;
      this.amount += row.amount;
      cities[row.city].count++;
      cities[row.city].amount += row.amount;
    },
  };
}

function generated(dir, name, key, write) {
  const path = join(dir, name);
  const marker = join(dir, `${name}.complete.json`);
  if (markerMatches(marker, key)) {
    log(`${name}: reusing ${path}`);
    return { path, expected: readMarkerFile(marker) };
  }
  log(`${name}: generating at ${path}`);
  const started = performance.now();
  rmSync(marker, { force: true });
  rmSync(path, { recursive: true, force: true });
  const counts = write(path);
  const expected = { ...key, rows: counts.rows, amount: counts.amount, cities: counts.cities };
  writeMarker(marker, expected);
  log(`${name}: generated in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return { path, expected };
}

/** One file of about `bytes` in format `kind` (jsonl, json, csv). */
function ensureBigFile(dir, kind, bytes) {
  const name = `events-${bytes}.${kind}`;
  return generated(dir, name, { format: FILES_FORMAT, kind, bytes }, (path) => {
    const writer = WRITERS[kind];
    const counts = tally();
    const fd = openSync(path, "w");
    let chunk = writer.head;
    let written = 0;
    for (const row of rows(bytes)) {
      const line = writer.line(row, counts.rows);
      if (written + chunk.length + line.length + writer.tail.length > bytes && counts.rows > 0) {
        break;
      }
      chunk += line;
      counts.add(row);
      if (chunk.length >= 1 << 20) {
        written += writeSync(fd, chunk);
        chunk = "";
      }
    }
    writeSync(fd, chunk + writer.tail);
    closeSync(fd);
    return counts;
  });
}

/** Rows around the long one of `ensureLongFile`, before it and after it. */
const LONG_AROUND = 1000;

/**
 * A JSON Lines or CSV file (`kind`) of 2 x LONG_AROUND small rows and, with `long`, one row
 * between them whose `note` is `long` bytes: the long line or field, and the same file without.
 */
function ensureLongFile(dir, kind, long) {
  const name = `long-${long}.${kind}`;
  return generated(dir, name, { format: FILES_FORMAT, kind, long }, (path) => {
    const csv = kind === "csv";
    const line = (id, amount, note) =>
      csv ? `${id},${amount},"${note}"\n` : `{"id":${id},"amount":${amount},"note":"${note}"}\n`;
    const amounts = Array.from({ length: LONG_AROUND }, (_, i) => i % 7);
    const around = amounts.map((amount, i) => line(i, amount, `w${i}`)).join("");
    const fd = openSync(path, "w");
    writeSync(fd, `${csv ? "id,amount,note\n" : ""}${around}`);
    writeSync(fd, csv ? '-1,5,"' : '{"id":-1,"amount":5,"note":"');
    const chunk = "x".repeat(MB);
    for (let left = long; left > 0; left -= MB) writeSync(fd, chunk.slice(0, Math.min(MB, left)));
    writeSync(fd, `${csv ? '"' : '"}'}\n${around}`);
    closeSync(fd);
    const amount = 2 * amounts.reduce((sum, value) => sum + value, 0) + 5;
    return { rows: 2 * LONG_AROUND + 1, amount, cities: {} };
  });
}

/** `files` small JSON files, one row each, 100 to a folder. */
function ensureSmallFiles(dir, files) {
  return generated(dir, `small-${files}`, { format: FILES_FORMAT, files }, (path) => {
    const counts = tally();
    const source = rows(files);
    for (let i = 0; i < files; i++) {
      const folder = join(path, String(Math.floor(i / 100)).padStart(4, "0"));
      if (i % 100 === 0) mkdirSync(folder, { recursive: true });
      const row = source.next().value;
      const fd = openSync(join(folder, `${i}.json`), "w");
      writeSync(fd, `${JSON.stringify(row)}\n`);
      closeSync(fd);
      counts.add(row);
    }
    return counts;
  });
}

// ---------------------------------------------------------------------------------------------
// Answers

function checkSum(expected) {
  return (answer) => {
    const [count, amount] = answer[0] ?? [];
    return count === expected.rows && amount === expected.amount
      ? null
      : `answered ${count} rows, sum ${amount}; the file holds ${expected.rows} and ${expected.amount}`;
  };
}

function checkGroups(expected) {
  return (answer) => {
    const wrong = Object.entries(expected.cities).filter(([city, { count, amount }]) => {
      const row = answer.find((values) => values[0] === city);
      return row === undefined || row[1] !== count || Number(row[2]) !== amount;
    });
    if (answer.length === CITIES.length && wrong.length === 0) return null;
    return `${answer.length} groups; wrong for ${wrong.map(([city]) => city).join(", ")}`;
  };
}

/** The sqlite3 shell: an in-memory database, `.import --csv` of the file, then `sql`. */
function sqliteImportCommand(id, file, sql, sqlite3) {
  return {
    id,
    label: `sqlite3 .import --csv + ${sql}`,
    role: "reference",
    executable: sqlite3,
    args: [":memory:", "-json", "-cmd", `.import --csv ${file} t`, sql],
    env: process.env,
    read: (stdout) => JSON.parse(stdout).map((row) => Object.values(row)),
  };
}

// ---------------------------------------------------------------------------------------------
// Sections

function sizeText(bytes) {
  return bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${(bytes / MB).toFixed(1)} MB`;
}

function sumSection(context, kind, bytes) {
  const { options, tools, failures, meter } = context;
  const { path, expected } = ensureBigFile(options.dir, kind, bytes);
  const file = path.slice(options.dir.length + 1);
  const name = `${kind} ${sizeText(bytes)}`;
  const dirq = dirqCommand(
    "dirq",
    SUM_SQL(`'./${file}'`),
    ["--parse", kind],
    "duckdb",
    options.dirq,
  );
  // The native JSON Lines reader parses on threads beside SQLite's; the same build on SQLite's
  // thread alone shows what they bring.
  const oneThread = {
    ...dirq,
    id: "dirq-one-thread",
    label: `${dirq.label} (DIRQ_JSONL_THREADS=0)`,
    env: { ...dirq.env, DIRQ_JSONL_THREADS: "0" },
  };
  const commands = [
    dirq,
    ...(kind === "jsonl" ? [oneThread] : []),
    duckdbCommand(
      "duckdb",
      `DuckDB read_json('${file}')`,
      SUM_SQL(`read_json('${file}')`),
      tools.duckdb,
    ),
  ];
  const section = { name, commands, check: checkSum(expected) };
  const results = timeSection(section, options.dir, options.runs, meter, failures);
  const dirqResult = results.find((result) => result.command.id === "dirq");
  const duck = results.find((result) => result.command.id === "duckdb");
  const targets = [
    {
      name: `${name}: dirq within ${TARGETS[kind]}x of DuckDB`,
      ...verdict(ratioOf(results, "dirq"), TARGETS[kind], "x"),
    },
  ];
  if (kind === "json") {
    const memory =
      dirqResult?.peakRssMb && duck?.peakRssMb ? dirqResult.peakRssMb / duck.peakRssMb : null;
    targets.push({ name: `${name}: dirq peak RSS at most DuckDB's`, ...verdict(memory, 1, "x") });
  }
  return {
    name,
    title: `${name}, ${expected.rows.toLocaleString("en-US")} rows (${path})`,
    refName: "ref",
    runs: options.runs,
    results,
    targets,
  };
}

function csvSection(context) {
  const { options, tools, failures, meter } = context;
  const { path, expected } = ensureBigFile(options.dir, "csv", options.sizes.bytes);
  const file = path.slice(options.dir.length + 1);
  const count = checkSum({ ...expected, amount: undefined });
  const groups = checkGroups(expected);
  const commands = [
    {
      ...dirqCommand(
        "dirq-count",
        `SELECT count(*) FROM './${file}'`,
        ["--parse", "csv"],
        "duckdb-count",
        options.dirq,
      ),
      check: count,
    },
    {
      ...dirqCommand(
        "dirq-group",
        GROUP_SQL(`'./${file}'`),
        ["--parse", "csv"],
        "sqlite-group",
        options.dirq,
      ),
      check: groups,
    },
    {
      ...duckdbCommand(
        "duckdb-count",
        `DuckDB count(*) read_csv('${file}')`,
        `SELECT count(*) FROM read_csv('${file}')`,
        tools.duckdb,
      ),
      check: count,
    },
    { ...sqliteImportCommand("sqlite-group", file, GROUP_SQL("t"), tools.sqlite3), check: groups },
    {
      ...duckdbCommand(
        "duckdb-group",
        `DuckDB GROUP BY read_csv('${file}')`,
        GROUP_SQL(`read_csv('${file}')`),
        tools.duckdb,
      ),
      ref: "sqlite-group",
      check: groups,
    },
  ];
  const results = timeSection(
    { name: "csv", commands, check: null },
    options.dir,
    options.runs,
    meter,
    failures,
  );
  const name = `csv ${sizeText(options.sizes.bytes)}`;
  return {
    name,
    title: `${name}, ${expected.rows.toLocaleString("en-US")} rows (${path})`,
    refName: "ref",
    runs: options.runs,
    results,
    targets: [
      {
        name: `${name}: count(*) within ${TARGETS.csvCount}x of DuckDB read_csv`,
        ...verdict(ratioOf(results, "dirq-count"), TARGETS.csvCount, "x"),
      },
      {
        name: `${name}: GROUP BY at most ${TARGETS.csvGroupVsSqlite}x of sqlite3 .import + GROUP BY`,
        ...verdict(ratioOf(results, "dirq-group"), TARGETS.csvGroupVsSqlite, "x"),
      },
    ],
  };
}

function smallSection(context) {
  const { options, tools, failures, meter } = context;
  const { path, expected } = ensureSmallFiles(options.dir, options.sizes.smallFiles);
  const folder = path.slice(options.dir.length + 1);
  const commands = [
    dirqCommand("dirq", SUM_SQL(`'./${folder}'`), ["--parse", "json"], "duckdb", options.dirq),
    duckdbCommand(
      "duckdb",
      `DuckDB read_json('${folder}/**/*.json')`,
      SUM_SQL(`read_json('${folder}/**/*.json')`),
      tools.duckdb,
    ),
  ];
  const section = { name: "small", commands, check: checkSum(expected) };
  const results = timeSection(section, options.dir, options.runs, meter, failures);
  const name = `${expected.rows.toLocaleString("en-US")} small JSON files`;
  return {
    name,
    title: `${name} (${path})`,
    refName: "ref",
    runs: options.runs,
    results,
    targets: [
      {
        name: `${name}: dirq within ${TARGETS.small}x of DuckDB`,
        ...verdict(ratioOf(results, "dirq"), TARGETS.small, "x"),
      },
    ],
  };
}

/**
 * The peak RSS one long line (JSON Lines) or field (CSV) costs: dirq on the file with it, and
 * on the same file with the long value empty (Node's and dirq's own baseline); the target is
 * the difference at most TARGETS.long times the value's size. Times are shown, not targeted.
 */
function longSection(context) {
  const { options, failures, meter } = context;
  const long = options.sizes.longBytes;
  const results = [];
  const targets = [];
  for (const kind of ["jsonl", "csv"]) {
    const withLong = ensureLongFile(options.dir, kind, long);
    const without = ensureLongFile(options.dir, kind, 0);
    const command = (id, file) =>
      dirqCommand(id, SUM_SQL(`'./${file}'`), ["--parse", kind], null, options.dirq);
    const section = {
      name: `long ${kind}`,
      commands: [
        { ...command(`${kind}-long`, `long-${long}.${kind}`), check: checkSum(withLong.expected) },
        { ...command(`${kind}-base`, `long-0.${kind}`), check: checkSum(without.expected) },
      ],
      check: () => null,
    };
    const timed = timeSection(section, options.dir, options.runs, meter, failures);
    results.push(...timed);
    const [longRss, baseRss] = timed.map((result) => result.peakRssMb ?? null);
    const cost = longRss !== null && baseRss !== null ? (longRss - baseRss) / (long / MB) : null;
    targets.push({
      name: `one ${sizeText(long)} ${kind === "csv" ? "CSV field" : "JSON Lines line"}: peak RSS above the same file without it at most ${TARGETS.long}x its size`,
      ...verdict(cost, TARGETS.long, "x"),
    });
  }
  return {
    name: "long",
    title: `one ${sizeText(long)} line or field among ${2 * LONG_AROUND} short rows, and the same files without it`,
    refName: "ref",
    runs: options.runs,
    results,
    targets,
  };
}

/** The sections to run, each `{ run(context), generate(options) }`, in the report's order. */
function plannedSections(options) {
  const wants = (name) => options.only.includes(name);
  const planned = [];
  const sizes = options.big ? [options.sizes.bytes, options.sizes.bigBytes] : [options.sizes.bytes];
  for (const kind of ["jsonl", "json"]) {
    if (!wants(kind)) continue;
    for (const bytes of sizes) {
      planned.push({
        run: (context) => sumSection(context, kind, bytes),
        generate: () => ensureBigFile(options.dir, kind, bytes),
      });
    }
  }
  if (wants("csv")) {
    planned.push({
      run: csvSection,
      generate: () => ensureBigFile(options.dir, "csv", options.sizes.bytes),
    });
  }
  if (wants("long")) {
    planned.push({
      run: longSection,
      generate: () =>
        ["jsonl", "csv"].forEach((kind) => {
          ensureLongFile(options.dir, kind, options.sizes.longBytes);
          ensureLongFile(options.dir, kind, 0);
        }),
    });
  }
  if (wants("small")) {
    planned.push({
      run: smallSection,
      generate: () => ensureSmallFiles(options.dir, options.sizes.smallFiles),
    });
  }
  return planned;
}

// ---------------------------------------------------------------------------------------------
// Report

function printText(report) {
  const out = [
    "dirq big-files benchmark: median of the runs after 1 warm-up, whole process wall clock, " +
      "warm cache, output to /dev/null; peak RSS of the warm-up run",
    `node ${process.version} | DuckDB ${report.duckdb} | ${report.sqlite3} | cpus: ${cpus().length}`,
    `dirq: ${report.dirq}`,
    `peak RSS via: ${report.meter ?? "n/a (no way to measure)"}`,
    `load average at start: ${loadText(report.loadStart)}`,
  ];
  if (report.scale !== 1) out.push(`scale ${report.scale}: the targets are for the full sizes`);
  out.push("");
  for (const section of report.sections) {
    out.push(`${section.title}, ${section.runs} run${section.runs === 1 ? "" : "s"}`);
    out.push(...sectionTable(section), "");
  }
  out.push(`load average at end: ${loadText(report.loadEnd)}`, "");
  for (const target of report.targets) out.push(`${target.name}: ${target.text}`);
  for (const failure of report.failures) out.push(`FAILED: ${failure}`);
  process.stdout.write(`${out.join("\n")}\n`);
}

function printJson(report) {
  const json = {
    scale: report.scale,
    environment: {
      node: process.version,
      duckdb: report.duckdb,
      sqlite3: report.sqlite3,
      cpus: cpus().length,
    },
    memoryMeter: report.meter,
    loadAverage: { start: report.loadStart, end: report.loadEnd },
    sections: report.sections.map((section) => ({
      name: section.name,
      title: section.title,
      runs: section.runs,
      commands: section.results.map((result) =>
        resultToJson(result, {
          ratioTo: result.refLabel ?? undefined,
          peakRssMb: round(result.peakRssMb),
          answer: result.rows,
        }),
      ),
    })),
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

async function main() {
  const options = parseCommandLine(process.argv.slice(2));
  mkdirSync(options.dir, { recursive: true });
  const planned = plannedSections(options);
  if (options.generateOnly) {
    for (const section of planned) section.generate();
    return;
  }
  const loadStart = loadavg();
  requireDirqBuilt();
  const duckdb = await requireDuckdb();
  const sqlite3 = findExecutable("sqlite3");
  const scratch = mkdtempSync(join(tmpdir(), "dirq-bigfiles-"));
  try {
    const meter = memoryMeters(scratch);
    const failures = [];
    const context = { options, tools: { duckdb, sqlite3 }, failures, meter };
    const sections = planned.map((section) => section.run(context));
    const report = {
      scale: options.scale,
      dirq: options.dirq,
      duckdb: duckdb.version,
      sqlite3: sqlite3 === null ? "sqlite3 not installed" : `sqlite3 ${toolVersion(sqlite3)}`,
      meter: meter?.name ?? null,
      loadStart,
      loadEnd: loadavg(),
      sections,
      targets: sections.flatMap((section) => section.targets),
      failures,
    };
    if (options.json) printJson(report);
    else printText(report);
    if (failures.length > 0) process.exitCode = 1;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
