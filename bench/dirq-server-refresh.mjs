// How a large change reaches subscribers: a 40,000-file tree, 3,000 files rewritten at once.
// Measures, for this checkout's dirq and for another build given with --peer (e.g. the main
// branch's), the time from the last write until the last of the 3,000 `update` events arrived,
// and the slowest `SELECT 1` answered meanwhile (a fresh statement each time, so no cache).
//
//   node bench/dirq-server-refresh.mjs [--peer /path/to/other/dirq.cjs] [--files 40000] [--changed 3000]
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  DEFAULT_BENCH_DIR,
  DIRQ_BIN,
  DIRQ_ENV,
  log,
  requireDirqBuilt,
  serverPort,
} from "./lib.mjs";

const { values } = parseArgs({
  options: {
    peer: { type: "string" },
    files: { type: "string", default: "40000" },
    changed: { type: "string", default: "3000" },
  },
});
requireDirqBuilt();
const FILES = Number(values.files);
const CHANGED = Number(values.changed);
const PER_DIR = 100;
const root = join(DEFAULT_BENCH_DIR, `refresh-${FILES}`);
if (!existsSync(join(root, ".done"))) {
  log(`generating ${FILES} files in ${root}`);
  for (let i = 0; i < FILES; i++) {
    const dir = join(root, `d${Math.floor(i / PER_DIR)}`);
    if (i % PER_DIR === 0) mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `f${i}.txt`), `file ${i}\n`);
  }
  writeFileSync(join(root, ".done"), "");
}

async function startServer(bin) {
  const profile = process.env.BENCH_CPU_PROF
    ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
    : [];
  const child = spawn(
    process.execPath,
    [...profile, bin, "server", "--host", "127.0.0.1", "--port", "0"],
    {
      cwd: root,
      env: DIRQ_ENV,
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const port = await serverPort(child);
  return { child, url: `http://127.0.0.1:${port}` };
}

async function query(url, sql) {
  const response = await globalThis.fetch(`${url}/query`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ sql }),
  });
  return response.text();
}

async function measure(bin, round) {
  const server = await startServer(bin);
  try {
    await query(server.url, "SELECT count(*), sum(size) FROM './'");
    const controller = new globalThis.AbortController();
    const response = await globalThis.fetch(`${server.url}/events`, { signal: controller.signal });
    const reader = response.body.getReader();
    const decoder = new globalThis.TextDecoder();
    let updates = 0;
    let lastEventAt = 0;
    let resolveDone;
    const done = new Promise((resolve) => (resolveDone = resolve));
    (async () => {
      let text = "";
      for (;;) {
        const { value, done: ended } = await reader.read().catch(() => ({ done: true }));
        if (ended) return;
        text += decoder.decode(value, { stream: true });
        let at;
        while ((at = text.indexOf("\n\n")) !== -1) {
          const frame = text.slice(0, at);
          text = text.slice(at + 2);
          if (frame.includes('"action":"update"')) {
            updates++;
            lastEventAt = performance.now();
            if (updates === CHANGED) resolveDone();
          }
        }
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (let i = 0; i < CHANGED; i++) {
      const n = Math.floor((i * FILES) / CHANGED);
      appendFileSync(join(root, `d${Math.floor(n / PER_DIR)}`, `f${n}.txt`), `round ${round}\n`);
    }
    const wroteAt = performance.now();
    let slowest = 0;
    let probes = 0;
    let finished = false;
    done.then(() => (finished = true));
    while (!finished) {
      const start = performance.now();
      await query(server.url, `SELECT ${probes++} AS probe`);
      slowest = Math.max(slowest, performance.now() - start);
      await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 20))]);
    }
    controller.abort();
    return { delivered: lastEventAt - wroteAt, slowest, probes };
  } finally {
    server.child.kill("SIGTERM");
    await new Promise((resolve) => server.child.once("exit", resolve));
  }
}

const builds = [["this checkout", DIRQ_BIN]];
if (values.peer) builds.push(["peer", values.peer]);
let round = 0;
for (const [name, bin] of builds) {
  const result = await measure(bin, round++);
  console.log(
    `${name}: ${CHANGED} of ${FILES} files rewritten: last event after ${(result.delivered / 1000).toFixed(2)} s; slowest SELECT 1 meanwhile ${(result.slowest / 1000).toFixed(3)} s (${result.probes} probes)`,
  );
}
