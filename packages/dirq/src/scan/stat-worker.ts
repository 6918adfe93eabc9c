import { parentPort, workerData } from "node:worker_threads";
import { STAT_FIELDS, statInto } from "./file-stats.js";

/** Helper thread of `statFiles`: stats its share of the paths and posts the numbers back. */
const { root, paths } = workerData as { root: string; paths: string[] };
const out = new Float64Array(paths.length * STAT_FIELDS);
statInto(root, paths, out);
parentPort?.postMessage(out, [out.buffer]);
