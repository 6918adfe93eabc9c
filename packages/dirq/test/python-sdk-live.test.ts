import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { DIRQ_BIN, makeTree, python3, removeTree } from "./helpers.js";

const exec = promisify(execFile);
const PYTHON_SOURCE = fileURLToPath(new URL("../../../../python", import.meta.url));

type Step = Record<string, unknown> & { step: string };

/**
 * `Dirq.live()` from Python (the SDK's source, a real `dirq sdk-stdio` child, real files):
 * python/tests/live_script.py makes changes and prints what the live query holds beside a fresh
 * query's answer after each; the diffs are the core's, the Python side only applies them.
 */
describe("Python SDK live queries against real files", { timeout: 120_000 }, () => {
  const tree = makeTree({ "d/a.txt": "a", "d/b.txt": "bb" });
  after(() => removeTree(tree));
  let steps: Map<string, Step[]>;

  test("the script runs to its end, with nothing on stderr", async () => {
    const { stdout, stderr } = await exec(
      python3(),
      [join(PYTHON_SOURCE, "tests", "live_script.py"), tree],
      {
        env: {
          ...process.env,
          PYTHONPATH: join(PYTHON_SOURCE, "src"),
          DIRQ_BIN,
          DIRQ_PROGRESS: "never",
          PYTHONDONTWRITEBYTECODE: "1",
        },
        timeout: 100_000,
      },
    );
    assert.equal(stderr, "");
    steps = new Map();
    for (const line of stdout.trim().split("\n")) {
      const step = JSON.parse(line) as Step;
      steps.set(step.step, [...(steps.get(step.step) ?? []), step]);
    }
    assert.ok(steps.has("done"), stdout);
  });

  test("ready() holds the statement's answer, in its order", () => {
    const [snapshot] = steps.get("snapshot") ?? [];
    assert.deepEqual(snapshot?.columns, ["basename", "size"]);
    assert.deepEqual(snapshot?.rows, [
      { basename: "a.txt", size: 1 },
      { basename: "b.txt", size: 2 },
    ]);
    assert.deepEqual(snapshot?.rows, snapshot?.fresh);
  });

  test("each change applied leaves the rows a fresh query's, in order", () => {
    for (const name of ["added", "updated", "removed"]) {
      const [step] = steps.get(name) ?? [];
      assert.deepEqual(step?.rows, step?.fresh, name);
      assert.ok((step?.changes as unknown[]).length >= 1, name);
    }
    const [added] = steps.get("added") ?? [];
    assert.deepEqual(
      (added?.changes as { added: unknown[] }[]).flatMap((change) => change.added),
      [{ at: 2, row: { basename: "c.txt", size: 3 } }],
    );
    const [updated] = steps.get("updated") ?? [];
    const updates = (updated?.changes as { updated: unknown[] }[]).flatMap((c) => c.updated);
    assert.deepEqual(updates, [
      {
        from: 0,
        at: 0,
        old_row: { basename: "a.txt", size: 1 },
        row: { basename: "a.txt", size: 13 },
      },
    ]);
    const [removed] = steps.get("removed") ?? [];
    assert.deepEqual(removed?.rows, [
      { basename: "a.txt", size: 13 },
      { basename: "c.txt", size: 3 },
    ]);
  });

  test("close() from another thread ends an iteration that waits", () => {
    const [closed] = steps.get("closed") ?? [];
    assert.deepEqual(closed, { step: "closed", ended: ["[]"], alive: false });
  });

  test("a statement that cannot run, or a key it lacks, raises DirqError at ready()", () => {
    const [bad, key] = steps.get("error") ?? [];
    assert.equal(bad?.code, "SQL_ERROR");
    assert.match(String(bad?.message), /nope/);
    assert.notEqual(key?.code, null);
    assert.match(String(key?.message), /missing/);
  });

  test("async: aready() and async for, an aggregate re-run whole", () => {
    const [step] = steps.get("async") ?? [];
    assert.deepEqual(step?.first, [{ n: 2, bytes: 16 }]);
    assert.deepEqual(step?.rows, step?.fresh);
    assert.deepEqual(step?.rows, [{ n: 3, bytes: 21 }]);
  });

  test("a later run that fails: a change with error, the rows kept, then the next good answer", () => {
    const [step] = steps.get("error_frame") ?? [];
    const first = [
      { basename: "1", j: "1" },
      { basename: "2", j: "2" },
    ];
    assert.deepEqual(step?.first, first);
    const failed = step?.failed as Record<string, unknown>;
    assert.match(String(failed.error), /malformed JSON/);
    assert.deepEqual([failed.snapshot, failed.removed, failed.added], [false, [], []]);
    assert.deepEqual(step?.held, first, "the rows stay the last good answer");
    const changes = step?.changes as { error: unknown; added: unknown[] }[];
    assert.deepEqual(
      changes.map((change) => change.error),
      changes.map(() => null),
    );
    // Diffed against the last good answer: only the row that joined.
    assert.deepEqual(
      changes.flatMap((change) => change.added),
      [{ at: 2, row: { basename: "3", j: "3" } }],
    );
    assert.deepEqual(step?.rows, step?.fresh);
  });

  test("a consumer that fell behind the history gets the whole answer anew, then diffs again", () => {
    const [step] = steps.get("behind") ?? [];
    assert.deepEqual(step?.first, [["a", 5_000_000]]);
    assert.deepEqual(step?.change, { snapshot: true, error: null });
    assert.deepEqual(step?.rows, [["a", 8_000_000]]);
    assert.deepEqual(step?.rows, step?.fresh);
    assert.deepEqual(step?.next, { snapshot: false, added: [["b", 1_000_000]] });
    assert.deepEqual(step?.next_rows, step?.next_fresh);
  });
});
