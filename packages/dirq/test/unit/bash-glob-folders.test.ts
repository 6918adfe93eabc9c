/**
 * A glob's per-folder matcher (`fileMatcherIn`, which the walk uses so each file costs only its
 * own name) answers as `matchesFile` does on the whole path, for seeded generated patterns and
 * paths: globstars anywhere, dot names, brace alternatives, classes. (`matchesFile` itself is
 * checked against bash in test/diff-bash-glob.test.ts.)
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { compileBashGlob } from "../../src/scan/bash-glob.js";
import { harnessSeed, pick, seededRandom } from "../differential.js";

const SEED = harnessSeed(3636);
const SEGMENTS = [
  "**",
  "*",
  "a",
  "src",
  ".hidden",
  "*.md",
  "x?",
  "[ab]*",
  "{a,src}",
  ".*",
  "*.{md,txt}",
];
const NAMES = ["a", "src", ".hidden", "x.md", "y.txt", "xa", "b.md", ".env", "ab", "README.md"];

test(`fileMatcherIn(dir)(name) equals matchesFile(dir/name) (seed ${SEED})`, () => {
  const random = seededRandom(SEED);
  let matches = 0;
  for (let p = 0; p < 1000; p++) {
    const length = 1 + Math.floor(random() * 4);
    const pattern = Array.from({ length }, () => pick(random, SEGMENTS)).join("/");
    const glob = compileBashGlob(pattern);
    for (let q = 0; q < 40; q++) {
      const depth = Math.floor(random() * 4);
      const dir = Array.from({ length: depth }, () => pick(random, NAMES)).join("/");
      const name = pick(random, NAMES);
      const path = dir === "" ? name : `${dir}/${name}`;
      const want = glob.matchesFile(path);
      const got = glob.fileMatcherIn(dir)?.(name) ?? false;
      assert.equal(got, want, `pattern ${pattern}, path ${path}`);
      if (want) matches++;
    }
  }
  // The cases are not all misses.
  assert.ok(matches > 600, `only ${matches} matches`);
});

test(`bulkFileMatcherIn(dir) finds in a NUL-joined listing the names fileMatcherIn takes (seed ${SEED})`, () => {
  const random = seededRandom(SEED + 1);
  const names = [...NAMES, "a.md", ".md", "x\ty.md", "md", "a.b.md", "日本.md", "😀.txt", "[ab]"];
  let bulkCases = 0;
  for (let p = 0; p < 1000; p++) {
    const length = 1 + Math.floor(random() * 4);
    const pattern = Array.from({ length }, () => pick(random, SEGMENTS)).join("/");
    const glob = compileBashGlob(pattern);
    for (let q = 0; q < 10; q++) {
      const depth = Math.floor(random() * 3);
      const dir = Array.from({ length: depth }, () => pick(random, NAMES)).join("/");
      const listing = [
        ...new Set(Array.from({ length: 1 + Math.floor(random() * 8) }, () => pick(random, names))),
      ].sort();
      const bulk = glob.bulkFileMatcherIn(dir);
      if (bulk === null) continue;
      bulkCases++;
      const matcher = glob.fileMatcherIn(dir);
      const want = matcher === null ? [] : listing.filter((name) => matcher(name));
      const matched = listing.join("\0").match(bulk) ?? [];
      // Each match is the name with the NUL before it, but a first name at the start.
      const found = matched.map((match, i) =>
        i === 0 && listing[0] === match ? match : match.replace(/^\0/, ""),
      );
      assert.deepEqual(found, want, `pattern ${pattern} in ${dir}`);
      assert.ok(
        matched.every((match, i) => match.startsWith("\0") || (i === 0 && listing[0] === match)),
        `pattern ${pattern} in ${dir}: ${JSON.stringify(matched)}`,
      );
    }
  }
  assert.ok(bulkCases > 500, `only ${bulkCases} cases had a bulk matcher`);
});
