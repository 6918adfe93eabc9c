import { parentPort, workerData } from "node:worker_threads";
import { openSqlite } from "./database.js";
import { failureOf, type FillWorkerData } from "./fill-worker.js";
import { readMove, writeMove } from "./folder-moves.js";
import type { MoveAnswer, MoveRequest } from "./move-writer.js";

/**
 * The thread of `MoveWriter`: its own connection to the index file, one step at a time in the
 * order they come.
 */
const { databasePath, synchronous } = workerData as FillWorkerData;

const db = openSqlite(databasePath);
db.pragma(`synchronous = ${Number(synchronous)}`);

/** The newest burst one of whose steps failed: its later steps are not done. */
let failedBurst = 0;

parentPort?.on("message", ({ id, burst, abandoned, tables, write, read, last }: MoveRequest) => {
  const post = (answer: MoveAnswer) => parentPort?.postMessage(answer);
  const fail = (caught: unknown) => {
    failedBurst = burst;
    post({ id, kind: "failed", error: failureOf(caught) });
  };
  if (burst === failedBurst || Atomics.load(abandoned, 0) === 1) {
    fail(new Error("an earlier step of this burst of moves failed"));
    return;
  }
  try {
    // One snapshot for all of the next step's reads, sent before this step's write: the
    // calling thread decides those moves while this one writes.
    const reads = db.transaction(() => read.map((move) => readMove(db, tables, move)))();
    post({ id, kind: "read", reads });
  } catch (caught) {
    fail(caught);
    return;
  }
  try {
    if (write.length > 0 && Atomics.load(abandoned, 0) === 1) {
      throw new Error("the burst of moves was given up");
    }
    const written =
      write.length === 0
        ? []
        : db.transaction(() => write.map((move) => writeMove(db, tables, move))).immediate();
    post({ id, kind: "written", written });
    // Idle until the next burst: the pages it cached are the burst's, not the next one's.
    if (last) db.pragma("shrink_memory");
  } catch (caught) {
    fail(caught);
  }
});
