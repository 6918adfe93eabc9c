#!/usr/bin/env node
// Times dirq reading malformed files (a CSV or TSV quote left open, a JSON text cut short, a
// JSON Lines file whose last line is broken, YAML and TOML broken at their end) against the
// well-formed file of the same size, in the same run: a malformed file must cost about what a
// well-formed one does (issue 64: an open quote made a 16 MB CSV take 213 s).
// See bench/README.md and bench/notes/malformed.md.
import { spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  renameSync,
  statSync,
  writeSync,
} from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  DIRQ_BIN,
  DIRQ_ENV,
  fail,
  formatNumber,
  formatRatio,
  log,
  median,
  parseOptions,
  positiveInteger,
  requireDirqBuilt,
  round,
  table,
} from "./lib.mjs";

const DEFAULT_DIR = join(tmpdir(), "dirq-malformed-bench");
const FORMATS = ["csv", "tsv", "json", "jsonl", "yaml", "toml"];
const DEFAULT_SIZES = "1,10";
/** How long one run may take (s) before it is stopped and reported as such. */
const DEFAULT_TIMEOUT_S = 600;
/** Bump when a generator changes, so files written by an older version are rewritten. */
const FILE_FORMAT = 1;

const USAGE = `Usage: node bench/dirq-malformed.mjs [options]

Generates, per format and size, a well-formed file and the same file malformed, runs the built
CLI's \`SELECT count(*) FROM './<file>' --parse <format>\` on each, and prints seconds per MB
of both and their ratio (malformed / well-formed). The malformed shapes: csv and tsv, a quote
opened on line 3 and never closed; json, the text cut short; jsonl, a broken last line; yaml
and toml, a line that does not parse at the end.

  --sizes LIST    sizes in MB, comma-separated (default ${DEFAULT_SIZES}; 100 takes minutes)
  --only LIST     formats, comma-separated: ${FORMATS.join(", ")} (default all)
  --runs N        timed runs per file (default 1; the median is shown)
  --timeout S     stop a run after S seconds (default ${DEFAULT_TIMEOUT_S})
  --dir PATH      where the generated files live (default $TMPDIR/dirq-malformed-bench)
  --json          print machine-readable results instead of a table
  -h, --help      show this help
`;

function parseCommandLine(argv) {
  const values = parseOptions(
    argv,
    {
      sizes: { type: "string", default: DEFAULT_SIZES },
      only: { type: "string" },
      runs: { type: "string", default: "1" },
      timeout: { type: "string", default: String(DEFAULT_TIMEOUT_S) },
      dir: { type: "string" },
      json: { type: "boolean", default: false },
    },
    USAGE,
  );
  const only = values.only === undefined ? FORMATS : values.only.split(",").filter(Boolean);
  for (const name of only) {
    if (!FORMATS.includes(name)) fail(`--only: unknown format ${name} (${FORMATS.join(", ")})`);
  }
  const sizes = values.sizes.split(",").map((size) => positiveInteger(size, "--sizes"));
  return {
    sizes,
    only,
    runs: positiveInteger(values.runs, "--runs"),
    timeoutMs: positiveInteger(values.timeout, "--timeout") * 1000,
    dir: resolve(values.dir ?? DEFAULT_DIR),
    json: values.json,
  };
}

// ---------------------------------------------------------------------------------------------
// Files: a header, records of about 40 bytes up to the size, a footer; the malformed file
// changes one line (`bad`) or the end (`end`).

/** Per format: the file's start, its record `i`, its end, and how the malformed one differs. */
const SHAPES = {
  csv: {
    start: "id,name,amount\n",
    record: (i) => (i === 1 ? `${i},"open quote,1\n` : `${i},name ${i} here,${i * 1.5}\n`),
    goodRecord: (i) => `${i},name ${i} here,${i * 1.5}\n`,
    end: "",
    badEnd: "",
    line: 3,
  },
  tsv: {
    start: "id\tname\tamount\n",
    record: (i) => (i === 1 ? `${i}\t"open quote\t1\n` : `${i}\tname ${i} here\t${i * 1.5}\n`),
    goodRecord: (i) => `${i}\tname ${i} here\t${i * 1.5}\n`,
    end: "",
    badEnd: "",
    line: 3,
  },
  json: {
    start: "[\n",
    goodRecord: (i) => `{"id": ${i}, "name": "name ${i}", "amount": ${i * 1.5}},\n`,
    end: '{"id": -1, "name": "last", "amount": 0}\n]\n',
    // Cut short in the middle of an object: no closing brace, no closing bracket.
    badEnd: '{"id": -1, "name": "la',
  },
  jsonl: {
    start: "",
    goodRecord: (i) => `{"id": ${i}, "name": "name ${i}", "amount": ${i * 1.5}}\n`,
    end: '{"id": -1, "name": "last", "amount": 0}\n',
    badEnd: '{"id": -1, "name": "la\n',
  },
  yaml: {
    start: "",
    goodRecord: (i) => `- id: ${i}\n  name: name ${i}\n  amount: ${i * 1.5}\n`,
    end: "- id: -1\n  name: last\n",
    badEnd: "- id: -1\n  name: [last\n",
  },
  toml: {
    start: "",
    goodRecord: (i) => `[[rows]]\nid = ${i}\nname = "name ${i}"\namount = ${i * 1.5}\n`,
    end: '[[rows]]\nid = -1\nname = "last"\n',
    badEnd: '[[rows]]\nid = -1\nname = "last\n',
  },
};

/** Writes a file of about `mb` MB in `format`, well-formed or not; its path. */
function writeShape(dir, format, mb, malformed) {
  const shape = SHAPES[format];
  const path = join(dir, `${malformed ? "bad" : "good"}-${mb}mb-v${FILE_FORMAT}.${format}`);
  if (existsSync(path)) return path;
  const fd = openSync(`${path}.part`, "w");
  const record = malformed && shape.record ? shape.record : shape.goodRecord;
  let chunk = shape.start;
  let written = 0;
  for (let i = 0; written + chunk.length < mb * 1e6; i++) {
    chunk += record(i);
    if (chunk.length >= 1 << 20) {
      written += writeSync(fd, chunk);
      chunk = "";
    }
  }
  writeSync(fd, chunk + (malformed ? shape.badEnd : shape.end));
  closeSync(fd);
  renameSync(`${path}.part`, path);
  return path;
}

// ---------------------------------------------------------------------------------------------
// Runs

/** One run of the CLI over `path`: seconds, exit code, the line its error names. */
function runOnce(dir, path, format, timeoutMs) {
  const sql = `SELECT count(*) FROM './${path.slice(dir.length + 1)}'`;
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, [DIRQ_BIN, sql, "--parse", format], {
    cwd: dir,
    env: DIRQ_ENV,
    encoding: "utf8",
    timeout: timeoutMs,
    killSignal: "SIGKILL",
    maxBuffer: 1 << 24,
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const line = /: (line \d+)/.exec(result.stderr ?? "")?.[1] ?? null;
  return { seconds, code: result.status, timedOut: result.signal === "SIGKILL", line };
}

/** The median of `runs` runs; a run stopped by the timeout ends the series. */
function timeFile(dir, path, format, options) {
  const times = [];
  let last = null;
  for (let run = 0; run < options.runs; run++) {
    last = runOnce(dir, path, format, options.timeoutMs);
    times.push(last.seconds);
    if (last.timedOut) break;
  }
  return { ...last, seconds: median(times) };
}

function measure(options) {
  mkdirSync(options.dir, { recursive: true });
  const results = [];
  for (const mb of options.sizes) {
    for (const format of options.only) {
      const good = writeShape(options.dir, format, mb, false);
      const bad = writeShape(options.dir, format, mb, true);
      const realMb = statSync(good).size / 1e6;
      log(`${format} ${mb} MB ...`);
      const well = timeFile(options.dir, good, format, options);
      const broken = timeFile(options.dir, bad, format, options);
      if (well.code !== 0) log(`warning: ${format} ${mb} MB well-formed exited ${well.code}`);
      if (broken.code !== 23 && !broken.timedOut) {
        log(`warning: ${format} ${mb} MB malformed exited ${broken.code} (expected 23)`);
      }
      results.push({ format, mb, realMb, well, broken });
    }
  }
  return results;
}

function cellSeconds(run) {
  return run.timedOut
    ? `> ${formatNumber(run.seconds, 0)} (stopped)`
    : formatNumber(run.seconds, 2);
}

function report(results, options) {
  const load = loadavg().map((value) => value.toFixed(2));
  if (options.json) {
    const rows = results.map(({ format, mb, realMb, well, broken }) => ({
      format,
      mb,
      wellSeconds: round(well.seconds),
      malformedSeconds: round(broken.seconds),
      malformedStopped: broken.timedOut,
      wellSecondsPerMb: round(well.seconds / realMb),
      malformedSecondsPerMb: round(broken.seconds / realMb),
      ratio: round(broken.seconds / well.seconds),
      errorLine: broken.line,
    }));
    process.stdout.write(`${JSON.stringify({ loadavg: load, results: rows }, null, 2)}\n`);
    return;
  }
  const header = ["format", "MB", "well-formed s", "s/MB", "malformed s", "s/MB", "ratio", "error"];
  const rows = results.map(({ format, mb, realMb, well, broken }) => [
    format,
    String(mb),
    cellSeconds(well),
    formatNumber(well.seconds / realMb, 3),
    cellSeconds(broken),
    formatNumber(broken.seconds / realMb, 3),
    formatRatio(broken.seconds / well.seconds),
    broken.line ?? "none",
  ]);
  const lines = [
    `dirq malformed files: whole CLI runs, median of ${options.runs}`,
    `cores ${cpus().length}, load average ${load.join(" ")} (at the end)`,
    ...table(header, rows),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
}

const options = parseCommandLine(process.argv.slice(2));
requireDirqBuilt();
report(measure(options), options);
