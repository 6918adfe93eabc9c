#!/usr/bin/env node
// How long a quick file's row takes to reach a `dirq server` subscriber while slow hooks
// (0.8 s each, a new one every 0.4 s, so that with one slot per core they would keep every slot
// busy) run beside it, against a control run with no slow hook (issue 56 item 2).
// Usage: node bench/dirq-hook-slots.mjs [--files N] [--gap MS]
//   DIRQ_BIN=<path to bin/dirq.cjs> compares another build (default: this checkout's).
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs, TextDecoder } from "node:util";

const { values } = parseArgs({
  options: { files: { type: "string", default: "100" }, gap: { type: "string", default: "150" } },
});
const FILES = Number(values.files);
const GAP_MS = Number(values.gap);
const BIN =
  process.env.DIRQ_BIN ?? new URL("../packages/dirq/bin/dirq.cjs", import.meta.url).pathname;
const CORES = availableParallelism();

/** `slow` takes 0.8 s; anything else answers at once. */
const HOOK = `mode=$(cat "$1")
[ "$mode" = slow ] && sleep 0.8
printf '[{"name":"%s"}]' "$(basename "$1")"
`;

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function run(slow) {
  const root = mkdtempSync(join(tmpdir(), "dirq-bench-slots-"));
  writeFileSync(join(root, "hook.sh"), HOOK);
  // timeout = 0 where the build knows the key (NO_TIMEOUT_KEY=1 for an older build).
  const config = (timeout) =>
    `[[table]]\nname = "t"\nglob = "data/*.txt"\non-file = "sh hook.sh {path}"\n${timeout}`;
  writeFileSync(join(root, "cfg.toml"), config(process.env.NO_TIMEOUT_KEY ? "" : "timeout = 0\n"));
  mkdirSync(join(root, "data"));
  const server = spawn(process.execPath, [BIN, "server", "-c", "cfg.toml", "--port", "0"], {
    cwd: root,
    env: { ...process.env, DIRQ_PROGRESS: "never" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  server.stdout.on("data", (chunk) => (out += chunk));
  while (!/Running at (\S+):(\d+)/.test(out)) await delay(20);
  const [, host, port] = /Running at (\S+):(\d+)/.exec(out);
  const arrived = new Map();
  const response = await globalThis.fetch(`http://${host}:${port}/events`);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ done: true }));
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      for (const match of buffer.matchAll(/"file_path":"data\/(q\d+)\.txt"/g)) {
        if (!arrived.has(match[1])) arrived.set(match[1], performance.now());
      }
      buffer = buffer.slice(buffer.lastIndexOf("\n"));
    }
  })();
  await delay(500);
  let writingSlow = slow;
  const slowWriter = (async () => {
    for (let i = 0; writingSlow; i++) {
      writeFileSync(join(root, "data", `s${i}.txt`), "slow");
      await delay(400);
    }
  })();
  await delay(1000);
  const written = new Map();
  for (let i = 0; i < FILES; i++) {
    written.set(`q${i}`, performance.now());
    writeFileSync(join(root, "data", `q${i}.txt`), "quick");
    await delay(GAP_MS);
  }
  writingSlow = false;
  await slowWriter;
  await delay(3000);
  server.kill("SIGTERM");
  await new Promise((resolve) => server.once("exit", resolve));
  rmSync(root, { recursive: true, force: true });
  const latencies = [...written].map(([name, at]) => (arrived.get(name) ?? Infinity) - at);
  latencies.sort((a, b) => a - b);
  const pick = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return {
    p50: pick(0.5),
    p99: pick(0.99),
    max: latencies.at(-1),
    over100: latencies.filter((ms) => ms > 100).length,
  };
}

const format = (ms) => (Number.isFinite(ms) ? `${ms.toFixed(1)} ms` : "missing");
console.log(
  `dirq: ${BIN}; ${CORES} cores; load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
for (const [label, hung] of [
  ["control (no slow hook)", false],
  ["slow hooks beside", true],
]) {
  const r = await run(hung);
  console.log(
    `${label.padEnd(28)} p50 ${format(r.p50)}  p99 ${format(r.p99)}  max ${format(r.max)}  over 100 ms: ${r.over100}/${FILES}`,
  );
}
console.log(
  `load average after: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
