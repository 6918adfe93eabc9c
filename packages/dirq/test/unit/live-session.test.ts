import assert from "node:assert/strict";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { tempTree } from "../helpers.js";
import { isDirqError } from "../../src/errors.js";
import type { RowChange } from "../../src/indexer/row-changes.js";
import { LiveSession } from "../../src/live/live-session.js";

/** The core's live session built directly, in this process: no CLI, no server, no SDK. */

function session(root: string, timeoutMs = Number.POSITIVE_INFINITY): LiveSession {
  return new LiveSession({
    index: { root, progress: false, fillAllColumns: true },
    folderPrefix: "dirq-session-test-",
    reaper: false,
    runner: { timeoutMs, maxAnswerBytes: 1024, maxProcesses: 1 },
    onWatchError: (error) => assert.fail(`watcher: ${String(error)}`),
  });
}

function sessionFolders(): string[] {
  return readdirSync(tmpdir()).filter((name) => name.startsWith("dirq-session-test-"));
}

async function answer(live: LiveSession, sql: string): Promise<unknown> {
  const body = await live.run(await live.prepare(sql));
  return JSON.parse(typeof body === "string" ? body : Buffer.from(body).toString("utf8"));
}

describe("LiveSession", () => {
  it("runs a statement in a query process over its own index file", async () => {
    const live = session(tempTree({ "a.txt": "a", "b.txt": "bb" }));
    try {
      await live.build();
      assert.deepEqual(await answer(live, "SELECT sum(size) AS n FROM './'"), [{ n: 3 }]);
    } finally {
      await live.close();
    }
  });

  it("maps answers to DirqErrors: an SQL error, an answer past its limit", async () => {
    const live = session(tempTree({ "a.txt": "a" }));
    try {
      await assert.rejects(answer(live, "SELECT no_such_function()"), (error: unknown) => {
        assert.ok(isDirqError(error) && error.code === "SQL_ERROR", String(error));
        return true;
      });
      const text = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) SELECT group_concat('x', '') AS x FROM n`;
      await assert.rejects(answer(live, text), (error: unknown) => {
        assert.ok(isDirqError(error) && error.code === "ANSWER_TOO_LARGE", String(error));
        return true;
      });
    } finally {
      await live.close();
    }
  });

  it("a prepare whose signal aborts rejects with QUERY_CANCELLED", async () => {
    const live = session(tempTree({ "a.txt": "a" }));
    try {
      const stop = new AbortController();
      stop.abort();
      await assert.rejects(live.prepare("SELECT * FROM './'", { signal: stop.signal }), {
        code: "QUERY_CANCELLED",
      });
    } finally {
      await live.close();
    }
  });

  it("fans a watched change out to every subscriber, in commit order", async () => {
    const root = tempTree({ "a.txt": "a" });
    const live = session(root);
    const seen: RowChange[][] = [[], []];
    try {
      await live.build();
      await live.prepare("SELECT path, size FROM './'");
      live.subscribe((changes) => void seen[0]?.push(...changes));
      const unsubscribe = live.subscribe((changes) => void seen[1]?.push(...changes));
      await live.watch();
      writeFileSync(join(root, "a.txt"), "aaaa");
      // The next statement settles the change first.
      assert.deepEqual(await answer(live, "SELECT size FROM './'"), [{ size: 4 }]);
      await live.publish([]);
      assert.deepEqual(
        seen[0]?.map((change) => change.action),
        ["update"],
      );
      assert.deepEqual(seen[1], seen[0]);
      unsubscribe();
      writeFileSync(join(root, "b.txt"), "b");
      assert.deepEqual(await answer(live, "SELECT count(*) AS n FROM './'"), [{ n: 2 }]);
      await live.publish([]);
      assert.equal(seen[0]?.length, 2);
      assert.equal(seen[1]?.length, 1);
    } finally {
      await live.close();
    }
  });

  it("close removes its folder, once, however often it is called", async () => {
    const before = sessionFolders().length;
    const live = session(tempTree({ "a.txt": "a" }));
    assert.equal(sessionFolders().length, before + 1);
    await live.build();
    await Promise.all([live.close(), live.close()]);
    assert.equal(sessionFolders().length, before);
  });

  it("a root that is not a folder throws at once and leaves no folder", () => {
    const before = sessionFolders().length;
    const root = tempTree({ "a.txt": "a" });
    assert.throws(() => session(join(root, "a.txt")), { code: "ROOT_INVALID" });
    assert.equal(sessionFolders().length, before);
    assert.equal(existsSync(join(root, "a.txt")), true);
  });
});
