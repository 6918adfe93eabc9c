import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { unlinkSync } from "node:fs";
import { after, describe, test } from "node:test";
import {
  assertNothingOutlives,
  assertUserError,
  DIRQ_BIN,
  hangingHookTree,
  makeTree,
  removeTree,
  runDirq,
  saveWhole,
} from "./helpers.js";
import { descendants } from "./terminal.js";

type Line = Record<string, unknown> & { event: string };

/** `dirq watch` with stdout a pipe: its JSON Lines, read as they come. */
class PipedWatch {
  readonly child: ChildProcessWithoutNullStreams;
  private buffered = "";
  private readonly lines: Line[] = [];
  private wake: (() => void) | null = null;
  stderr = "";
  readonly exited: Promise<number | null>;

  constructor(args: readonly string[], cwd: string) {
    this.child = spawn(process.execPath, [DIRQ_BIN, "watch", ...args], {
      cwd,
      env: { ...process.env, DIRQ_PROGRESS: "never" },
    });
    this.child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      this.buffered += chunk;
      const cut = this.buffered.lastIndexOf("\n");
      if (cut < 0) return;
      for (const text of this.buffered.slice(0, cut).split("\n")) {
        this.lines.push(JSON.parse(text) as Line);
      }
      this.buffered = this.buffered.slice(cut + 1);
      this.wake?.();
    });
    this.child.stderr.setEncoding("utf8").on("data", (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => this.child.on("close", (code) => resolve(code)));
  }

  /** The next line (waits for it). */
  async next(): Promise<Line> {
    const deadline = Date.now() + 60_000;
    while (this.lines.length === 0) {
      assert.ok(Date.now() < deadline, `no line from dirq watch; stderr: ${this.stderr}`);
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, 200);
      });
    }
    return this.lines.shift() as Line;
  }
}

describe("dirq watch, piped: JSON Lines of the live query's frames", { timeout: 120_000 }, () => {
  const tree = makeTree({ "d/a.txt": "a", "d/b.txt": "bb", "d/skip.md": "not read" });
  after(() => removeTree(tree));

  test("a snapshot, then a diff per change (keyed rows update in place); Ctrl-C exits 0", async () => {
    const sql = "SELECT basename, size FROM './d/*.txt' WHERE size >= ? ORDER BY basename";
    const watch = new PipedWatch([sql, "--params", "[1]", "--key", "basename"], tree);
    try {
      const snapshot = await watch.next();
      assert.equal(snapshot.event, "snapshot");
      assert.match(String(snapshot.id), /^[0-9a-f]+-\d+$/);
      assert.deepEqual(snapshot.columns, ["basename", "size"]);
      assert.deepEqual(snapshot.key, ["basename"]);
      assert.deepEqual(snapshot.rows, [
        { basename: "a.txt", size: 1 },
        { basename: "b.txt", size: 2 },
      ]);
      saveWhole(tree, "d/c.txt", "ccc");
      const added = await watch.next();
      assert.equal(added.event, "diff");
      assert.deepEqual(added.added, [{ at: 2, row: { basename: "c.txt", size: 3 } }]);
      assert.deepEqual([added.removed, added.updated], [[], []]);
      saveWhole(tree, "d/a.txt", "aaaa");
      const updated = await watch.next();
      assert.deepEqual(updated.updated, [
        {
          from: 0,
          at: 0,
          old_row: { basename: "a.txt", size: 1 },
          row: { basename: "a.txt", size: 4 },
        },
      ]);
      unlinkSync(`${tree}/d/b.txt`);
      const removed = await watch.next();
      assert.deepEqual(removed.removed, [{ at: 1, row: { basename: "b.txt", size: 2 } }]);
      assert.ok((removed.commit as number) > (added.commit as number));
    } finally {
      watch.child.kill("SIGINT");
    }
    assert.equal(await watch.exited, 0);
    assert.equal(watch.stderr, "");
  });

  test("a later run that fails is an error line; the next good answer is diffed against the last good one", async () => {
    const root = makeTree({ "e/1": "1", "e/2": "2" });
    // A file named as no JSON value is makes json() fail on the run after it appears.
    const sql = "SELECT basename, json(basename) AS j FROM './e' ORDER BY basename";
    const watch = new PipedWatch([sql], root);
    try {
      const snapshot = await watch.next();
      assert.equal(snapshot.event, "snapshot");
      saveWhole(root, "e/x", "x");
      const failed = await watch.next();
      assert.equal(failed.event, "error");
      assert.match(String(failed.id), /^[0-9a-f]+-\d+$/);
      assert.match(String(failed.error), /malformed JSON/);
      unlinkSync(`${root}/e/x`);
      saveWhole(root, "e/3", "3");
      const next = await watch.next();
      assert.equal(next.event, "diff");
      assert.deepEqual(next.added, [{ at: 2, row: { basename: "3", j: "3" } }]);
      assert.deepEqual([next.removed, next.updated], [[], []]);
    } finally {
      watch.child.kill("SIGINT");
    }
    assert.equal(await watch.exited, 0);
    assert.equal(watch.stderr, "");
    removeTree(root);
  });

  test("a statement that cannot run is one error line and exit 1", async () => {
    const bad = await runDirq(["watch", "SELECT nope FROM './d/*.txt'"], { cwd: tree });
    assertUserError(bad, /nope/);
    assert.equal(bad.stdout, "");
    const written = await runDirq(["watch", "DELETE FROM x"], { cwd: tree });
    assertUserError(written);
    const params = await runDirq(["watch", "SELECT ?", "--params", "{oops"], { cwd: tree });
    assertUserError(params, /invalid --params/);
    const csv = await runDirq(["watch", "SELECT 1", "--format", "csv"], { cwd: tree });
    assertUserError(csv, /auto, table or json/);
  });

  test("Ctrl-C while a hook still builds its table: nothing it started outlives it", async () => {
    const hung = hangingHookTree(0);
    const child = spawn(
      process.execPath,
      [DIRQ_BIN, "watch", "-c", hung.config, "SELECT count(*) FROM hung"],
      { cwd: hung.root, env: { ...process.env, DIRQ_PROGRESS: "never" } },
    );
    const exited = new Promise((resolve) => child.on("close", resolve));
    await assertNothingOutlives(
      child,
      hung,
      () => child.kill("SIGINT"),
      () => (descendants(child.pid as number) ?? []).map((found) => found.pid),
    );
    assert.equal(await exited, 0);
  });
});

describe("dirq watch: help and completion", () => {
  const tree = makeTree({});
  after(() => removeTree(tree));

  test("dirq watch --help, dirq --help and the completions name it", async () => {
    const help = await runDirq(["watch", "--help"], { cwd: tree });
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: dirq watch "<sql>" \[options\]/);
    assert.match(help.stdout, /--key <column>/);
    const main = await runDirq(["--help"], { cwd: tree });
    assert.match(main.stdout, /dirq watch "<sql>" \[options\]/);
    const bash = await runDirq(["completion", "bash"], { cwd: tree });
    assert.match(bash.stdout, /watch\) COMPREPLY=\(\$\(compgen -W "[^"]*--params[^"]*--key/);
    const fish = await runDirq(["completion", "fish"], { cwd: tree });
    assert.match(fish.stdout, /__fish_seen_subcommand_from watch' -l key -x/);
  });
});
