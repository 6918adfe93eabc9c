#!/usr/bin/env node
// Compares path-table fills of two dirq builds in one process, alternating them round by
// round, so both see the same background load: no process start-up, no query, only
// `PathTables.fill`. See bench/notes/walk.md ("Stat fills, second round").
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { fail, median, positiveInteger } from "./lib.mjs";

const USAGE = `Usage: node bench/dirq-fill-ab.mjs --tree DIR [options] LABEL=PACKAGE_DIR ...

  --tree DIR     the tree to fill from (for example $TMPDIR/dirq-bench/files-1m)
  --rounds N     rounds after one warm-up round (default 6)
  --paths-only   fill paths only (as for count(*)) instead of the stat columns
  LABEL=DIR      a built dirq package (DIR/dist/src/...), for example
                 old=/tmp/dirq-old new=packages/dirq`;

let parsed;
try {
  parsed = parseArgs({
    args: process.argv.slice(2),
    allowPositionals: true,
    options: {
      tree: { type: "string" },
      rounds: { type: "string", default: "6" },
      "paths-only": { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
} catch (error) {
  fail(`${error.message}\n\n${USAGE}`);
}
const { values, positionals } = parsed;
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (values.tree === undefined || positionals.length === 0) fail(USAGE);
const rounds = positiveInteger(values.rounds, "--rounds");
const root = resolve(values.tree);
const groups = { names: false, stat: !values["paths-only"] };
const progress = { start: () => ({ update() {}, finish() {} }) };

const builds = await Promise.all(
  positionals.map(async (spec) => {
    const [label, dir] = spec.split("=");
    if (!label || !dir) fail(`expected LABEL=PACKAGE_DIR, got ${spec}`);
    const src = pathToFileURL(`${resolve(dir)}/dist/src/`);
    return {
      label,
      database: await import(new URL("indexer/database.js", src).href),
      pathTables: await import(new URL("indexer/path-tables.js", src).href),
      wall: [],
      cpu: [],
    };
  }),
);

// Stats of files under the working directory go by relative path: fill as dirq would.
process.chdir(root);
for (let round = 0; round <= rounds; round++) {
  for (const build of builds) {
    const db = build.database.openIndexDatabase(root);
    const tables = new build.pathTables.PathTables(db, { root, useGitignore: true, progress });
    tables.create("./");
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await tables.fill("./", groups);
    const wall = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    db.close();
    if (round === 0) continue; // warm-up
    build.wall.push(wall);
    build.cpu.push((cpu.user + cpu.system) / 1000);
  }
}
for (const build of builds) {
  const line = [
    build.label.padEnd(12),
    `wall median ${median(build.wall).toFixed(0)} ms`,
    `min ${Math.min(...build.wall).toFixed(0)} ms`,
    `CPU median ${median(build.cpu).toFixed(0)} ms (both threads)`,
  ];
  process.stdout.write(`${line.join("  ")}\n`);
}
