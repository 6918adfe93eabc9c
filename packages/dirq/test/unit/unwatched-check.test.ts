import assert from "node:assert/strict";
import { mkdirSync, renameSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { UnwatchedCheck } from "../../src/watch/unwatched-check.js";
import { tempTree } from "../helpers.js";

const check = new UnwatchedCheck();
after(() => check.close());

/** A time before every file of a tree made now: a first check reports none of them. */
const LONG_AGO = 0;
const sorted = (keys: string[]) => [...keys].sort();

test("a first check takes the folders as they are, but for files changed since `since`", async () => {
  const root = tempTree({ "a/one.txt": "1", "a/two.txt": "2", "a/sub/x.txt": "x", "b/y.txt": "y" });
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  // A file's times come from the kernel's coarse clock, a little behind `Date.now()`.
  const since = Date.now() - 500;
  writeFileSync(join(root, "b/y.txt"), "y, written since");
  const first = await check.run(root, ["a", "b"], since, []);
  assert.deepEqual(first.changed, ["b/y.txt"]);
  assert.deepEqual(first.listings, [["sub"], []]);
  assert.equal(first.files, 3);
});

test("a later check hands over only the files written, made or removed since, and a gone folder", async () => {
  const root = tempTree({ "a/one.txt": "1", "a/two.txt": "2", "a/three.txt": "3", "b/y.txt": "y" });
  await check.run(root, ["a", "b"], Date.now() + 60_000, []);
  assert.deepEqual((await check.run(root, ["a", "b"], LONG_AGO, [])).changed, []);
  writeFileSync(join(root, "a/one.txt"), "one, longer");
  unlinkSync(join(root, "a/two.txt"));
  writeFileSync(join(root, "a/new.txt"), "new");
  mkdirSync(join(root, "a/made"));
  rmSync(join(root, "b"), { recursive: true });
  const next = await check.run(root, ["a", "b"], LONG_AGO, []);
  assert.deepEqual(sorted(next.changed), ["a/new.txt", "a/one.txt", "a/two.txt"]);
  assert.deepEqual(next.listings, [["made"], null]);
  assert.deepEqual((await check.run(root, ["a"], LONG_AGO, [])).changed, []);
});

test("a folder under a new name is taken as it is: its files move with it, unchanged", async () => {
  const root = tempTree({ "old/f.txt": "f", "old/g.txt": "g" });
  await check.run(root, ["old"], Date.now() + 60_000, []);
  renameSync(join(root, "old"), join(root, "new"));
  const moved = await check.run(root, ["new"], Date.now() + 60_000, []);
  assert.deepEqual(moved.changed, []);
  writeFileSync(join(root, "new/g.txt"), "g, changed");
  assert.deepEqual((await check.run(root, ["new"], LONG_AGO, [])).changed, ["new/g.txt"]);
});

test("a folder renamed with a watched one above it is compared with what it showed before", async () => {
  const root = tempTree({ "p/q/f.txt": "f", "p/q/g.txt": "g" });
  await check.run(root, ["p/q"], Date.now() + 60_000, []);
  // Made before the rename, and long enough before the check that no `since` would tell it.
  writeFileSync(join(root, "p/q/new.txt"), "new");
  unlinkSync(join(root, "p/q/g.txt"));
  renameSync(join(root, "p"), join(root, "r"));
  const moves = [[{ from: "p", to: "r" }]];
  const moved = await check.run(root, ["r/q"], Date.now() + 60_000, moves);
  assert.deepEqual(sorted(moved.changed), ["r/q/g.txt", "r/q/new.txt"]);
});

test("the counts of a check: files stat'ed and files handed over", async () => {
  const before = { ...check.stats };
  const root = tempTree({ "c/1": "1", "c/2": "2" });
  await check.run(root, ["c"], Date.now() + 60_000, []);
  writeFileSync(join(root, "c/1"), "changed");
  await check.run(root, ["c"], LONG_AGO, []);
  assert.equal(check.stats.checks - before.checks, 2);
  assert.equal(check.stats.filesChecked - before.filesChecked, 4);
  assert.equal(check.stats.filesHanded - before.filesHanded, 1);
});
