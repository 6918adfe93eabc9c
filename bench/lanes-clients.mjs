// The query clients of bench/dirq-lanes.mjs, on a thread of their own: a statement's time is
// then the server's answer, not also the wait behind the benchmark's own reading of row events
// (a file of 200,000 rows that leaves a table is 200,000 frames to parse on its main thread,
// which held statements' answers there for half a second at a time).
//
// workerData: { port, clients, first }. Each client sends a fresh statement on `small` (so no
// cache answers it) until the thread gets a message; then it posts `{ latencies, failures }`
// (ms; a statement whose connection failed, as a server held past its request timeouts closes
// them, counts in both, with the time until it failed), or `{ error }` for an answer that is
// not 200.
import { parentPort, workerData } from "node:worker_threads";
import { postQuery } from "./lib.mjs";

const { port, clients, first } = workerData;
let counter = first;
let running = true;
parentPort.once("message", () => (running = false));
const latencies = [];
let failures = 0;
const client = async () => {
  while (running) {
    const sent = performance.now();
    const answer = await postQuery(port, `SELECT v, ${++counter} FROM small`).catch(() => null);
    if (answer === null) {
      failures++;
      latencies.push(performance.now() - sent);
      continue;
    }
    if (answer.status !== 200) throw new Error(`answered ${answer.status}: ${answer.text}`);
    // Every statement sent counts, however late its answer comes.
    latencies.push(performance.now() - sent);
  }
};
try {
  await Promise.all(Array.from({ length: clients }, client));
  parentPort.postMessage({ latencies, failures });
} catch (error) {
  parentPort.postMessage({ error: error.message });
}
