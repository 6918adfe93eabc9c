// Preloaded into `dirq server` by bench/dirq-lanes.mjs (NODE_OPTIONS=--require): every 250 ms,
// the server's main thread prints the longest event-loop delay it had meanwhile, so the
// benchmark can tell a thread held by work from a machine too loaded to run it.
const { monitorEventLoopDelay } = require("node:perf_hooks");
const { isMainThread } = require("node:worker_threads");

if (isMainThread && process.argv.includes("server")) {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  setInterval(() => {
    process.stderr.write(`dirq-loop-delay ${(histogram.max / 1e6).toFixed(1)}\n`);
    histogram.reset();
  }, 250).unref();
}
