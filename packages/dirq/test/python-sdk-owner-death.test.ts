import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  assertNothingOutlives,
  DIRQ_BIN,
  hangingHookTree,
  type OwnerEnd,
  python3,
  tempTree,
} from "./helpers.js";
import { processTree } from "./server-support.js";

const PYTHON_SOURCE = fileURLToPath(new URL("../../../../python/src", import.meta.url));

/**
 * A program using the Python SDK: opens the tree (its table's hook hangs), starts a statement
 * on it in a thread (it waits for the hook), then does what a line on stdin says: `exit`
 * (sys.exit, no close), `crash` (an uncaught error), `wait` (nothing: the test kills its child).
 */
const PROGRAM = `import sys, threading
import dirq
db = dirq.open(sys.argv[1], config=[sys.argv[2]], progress=False)
threading.Thread(target=lambda: db.query("SELECT * FROM hung"), daemon=True).start()
line = sys.stdin.readline().strip()
if line == "exit":
    sys.exit(0)
if line == "crash":
    raise RuntimeError("crash")
threading.Event().wait()
`;

/** The `dirq sdk-stdio` child among `pids`. */
function sdkStdio(pids: number[]): number {
  const child = pids.find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "latin1").includes("sdk-stdio");
    } catch {
      return false;
    }
  });
  if (child === undefined) throw new Error("no sdk-stdio child");
  return child;
}

describe("the Python SDK: nothing a program started outlives it", { timeout: 180_000 }, () => {
  const program = join(tempTree({ "program.py": PROGRAM }), "program.py");
  const env = {
    ...process.env,
    PYTHONPATH: PYTHON_SOURCE,
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}`,
    DIRQ_BIN,
    DIRQ_PROGRESS: "never",
  };
  function start(tree: { root: string; config: string }) {
    return spawn(python3(), [program, tree.root, tree.config], {
      env,
      stdio: ["pipe", "ignore", "pipe"],
    });
  }

  for (const timeout of [undefined, 0]) {
    const limit = timeout === undefined ? "the default time limit" : "timeout = 0";
    for (const how of ["SIGKILL", "SIGTERM", "exit", "crash"] as OwnerEnd[]) {
      test(`${how}, a statement waiting on a hung hook (${limit})`, async () => {
        const tree = hangingHookTree(timeout);
        const child = start(tree);
        await assertNothingOutlives(child, tree, how, () => processTree(child.pid as number));
      });
    }
    test(`the sdk-stdio child killed takes its hooks with it (${limit})`, async () => {
      const tree = hangingHookTree(timeout);
      const python = start(tree);
      let child = 0;
      const descendants = () => {
        child = sdkStdio(processTree(python.pid as number));
        return processTree(child);
      };
      const killChild = () => process.kill(child, "SIGKILL");
      try {
        await assertNothingOutlives(python, tree, killChild, descendants);
      } finally {
        python.kill("SIGKILL");
      }
    });
  }
});
