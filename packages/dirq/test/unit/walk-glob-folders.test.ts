import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { compileBashGlob } from "../../src/scan/bash-glob.js";
import { parsePathTableName } from "../../src/scan/path-selection.js";
import { walkSelection } from "../../src/scan/walk.js";

// A glob walk lists only the folders where the glob can still match something: a brace of
// folder names enters those folders, not every folder beside them, and takes the same files
// as a walk of the whole tree filtered by the glob (the bash harness, diff-bash-glob, holds
// the selections to bash's).

let root = "";

function file(path: string): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), "x");
}

before(() => {
  root = mkdtempSync(join(tmpdir(), "dirq-glob-folders-"));
  for (const folder of ["a", "b", "c", "src/a", "src/b/deep", "test/a", ".hidden/a", "abc/x"]) {
    file(`${folder}/one.md`);
    file(`${folder}/two.txt`);
  }
  file("top.md");
});
after(() => rmSync(root, { recursive: true, force: true }));

/** The files a glob selects, and the folders the walk listed (relative, `''` the root). */
function walk(name: string): { paths: string[]; listed: string[] } {
  const selection = parsePathTableName(name, root);
  assert.ok(selection !== null);
  const listed: string[] = [];
  const { paths } = walkSelection({
    root,
    selection,
    useGitignore: false,
    onDirectory: (dir) => listed.push(dir),
  });
  return { paths, listed: listed.sort() };
}

/** The whole tree's files that the glob matches, as a walk without pruning would find them. */
function matchingFiles(pattern: string): string[] {
  const glob = compileBashGlob(pattern);
  return walk("./").paths.filter((path) => glob.matchesFile(path));
}

const CASES: [pattern: string, listed: string[]][] = [
  ["{a,b}/*", ["", "a", "b"]],
  ["{a,src/b}/*.md", ["", "a", "src", "src/b"]],
  ["src/{a,b}/**/*.md", ["src", "src/a", "src/b", "src/b/deep"]],
  ["a*/*", ["", "a", "abc"]],
  ["*/a/*", ["", "a", "abc", "b", "c", "src", "src/a", "test", "test/a"]],
  [
    "**/deep/*",
    ["", "a", "abc", "abc/x", "b", "c", "src", "src/a", "src/b", "src/b/deep", "test", "test/a"],
  ],
  [".hidden/*/*.md", [".hidden", ".hidden/a"]],
  ["{a,b,zz}/", ["", "a", "b"]],
];

for (const [pattern, listed] of CASES) {
  test(`'./${pattern}' lists only the folders it can match in`, () => {
    const walked = walk(`./${pattern}`);
    assert.deepEqual(walked.listed, listed);
    if (!pattern.endsWith("/")) assert.deepEqual(walked.paths, matchingFiles(pattern));
    assert.ok(walked.paths.length > 0);
  });
}

test("a trailing-slash glob takes every file below the folders it names", () => {
  assert.deepEqual(walk("./{a,src}/").paths.sort(), [
    "a/one.md",
    "a/two.txt",
    "src/a/one.md",
    "src/a/two.txt",
    "src/b/deep/one.md",
    "src/b/deep/two.txt",
  ]);
});
