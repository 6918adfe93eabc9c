import { parentPort, workerData } from "node:worker_threads";
import { statPaths } from "./file-stats.js";

/** Helper thread of `BatchStatter`: stats each batch it is sent and posts the numbers back. */
const { root } = workerData as { root: string };
parentPort?.on("message", ({ id, paths }: { id: number; paths: string[] }) => {
  const stats = statPaths(root, paths);
  parentPort?.postMessage({ id, stats }, [stats.buffer as ArrayBuffer]);
});
