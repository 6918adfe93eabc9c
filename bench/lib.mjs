// Helpers shared by the benchmarks in bench/: options, tools, generated trees and their markers,
// timing (warm-up + round-robin runs, medians, percentiles), tables and targets. Plain Node, no
// dependencies.
import { spawnSync } from "node:child_process";
import { request } from "node:http";
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/**
 * Outside the repository: dirq, like git, hides a tree inside an ignored folder of the
 * enclosing repository (`.bench/` is in this repository's .gitignore), so generated trees must
 * not live in it.
 */
export const DEFAULT_BENCH_DIR = join(tmpdir(), "dirq-bench");
export const DIRQ_BIN = join(REPO_ROOT, "packages", "dirq", "bin", "dirq.cjs");
// bin/dirq.cjs only requires the built CLI bundle; without it every dirq row would just fail.
const DIRQ_MAIN = join(REPO_ROOT, "packages", "dirq", "dist", "src", "cli-bundle", "dirq.cjs");

/** dirq's environment in every benchmark: no progress lines on stderr. */
export const DIRQ_ENV = { ...process.env, DIRQ_PROGRESS: "never" };

// ---------------------------------------------------------------------------------------------
// Options and messages

/** Messages are prefixed with the running script's name (`dirq-walk`, `dirq-server`, ...). */
const SCRIPT_NAME = basename(process.argv[1] ?? "bench", ".mjs");

export function fail(message) {
  process.stderr.write(`${SCRIPT_NAME}: ${message}\n`);
  process.exit(2);
}

/** Progress goes to stderr so that `--json` output on stdout stays parseable. */
export function log(message) {
  process.stderr.write(`${message}\n`);
}

/** Strict `parseArgs` over `options`; `-h/--help` prints `usage` and exits. */
export function parseOptions(argv, options, usage) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      options: { ...options, help: { type: "boolean", short: "h", default: false } },
    });
  } catch (error) {
    fail(`${error.message}\n\n${usage}`);
  }
  const { values } = parsed;
  if (values.help) {
    process.stdout.write(usage);
    process.exit(0);
  }
  return values;
}

/**
 * `parseOptions` plus the two options every benchmark takes: `--dir PATH` (returned resolved,
 * default $TMPDIR/dirq-bench) and `--json`.
 */
export function parseBenchOptions(argv, options, usage) {
  const values = parseOptions(
    argv,
    { ...options, dir: { type: "string" }, json: { type: "boolean", default: false } },
    usage,
  );
  return { ...values, dir: resolve(values.dir ?? DEFAULT_BENCH_DIR) };
}

/**
 * The help lines of the options `parseBenchOptions` adds (and -h), to end a usage text:
 * descriptions start at `column`, `dirText` says what --dir holds.
 */
export function benchOptionsUsage(column, dirText) {
  const line = (option, text) => `  ${option.padEnd(column - 2)}${text}\n`;
  return (
    line("--dir PATH", `${dirText} (default $TMPDIR/dirq-bench, outside the repository)`) +
    line("--json", "print machine-readable results instead of tables") +
    line("-h, --help", "show this help")
  );
}

export function positiveInteger(value, flag) {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) fail(`${flag} must be a positive integer`);
  return number;
}

export function requireDirqBuilt() {
  if (!existsSync(DIRQ_MAIN)) {
    fail(`dirq is not built (${DIRQ_MAIN} is missing): run npm run build -w packages/dirq`);
  }
}

// ---------------------------------------------------------------------------------------------
// Generated trees

/** A small seeded PRNG (mulberry32): the same tree on every machine, so results compare. */
export function seededRandom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** True when `marker` exists and has every key of `expected` with the same value. */
export function markerMatches(marker, expected) {
  if (!existsSync(marker)) return false;
  try {
    const written = JSON.parse(readFileSync(marker, "utf8"));
    return Object.keys(expected).every((key) => written[key] === expected[key]);
  } catch {
    return false;
  }
}

/** Write it last: its presence means everything it describes is on disk. */
export function writeMarker(marker, contents) {
  writeFileSync(marker, `${JSON.stringify(contents, null, 2)}\n`);
}

// File trees (dirq-walk, dirq-server): `tree` is `{ name, files, dirs }`, the files spread evenly
// over the directories, 0 to MAX_FILE_SIZE bytes each, sizes and contents from a seeded PRNG.

/** Bump when the generator changes, so trees built by an older version are rebuilt. */
const FILE_TREE_FORMAT = 1;
export const MAX_FILE_SIZE = 4096;
const EXTENSIONS = [".txt", ".json", ".md", ".ts", ".log", ".bin"];

/** The tree at `<baseDir>/<prefix>-<name>`; its marker is outside it, so it is never counted. */
export function fileTreePaths(baseDir, prefix, tree) {
  return {
    root: join(baseDir, `${prefix}-${tree.name}`),
    marker: join(baseDir, `${prefix}-${tree.name}.complete.json`),
  };
}

/** What the marker of a complete tree says. */
export function fileTreeMarker(tree) {
  return {
    format: FILE_TREE_FORMAT,
    files: tree.files,
    dirs: tree.dirs,
    maxFileSize: MAX_FILE_SIZE,
  };
}

export function fileTreeDirName(index) {
  return `d${String(index).padStart(4, "0")}`;
}

/** The relative path of file `f` of directory `d`: `d0003/f0012.md`. */
export function fileTreePath(tree, d, f) {
  const perDir = tree.files / tree.dirs;
  const ext = EXTENSIONS[(d * perDir + f) % EXTENSIONS.length];
  return `${fileTreeDirName(d)}/f${String(f).padStart(4, "0")}${ext}`;
}

/** Writes the whole tree at `root`, then its marker. */
export function generateFileTree(root, marker, tree) {
  // A half-written tree (interrupted run) would skew counts: start again from nothing.
  rmSync(marker, { force: true });
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });

  const random = seededRandom(tree.files);
  const content = Buffer.alloc(MAX_FILE_SIZE);
  for (let i = 0; i < content.length; i++) content[i] = 97 + Math.floor(random() * 26);

  const perDir = tree.files / tree.dirs;
  for (let d = 0; d < tree.dirs; d++) {
    mkdirSync(join(root, fileTreeDirName(d)));
    for (let f = 0; f < perDir; f++) {
      const size = Math.floor(random() * (MAX_FILE_SIZE + 1));
      writeFileSync(join(root, fileTreePath(tree, d, f)), content.subarray(0, size));
    }
  }
  writeMarker(marker, fileTreeMarker(tree));
}

// ---------------------------------------------------------------------------------------------
// Tools

export function findExecutable(name) {
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
export function toolVersion(executable) {
  const result = spawnSync(executable, ["--version"], { encoding: "utf8" });
  const line = (result.stdout ?? "").split("\n")[0].trim();
  // sqlite3 appends its 64-character source hash, which only makes the header wrap.
  const words = line.split(/\s+/).filter((word) => word.length <= 32);
  return words.length === 0 ? null : words.join(" ");
}

/** `{ name: path | null }` → `{ name: version | "not installed" }`, plus node's own version. */
export function toolVersions(names) {
  const versions = { node: process.version };
  for (const [name, path] of Object.entries(names)) {
    versions[name] = path === null ? "not installed" : (toolVersion(path) ?? path);
  }
  return versions;
}

// ---------------------------------------------------------------------------------------------
// Timing
//
// A command is `{ label, kind, executable, args, env?, check, short? }`: `executable` null means
// "not installed"; `check(stdout)` returns null or a warning; `kind` "baseline" marks the ratio
// base; `short`, if set, names the command in progress messages instead of its label.

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

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Nearest-rank percentile: the smallest value with at least `p`% of the samples at or below. */
export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

/**
 * Warms every command up, then runs them round-robin: interleaving spreads background noise
 * (other processes, CPU frequency changes) over all commands instead of penalising one.
 * `onProgress(message)`, if given, hears about every warm-up and run (for slow commands).
 */
export function timeCommands(commands, cwd, runs, { onProgress } = {}) {
  const results = commands.map((command) => ({ command, samples: [], status: "ok" }));
  for (const result of results) {
    if (result.command.executable === null) {
      result.status = "not installed";
      continue;
    }
    const name = result.command.short ?? result.command.label;
    onProgress?.(`warm-up: ${name}`);
    const warm = warmUp(result.command, cwd);
    if (warm.error) result.status = `failed (${warm.error})`;
    else if (warm.warning) result.warning = warm.warning;
    if (result.status !== "ok" || result.warning) {
      onProgress?.(`warm-up: ${name}: ${result.warning ?? result.status}`);
    }
  }
  for (let run = 0; run < runs; run++) {
    for (const result of results) {
      if (result.status !== "ok") continue;
      const timing = timeOnce(result.command, cwd);
      if (timing.error) result.status = `failed (${timing.error})`;
      else result.samples.push(timing.elapsedMs);
      const outcome = timing.error ? "failed" : `${(timing.elapsedMs / 1000).toFixed(2)} s`;
      onProgress?.(
        `run ${run + 1}/${runs}: ${result.command.short ?? result.command.label}: ${outcome}`,
      );
    }
  }
  for (const result of results) {
    if (result.status !== "ok") continue;
    result.medianMs = median(result.samples);
    result.minMs = Math.min(...result.samples);
  }
  return results;
}

/** Sets `ratio` (median / the baseline's median) on every result; returns the baseline label. */
export function addRatios(results, baselineKind) {
  const baseline = results.find((result) => result.command.kind === baselineKind);
  const baseMs = baseline?.status === "ok" ? baseline.medianMs : null;
  for (const result of results) {
    result.ratio = result.status === "ok" && baseMs ? result.medianMs / baseMs : null;
  }
  return baseline?.command.label ?? baselineKind;
}

// ---------------------------------------------------------------------------------------------
// Report

/** `n/a` for no value; Infinity (a sample that never arrived, as in dirq-server) is `missing`. */
export function formatNumber(value, digits) {
  if (value === null || value === undefined) return "n/a";
  if (value === Infinity) return "missing";
  return value.toFixed(digits);
}

export function formatRatio(ratio) {
  return ratio === null ? "n/a" : `${ratio.toFixed(2)}x`;
}

/**
 * The lines of a table: header, rule, then one line per row; the first column left-aligned, the
 * others right-aligned. A row is an array of cells, or `{ label, text }`: the label in the first
 * column and a message spanning the others (it does not widen them).
 */
export function table(header, rows) {
  const widths = header.map((cell, column) =>
    Math.max(
      cell.length,
      ...rows.map((row) =>
        Array.isArray(row) ? (row[column] ?? "").length : column === 0 ? row.label.length : 0,
      ),
    ),
  );
  const line = (cells) =>
    cells
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[0]) : cell.padStart(widths[column]),
      )
      .join("  ")
      .trimEnd();
  return [
    line(header),
    widths.map((width) => "-".repeat(width)).join("  "),
    ...rows.map((row) =>
      Array.isArray(row) ? line(row) : `${row.label.padEnd(widths[0])}  ${row.text}`,
    ),
  ];
}

/**
 * A table of results: the command label, then one column per `{ header, cell(result) }`,
 * right-aligned. A status message ("not installed", "failed (...)") spans the other columns.
 * Warnings from the warm-up follow the table.
 */
export function renderTable(title, columns, results) {
  const header = ["command", ...columns.map((column) => column.header)];
  const rows = results.map((result) =>
    result.status === "ok"
      ? [result.command.label, ...columns.map((column) => column.cell(result))]
      : { label: result.command.label, text: result.status },
  );
  const out = [title, ...table(header, rows)];
  for (const result of results) {
    if (result.warning) out.push(`warning: ${result.command.label}: ${result.warning}`);
  }
  return out.join("\n");
}

/** A target's outcome: `{ value, limit, met, text }`, `met` null when it was not measured. */
export function verdict(
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

/** Two decimals for `--json`; null for anything that is not a finite number. */
export function round(value) {
  return typeof value === "number" && Number.isFinite(value) ? Math.round(value * 100) / 100 : null;
}

/** A result for `--json`; `extra` fields go after `ratio` (undefined ones are left out). */
export function resultToJson(result, extra = {}) {
  return {
    command: result.command.label,
    status: result.status,
    medianMs: round(result.medianMs),
    minMs: round(result.minMs),
    samplesMs: result.samples.map(round),
    ratio: round(result.ratio),
    ...extra,
    warning: result.warning ?? undefined,
  };
}

/** The port a `dirq server --port 0` child prints in its `Running at host:port` line. */
export function serverPort(child) {
  let out = "";
  return new Promise((resolve, reject) => {
    child.stdout.setEncoding("utf8").on("data", (chunk) => {
      out += chunk;
      const match = /Running at \S+:(\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once("exit", () => reject(new Error(`server exited: ${out}`)));
  });
}

/** POST /query to a server on loopback; resolves with the status and the body's text. */
export function postQuery(port, sql) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ sql });
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path: "/query",
        method: "POST",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (chunk) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode, text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

// ---------------------------------------------------------------------------------------------
// Engines and sections (dirq-formats, dirq-bigfiles): a command is `{ id, label, role, ref,
// executable, args, env, read(stdout) -> rows }`; each section's commands are checked on a
// warm-up run (peak RSS taken there), then timed round-robin.

/** dirq prints a JSON array of objects when stdout is not a terminal. */
export function dirqRows(stdout) {
  return JSON.parse(stdout).map((row) => Object.values(row));
}

/** `bin`: another build of dirq (its bin/dirq.cjs), for a before-and-after comparison. */
export function dirqCommand(id, sql, extraArgs, ref, bin = DIRQ_BIN) {
  const shown = extraArgs.length > 0 ? ` ${extraArgs.join(" ")}` : "";
  return {
    id,
    label: `dirq "${sql}"${shown}`,
    role: "dirq",
    ref,
    executable: process.execPath,
    args: [bin, sql, ...extraArgs],
    env: DIRQ_ENV,
    read: dirqRows,
  };
}

/**
 * DuckDB in a fresh Node process, as small as it can be (no bench code loaded): import, an
 * in-memory instance, one statement, its rows as JSON. `url` is where @duckdb/node-api is
 * (resolved from here: the child runs in the tree, which has no node_modules).
 */
const DUCKDB_CHILD = `
const [url, sql] = process.argv.slice(1);
const { DuckDBInstance } = await import(url);
const instance = await DuckDBInstance.create(":memory:");
const connection = await instance.connect();
const reader = await connection.runAndReadAll(sql);
const rows = reader.getRowsJS();
connection.closeSync();
instance.closeSync();
process.stdout.write(
  JSON.stringify(rows, (_key, value) => (typeof value === "bigint" ? Number(value) : value)),
);
`;

export function duckdbCommand(id, label, sql, duckdb) {
  return {
    id,
    label,
    role: "reference",
    executable: duckdb === null ? null : process.execPath,
    args: ["--input-type=module", "-e", DUCKDB_CHILD, duckdb?.url ?? "", sql],
    env: process.env,
    read: (stdout) => JSON.parse(stdout),
  };
}

/** `{ url, version }` of @duckdb/node-api, or the hint of dirq-sdk-ingest.mjs and exit 2. */
export async function requireDuckdb() {
  try {
    const url = import.meta.resolve("@duckdb/node-api");
    await import(url);
    const pkg = JSON.parse(readFileSync(new URL("../package.json", url), "utf8"));
    return { url, version: pkg.version };
  } catch {
    console.error(
      "bench: DuckDB is not installed. Run `npm install` at the repository root first " +
        "(@duckdb/node-api is a devDependency of packages/dirq), or " +
        "`npm install --no-save @duckdb/node-api`.",
    );
    process.exit(2);
  }
}

// ---------------------------------------------------------------------------------------------
// Peak memory (as bench/dirq-walk.mjs): GNU time's %M when /usr/bin/time works, else a preload
// that records the Node process's own maxRSS at exit (none for Python then). It is taken on the
// warm-up run, whose output is kept for the answer check; timed runs are bare.

const MAX_RSS_PRELOAD = `
import { writeFileSync } from "node:fs";
process.on("exit", () => {
  writeFileSync(process.env.DIRQ_BENCH_RSS_FILE, String(process.resourceUsage().maxRSS));
});
`;

export function readKilobytes(file) {
  try {
    // GNU time writes "Command exited with non-zero status N" before %M on failure.
    const lines = readFileSync(file, "utf8").trim().split("\n");
    const value = Number(lines[lines.length - 1]);
    return Number.isFinite(value) && value > 0 ? value : null;
  } catch {
    return null;
  }
}

export function memoryMeters(scratch) {
  const outFile = join(scratch, "max-rss.txt");
  const preload = join(scratch, "max-rss-preload.mjs");
  writeFileSync(preload, MAX_RSS_PRELOAD);
  const gnuTime = {
    name: "/usr/bin/time -f %M",
    wrap: (command) => ({
      executable: "/usr/bin/time",
      args: ["-f", "%M", "-o", outFile, command.executable, ...command.args],
      env: command.env,
    }),
  };
  const inProcess = {
    name: "in-process process.resourceUsage().maxRSS",
    wrap: (command) =>
      command.executable === process.execPath
        ? {
            executable: command.executable,
            args: ["--import", preload, ...command.args],
            env: { ...command.env, DIRQ_BENCH_RSS_FILE: outFile },
          }
        : null,
  };
  const candidates = existsSync("/usr/bin/time") ? [gnuTime, inProcess] : [inProcess];
  for (const meter of candidates) {
    rmSync(outFile, { force: true });
    const probe = meter.wrap({ executable: process.execPath, args: ["-e", "0"], env: {} });
    spawnSync(probe.executable, probe.args, { env: probe.env, stdio: "ignore" });
    if (readKilobytes(outFile) !== null) return { ...meter, outFile };
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Timing: a warm-up per command (answer checked, peak RSS), then round-robin runs, each the
// whole process's wall clock with stdout to /dev/null.

function describeLastLines(result) {
  if (result.error) return result.error.message;
  const lines = (result.stderr ?? "").toString().trim().split("\n").filter(Boolean);
  const status = result.status === null ? `signal ${result.signal}` : `exit ${result.status}`;
  return lines.length > 0 ? `${status}: ${lines.slice(-2).join(" | ")}` : status;
}

function measuredWarmUp(command, cwd, meter) {
  const wrapped = meter?.wrap(command) ?? null;
  const run = wrapped ?? command;
  if (wrapped) rmSync(meter.outFile, { force: true });
  const result = spawnSync(run.executable, run.args, {
    cwd,
    env: run.env,
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  if (result.error || result.status !== 0) return { error: describeLastLines(result) };
  const kilobytes = wrapped ? readKilobytes(meter.outFile) : null;
  try {
    return { rows: command.read(result.stdout), peakRssMb: kilobytes && kilobytes / 1024 };
  } catch (error) {
    return {
      error: `could not read its output (${error.message}): ${result.stdout.slice(0, 200)}`,
    };
  }
}

function timeBareRun(command, cwd) {
  const started = process.hrtime.bigint();
  const result = spawnSync(command.executable, command.args, {
    cwd,
    env: command.env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.error || result.status !== 0) return { error: describeLastLines(result) };
  return { ms };
}

/**
 * Runs a section's commands. `check(rows)` (the command's own, else the section's) returns
 * null or what is wrong with an answer: a wrong answer is said loudly at once, the command is
 * not timed (its time would mean nothing) and the script exits 1 at the end.
 */
export function timeSection(section, cwd, runs, meter, failures) {
  const results = section.commands.map((command) => ({ command, samples: [], status: "ok" }));
  for (const result of results) {
    const { command } = result;
    if (command.executable === null) {
      result.status = "not installed";
      continue;
    }
    log(`${section.name}: warm-up: ${command.label}`);
    const warm = measuredWarmUp(command, cwd, meter);
    if (warm.error) {
      result.status = `failed (${warm.error})`;
    } else {
      result.rows = warm.rows;
      result.peakRssMb = warm.peakRssMb;
      const wrong = (command.check ?? section.check)(warm.rows);
      if (wrong !== null) result.status = `WRONG ANSWER: ${wrong}`;
    }
    if (result.status !== "ok") {
      log(`${section.name}: ${command.label}: ${result.status}`);
      failures.push(`${section.name}: ${command.label}: ${result.status}`);
    }
  }
  for (let run = 1; run <= runs; run++) {
    for (const result of results) {
      if (result.status !== "ok") continue;
      const timing = timeBareRun(result.command, cwd);
      if (timing.error) {
        result.status = `failed (${timing.error})`;
        failures.push(`${section.name}: ${result.command.label}: ${result.status}`);
      } else {
        result.samples.push(timing.ms);
      }
      const outcome = timing.error ? result.status : `${(timing.ms / 1000).toFixed(2)} s`;
      log(`${section.name}: run ${run}/${runs}: ${result.command.label}: ${outcome}`);
    }
  }
  for (const result of results) {
    if (result.status !== "ok") continue;
    result.medianMs = median(result.samples);
    result.minMs = Math.min(...result.samples);
  }
  for (const result of results) {
    const ref = results.find((other) => other.command.id === result.command.ref);
    result.refLabel = ref?.command.label ?? null;
    result.ratio =
      result.status === "ok" && ref?.status === "ok" ? result.medianMs / ref.medianMs : null;
  }
  return results;
}

/** The ratio of the dirq command `id` to its reference, or null when either failed. */
export function ratioOf(results, id) {
  return results.find((result) => result.command.id === id)?.ratio ?? null;
}

/** A load average as `1.00 0.80 0.70`. */
export function loadText(load) {
  return load.map((value) => value.toFixed(2)).join(" ");
}

export function answerText(rows) {
  if (rows === undefined) return "";
  if (rows.length === 1) return rows[0].map((value) => String(value)).join(", ");
  return `${rows.length} groups`;
}

export function sectionTable(section) {
  const rows = section.results.map((result) =>
    result.status === "ok"
      ? [
          result.command.label,
          formatNumber(result.medianMs, 0),
          formatNumber(result.minMs, 0),
          result.command.ref ? formatRatio(result.ratio) : "",
          formatNumber(result.peakRssMb, 1),
          answerText(result.rows),
        ]
      : { label: result.command.label, text: result.status },
  );
  return table(
    ["command", "median ms", "min ms", `vs ${section.refName}`, "peak RSS MB", "answer"],
    rows,
  );
}

/** What a marker written by `writeMarker` holds. */
export function readMarkerFile(marker) {
  return JSON.parse(readFileSync(marker, "utf8"));
}

/**
 * Reads a Server-Sent Events body, calling `onFrame(event, data)` for each frame with both an
 * `event:` and a `data:` line; resolves when the body ends or its request is aborted.
 */
export async function readSseFrames(body, onFrame) {
  const decoder = new globalThis.TextDecoder();
  let buffer = "";
  try {
    for await (const chunk of body) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
        const lines = buffer.slice(0, end).split("\n");
        buffer = buffer.slice(end + 2);
        const event = lines.find((l) => l.startsWith("event: "))?.slice(7);
        const data = lines.find((l) => l.startsWith("data: "))?.slice(6);
        if (event !== undefined && data !== undefined) onFrame(event, data);
      }
    }
  } catch {
    // Aborted: the caller ended the stream.
  }
}
