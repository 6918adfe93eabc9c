#!/usr/bin/env node
// Six hostile hooks at once beside ordinary files (issue 56): while one hook hangs, one sleeps
// 8 s, one exits 1, one is killed by a signal, one prints invalid JSON and one prints a row of
// 50 MB, 200 other files are written one by one; for each of them, the time from its write to
// its `row` frame at an /events client. A control run (the same writes, no hostile file) runs
// beside it, each on a fresh `dirq server`. See bench/README.md.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import {
  DIRQ_BIN,
  DIRQ_ENV,
  log,
  median,
  parseOptions,
  percentile,
  positiveInteger,
  requireDirqBuilt,
  table,
} from "./lib.mjs";

const USAGE = `usage: node bench/dirq-hostile-hooks.mjs [options]

  --files N       ordinary files written one by one (default 200)
  --interval MS   between two of their writes (default 25)
  --big-mb N      size of the large row (default 50)
  --subscribers N /events clients reading every frame, the timed one among them (default 1)
  --json          results as JSON on stdout
  DIRQ_BIN=<path to bin/dirq.cjs> measures another build (default: this checkout's).
`;

const options = parseOptions(
  process.argv.slice(2),
  {
    files: { type: "string", default: "200" },
    interval: { type: "string", default: "25" },
    "big-mb": { type: "string", default: "50" },
    subscribers: { type: "string", default: "1" },
    json: { type: "boolean", default: false },
  },
  USAGE,
);
const FILES = positiveInteger(options.files, "--files");
const INTERVAL_MS = positiveInteger(options.interval, "--interval");
const BIG_MB = positiveInteger(options["big-mb"], "--big-mb");
const SUBSCRIBERS = positiveInteger(options.subscribers, "--subscribers");
const BIN = process.env.DIRQ_BIN ?? DIRQ_BIN;
/** How long after the last write every ordinary file's frame may still come. */
const SETTLE_MS = 15_000;
const TARGET_P99_MS = 100;

if (!process.env.DIRQ_BIN) requireDirqBuilt();

/**
 * What each hostile file's hook does (the hostile table, `hostile/*.json`). The ordinary files
 * have a table of their own whose hook is `cat {path}`: one process per file, so that what is
 * timed is how much the hostile hooks hold them back, not a dispatching script's own forks
 * (what a fork and exec costs: notes/hostile-hooks.md).
 */
const HOOK = `case "$1" in
  */hang.json) exec sleep 100000 ;;
  */sleep.json) sleep 8; exec cat "$1" ;;
  */fail.json) echo "failing on purpose" >&2; exit 1 ;;
  */signal.json) kill -KILL $$ ;;
  */invalid.json) echo "this is not JSON" ;;
  *) exec cat "$1" ;;
esac
`;

const HOSTILE = ["hang.json", "sleep.json", "fail.json", "signal.json", "invalid.json", "big.json"];

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const loadAverage = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");

/** Written beside, then renamed into place: a hook never reads half a file. */
function writeWhole(root, path, content) {
  const staged = join(root, "staging", path.replaceAll("/", "-"));
  writeFileSync(staged, content);
  renameSync(staged, join(root, path));
}

async function startServer(root) {
  const child = spawn(process.execPath, [BIN, "server", "-c", "cfg.toml", "--port", "0"], {
    cwd: root,
    env: DIRQ_ENV,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
  child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  for (;;) {
    const match = /Running at (\S+):(\d+)/.exec(stdout);
    if (match) return { child, port: Number(match[2]), stderr: () => stderr, exited };
    if (child.exitCode !== null) throw new Error(`dirq server exited: ${stderr}`);
    await delay(20);
  }
}

/**
 * An /events client that notes when each file's first `row` frame after `since(file)` arrives.
 * Frames are cut from the raw bytes: a 50 MB frame is never decoded or searched as a whole.
 */
function subscribe(port, onRow) {
  let request;
  const ready = new Promise((resolve, reject) => {
    request = httpRequest({ host: "127.0.0.1", port, path: "/events" }, (response) => {
      if (response.statusCode !== 200) reject(new Error(`/events: ${response.statusCode}`));
      let head = []; // the first bytes of the frame being read
      let headLength = 0;
      let endsWithNewline = false; // a frame's blank line may begin in one chunk, end in the next
      const finish = (receivedAt) => {
        const text = Buffer.concat(head).toString("utf8");
        head = [];
        headLength = 0;
        if (/^event: ready$/m.test(text)) resolve();
        if (!/^event: row$/m.test(text)) return;
        const path = /"file_path":"((?:[^"\\]|\\.)*)"/.exec(text)?.[1];
        if (path !== undefined) onRow(JSON.parse(`"${path}"`), receivedAt);
      };
      response.on("data", (chunk) => {
        const receivedAt = performance.now();
        let start = 0;
        if (endsWithNewline && chunk[0] === 0x0a) {
          finish(receivedAt);
          start = 1;
        }
        for (;;) {
          const end = chunk.indexOf("\n\n", start);
          if (headLength < 512) {
            const piece = chunk.subarray(start, end === -1 ? chunk.length : end);
            head.push(piece.subarray(0, 512 - headLength));
            headLength += Math.min(piece.length, 512 - headLength);
          }
          if (end === -1) break;
          finish(receivedAt);
          start = end + 2;
        }
        endsWithNewline = start < chunk.length && chunk[chunk.length - 1] === 0x0a;
      });
      response.on("error", () => {});
    });
    request.on("error", reject);
    request.end();
  });
  return { ready, close: () => request.destroy() };
}

async function run(hostile) {
  const root = mkdtempSync(join(tmpdir(), "dirq-bench-hostile-"));
  mkdirSync(join(root, "data"));
  mkdirSync(join(root, "staging"));
  writeFileSync(join(root, "hook.sh"), HOOK);
  mkdirSync(join(root, "hostile"));
  writeFileSync(
    join(root, "cfg.toml"),
    `[[table]]\nname = "t"\nglob = "data/*.json"\non-file = "cat {path}"\n\n` +
      `[[table]]\nname = "hostile"\nglob = "hostile/*.json"\non-file = "sh hook.sh {path}"\n`,
  );
  writeWhole(root, "data/start.json", '[{"n": 0}]');
  const server = await startServer(root);
  const written = new Map(); // file -> write time
  const arrived = new Map(); // file -> first frame after its write
  const client = subscribe(server.port, (file, at) => {
    if (written.has(file) && !arrived.has(file)) arrived.set(file, at);
  });
  // Others that read every frame too, as a dashboard's viewers do: each costs the server a send.
  const others = Array.from({ length: SUBSCRIBERS - 1 }, () => subscribe(server.port, () => {}));
  try {
    await Promise.all([client.ready, ...others.map((other) => other.ready)]);
    if (hostile) {
      const big = `[{"blob": "${"x".repeat(BIG_MB * 1024 * 1024)}"}]`;
      for (const name of HOSTILE) {
        writeWhole(root, `hostile/${name}`, name === "big.json" ? big : '[{"n": 1}]');
      }
    }
    for (let i = 0; i < FILES; i++) {
      const file = `data/q${i}.json`;
      written.set(file, performance.now());
      writeWhole(root, file, `[{"n": ${i + 1}}]`);
      await delay(INTERVAL_MS);
    }
    const deadline = performance.now() + SETTLE_MS;
    while (arrived.size < written.size && performance.now() < deadline) await delay(50);
  } finally {
    client.close();
    for (const other of others) other.close();
    server.child.kill("SIGTERM");
    await server.exited;
    rmSync(root, { recursive: true, force: true });
  }
  const latencies = [...written].map(([file, at]) => (arrived.get(file) ?? Infinity) - at);
  return {
    p50Ms: median(latencies),
    p99Ms: percentile(latencies, 99),
    maxMs: Math.max(...latencies),
    over100: latencies.filter((ms) => ms > 100).length,
    missing: latencies.filter((ms) => ms === Infinity).length,
  };
}

const loadBefore = loadAverage();
log(`dirq: ${BIN}; ${availableParallelism()} cores; load average ${loadBefore}`);
if (SUBSCRIBERS > 1) log(`${SUBSCRIBERS} /events clients, one of them timed`);
log(`control: ${FILES} writes, ${INTERVAL_MS} ms apart, no hostile file`);
const control = await run(false);
log(`hostile: the same writes beside six hostile hooks (a ${BIG_MB} MB row among them)`);
const hostile = await run(true);
const loadAfter = loadAverage();

const format = (ms) => (Number.isFinite(ms) ? ms.toFixed(1) : "missing");
if (options.json) {
  process.stdout.write(
    `${JSON.stringify({ files: FILES, intervalMs: INTERVAL_MS, bigMb: BIG_MB, subscribers: SUBSCRIBERS, loadBefore, loadAfter, control, hostile }, null, 2)}\n`,
  );
} else {
  console.log(
    table(
      ["run", "p50 ms", "p99 ms", "max ms", "over 100 ms", "missing"],
      [
        ["control (no hostile hook)", control],
        ["six hostile hooks", hostile],
      ].map(([label, r]) => [
        label,
        format(r.p50Ms),
        format(r.p99Ms),
        format(r.maxMs),
        `${r.over100}/${FILES}`,
        String(r.missing),
      ]),
    ).join("\n"),
  );
  const met = hostile.p99Ms < TARGET_P99_MS;
  console.log(
    `target: p99 < ${TARGET_P99_MS} ms beside the hostile hooks: ${met ? "met" : "NOT met"} (${format(hostile.p99Ms)} ms)`,
  );
  console.log(`load average before ${loadBefore}, after ${loadAfter}`);
}
