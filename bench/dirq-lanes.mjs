#!/usr/bin/env node
// Does one table's work hold up another's? Two runs of `dirq server`:
//   1. A large CSV file (default 100 MB, one table) is rewritten with one record changed, and
//      until its refresh's event arrives, clients send a statement on another table (a fresh
//      statement each time, so no cache answers it): p50 / p99 / max latency of POST /query,
//      and the time from the write to the big table's event. The same while the CSV file is
//      deleted (`delete`: until its last delete event), and while it appears anew (`new`: the
//      server starts without it; until its last insert event).
//   2. The same two tables at the server's start: the big table's first build reads the CSV
//      while clients send statements on the small table, subscribe to /events and load the
//      console's page: p50 / p99 / max of POST /query and of GET / sent during the build, the
//      time until the event stream opens, beside the same statements once the server is idle.
//   3. 1,000 files of a hook table whose hook hangs (its limit 60 s), and meanwhile a JSON table's
//      file written again and again: p50 / p99 / max from each write to its row event.
// Prints the load average with each.
//
//   node bench/dirq-lanes.mjs [--mb 100] [--clients 4] [--hooks 1000] [--writes 40]
//                             [--hook-timeout 60] [--only big|ddl|delete|new|start|persist|hooks]
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request } from "node:http";
import { connect } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import {
  DEFAULT_BENCH_DIR,
  DIRQ_BIN,
  log,
  parseOptions,
  percentile,
  postQuery,
  requireDirqBuilt,
  serverPort,
} from "./lib.mjs";

const USAGE =
  "Usage: node bench/dirq-lanes.mjs [--mb 100] [--clients 4] [--hooks 1000] [--writes 40] [--hook-timeout 60] [--only big|ddl|delete|new|start|persist|hooks]";
const values = parseOptions(
  process.argv.slice(2),
  {
    mb: { type: "string", default: "100" },
    clients: { type: "string", default: "4" },
    hooks: { type: "string", default: "1000" },
    writes: { type: "string", default: "40" },
    "hook-timeout": { type: "string", default: "60" },
    only: { type: "string" },
  },
  USAGE,
);
requireDirqBuilt();

const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const fmt = (ms) => (ms === undefined ? "n/a" : `${ms.toFixed(1)} ms`);
const spread = (samples) =>
  `${samples.length} samples, p50 ${fmt(percentile(samples, 50))}, p99 ${fmt(percentile(samples, 99))}, max ${fmt(Math.max(...samples))}`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function writeWhole(root, name, text) {
  const aside = join(root, `.${name.replaceAll("/", "_")}.tmp`);
  writeFileSync(aside, text);
  renameSync(aside, join(root, name));
}

const LOOP_DELAY = join(dirname(fileURLToPath(import.meta.url)), "server-loop-delay.cjs");

/**
 * Spawns `dirq server` in `root` on `port` (0: any) with `extra` arguments, its main thread's
 * event-loop delays noted (see server-loop-delay.cjs) into `loopDelays`.
 */
function spawnServer(root, port, extra = []) {
  const child = spawn(
    process.execPath,
    [DIRQ_BIN, "server", "-c", "dirq.toml", "--host", "127.0.0.1", "--port", `${port}`, ...extra],
    {
      cwd: root,
      env: {
        ...process.env,
        DIRQ_PROGRESS: "never",
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --require ${LOOP_DELAY}`.trim(),
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  process.on("exit", () => child.kill("SIGKILL"));
  const loopDelays = [];
  let errors = "";
  child.stderr.setEncoding("utf8").on("data", (chunk) => {
    errors += chunk;
    const lines = errors.split("\n");
    errors = lines.pop() ?? "";
    for (const line of lines) {
      const match = /^dirq-loop-delay (\S+)$/.exec(line);
      if (match) loopDelays.push(Number(match[1]));
      else process.stderr.write(`${line}\n`);
    }
  });
  return { child, loopDelays };
}

/** Starts `dirq server` in `root`; resolves with its port, its process and its row events. */
async function startServer(root) {
  const { child, loopDelays } = spawnServer(root, 0);
  const port = await serverPort(child);
  const listeners = new Set();
  const events = await new Promise((resolve) => {
    const req = request({ host: "127.0.0.1", port, path: "/events" }, (res) => {
      let buffer = "";
      res.setEncoding("utf8").on("data", (chunk) => {
        buffer += chunk;
        const lines = buffer.split("\n");
        buffer = lines.pop() ?? "";
        const now = performance.now();
        for (const line of lines) {
          if (!line.startsWith("data: {")) continue;
          const row = JSON.parse(line.slice(6));
          for (const listener of listeners) listener(row, now);
        }
      });
      resolve(req);
    });
    req.end();
  });
  const stop = async () => {
    events.destroy();
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  };
  return { port, listeners, loopDelays, stop };
}

/**
 * Starts `clients` clients sending statements on the small table (bench/lanes-clients.mjs, a
 * thread of their own); `stop()` resolves with their latencies (ms). `first`: where the
 * statements' counter starts, so that no statement repeats an earlier one.
 */
function queryLoad(port, first) {
  const clients = Number(values.clients);
  const worker = new Worker(new URL("./lanes-clients.mjs", import.meta.url), {
    workerData: { port, clients, first },
  });
  const result = new Promise((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  return {
    stop: async () => {
      worker.postMessage("stop");
      const { latencies, failures, error } = await result;
      await worker.terminate();
      if (error !== undefined) throw new Error(error);
      if (failures > 0) log(`${failures} statements failed (connection closed)`);
      return latencies;
    },
  };
}

/** Resolves with the time (performance.now) of the first row event `match` accepts. */
function eventWhen(server, match) {
  return new Promise((resolve) => {
    const listener = (row, at) => {
      if (!match(row)) return;
      server.listeners.delete(listener);
      resolve(at);
    };
    server.listeners.add(listener);
  });
}

const record = (i, tag) => `${i},${tag} ${i},${"p".repeat(90)}`;

/** A fresh folder for a case, with the config of a big CSV table and a small JSON table. */
function bigAndSmall(name) {
  const mb = Number(values.mb);
  const root = join(DEFAULT_BENCH_DIR, `lanes-${name}-${mb}`);
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  // A file that comes anew is matched by a pattern: a table whose glob is a file name with no
  // wildcard, and no such file at the start, does not take in the file when it appears.
  const glob = name === "new" ? "big*.csv" : "big.csv";
  // The `ddl` case: a table with a `ddl` (an index on one of its columns).
  const ddl = name === "ddl" ? 'ddl = "CREATE INDEX big_name ON big(name)"\n' : "";
  writeFileSync(
    join(root, "dirq.toml"),
    `[[table]]\nname = "big"\nglob = "${glob}"\nformat = "csv"\n${ddl}\n` +
      '[[table]]\nname = "small"\nglob = "small.json"\nformat = "json"\n',
  );
  const count = Math.ceil((mb * 1e6) / (record(500_000, "row").length + 1));
  return { mb, root, count };
}

/** What happens to the big table's file in a case of `bigRefresh`, and the events it gives. */
const BIG_CHANGES = {
  big: { told: "rewritten (one record changed)", events: () => 1 },
  ddl: { told: "of a table with a `ddl` rewritten (one record changed)", events: () => 1 },
  delete: { told: "deleted", events: (count) => count },
  new: { told: "written new", events: (count) => count },
};

/**
 * The big CSV file is rewritten with one record changed (`big`), deleted (`delete`), or
 * appears (`new`: the server starts without it) while clients query the small table, until
 * the big table's last event of it arrives.
 */
async function bigRefresh(kind) {
  const { mb, root, count } = bigAndSmall(kind);
  const records = Array.from({ length: count }, (_, i) => record(i, "row"));
  if (kind !== "new") writeFileSync(join(root, "big.csv"), `id,name,pad\n${records.join("\n")}\n`);
  writeFileSync(join(root, "small.json"), '[{"v": 1}]');
  log(
    `${kind}: ${count.toLocaleString("en-US")} records (${mb} MB); starting the server (it builds both tables)`,
  );
  const server = await startServer(root);
  let counter = 0;
  const clients = Number(values.clients);
  const query = () => postQuery(server.port, `SELECT v, ${++counter} FROM small`);
  for (let round = 0; round < 3; round++) await Promise.all(Array.from({ length: clients }, query));
  // The same load with nothing refreshing: on a shared machine, the floor.
  server.loopDelays.length = 0;
  const idleLoad = queryLoad(server.port, 1_000_000);
  await sleep(2000);
  const idle = await idleLoad.stop();
  const idleDelay = Math.max(...server.loopDelays);
  server.loopDelays.length = 0;
  records[7] = record(7, "changed");
  const text = `id,name,pad\n${records.join("\n")}\n`;
  const expected = BIG_CHANGES[kind].events(count);
  let seen = 0;
  // The file's last event (a reader that falls behind may be cut off: a bound on the wait).
  const last = `row ${count - 1}`;
  const committed = Promise.race([
    eventWhen(
      server,
      (row) => row.table === "big" && (++seen === expected || row.row?.name === last),
    ),
    new Promise((resolve) => setTimeout(resolve, 180_000).unref()),
  ]);
  const first = eventWhen(server, (row) => row.table === "big");
  const load = queryLoad(server.port, 2_000_000);
  const written = performance.now();
  if (kind === "delete") rmSync(join(root, "big.csv"));
  else writeWhole(root, "big.csv", text);
  const [firstAt, at] = [await first, (await committed) ?? Number.NaN];
  const refreshDelay = Math.max(...server.loopDelays);
  const latencies = await load.stop();
  await server.stop();
  rmSync(root, { recursive: true, force: true });
  const seconds = (ms) => `${(ms / 1000).toFixed(2)} s`;
  process.stdout.write(
    [
      `${mb} MB CSV ${BIG_CHANGES[kind].told}: its first event came ${seconds(firstAt - written)}, its last ${seconds(at - written)} after the change (${seen.toLocaleString("en-US")} of its ${expected.toLocaleString("en-US")} events received)`,
      `POST /query on another table meanwhile, ${clients} clients: ${spread(latencies)}`,
      `the same with nothing refreshing (2 s): ${spread(idle)}`,
      `the server's main thread, longest event-loop delay: ${fmt(refreshDelay)} during the refresh, ${fmt(idleDelay)} with nothing refreshing`,
      `load average: ${loadAverage()}`,
      "",
    ].join("\n"),
  );
}

/** A port free now (the server is given it, so that clients can connect before it is ready). */
function freePort() {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts connections on `port` (loopback). */
async function portBound(port) {
  for (;;) {
    const open = await new Promise((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    await sleep(5);
  }
}

/** GET / (the console's page); resolves once its answer has been read. */
function getPage(port) {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/" }, (res) => {
      res.resume();
      res.on("end", resolve);
    });
    req.on("error", reject);
    req.end();
  });
}

/** POST /query, retried while the port is not bound yet; the time from the first send. */
async function timedQuery(port, sql) {
  const sent = performance.now();
  for (;;) {
    try {
      const answer = await postQuery(port, sql);
      if (answer.status !== 200) throw new Error(`answered ${answer.status}: ${answer.text}`);
      return performance.now() - sent;
    } catch (error) {
      if (error.code !== "ECONNREFUSED") throw error;
      await sleep(5);
    }
  }
}

/** Starts a server with `--persist` in `root`, lets it build, and stops it. */
async function persistOnce(root) {
  const { child } = spawnServer(root, 0, ["--persist"]);
  await serverPort(child);
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

/**
 * The server's start with the big table to build (`start`), or (`persist`) to bring up to
 * date from a `--persist` cache written by an earlier run, its file rewritten since with one
 * record changed.
 */
async function startBuild(kind) {
  const { mb, root, count } = bigAndSmall(kind);
  const records = Array.from({ length: count }, (_, i) => record(i, "row"));
  writeFileSync(join(root, "big.csv"), `id,name,pad\n${records.join("\n")}\n`);
  writeFileSync(join(root, "small.json"), '[{"v": 1}]');
  const persist = kind === "persist" ? ["--persist"] : [];
  if (kind === "persist") {
    log(
      `persist: ${count.toLocaleString("en-US")} records (${mb} MB); a first run writes the cache`,
    );
    await persistOnce(root);
    records[7] = record(7, "changed");
    writeWhole(root, "big.csv", `id,name,pad\n${records.join("\n")}\n`);
  }
  records.length = 0;
  const port = await freePort();
  log(`${kind}: ${count.toLocaleString("en-US")} records (${mb} MB); the server starts`);
  const started = performance.now();
  const { child, loopDelays } = spawnServer(root, port, persist);
  let ready = false;
  const running = serverPort(child).then(() => {
    ready = true;
    return performance.now();
  });
  let counter = 0;
  // The port is bound before the start-up build begins: statements sent from here on count.
  await portBound(port);
  const bound = performance.now();
  const latencies = [];
  const clients = Number(values.clients);
  const client = async () => {
    while (!ready) latencies.push(await timedQuery(port, `SELECT v, ${++counter} FROM small`));
  };
  const querying = Array.from({ length: clients }, client);
  // The web console's page: served by the server's main thread without waiting for the build.
  const pages = [];
  const paging = (async () => {
    while (!ready) {
      const sent = performance.now();
      await getPage(port);
      pages.push(performance.now() - sent);
      await sleep(20);
    }
  })();
  // A subscriber that comes during the build: when its stream opens (its `ready` frame).
  const eventsReq = request({ host: "127.0.0.1", port, path: "/events" });
  const eventsSent = performance.now();
  const eventsOpen = new Promise((resolve) => {
    eventsReq.on("response", (res) => {
      let buffer = "";
      res.setEncoding("utf8").on("data", (chunk) => {
        buffer += chunk;
        if (buffer.includes("event: ready")) resolve(performance.now());
      });
    });
  });
  eventsReq.end();
  const readyAt = await running;
  await Promise.all([...querying, paging]);
  const eventsAt = await eventsOpen;
  const idle = [];
  const idleUntil = performance.now() + 2000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < idleUntil) {
        idle.push(await timedQuery(port, `SELECT v, ${++counter} FROM small`));
      }
    }),
  );
  eventsReq.destroy();
  await sleep(300); // the last loop delay the server prints
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
  rmSync(root, { recursive: true, force: true });
  process.stdout.write(
    [
      `server start${kind === "persist" ? " from a --persist cache, the big file changed since," : ""} with a ${mb} MB CSV table and a small JSON table: port bound ${((bound - started) / 1000).toFixed(2)} s after spawn, ready ${((readyAt - started) / 1000).toFixed(2)} s after spawn`,
      `POST /query on the small table during the start-up build, ${clients} clients: ${spread(latencies)}`,
      `GET /events sent at once: its stream opened ${((eventsAt - eventsSent) / 1000).toFixed(2)} s after the request`,
      `the same statements once idle (2 s): ${spread(idle)}`,
      `GET / (the console's page) meanwhile, every 20 ms: ${spread(pages)}`,
      `the server's main thread, longest event-loop delay from its start to the end of the idle statements: ${fmt(Math.max(...loopDelays))}`,
      `load average: ${loadAverage()}`,
      "",
    ].join("\n"),
  );
}

async function hungHooks() {
  const hooks = Number(values.hooks);
  const root = join(DEFAULT_BENCH_DIR, `lanes-hooks-${hooks}`);
  rmSync(root, { recursive: true, force: true });
  mkdirSync(join(root, "hooks"), { recursive: true });
  mkdirSync(join(root, "data"), { recursive: true });
  writeFileSync(
    join(root, "dirq.toml"),
    `[[table]]\nname = "hung"\nglob = "hooks/*.txt"\ntimeout = ${values["hook-timeout"]}\n` +
      'on-file = "sleep 1000"\n\n' +
      '[[table]]\nname = "items"\nglob = "data/*.json"\nformat = "json"\n',
  );
  writeFileSync(join(root, "data/a.json"), '[{"n": 0}]');
  const server = await startServer(root);
  for (let i = 0; i < hooks; i++) writeFileSync(join(root, `hooks/h${i}.txt`), `${i}`);
  log(`hooks: ${hooks} hung hook files written; waiting 2 s for the hooks to start`);
  await sleep(2000);
  const latencies = [];
  for (let n = 1; n <= Number(values.writes); n++) {
    const arrived = eventWhen(server, (row) => row.table === "items" && row.row?.n === n);
    const written = performance.now();
    writeWhole(root, "data/a.json", `[{"n": ${n}}]`);
    latencies.push((await arrived) - written);
    await sleep(100);
  }
  await server.stop();
  rmSync(root, { recursive: true, force: true });
  process.stdout.write(
    [
      `JSON table's row event beside ${hooks} hung hooks (limit ${values["hook-timeout"]} s), write to event: ${spread(latencies)}`,
      `load average: ${loadAverage()}`,
      "",
    ].join("\n"),
  );
}

const only = values.only;
for (const kind of Object.keys(BIG_CHANGES)) {
  if (only === undefined || only === kind) await bigRefresh(kind);
}
for (const kind of ["start", "persist"]) {
  if (only === undefined || only === kind) await startBuild(kind);
}
if (only === undefined || only === "hooks") await hungHooks();
