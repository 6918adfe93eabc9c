import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";
import { listTree, TreeListingHelper } from "../../src/scan/tree-listing-helper.js";

// Whichever thread lists a folder, its listing is the one `listTree` gives on the calling
// thread, and each `list` call's folders come back as its own, whatever another call does.

const FOLDERS = 120;
let root = "";
const folders: string[] = [];

before(() => {
  root = mkdtempSync(join(tmpdir(), "dirq-listing-"));
  for (let d = 0; d < FOLDERS; d++) {
    const folder = `m${d}`;
    folders.push(folder);
    mkdirSync(join(root, folder, "sub", ".git"), { recursive: true });
    for (let f = 0; f < d % 7; f++) writeFileSync(join(root, folder, `f${f}.txt`), "x");
    writeFileSync(join(root, folder, "sub", "deep.md"), "# deep");
    // Built-in skips stay skipped on the thread too.
    writeFileSync(join(root, folder, "sub", ".git", "HEAD"), "ref");
  }
  // A name that is not valid UTF-8, and a folder that is not there.
  writeFileSync(Buffer.from(`${root}/m3/caf\xe9`, "latin1"), "raw");
  folders.push("gone");
});
after(() => rmSync(root, { recursive: true, force: true }));

/** Takes every folder in order, a little slower than the thread lists them. */
async function takeAll(helper: TreeListingHelper, names: readonly string[]) {
  const listings = helper.list(names);
  const taken = [];
  for (let at = 0; at < names.length; at++) {
    taken.push(listings.take(at));
    if (at % 8 === 0) await sleep(2);
  }
  listings.close();
  return taken;
}

test("a folder listed on the thread is listed as on the calling thread", async () => {
  const helper = new TreeListingHelper(root);
  try {
    helper.start();
    await sleep(300);
    const expected = folders.map((folder) => listTree(root, folder));
    // Which thread lists what depends on scheduling: on a loaded machine the thread may not run
    // during a whole call. Every call's listings are right; one of a few is shared.
    let shared = false;
    for (let call = 0; call < 5 && !shared; call++) {
      const before = helper.listedOnThread;
      assert.deepEqual(await takeAll(helper, folders), expected);
      const onThread = helper.listedOnThread - before;
      shared = onThread > 0 && onThread < folders.length;
    }
    assert.ok(shared, "in one of five calls the thread listed some folders, the caller the rest");
  } finally {
    await helper.close();
  }
});

test("a call taken in part leaves the next call's listings right", async () => {
  const helper = new TreeListingHelper(root);
  try {
    const first = helper.list(folders);
    assert.deepEqual(first.take(0), listTree(root, folders[0] as string));
    first.close();
    const reversed = [...folders].reverse();
    const second = helper.list(reversed);
    const third = helper.list(folders.slice(10, 20));
    for (let at = 0; at < 10; at++) {
      assert.deepEqual(third.take(at), listTree(root, folders[10 + at] as string));
    }
    for (let at = 0; at < reversed.length; at++) {
      assert.deepEqual(second.take(at), listTree(root, reversed[at] as string));
    }
    second.close();
    third.close();
  } finally {
    await helper.close();
  }
});

test("without the thread (closed), every folder is listed on the calling thread", async () => {
  const helper = new TreeListingHelper(root);
  helper.start();
  await helper.close();
  const taken = await takeAll(helper, folders.slice(0, 20));
  assert.deepEqual(
    taken,
    folders.slice(0, 20).map((folder) => listTree(root, folder)),
  );
});
