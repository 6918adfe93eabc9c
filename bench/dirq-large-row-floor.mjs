#!/usr/bin/env node
// What a row of tens of megabytes costs at the least, whatever dirq does around it (issue 56):
// (1) SQLite's own write of the value into an index file as the live index keeps it (WAL, not
// synced), bound as dirq binds a large text (bytes cast to TEXT) and as a string, with 64 KiB
// and 4 KiB pages; every other file's commit waits for this one. (2) Sending its `row` frame
// over loopback from a Node HTTP server to a Node client in another process, on a connection
// that was idle before (cold) and right after another such frame (warm); every frame behind it
// on the stream waits for this one. See bench/notes/hostile-hooks.md.
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request } from "node:http";
import { createRequire } from "node:module";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { log, median, parseOptions, positiveInteger, REPO_ROOT, table } from "./lib.mjs";

const USAGE = `usage: node bench/dirq-large-row-floor.mjs [options]

  --mb N     size of the value (default 50)
  --runs N   repetitions of each measurement (default 5)
  --json     results as JSON on stdout
`;

const isClient = process.argv[2] === "--client";
const options = parseOptions(
  isClient ? [] : process.argv.slice(2),
  {
    mb: { type: "string", default: "50" },
    runs: { type: "string", default: "5" },
    json: { type: "boolean", default: false },
  },
  USAGE,
);
const BYTES = positiveInteger(options.mb, "--mb") * 1024 * 1024;
const RUNS = positiveInteger(options.runs, "--runs");

if (isClient) await client(Number(process.argv[3]));
else await main();

/** The forked client: reads the stream, reports each frame's first-to-last-byte time. */
async function client(port) {
  request({ host: "127.0.0.1", port, path: "/events" }, (response) => {
    let first = null;
    let bytes = 0;
    response.on("data", (chunk) => {
      const now = performance.now();
      first ??= now;
      bytes += chunk.length;
      if (chunk.includes("\n\n")) {
        process.send?.({ ms: now - first, bytes });
        first = null;
        bytes = 0;
      }
    });
  }).end();
  await new Promise(() => {});
}

/** Milliseconds to insert and to commit one value of BYTES, as the live index writes it. */
function sqliteWrite(pageSize, bound) {
  const require = createRequire(join(REPO_ROOT, "packages", "dirq", "package.json"));
  const Database = require("@rocicorp/zero-sqlite3");
  const folder = mkdtempSync(join(tmpdir(), "dirq-bench-floor-"));
  const db = new Database(join(folder, "index.db"));
  try {
    db.pragma(`page_size = ${pageSize}`);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = OFF");
    db.exec("CREATE TABLE t (value, _dirq_file_path TEXT NOT NULL, _dirq_row_index INTEGER)");
    const small = db.prepare("INSERT INTO t VALUES (?, ?, 0)");
    for (let i = 0; i < 1000; i++) small.run(`row ${i}`, `data/${i}.json`);
    const text = "x".repeat(BYTES);
    const bytes = Buffer.from(text);
    const insert = db.prepare(
      `INSERT INTO t VALUES (${bound === "bytes" ? "CAST(? AS TEXT)" : "?"}, 'big.json', 0)`,
    );
    const remove = db.prepare("DELETE FROM t WHERE _dirq_file_path = 'big.json'");
    const inserts = [];
    const commits = [];
    for (let run = 0; run < RUNS; run++) {
      const start = performance.now();
      db.exec("BEGIN");
      insert.run(bound === "bytes" ? bytes : text);
      const inserted = performance.now();
      db.exec("COMMIT");
      inserts.push(inserted - start);
      commits.push(performance.now() - inserted);
      remove.run();
    }
    return { insertMs: median(inserts), commitMs: median(commits) };
  } finally {
    db.close();
    rmSync(folder, { recursive: true, force: true });
  }
}

/**
 * First-to-last-byte times of a frame of BYTES sent to a client in another process: on a new
 * connection that has carried only a small frame (as an /events stream between changes: the
 * socket's buffers have not grown yet), and right after another large frame.
 */
async function transmission() {
  const frame = [
    Buffer.from('id: run-1\nevent: row\ndata: {"action":"insert","row":{"value":"'),
    Buffer.alloc(BYTES, "x"),
    Buffer.from('"}}\n\n'),
  ];
  const streams = [];
  const server = createServer((_, response) => {
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.flushHeaders();
    streams.push(response);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const cold = [];
  const warm = [];
  try {
    for (let run = 0; run < RUNS; run++) {
      const args = ["--client", String(server.address().port)];
      const child = fork(fileURLToPath(import.meta.url), args);
      try {
        while (streams.length <= run) await new Promise((resolve) => setTimeout(resolve, 10));
        const stream = streams[run];
        const sent = async (pieces) => {
          const seen = new Promise((resolve) => child.once("message", resolve));
          for (const piece of pieces) stream.write(piece);
          return (await seen).ms;
        };
        await sent([Buffer.from('event: row\ndata: {"action":"insert"}\n\n')]);
        await new Promise((resolve) => setTimeout(resolve, 500));
        cold.push(await sent(frame));
        warm.push(await sent(frame));
      } finally {
        child.kill();
      }
    }
    return { coldMs: median(cold), warmMs: median(warm) };
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

async function main() {
  const loadBefore = loadavg().map((x) => x.toFixed(2));
  log(`${BYTES / 1024 / 1024} MiB value, medians of ${RUNS}; load average ${loadBefore.join(" ")}`);
  const writes = [];
  for (const pageSize of [65536, 4096]) {
    for (const bound of ["bytes", "string"]) {
      writes.push({ pageSize, bound, ...sqliteWrite(pageSize, bound) });
    }
  }
  const sent = await transmission();
  const loadAfter = loadavg().map((x) => x.toFixed(2));
  if (options.json) {
    process.stdout.write(
      `${JSON.stringify({ bytes: BYTES, runs: RUNS, loadBefore, loadAfter, writes, sent }, null, 2)}\n`,
    );
    return;
  }
  const lines = table(
    ["SQLite write", "insert ms", "commit ms", "total ms"],
    writes.map((w) => [
      `${w.pageSize / 1024} KiB pages, bound as ${w.bound === "bytes" ? "bytes cast to TEXT" : "a string"}`,
      w.insertMs.toFixed(1),
      w.commitMs.toFixed(1),
      (w.insertMs + w.commitMs).toFixed(1),
    ]),
  );
  for (const line of lines) log(line);
  log(
    `its frame over loopback, Node server to Node client: ${sent.coldMs.toFixed(1)} ms on a ` +
      `connection that carried small frames, ${sent.warmMs.toFixed(1)} ms right after another`,
  );
  log(`load average after ${loadAfter.join(" ")}`);
}
