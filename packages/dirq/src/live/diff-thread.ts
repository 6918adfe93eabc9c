import { parentPort } from "node:worker_threads";
import { answerRows } from "./answer-rows.js";
import type { DiffThreadAnswer, DiffThreadMessage } from "./large-diff.js";
import { diffAnswers } from "./live-diff.js";

/**
 * The thread of `DiffThread`: holds the rows of the live queries whose answers are large, cuts
 * each new answer into rows, diffs it against what it holds, and posts back the diff and the
 * rows' text (joined by commas, for snapshots), moved, not copied. Messages are taken one at a
 * time, in the order sent: a query's `forget` comes after its last run.
 */
const held = new Map<number, readonly string[]>();
const encoder = new TextEncoder();

function run(message: Extract<DiffThreadMessage, { kind: "run" }>): DiffThreadAnswer {
  const rows = answerRows(message.body);
  let diff = null;
  let now: readonly string[] = rows;
  if (!message.reset) {
    const old = message.seed ?? held.get(message.query);
    if (old === undefined) throw new Error("the diff thread holds no rows for this live query");
    ({ diff, rows: now } = diffAnswers(old, { rows }, message.shape));
  }
  held.set(message.query, now);
  // An encoder's array has a buffer of its own, which can be moved.
  return { id: message.id, ok: true, diff, text: encoder.encode(now.join(",")) };
}

parentPort?.on("message", (message: DiffThreadMessage) => {
  if (message.kind === "forget") {
    held.delete(message.query);
    return;
  }
  let answer: DiffThreadAnswer;
  try {
    answer = run(message);
  } catch (error) {
    answer = { id: message.id, ok: false, message: (error as Error).message };
  }
  parentPort?.postMessage(answer, answer.ok ? [answer.text.buffer as ArrayBuffer] : []);
});
