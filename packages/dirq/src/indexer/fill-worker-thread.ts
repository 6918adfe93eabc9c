import { parentPort, workerData } from "node:worker_threads";
import { openSqlite } from "./database.js";
import {
  type FillAnswer,
  type FillRequest,
  type FillWorkerData,
  failureOf,
} from "./fill-worker.js";
import { fillRows } from "./path-fill.js";
import { monotonicMs } from "../shared/clock.js";

/**
 * The thread of `FillWorker`: opens its own connection to the index file and runs the fills
 * it is sent, one at a time, posting progress (at most every few ms) and then the outcome.
 *
 * It starts no helper thread of its own: it already is the server's second thread. While
 * clients query during a build the cores are busy either way, so a stat helper here saves no
 * time and costs peak memory; only on an idle machine would it shorten the build.
 */
const { databasePath, synchronous } = workerData as FillWorkerData;

/** Progress is worth a message this often at most (ms). */
const PROGRESS_EVERY_MS = 50;

const db = openSqlite(databasePath);
db.pragma(`synchronous = ${Number(synchronous)}`);

function post(answer: FillAnswer): void {
  parentPort?.postMessage(answer);
}

let queue: Promise<void> = Promise.resolve();

async function fill({ id, job }: FillRequest): Promise<void> {
  let last = 0;
  try {
    const outcome = await fillRows(
      db,
      job,
      (found) => {
        const now = monotonicMs();
        if (now - last < PROGRESS_EVERY_MS) return;
        last = now;
        post({ id, kind: "progress", found });
      },
      { helpers: false },
    );
    post({ id, kind: "done", outcome });
  } catch (caught) {
    post({ id, kind: "failed", error: failureOf(caught) });
  }
}

// One fill at a time, in order (the index sends one at a time anyway: its writer lock).
parentPort?.on("message", (request: FillRequest) => {
  queue = queue.then(() => fill(request));
});
