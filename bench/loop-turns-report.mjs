#!/usr/bin/env node
// node bench/loop-turns-report.mjs <pid>.json <start-end>: what `loop-turns.cjs` recorded
// inside a window (epoch ms, as dirq-million.mjs prints the probes'): the main thread's turns
// of 50 and 100 ms or more, the longest, the GC pauses, and the child processes started.
import { readFileSync } from "node:fs";

const [file, window] = process.argv.slice(2);
if (!file || !window) {
  process.stderr.write("Usage: node bench/loop-turns-report.mjs <pid>.json <start-end>\n");
  process.exit(2);
}
const { turns, gcs, spawns } = JSON.parse(readFileSync(file, "utf8"));
const [start, end] = window.split("-").map(Number);
const inside = (at) => at >= start && at <= end;
const at = (time) => `+${Math.round(time - start)}`;
const mine = turns.filter(([time]) => inside(time));
const total = mine.reduce((sum, [, ms]) => sum + ms, 0);
const count = (ms) => mine.filter(([, late]) => late >= ms).length;
console.log(
  `window ${((end - start) / 1000).toFixed(1)} s: turns >= 20 ms ${mine.length} (${total.toFixed(0)} ms), >= 50 ms ${count(50)}, >= 100 ms ${count(100)}`,
);
const longest = [...mine].sort((a, b) => b[1] - a[1]).slice(0, 10);
console.log(
  `longest (from the window's start: ms): ${longest.map(([t, ms]) => `${at(t)}:${ms}`).join(" ")}`,
);
const paused = gcs.filter(([time]) => inside(time)).sort((a, b) => b[1] - a[1]);
console.log(
  `GC >= 5 ms: ${paused.length}, longest: ${paused
    .slice(0, 8)
    .map(([t, ms, kind]) => `${at(t)}:${ms} (kind ${kind})`)
    .join(" ")}`,
);
console.log(`child processes started: ${spawns.filter(inside).map(at).join(" ") || "none"}`);
