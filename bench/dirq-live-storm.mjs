// Live query storms at the size: `--storms` seeded storms (default 20) of `--changes`
// file changes each (default 2,000: create, edit, atomic rewrite, delete, folder rename, and a
// second table rewritten now and then) under the eight shapes of statement (filter, projection
// with expressions, GROUP BY, join, ORDER BY ... LIMIT 10, DISTINCT, window function, a
// path-table's stat columns), one subscriber per statement that leaves and resumes with
// Last-Event-ID as the seed says. At the end of each storm every subscriber's snapshot with
// every diff applied is compared with a fresh `POST /query` (rows and order; a multiset where
// the answer has no order). Prints the wrong answers per storm and per statement (target 0) and
// the load average. The storm itself is packages/dirq/test/server-support.ts's, which
// test/server-live-storm.test.ts runs at a test's size (3 seeds x 200 changes).
//
//   node bench/dirq-live-storm.mjs [--storms 20] [--changes 2000] [--first-seed 1] [--json]
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { log, parseOptions, positiveInteger, REPO_ROOT, requireDirqBuilt } from "./lib.mjs";

const USAGE =
  "usage: node bench/dirq-live-storm.mjs [--storms 20] [--changes 2000] [--first-seed 1] [--json]\n";
const options = parseOptions(
  process.argv.slice(2),
  {
    storms: { type: "string", default: "20" },
    changes: { type: "string", default: "2000" },
    "first-seed": { type: "string", default: "1" },
    json: { type: "boolean", default: false },
  },
  USAGE,
);
const STORMS = positiveInteger(options.storms, "--storms");
const CHANGES = positiveInteger(options.changes, "--changes");
const FIRST_SEED = positiveInteger(options["first-seed"], "--first-seed");
requireDirqBuilt();

const compiled = (name) =>
  pathToFileURL(join(REPO_ROOT, "packages", "dirq", "dist", "test", name)).href;
const support = await import(compiled("server-support.js"));
const { makeTree, removeTree } = await import(compiled("helpers.js"));

function loadAverage() {
  return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
}

async function storm(seed) {
  const root = makeTree(support.LIVE_STORM_TREE);
  const servers = [];
  const started = performance.now();
  try {
    const result = await support.runLiveStorm(root, seed, CHANGES, async () => {
      const server = await support.startServer(
        ["-c", ".dirq.toml", "--host", "127.0.0.1", "--port", "0"],
        { cwd: root },
      );
      servers.push(server);
      return server;
    });
    return { seed, ...result, seconds: (performance.now() - started) / 1000 };
  } finally {
    await Promise.all(servers.map((server) => server.kill()));
    removeTree(root);
  }
}

async function main() {
  const storms = [];
  for (let n = 0; n < STORMS; n++) {
    const result = await storm(FIRST_SEED + n);
    log(
      `storm ${n + 1}/${STORMS} (seed ${result.seed}): ${result.wrong.length} wrong of ${support.LIVE_STORM_STATEMENTS.length}, ${result.diffs} diff frames, ${result.resumed} resumes, ${result.seconds.toFixed(0)} s, load ${loadAverage()}`,
    );
    for (const wrong of result.wrong) log(`  WRONG: ${wrong}`);
    storms.push(result);
  }
  const byStatement = support.LIVE_STORM_STATEMENTS.map((ask) => ({
    sql: ask.sql,
    wrong: storms.filter((s) => s.wrong.some((w) => w.startsWith(`${ask.sql}: `))).length,
  }));
  const summary = {
    storms: STORMS,
    changesPerStorm: CHANGES,
    statements: support.LIVE_STORM_STATEMENTS.length,
    answersChecked: STORMS * support.LIVE_STORM_STATEMENTS.length,
    wrong: storms.reduce((total, s) => total + s.wrong.length, 0),
    byStatement,
    diffFrames: storms.reduce((total, s) => total + s.diffs, 0),
    resumes: storms.reduce((total, s) => total + s.resumed, 0),
    storm: storms.map((s) => ({ seed: s.seed, wrong: s.wrong, seconds: Math.round(s.seconds) })),
    loadAverage: loadAverage(),
  };
  if (options.json) console.log(JSON.stringify(summary, null, 2));
  else {
    console.log(
      `${STORMS} storms x ${CHANGES} changes x ${summary.statements} statements: ${summary.wrong} wrong final answers of ${summary.answersChecked} (${summary.diffFrames} diff frames, ${summary.resumes} resumes)`,
    );
    for (const row of byStatement) console.log(`  ${row.wrong} wrong  ${row.sql}`);
    console.log(`load average: ${summary.loadAverage}`);
  }
  if (summary.wrong > 0) process.exitCode = 1;
}

await main();
