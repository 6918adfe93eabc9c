// A preload for a benchmarked server (`--node-args='--require bench/loop-turns.cjs'`): records
// the main thread's turns of 20 ms or more (the lateness of a 5 ms interval timer), its GC
// pauses of 5 ms or more with their kind (1 scavenge, 4 mark-compact), and the child processes
// it starts, each with its wall time (epoch ms); written at exit to
// $DIRQ_LOOP_TURNS_DIR/<pid>.json (default the temp folder). `loop-turns-report.mjs` reads it
// against the probes' window that dirq-million.mjs prints.
const { isMainThread } = require("node:worker_threads");
const { PerformanceObserver } = require("node:perf_hooks");
const { writeFileSync } = require("node:fs");
const { tmpdir } = require("node:os");
const { join } = require("node:path");
const childProcess = require("node:child_process");

if (isMainThread && process.argv.includes("server")) {
  // Wall time minus the monotonic clock: a CPU profile's timestamps plus this are epoch ms.
  const offset = Date.now() - Number(process.hrtime.bigint() / 1000n) / 1000;
  const turns = [];
  const gcs = [];
  const spawns = [];
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    const late = now - last - 5;
    if (late >= 20) turns.push([Date.now() - (now - last), Number(late.toFixed(1))]);
    last = now;
  }, 5).unref();
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (entry.duration < 5) continue;
      const at = Math.round(performance.timeOrigin + entry.startTime);
      gcs.push([at, Number(entry.duration.toFixed(1)), entry.detail?.kind]);
    }
  }).observe({ entryTypes: ["gc"] });
  const spawn = childProcess.ChildProcess.prototype.spawn;
  childProcess.ChildProcess.prototype.spawn = function (...args) {
    spawns.push(Date.now());
    return spawn.apply(this, args);
  };
  process.on("exit", () => {
    const dir = process.env.DIRQ_LOOP_TURNS_DIR ?? tmpdir();
    writeFileSync(join(dir, `${process.pid}.json`), JSON.stringify({ offset, turns, gcs, spawns }));
  });
}
