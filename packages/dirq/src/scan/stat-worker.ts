import { parentPort, workerData } from "node:worker_threads";
import { statPaths } from "./file-stats.js";

/** Helper thread of `BatchStatter`: stats each batch it is sent and posts the numbers back. */
const { root } = workerData as { root: string };
interface StatRequest {
  id: number;
  paths: string[];
  rawPaths?: Map<string, Uint8Array>;
}
parentPort?.on("message", ({ id, paths, rawPaths }: StatRequest) => {
  const stats = statPaths(root, paths, rawPaths);
  parentPort?.postMessage({ id, stats }, [stats.buffer as ArrayBuffer]);
});
