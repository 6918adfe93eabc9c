import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { nativeFs } from "../../src/scan/native-fs.js";
import { checkFolderInJs } from "../../src/watch/folder-check.js";
// The module that opens SQLite provides the extension's connection (scan/ has no SQLite).
import "../../src/indexer/database.js";

// A check of a folder without a watch (dirq_check_folder in native/dirq-fs.c, and its
// JavaScript twin in src/watch/folder-check.ts): the same entries, types and "changed since"
// marks from both, and a blob that differs from the previous one after every kind of change a
// file can have, including a rewrite of the same size within the same second.

let root = "";
const native = () => nativeFs();

interface Entry {
  letter: string;
  name: string;
  signature: string;
}

/** A check blob's entries: its letter, name and (not a folder) signature bytes. */
function entries(blob: Buffer): Entry[] {
  const found: Entry[] = [];
  let at = 0;
  while (at < blob.length) {
    const letter = String.fromCharCode(blob[at] as number);
    const end = blob.indexOf(0, at + 1);
    const next = letter.toLowerCase() === "d" ? end + 1 : end + 9;
    const name = blob.toString("latin1", at + 1, end);
    found.push({ letter, name, signature: blob.toString("hex", end + 1, next) });
    at = next;
  }
  return found;
}

/** Both checks of `folder`, which must agree on everything but the signatures' bytes. */
function checkBoth(folder: string, since: number | null): Buffer[] {
  const path = Buffer.from(folder);
  const fromJs = checkFolderInJs(path, since);
  const fromC = native()?.checkFolder(path, since) ?? null;
  assert.ok(fromJs !== null);
  if (fromC === null) return [fromJs];
  const shape = (blob: Buffer) => entries(blob).map(({ letter, name }) => `${letter}${name}`);
  assert.deepEqual(shape(fromC), shape(fromJs));
  return [fromJs, fromC];
}

/** A seeded generator (a linear congruential one): the same folder on every run. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
}

before(() => {
  root = mkdtempSync(join(tmpdir(), "dirq-folder-check-"));
  const random = seeded(66);
  for (let i = 0; i < 60; i++) {
    writeFileSync(join(root, `f${i}.txt`), "x".repeat(Math.floor(random() * 500)));
  }
  mkdirSync(join(root, "sub"));
  symlinkSync("f1.txt", join(root, "link"));
  symlinkSync("missing", join(root, "broken"));
  execFileSync("mkfifo", [join(root, "pipe")]);
  writeFileSync(Buffer.concat([Buffer.from(`${root}/`), Buffer.from([0x6e, 0xff])]), "latin");
});

after(() => rmSync(root, { recursive: true, force: true }));

test("native and JavaScript checks list the same entries, types and order", () => {
  const [blob] = checkBoth(root, null);
  const listed = entries(blob as Buffer);
  const letter = (name: string) => listed.find((entry) => entry.name === name)?.letter;
  assert.equal(letter("sub"), "d");
  assert.equal(letter("f3.txt"), "f");
  assert.equal(letter("link"), "l");
  assert.equal(letter("broken"), "l");
  assert.equal(letter("pipe"), "o");
  assert.equal(letter("n\u00ff"), "f", "a name that is not UTF-8 keeps its bytes");
  const names = listed.map((entry) => Buffer.from(entry.name, "latin1"));
  const sorted = [...names].sort(Buffer.compare);
  assert.deepEqual(names, sorted, "sorted by the names' bytes");
  assert.equal(native()?.checkFolder(Buffer.from(join(root, "nothing")), null) ?? null, null);
  assert.equal(checkFolderInJs(Buffer.from(join(root, "nothing")), null), null);
});

test("marks, for a first check, the files changed since a time (upper case)", () => {
  const since = Date.now() + 60_000;
  utimesSync(join(root, "f7.txt"), since / 1000 + 1, since / 1000 + 1);
  for (const blob of checkBoth(root, since)) {
    const marked = entries(blob).filter((entry) => entry.letter !== entry.letter.toLowerCase());
    // Its change time is now, before `since`; its modification time is after it.
    assert.deepEqual(
      marked.map((entry) => entry.name),
      ["f7.txt"],
    );
  }
});

test("a blob equals the previous one until something in the folder changes", () => {
  const changes: [string, () => void][] = [
    ["a rewrite of the same size", () => writeFileSync(join(root, "f2.txt"), "y".repeat(size(2)))],
    ["a mode changed (the change time only)", () => chmodSync(join(root, "f3.txt"), 0o600)],
    [
      "the modification time put back",
      () => {
        const { atime, mtime } = statSync(join(root, "f4.txt"));
        writeFileSync(join(root, "f4.txt"), "z".repeat(size(4)));
        utimesSync(join(root, "f4.txt"), atime, mtime);
      },
    ],
    ["a file renamed", () => renameSync(join(root, "f5.txt"), join(root, "g5.txt"))],
    ["a file removed", () => unlinkSync(join(root, "f6.txt"))],
    ["a file made", () => writeFileSync(join(root, "new.txt"), "")],
  ];
  for (const [what, change] of changes) {
    const before = checkBoth(root, null);
    assert.deepEqual(checkBoth(root, null), before, `unchanged before ${what}`);
    change();
    const afterwards = checkBoth(root, null);
    afterwards.forEach((blob, at) => assert.notDeepEqual(blob, before[at], what));
  }
});

function size(i: number): number {
  return statSync(join(root, `f${i}.txt`)).size;
}
