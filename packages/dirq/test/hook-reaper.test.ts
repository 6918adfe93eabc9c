/**
 * The reapers on their own: a real owner process starts one, tells it of folders and hooks as
 * dirq does, and is killed with SIGKILL. The shell reaper is what dirq starts on every POSIX
 * system; the Node.js one is its stand-in where there is no /bin/sh (Windows) and is held to the
 * same cases here. Both must remove the folders still told, keep the ones told removed (names
 * with spaces and glob characters included), kill the hooks still running (their process groups
 * too), and leave alone a process whose pid was told ended (its pid may be another's by now).
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { processRuns } from "./helpers.js";
import { eventually } from "./server-support.js";

const REAPER_DIR = new URL("../src/reaper/", import.meta.url);
const root = mkdtempSync(join(tmpdir(), "dirq-reaper-test-"));
const started: ChildProcess[] = [];
after(() => {
  for (const child of started) if (child.pid !== undefined) killGroup(child.pid);
  rmSync(root, { recursive: true, force: true });
});

function killGroup(pid: number): void {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, "SIGKILL");
    } catch {
      // gone
    }
  }
}

/** A process that sleeps in a process group of its own, as a hook does. */
function sleeper(): number {
  const child = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
  started.push(child);
  child.unref();
  return child.pid as number;
}

/** A folder under the test's root holding one file. */
function folder(name: string): string {
  const path = join(root, name);
  mkdirSync(join(path, "inner"), { recursive: true });
  writeFileSync(join(path, "inner", "index.db"), "x");
  return path;
}

for (const kind of ["shell", "node"] as const) {
  describe(`the ${kind} reaper`, () => {
    test("after its owner's SIGKILL: removes the folders told, kills the hooks running, nothing else", async () => {
      const first = folder(`${kind} first`);
      const added = folder(`${kind} [added] *`);
      const removedEarlier = folder(`${kind} removed`);
      const hook = sleeper();
      const endedHook = sleeper();
      const messages = [
        { folder: added },
        { folder: removedEarlier },
        { removed: removedEarlier },
        { started: hook },
        { started: endedHook },
        { ended: endedHook },
      ];
      const module = new URL(`${kind}-reaper.js`, REAPER_DIR).href;
      const starter = kind === "shell" ? "startShellReaper" : "startNodeReaper";
      const program = [
        `import { ${starter} } from ${JSON.stringify(module)};`,
        `const tell = ${starter}(${JSON.stringify(first)}, "mark-${kind}", process.env);`,
        `for (const message of ${JSON.stringify(messages)}) tell(message);`,
        // The shell reaper's messages are in its pipe when the writes return, read or not, as
        // when dirq is killed right after telling. The Node.js reaper reads none that came
        // before it was up if its owner is gone by then, so that owner waits for it.
        `setTimeout(() => process.stdout.write("told\\n"), ${kind === "shell" ? 0 : 3000});`,
        "setInterval(() => {}, 1000);",
      ].join("\n");
      const owner = spawn(process.execPath, ["--input-type=module", "-e", program], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      started.push(owner);
      let said = "";
      owner.stdout.setEncoding("utf8").on("data", (chunk: string) => (said += chunk));
      await eventually(() => said.includes("told"), "the owner told its reaper", 30_000);
      owner.kill("SIGKILL");

      await eventually(() => !processRuns(hook), "the running hook killed", 30_000);
      await eventually(
        () => !existsSync(first) && !existsSync(added),
        "the folders told removed",
        30_000,
      );
      assert.ok(
        existsSync(join(removedEarlier, "inner", "index.db")),
        "a folder told removed stays",
      );
      assert.ok(processRuns(endedHook), "a process whose pid was told ended is left alone");
    });
  });
}
