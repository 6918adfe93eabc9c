import assert from "node:assert/strict";
import { unlinkSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { makeTree, removeTree, saveWhole } from "./helpers.js";
import { descendants, KEY, TerminalSession } from "./terminal.js";

describe(
  "dirq watch on a terminal: a table redrawn as the answer changes",
  { timeout: 120_000 },
  () => {
    const tree = makeTree({ "d/a.txt": "a", "d/b.txt": "bb" });
    after(() => removeTree(tree));

    test("the answer as a table, a line of what changed, Ctrl-C ends it and all it started", async () => {
      const sql = "SELECT basename, size FROM './d/*.txt' ORDER BY basename";
      const watch = new TerminalSession(["watch", sql, "--key", "basename"], {
        cwd: tree,
        env: {},
      });
      try {
        const first = await watch.waitFor("(2 rows)");
        assert.match(
          first,
          /dirq watch: SELECT basename, size FROM '\.\/d\/\*\.txt' ORDER BY basename {4}commit \d+, \d\d:\d\d:\d\d/,
        );
        assert.match(first, /changed: the answer\n/);
        assert.match(first, /basename +size\n-+ +-+\na\.txt +1\nb\.txt +2\n/);
        saveWhole(tree, "d/c.txt", "ccc");
        const added = await watch.waitFor("(3 rows)");
        assert.match(added, /changed: \+1 -0 rows\n/);
        assert.match(added, /c\.txt +3\n/);
        // As `watch -d`: the row that joined is marked (bold), the others are not.
        const screen = watch.output.slice(watch.output.lastIndexOf("\x1b[2J"));
        assert.match(screen, /\x1b\[1mc\.txt +3\x1b\[0m/);
        assert.doesNotMatch(screen, /\x1b\[1m[ab]\.txt/);
        saveWhole(tree, "d/a.txt", "aaaaa");
        const updated = await watch.waitFor(/changed: \+0 -0 ~1 rows\n[\s\S]*\(3 rows\)/);
        assert.match(updated, /a\.txt +5\n/);
        const running = (descendants(watch.pid) ?? []).map((found) => found.command);
        assert.ok(
          running.some((command) => command.includes("watch")),
          running.join("\n"),
        );
        watch.type(KEY.ctrlC);
        assert.equal(await watch.exited, 0);
      } finally {
        watch.kill();
      }
      assert.deepEqual(descendants(watch.pid) ?? [], []);
    });

    test("a later run that fails: the error line over the last good rows, then the next answer", async () => {
      const root = makeTree({ "e/1": "1", "e/2": "2" });
      // A file named as no JSON value is makes json() fail on the run after it appears.
      const sql = "SELECT basename, json(basename) AS j FROM './e' ORDER BY basename";
      const watch = new TerminalSession(["watch", sql], { cwd: root, env: {} });
      try {
        await watch.waitFor("(2 rows)");
        saveWhole(root, "e/x", "x");
        const failed = await watch.waitFor(
          /changed: error: malformed JSON \(the rows are the last good answer\)\n[\s\S]*\(2 rows\)/,
        );
        const screen = failed.slice(failed.lastIndexOf("dirq watch:"));
        assert.match(screen, /basename +j\n-+ +-+\n1 +1\n2 +2\n/);
        unlinkSync(join(root, "e/x"));
        saveWhole(root, "e/3", "3");
        const next = await watch.waitFor(/changed: \+1 -0 rows\n[\s\S]*\(3 rows\)/);
        assert.match(next.slice(next.lastIndexOf("dirq watch:")), /1 +1\n2 +2\n\S*3 +3/);
        watch.type(KEY.ctrlC);
        assert.equal(await watch.exited, 0);
      } finally {
        watch.kill();
        removeTree(root);
      }
    });
  },
);
