#!/usr/bin/env node
// Benchmarks how dirq reads one large worker reply: `SELECT length(big(n))` where the worker
// answers with a string of n MiB, against a Node program that starts the same worker, sends
// the same request and JSON.parses the reply it reads from the same pipe. See bench/README.md.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  benchOptionsUsage,
  DIRQ_BIN,
  DIRQ_ENV,
  fail,
  formatNumber,
  formatRatio,
  log,
  parseBenchOptions,
  positiveInteger,
  requireDirqBuilt,
  table,
  timeCommands,
  toolVersions,
  verdict,
} from "./lib.mjs";

const DEFAULT_SIZES = "2,8,32";
/** dirq against JSON.parse on the same pipe at the largest size: "within" allows equality. */
const TARGET_RATIO = 3;
/** The reply size (MiB) dirq's fixed costs are measured with, to leave the reply's own cost. */
const SMALL_MIB = 0.0625;

/**
 * The worker both sides run: `{"id", "args": [mib]}` in, `{"id", "result": "<mib MiB of text>"}`
 * out. The text is words and long digit runs (what a worker returning documents or ids
 * prints), built before the request is read so that only reading the reply differs.
 */
const WORKER = `// Written by bench/dirq-worker-reply.mjs.
const { createInterface } = require("node:readline");

const cache = new Map();
function text(mib) {
  const bytes = Math.round(mib * 1024 * 1024);
  const unit = "lorem ipsum 12345678901234567890 dolor sit amet, consectetur 9007199254740993 ";
  return unit.repeat(Math.ceil(bytes / unit.length)).slice(0, bytes);
}
for (const mib of process.argv.slice(2).map(Number)) cache.set(mib, text(mib));
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const { id, args } = JSON.parse(line);
  const mib = Number(args[0]);
  const body = cache.get(mib) ?? text(mib);
  process.stdout.write('{"id":' + id + ',"result":"' + body + '"}\\n');
});
lines.on("close", () => process.exit(0));
`;

/** The same exchange without dirq: read the reply line from the pipe, JSON.parse it. */
const PARSE_CLIENT = `// Written by bench/dirq-worker-reply.mjs.
const { spawn } = require("node:child_process");

// The size to ask for, then every size the worker prepares (as dirq's config starts it).
const [mib, ...prepared] = process.argv.slice(2);
const worker = spawn("node", ["worker.js", ...prepared], { stdio: ["pipe", "pipe", "inherit"] });
const pieces = [];
worker.stdout.setEncoding("utf8").on("data", (chunk) => {
  pieces.push(chunk);
  if (!chunk.endsWith("\\n")) return;
  const reply = JSON.parse(pieces.join(""));
  process.stdout.write(JSON.stringify([{ n: reply.result.length }]) + "\\n");
  worker.stdin.end();
});
worker.stdin.write(JSON.stringify({ id: 1, args: [Number(mib)] }) + "\\n");
`;

const PACKAGE_JSON = `{ "private": true, "type": "commonjs" }\n`;

const USAGE = `Usage: node bench/dirq-worker-reply.mjs [options]

  --runs N        timed runs per command, after one warm-up (default 3)
  --sizes LIST    reply sizes in MiB, comma-separated (default ${DEFAULT_SIZES})
${benchOptionsUsage(18, "where the worker lives")}`;

function parseOptions(argv) {
  const values = parseBenchOptions(
    argv,
    {
      runs: { type: "string", default: "3" },
      sizes: { type: "string", default: DEFAULT_SIZES },
    },
    USAGE,
  );
  const sizes = values.sizes.split(",").map((size) => positiveInteger(size.trim(), "--sizes"));
  if (sizes.length === 0) fail("--sizes needs at least one size");
  return {
    runs: positiveInteger(values.runs, "--runs"),
    sizes,
    dir: values.dir,
    json: values.json,
  };
}

function setUp(dir, sizes) {
  const root = join(dir, "worker-reply");
  mkdirSync(root, { recursive: true });
  writeFileSync(join(root, "worker.js"), WORKER);
  writeFileSync(join(root, "parse-client.js"), PARSE_CLIENT);
  writeFileSync(join(root, "package.json"), PACKAGE_JSON);
  // The worker builds its texts at start-up, for dirq as for the client.
  const prepared = [SMALL_MIB, ...sizes].join(" ");
  const config = `[[dirq.function]]\nname = "big"\ncommand = "node worker.js ${prepared}"\n`;
  writeFileSync(join(root, "dirq.toml"), config);
  return root;
}

function expectLength(mib) {
  const bytes = Math.round(mib * 1024 * 1024);
  return (stdout) => {
    const n = JSON.parse(stdout)[0]?.n;
    return n === bytes ? null : `length ${n}, expected ${bytes}`;
  };
}

function commands(sizes) {
  const prepared = [SMALL_MIB, ...sizes].map(String);
  const dirq = (mib) => ({
    label: `dirq "SELECT length(big(${mib})) AS n" -c dirq.toml`,
    kind: "dirq",
    mib,
    short: `dirq ${mib} MiB`,
    executable: process.execPath,
    args: [DIRQ_BIN, `SELECT length(big(${mib})) AS n`, "-c", "dirq.toml", "--format", "json"],
    env: DIRQ_ENV,
    check: expectLength(mib),
  });
  const parse = (mib) => ({
    label: `node parse-client.js ${mib} (same worker, JSON.parse)`,
    kind: "parse",
    mib,
    short: `JSON.parse ${mib} MiB`,
    executable: process.execPath,
    args: ["parse-client.js", String(mib), ...prepared],
    check: expectLength(mib),
  });
  return [dirq(SMALL_MIB), ...sizes.flatMap((mib) => [dirq(mib), parse(mib)])];
}

function main() {
  const options = parseOptions(process.argv.slice(2));
  requireDirqBuilt();
  const versions = toolVersions({});
  const root = setUp(options.dir, options.sizes);
  log(`worker-reply: 1 warm-up + ${options.runs} runs of each command in ${root}`);
  const results = timeCommands(commands(options.sizes), root, options.runs, {
    onProgress: (message) => log(`worker-reply: ${message}`),
  });
  const find = (kind, mib) =>
    results.find((result) => result.command.kind === kind && result.command.mib === mib);
  const ok = (result) => (result?.status === "ok" ? result.medianMs : null);
  const small = ok(find("dirq", SMALL_MIB));
  const rows = options.sizes.map((mib) => {
    const dirqMs = ok(find("dirq", mib));
    const parseMs = ok(find("parse", mib));
    // What the reply itself costs dirq: the run less one with a tiny reply (start-up, worker
    // start, the query), per MiB. Flat across sizes means linear in the reply's size.
    const perMib = dirqMs !== null && small !== null ? (dirqMs - small) / (mib - SMALL_MIB) : null;
    return {
      mib,
      dirqMs,
      parseMs,
      perMib,
      ratio: dirqMs !== null && parseMs !== null ? dirqMs / parseMs : null,
    };
  });
  const largest = rows[rows.length - 1];
  const target = {
    name: `dirq within ${TARGET_RATIO}x of JSON.parse on the same pipe at ${largest.mib} MiB`,
    ...verdict(largest.ratio, TARGET_RATIO, "x", { missing: "a command failed" }),
  };
  const perMibs = rows.map((row) => row.perMib).filter((value) => value !== null);
  const spread =
    perMibs.length === rows.length ? Math.max(...perMibs) / Math.min(...perMibs) : null;
  if (options.json) {
    const json = {
      runs: options.runs,
      environment: { ...versions, platform: process.platform },
      smallReplyMs: small === null ? null : Math.round(small),
      sizes: rows.map((row) => ({
        mib: row.mib,
        dirqMs: row.dirqMs === null ? null : Math.round(row.dirqMs),
        jsonParseMs: row.parseMs === null ? null : Math.round(row.parseMs),
        dirqAddedMsPerMib: row.perMib === null ? null : Math.round(row.perMib * 10) / 10,
        ratio: row.ratio === null ? null : Math.round(row.ratio * 100) / 100,
      })),
      perMibSpread: spread === null ? null : Math.round(spread * 100) / 100,
      target: { name: target.name, value: target.value, limit: target.limit, met: target.met },
    };
    process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
    return;
  }
  const seconds = (ms) => formatNumber(ms === null ? null : ms / 1000, 3);
  const out = [
    `dirq worker-reply benchmark: median of ${options.runs} runs after 1 warm-up, wall clock`,
    `node: ${versions.node}`,
    `dirq with a ${SMALL_MIB * 1024} KiB reply (start-up, worker, query): ${seconds(small)} s`,
    "",
    ...table(
      ["reply", "dirq s", "JSON.parse s", "dirq vs JSON.parse", "dirq added ms/MiB"],
      rows.map((row) => [
        `${row.mib} MiB`,
        seconds(row.dirqMs),
        seconds(row.parseMs),
        formatRatio(row.ratio),
        formatNumber(row.perMib, 1),
      ]),
    ),
    "",
    `${target.name}: ${target.text}`,
    `added time per MiB, largest over smallest across sizes: ${formatRatio(spread)} (1.00x is perfectly linear)`,
  ];
  for (const result of results) {
    if (result.status !== "ok") out.push(`${result.command.label}: ${result.status}`);
    else if (result.warning) out.push(`warning: ${result.command.label}: ${result.warning}`);
  }
  process.stdout.write(`${out.join("\n")}\n`);
}

main();
