import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { parseHookCommand } from "../../src/parse/hook-command.js";
import { runHook, stopRunningHooks } from "../../src/parse/run-hook.js";
import { processRuns } from "../helpers.js";

describe("stopping hooks when the process ends", () => {
  const dir = mkdtempSync(join(tmpdir(), "dirq-hook-stop-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("a hook whose pid has not reached the main thread yet is stopped too", async () => {
    // Writes its pid, forks a child that holds its stdout, records that one too, and exits.
    const pidFile = join(dir, "pids");
    const hook = join(dir, "hook.sh");
    writeFileSync(
      hook,
      `echo $$ > "$1.tmp"\nsleep 1000 &\necho $! >> "$1.tmp"\nmv "$1.tmp" "$1"\n`,
    );
    const outcome = runHook(parseHookCommand(`sh ${hook} ${pidFile}`), { path: "x", root: dir });
    // The hook is asked for, after its slot (a turn of the event loop)...
    await new Promise(setImmediate);
    await new Promise(setImmediate);
    // ...then this thread stays busy until the hook runs, as a signal's handler could run
    // before the message that names its pid: nothing here has handled that message.
    const deadline = Date.now() + 30_000;
    while (!existsSync(pidFile) && Date.now() < deadline) {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
    const pids = readFileSync(pidFile, "utf8").split("\n").filter(Boolean).map(Number);
    assert.equal(pids.length, 2);
    stopRunningHooks();
    // Still without a turn of the event loop, as a process that kills itself next would be.
    const gone = Date.now() + 10_000;
    while (pids.some(processRuns) && Date.now() < gone) {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
    assert.deepEqual(pids.filter(processRuns), [], "the hook's processes are gone");
    // Ended either way: by the kill, or (when the shell had already exited) with its status.
    await outcome;
  });
});
