import assert from "node:assert/strict";
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, describe, it } from "node:test";
import { removeTree, tempTree } from "../helpers.js";
import { InclusionCheck } from "../../src/scan/inclusion.js";
import {
  type ChangeBatch,
  type TreeWatcher,
  watchTree,
  type WatchOptions,
} from "../../src/watch/file-watcher.js";

// The watcher itself on a real tree: how long a batch waits for the changes that belong to it.

const watchers: TreeWatcher[] = [];
const roots: string[] = [];

after(async () => {
  await Promise.all(watchers.map((watcher) => watcher.close()));
  roots.forEach(removeTree);
});

/** A tree of `count` folders `f<i>`, a file in each, watched; its batches are collected. */
async function watchedFolders(count: number, options: Partial<WatchOptions>) {
  const spec: Record<string, string> = {};
  for (let i = 0; i < count; i++) spec[`f${i}/a.txt`] = `${i}`;
  const root = tempTree(spec);
  roots.push(root);
  const batches: ChangeBatch[] = [];
  const watcher = watchTree(root, {
    ...options,
    onBatch: async (batch) => {
      batches.push(batch);
    },
    onError: (error) => assert.fail(String(error)),
  });
  watchers.push(watcher);
  await watcher.ready;
  return { root, batches };
}

/**
 * Renames `f<i>` to `m<i>` one after another, the first `atOnce` with no pause, the rest
 * `pauseMs` apart; returns the moves.
 */
async function renameAll(root: string, count: number, atOnce: number, pauseMs: number) {
  const moves = [];
  for (let i = 0; i < count; i++) {
    renameSync(join(root, `f${i}`), join(root, `m${i}`));
    moves.push({ from: `f${i}`, to: `m${i}` });
    if (i >= atOnce - 1) await sleep(pauseMs);
  }
  return moves;
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!check()) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await sleep(20);
  }
}

const byFrom = (a: { from: string }, b: { from: string }) => a.from.localeCompare(b.from);

/**
 * Renames `count` watched folders (see `renameAll`) with a quiet longer than any pause between
 * renames and a usual wait far shorter than their whole; returns the batches once every move
 * came, having checked that the moves are the renames, each paired.
 */
async function batchesOfRenames(count: number, atOnce: number, pauseMs: number) {
  const { root, batches } = await watchedFolders(count, {
    quietMs: 500,
    maxWaitMs: 50,
    stormWaitMs: 20_000,
  });
  const moves = await renameAll(root, count, atOnce, pauseMs);
  const moved = () => batches.flatMap((batch) => batch.moves);
  await until(() => moved().length >= moves.length, "the moves");
  assert.deepEqual([...moved()].sort(byFrom), moves.sort(byFrom));
  return batches;
}

describe("watcher: a batch's wait", { concurrency: true }, () => {
  it("a storm of folder renames longer than a batch's usual wait is one batch, its moves paired", async () => {
    // Only the storm's longer wait keeps them together. The first seventy make the batch a
    // storm before the usual wait is up.
    const batches = await batchesOfRenames(100, 70, 3);
    assert.equal(batches.length, 1);
  });

  it("files made one after another keep the usual wait, however many", async () => {
    const { root, batches } = await watchedFolders(1, {
      quietMs: 500,
      maxWaitMs: 50,
      stormWaitMs: 20_000,
    });
    const made = new Set<string>();
    for (let i = 0; i < 200; i++) {
      writeFileSync(join(root, `f0/new-${i}.txt`), `${i}`);
      made.add(`f0/new-${i}.txt`);
      // A hundred at once, then ten at a time: as many as a storm's folders before the
      // usual wait is up, and more after it.
      if (i >= 99 && i % 10 === 9) await sleep(30);
    }
    const seen = () => new Set(batches.flatMap((batch) => [...batch.paths]));
    await until(() => [...made].every((path) => seen().has(path)), "every file made");
    assert.ok(batches.length >= 2, `${batches.length} batch(es)`);
  });

  it("a few renames keep the usual wait", async () => {
    const batches = await batchesOfRenames(10, 1, 30);
    assert.ok(batches.length >= 2, `${batches.length} batch(es)`);
  });
});

describe("watcher: a folder renamed back and forth", () => {
  /**
   * Watches a tree with `p/q/a.txt`; `p` is renamed back to `p` by the test for ignored folders
   * the first time it is asked about `r` (`rules` decides the rest): while the move of a
   * rename `p` → `r` is paired, before it is applied. Returns the root and the batches.
   */
  async function renamedBackWhilePaired(rules: (root: string) => (path: string) => boolean) {
    const root = tempTree({ "p/q/a.txt": "a" });
    roots.push(root);
    const ignores = rules(root);
    const batches: ChangeBatch[] = [];
    let renamedBack = false;
    const watcher = watchTree(root, {
      onBatch: async (batch) => {
        batches.push(batch);
      },
      onError: (error) => assert.fail(String(error)),
      ignoredFolders: () => (path) => {
        if (path === "r" && !renamedBack) {
          renamedBack = true;
          renameSync(join(root, "r"), join(root, "p"));
        }
        return ignores(path);
      },
    });
    watchers.push(watcher);
    await watcher.ready;
    renameSync(join(root, "p"), join(root, "r"));
    return { root, batches };
  }

  /** Waits (5 s at most) for a batch that names `path`, and fails without one. */
  async function assertSeen(batches: ChangeBatch[], path: string) {
    const seen = () => batches.some((batch) => batch.paths.has(path));
    const deadline = Date.now() + 5_000;
    while (!seen() && Date.now() < deadline) await sleep(20);
    assert.ok(seen(), `no event for ${path}: ${JSON.stringify(batches.map((b) => [...b.paths]))}`);
  }

  const moves = (batches: ChangeBatch[]) => batches.flatMap((batch) => batch.moves);

  it("follows a folder renamed back while its first rename is applied", async () => {
    // The second rename's events come while the first's batch is handled.
    const { root, batches } = await renamedBackWhilePaired(() => () => false);
    await until(() => moves(batches).length >= 2, "both moves");
    assert.deepEqual(moves(batches), [
      { from: "p", to: "r" },
      { from: "r", to: "p" },
    ]);
    // The folder and the one in it are still watched, under their names now.
    writeFileSync(join(root, "p/q/b.txt"), "b");
    await assertSeen(batches, "p/q/b.txt");
  });

  it("does not take a folder missing when the ignore rules are asked about it for an ignored one", async () => {
    // As the server asks: by the rules of the tree (`.gitignore` files included).
    const { root, batches } = await renamedBackWhilePaired((root) => {
      const check = new InclusionCheck(root, { useGitignore: true });
      return (path) => !check.includes(`${path}/\u0001`);
    });
    await until(() => moves(batches).length >= 2, "both moves");
    // `r` was asked about while nothing was there; renamed there again, the folder is followed.
    renameSync(join(root, "p"), join(root, "r"));
    await until(() => moves(batches).length >= 3, "the third move");
    assert.deepEqual(moves(batches).at(-1), { from: "p", to: "r" });
    writeFileSync(join(root, "r/q/b.txt"), "b");
    await assertSeen(batches, "r/q/b.txt");
  });
});
