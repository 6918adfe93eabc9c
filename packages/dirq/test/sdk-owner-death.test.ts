import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { assertNothingOutlives, hangingHookTree, type OwnerEnd, tempTree } from "./helpers.js";
import { processTree } from "./server-support.js";

const SDK = new URL("../src/index.js", import.meta.url).href;

/**
 * A program using the SDK: runs a cancellable statement on a second index of the tree (it
 * leaves a query process), opens the tree with its config (its table's hook hangs), starts a
 * statement on it (that waits for the hook), then does what a line on stdin says: `exit` (no
 * close), `crash` (an uncaught error).
 */
const PROGRAM = `import { open } from ${JSON.stringify(SDK)};
const other = open({ root: process.argv[2], progress: false });
await other.query("SELECT 1", { signal: new AbortController().signal });
const db = open({ root: process.argv[2], configs: [process.argv[3]], progress: false });
db.query("SELECT * FROM hung").catch(() => {});
process.stdin.on("data", (line) => {
  if (String(line).trim() === "exit") process.exit(0);
  setTimeout(() => {
    throw new Error("crash");
  });
});
`;

describe("the SDK: nothing a program started outlives it", { timeout: 120_000 }, () => {
  const program = join(tempTree({ "program.mjs": PROGRAM }), "program.mjs");
  for (const timeout of [undefined, 0]) {
    for (const how of ["SIGKILL", "SIGTERM", "exit", "crash"] as OwnerEnd[]) {
      const limit = timeout === undefined ? "the default time limit" : "timeout = 0";
      test(`${how}, a statement waiting on a hung hook (${limit})`, async () => {
        const tree = hangingHookTree(timeout);
        // Its own temporary directory: the index folder it makes there goes with it too.
        const temporary = tempTree({});
        const child = spawn(process.execPath, [program, tree.root, tree.config], {
          stdio: ["pipe", "ignore", "pipe"],
          env: { ...process.env, TMPDIR: temporary },
        });
        await assertNothingOutlives(child, tree, how, () => processTree(child.pid as number));
        assert.deepEqual(readdirSync(temporary), [], "the index folder is removed");
      });
    }
  }
});
