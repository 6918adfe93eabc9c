import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runDirq, saveWhole, tempTree } from "./helpers.js";
import { delay, eventually, openReadyEvents, serverFixtures } from "./server-support.js";

/**
 * The slot rule and the time limit of hooks (hooks.md): a hook stops counting against the
 * parallelism (one per core) once it has run for 50 ms, and at most max(4 × cores, 16) hook
 * processes run at once in all; a hook past its time limit is stopped with its process group
 * and its file fails.
 */
const CORES = availableParallelism();
/** The bound on hook processes running at once (parse/hook-slots.ts: defaultHardCap). */
const HOOK_PROCESS_CAP = Math.max(4 * CORES, 16);

/**
 * A hook (run by `sh`) whose behaviour the file's content names: `hang` starts a child that
 * sleeps for ever and waits for it, `slow` sleeps 0.85 s (less than the second a slow hook
 * held its slot for before the slot rule changed), anything else answers at once. A hook that
 * sleeps first leaves `<marks>/<file>.<pid>.pids` with its pid and its child's.
 */
const HOOK = `name=$(basename "$1")
mode=$(cat "$1")
case "$mode" in
  hang)
    sleep 1000 &
    echo "$$ $!" > "$2/$name.$$.tmp" && mv "$2/$name.$$.tmp" "$2/$name.$$.pids"
    wait
    ;;
  slow)
    echo "$$" > "$2/$name.$$.tmp" && mv "$2/$name.$$.tmp" "$2/$name.$$.pids"
    sleep 0.85
    ;;
esac
printf '[{"name":"%s","mode":"%s"}]' "$name" "$mode"
`;

/** A folder outside the root for the hooks' marks (the watcher never sees them). */
function marksFolder(): string {
  return tempTree({});
}

function onFile(marks: string): string {
  return `sh hook.sh {path} ${marks}`;
}

function tableConfig(marks: string, extra = "", names = ["data"]): string {
  return names
    .map(
      (name) => `[[table]]
name = "${name}"
glob = "data/*.txt"
on-file = "${onFile(marks)}"
${extra}
`,
    )
    .join("\n");
}

/** Whether `pid` runs (a killed process its parent has not reaped yet does not). */
function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** The marks files of the hooks that ran for `file` (every table's). */
function marksOf(marks: string, file: string): string[] {
  return readdirSync(marks).filter(
    (entry) => entry.startsWith(`${file}.`) && entry.endsWith(".pids"),
  );
}

/** The pids the hooks for `file` left (each hook, and for `hang` its sleeping child). */
function markedPids(marks: string, file: string): number[] {
  return marksOf(marks, file).flatMap((entry) =>
    readFileSync(join(marks, entry), "utf8").trim().split(/\s+/).map(Number),
  );
}

/** Hook processes (the `sh` of each marked hook) alive now. */
function liveHooks(marks: string): number {
  let alive = 0;
  for (const entry of readdirSync(marks)) {
    if (!entry.endsWith(".pids")) continue;
    const hook = Number(entry.split(".").at(-2));
    if (isAlive(hook)) alive++;
  }
  return alive;
}

const server = serverFixtures();

describe("hook slots", () => {
  it("slow hooks filling every slot do not hold back a quick file's row", async () => {
    const marks = marksFolder();
    const root = server.tree({
      "hook.sh": HOOK,
      "cfg.toml": tableConfig(marks, "timeout = 0"),
      "data/": "",
    });
    const dirq = await server.serve(root, ["-c", "cfg.toml"]);
    const events = await openReadyEvents(dirq);
    // Every slot (one per core) taken by a hook that sleeps 0.85 s: before the slot rule a
    // hook held its slot for its first second, so the quick file could only start once one of
    // them had ended. A loaded machine may be slower than 0.85 s to bring the quick file's row
    // even when it starts at once: three tries.
    const tries: string[] = [];
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        const slow = Array.from({ length: CORES }, (_, i) => `slow${attempt}-${i}.txt`);
        for (const name of slow) saveWhole(root, `data/${name}`, "slow");
        await eventually(
          () => slow.every((name) => markedPids(marks, name).length > 0),
          "every slow hook started",
        );
        const quickName = `quick${attempt}.txt`;
        saveWhole(root, `data/${quickName}`, "quick");
        const quick = await events.next(
          (row) => row.action === "insert" && row.file_path === `data/${quickName}`,
          10_000,
        );
        assert.equal(quick.row?.mode, "quick");
        const ended = slow.filter((name) => !isAlive(markedPids(marks, name)[0] as number));
        if (ended.length === 0) return;
        tries.push(
          `try ${attempt + 1}: ${ended.join(", ")} ended before the quick file's row came`,
        );
        await eventually(
          () => slow.every((name) => !isAlive(markedPids(marks, name)[0] as number)),
          "the slow hooks end",
        );
      }
      assert.fail(tries.join("; "));
    } finally {
      events.close();
    }
  });

  it("many hung hooks run past the cores, never more than the bound at once", async () => {
    const marks = marksFolder();
    const files: Record<string, string> = {};
    for (let i = 0; i < 12; i++) files[`data/h${i}.txt`] = "hang";
    const root = server.tree({
      "hook.sh": HOOK,
      // Three tables over the same files: three hooks per file.
      "cfg.toml": tableConfig(marks, "timeout = 0", ["a", "b", "c"]),
      "data/": "",
    });
    const dirq = await server.serve(root, ["-c", "cfg.toml"]);
    const events = await openReadyEvents(dirq);
    try {
      for (const [path, content] of Object.entries(files)) {
        saveWhole(root, path, content);
      }
      // Sampled until the bound is reached (a loaded machine starts hooks slowly), and a
      // while after: the count never goes past it.
      let most = 0;
      let deadline = Date.now() + 10_000;
      let reached = false;
      while (Date.now() < deadline) {
        most = Math.max(most, liveHooks(marks));
        if (!reached && most >= HOOK_PROCESS_CAP) {
          reached = true;
          deadline = Date.now() + 500;
        }
        await delay(20);
      }
      assert.ok(most <= HOOK_PROCESS_CAP, `${most} hooks ran at once (bound ${HOOK_PROCESS_CAP})`);
      assert.ok(most > CORES, `only ${most} hooks ran at once: hung hooks held their slots`);
      // The server still answers.
      const answer = await fetch(`${dirq.url}/query`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ sql: "SELECT count(*) AS n FROM a" }),
      });
      assert.equal(answer.status, 200);
    } finally {
      events.close();
    }
  });

  it("a one-shot fill runs slow hooks past the cores, within the bound", async () => {
    const marks = marksFolder();
    const files: Record<string, string> = {};
    const count = HOOK_PROCESS_CAP + 4;
    for (let i = 0; i < count; i++) files[`data/h${i}.txt`] = "hang";
    const root = tempTree({ "hook.sh": HOOK, ...files });
    let most = 0;
    let running = true;
    const sampling = (async () => {
      while (running) {
        most = Math.max(most, liveHooks(marks));
        await delay(20);
      }
    })();
    const result = await runDirq(
      [
        "SELECT count(*) AS n FROM './data/*.txt'",
        "--format",
        "json",
        "--on-file",
        onFile(marks),
        "--hook-timeout",
        "1",
      ],
      { cwd: root },
    );
    running = false;
    await sampling;
    assert.equal(result.code, 23, result.stderr);
    assert.equal(result.stderr.match(/ran past its time limit/g)?.length, count, result.stderr);
    // Many hooks wait on one signal: no MaxListenersExceededWarning reaches the user.
    assert.doesNotMatch(result.stderr, /Warning/);
    assert.ok(most <= HOOK_PROCESS_CAP, `${most} hooks ran at once (bound ${HOOK_PROCESS_CAP})`);
    assert.ok(most > CORES, `only ${most} hooks ran at once: hung hooks held their slots`);
  });
});

describe("hook time limit", () => {
  it("one-shot: a config table's timeout stops the hook and its child; other rows stand", async () => {
    const marks = marksFolder();
    const root = tempTree({
      "hook.sh": HOOK,
      "cfg.toml": tableConfig(marks, "timeout = 1"),
      "data/a.txt": "quick",
      "data/b.txt": "hang",
      "data/c.txt": "quick",
    });
    const started = Date.now();
    const result = await runDirq(["SELECT name FROM data ORDER BY name", "-c", "cfg.toml"], {
      cwd: root,
    });
    const took = Date.now() - started;
    assert.equal(result.code, 23, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), [{ name: "a.txt" }, { name: "c.txt" }]);
    assert.match(
      result.stderr,
      /^dirq: skipped data\/b\.txt: hook ran past its time limit of 1 s and was stopped \(timeout = 1 in cfg\.toml: table\[0\]\)$/m,
    );
    assert.ok(took < 20_000, `took ${took} ms`);
    const pids = markedPids(marks, "b.txt");
    assert.equal(pids.length, 2);
    await eventually(() => pids.every((pid) => !isAlive(pid)), "the hook and its child end");
  });

  it("one-shot: --hook-timeout limits the --on-file hook", async () => {
    const marks = marksFolder();
    const root = tempTree({ "hook.sh": HOOK, "data/a.txt": "quick", "data/b.txt": "hang" });
    const result = await runDirq(
      [
        "SELECT name FROM './data/*.txt' ORDER BY name",
        "--format",
        "json",
        "--on-file",
        onFile(marks),
        "--hook-timeout",
        "0.5",
      ],
      { cwd: root },
    );
    assert.equal(result.code, 23, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), [{ name: "a.txt" }]);
    assert.match(
      result.stderr,
      /^dirq: skipped data\/b\.txt: hook ran past its time limit of 0\.5 s and was stopped \(--hook-timeout 0\.5\)$/m,
    );
  });

  it("the REPL takes --hook-timeout", async () => {
    const marks = marksFolder();
    const root = tempTree({ "hook.sh": HOOK, "data/a.txt": "quick", "data/b.txt": "hang" });
    const result = await runDirq(
      ["--on-file", onFile(marks), "--hook-timeout", "0.5", "--format", "json"],
      { cwd: root, input: "SELECT name FROM './data/*.txt' ORDER BY name;\n" },
    );
    assert.match(result.stdout, /a\.txt/);
    assert.doesNotMatch(result.stdout, /b\.txt/);
    assert.match(
      result.stderr,
      /dirq: skipped data\/b\.txt: hook ran past its time limit of 0\.5 s and was stopped \(--hook-timeout 0\.5\)/,
    );
  });

  it("server: an error event names the file and the limit; the process group is gone; an edit brings the row", async () => {
    const marks = marksFolder();
    const root = server.tree({
      "hook.sh": HOOK,
      "cfg.toml": tableConfig(marks, "timeout = 1"),
      "data/a.txt": "quick",
    });
    const dirq = await server.serve(root, ["-c", "cfg.toml"]);
    const events = await openReadyEvents(dirq);
    try {
      saveWhole(root, "data/b.txt", "hang");
      const failed = await events.next(
        (row) => row.action === "error" && row.file_path === "data/b.txt",
        15_000,
      );
      assert.equal(failed.table, "data");
      assert.match(
        failed.error ?? "",
        /^hook ran past its time limit of 1 s and was stopped \(timeout = 1 in cfg\.toml: table\[0\]\)$/,
      );
      const pids = markedPids(marks, "b.txt");
      assert.equal(pids.length, 2);
      await eventually(() => pids.every((pid) => !isAlive(pid)), "the hook and its child end");
      saveWhole(root, "data/b.txt", "quick");
      const row = await events.next(
        (event) => event.action === "insert" && event.file_path === "data/b.txt",
        10_000,
      );
      assert.equal(row.row?.mode, "quick");
    } finally {
      events.close();
    }
  });
});

describe("hook time limit: checks", () => {
  const cases: [string, string, RegExp][] = [
    [
      "timeout = -1",
      "negative",
      /^dirq: cfg\.toml: table\[0\]\.timeout: expected a number of seconds, 0 or more \(0 = no limit\)$/m,
    ],
    [
      'timeout = "5"',
      "a string",
      /^dirq: cfg\.toml: table\[0\]\.timeout: expected a number of seconds \(0 = no limit\)$/m,
    ],
    [
      "timeout = 1e12",
      "too long",
      /^dirq: cfg\.toml: table\[0\]\.timeout: expected at most 2147483 seconds/m,
    ],
  ];
  for (const [line, what, message] of cases) {
    it(`a config timeout that is ${what} is an error naming the file, table and key`, async () => {
      const root = tempTree({ "cfg.toml": tableConfig("/tmp", line), "data/a.txt": "quick" });
      const result = await runDirq(["SELECT 1", "-c", "cfg.toml"], { cwd: root });
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, message);
      assert.equal(result.stdout, "");
    });
  }

  it("timeout in a table with a format is an error", async () => {
    const root = tempTree({
      "cfg.toml": '[[table]]\nname = "t"\nglob = "*.json"\nformat = "json"\ntimeout = 5\n',
    });
    const result = await runDirq(["SELECT 1", "-c", "cfg.toml"], { cwd: root });
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /^dirq: cfg\.toml: table\[0\]\.timeout: applies only with on-file/m,
    );
  });

  it("--hook-timeout: a value that is no number of seconds, or without --on-file, is a usage error", async () => {
    const root = tempTree({ "a.txt": "x" });
    const bad = await runDirq(["SELECT 1", "--on-file", "cat {path}", "--hook-timeout", "soon"], {
      cwd: root,
    });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^dirq: invalid --hook-timeout 'soon': expected a number of seconds/m);
    const negative = await runDirq(["SELECT 1", "--on-file", "cat {path}", "--hook-timeout=-1"], {
      cwd: root,
    });
    assert.equal(negative.code, 1);
    assert.match(negative.stderr, /invalid --hook-timeout '-1'/);
    const alone = await runDirq(["SELECT 1", "--hook-timeout", "5"], { cwd: root });
    assert.equal(alone.code, 1);
    assert.match(alone.stderr, /^dirq: --hook-timeout applies to the --on-file hook/m);
  });
});
