import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { parsePathTableName } from "../../src/scan/path-selection.js";
import { type ResumePoint, SelectionWalker, type WalkOptions } from "../../src/scan/walk.js";
import { seededRandom } from "../differential.js";

// A walk split in two (`split`, then a walker with `resume`) lists exactly what one walk
// lists, in the same order, wherever the split falls: nested folders, .gitignore files at
// several levels, globs with a depth limit or a trailing slash, names that are not UTF-8.

let root = "";

function file(path: string, text = "x"): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
}

before(() => {
  root = mkdtempSync(join(tmpdir(), "dirq-split-"));
  const random = seededRandom(1818);
  for (let i = 0; i < 400; i++) {
    const depth = Math.floor(random() * 4);
    const parts = Array.from({ length: depth }, () => `d${Math.floor(random() * 4)}`);
    const ext = ["md", "ts", "log", "txt"][Math.floor(random() * 4)] as string;
    file([...parts, `f${i}.${ext}`].join("/"));
  }
  file(".gitignore", "*.log\nd3/d1/\n");
  file("d0/.gitignore", "!keep.log\n*.txt\n");
  file("d0/keep.log");
  file("node_modules/x.md");
  file("d2/.hidden.md");
  writeFileSync(Buffer.from(`${root}/d1/caf\xe9.md`, "latin1"), "raw");
  mkdirSync(Buffer.from(`${root}/d1/dir\xe9`, "latin1"));
  writeFileSync(Buffer.from(`${root}/d1/dir\xe9/inner.md`, "latin1"), "raw");
  file("top.md");
  symlinkSync("top.md", join(root, "link.md"));
});
after(() => rmSync(root, { recursive: true, force: true }));

function options(name: string): WalkOptions {
  const selection = parsePathTableName(name, root);
  assert.ok(selection !== null);
  return { root, selection, useGitignore: true, extraIgnores: ["d2/d0/**"] };
}

function walkAll(walker: SelectionWalker): string[] {
  const paths: string[] = [];
  for (let batch = walker.next(); batch !== null; batch = walker.next()) paths.push(...batch.paths);
  return paths;
}

test("the tree exercises ignore rules, raw names and links", () => {
  const whole = walkAll(new SelectionWalker(options("./")));
  for (const path of ["d0/keep.log", "d1/caf\uFFFD.md", "d1/dir\uFFFD/inner.md", "link.md"]) {
    assert.ok(whole.includes(path), path);
  }
  assert.deepEqual(
    whole.filter((path) => path.endsWith(".log") || path.startsWith("node_modules/")),
    ["d0/keep.log"],
  );
  assert.ok(!whole.some((path) => path.startsWith("d0/") && path.endsWith(".txt")));
});

const NAMES = ["./", "./**/*.md", "./d0/", "./d1/**", "./*/*/", "./**/d0/*.ts"];

for (const name of NAMES) {
  test(`a split walk of '${name}' lists what one walk lists, in order`, () => {
    const whole = walkAll(new SelectionWalker(options(name)));
    assert.ok(whole.length > 0);
    let splits = 0;
    for (const afterBatches of [0, 1, 2, 5, 9, 20]) {
      for (const share of [0.1, 0.5, 0.9, 1]) {
        const first = new SelectionWalker(options(name), 4);
        const paths: string[] = [];
        let resume: ResumePoint | null = null;
        for (let batch = first.next(), n = 0; batch !== null; batch = first.next(), n++) {
          paths.push(...batch.paths);
          if (n === afterBatches) resume = first.split(share);
        }
        if (resume !== null) {
          splits++;
          paths.push(...walkAll(new SelectionWalker({ ...options(name), resume })));
        }
        assert.deepEqual(paths, whole, `split after ${afterBatches} batches, share ${share}`);
      }
    }
    assert.ok(splits > 0, "some walks were split");
  });
}
