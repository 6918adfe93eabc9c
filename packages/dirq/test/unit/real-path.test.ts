import assert from "node:assert/strict";
import {
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { test } from "node:test";
import { realPath } from "../../src/shared/real-path.js";
import { harnessSeed, pick, seededRandom } from "../differential.js";

/**
 * Node's own `realpathSync` (JavaScript, an lstat per component) is the reference, for any
 * path the system can open. Past the system's limit of symlinks followed in one lookup (40 on
 * Linux), every call on the path fails with ELOOP, realpath(3) included, while Node's lookups
 * one component at a time each stay under it; dirq reads no file there either way.
 */
function reference(path: string): string | { error: string } {
  try {
    statSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ELOOP") return { error: "ELOOP" };
  }
  try {
    return realpathSync(path);
  } catch (error) {
    return { error: (error as NodeJS.ErrnoException).code ?? "?" };
  }
}

function answer(path: string): string | { error: string } {
  try {
    return realPath(path);
  } catch (error) {
    return { error: (error as NodeJS.ErrnoException).code ?? "?" };
  }
}

test("realPath answers as realpathSync on seeded trees of folders, symlinks and odd names", () => {
  const seed = harnessSeed(4404);
  const random = seededRandom(seed);
  const root = realpathSync(mkdtempSync(join(tmpdir(), "dirq-real-path-")));
  try {
    const names = ["a", "b c", "d.e", "\u00fc", "%20", "..x", "f'g"];
    // Folders (real, or links to one) to make entries in; every entry, to ask about.
    const folders: string[] = [root];
    const made: string[] = [];
    for (let i = 0; i < 60; i++) {
      const parent = pick(random, folders);
      // Links to links nest: past the system's limit a folder cannot be written in at all.
      if (typeof reference(parent) !== "string") continue;
      const path = join(parent, `${pick(random, names)}${i}`);
      const kind = random();
      if (kind < 0.35) {
        mkdirSync(path);
        folders.push(path);
      } else if (kind < 0.5) {
        writeFileSync(path, "x");
      } else {
        // A link to a folder, to an entry, or to nothing; written absolute or relative.
        const missing = join(pick(random, folders), `missing${i}`);
        const target = pick(random, [...folders, ...made, missing]);
        // A relative link is read from the link's real folder (its parent may be a link).
        const fromReal = relative(realpathSync(parent), target) || ".";
        symlinkSync(random() < 0.5 ? target : fromReal, path);
        if (folders.includes(target)) folders.push(path);
      }
      made.push(path);
    }
    symlinkSync("loop-b", join(root, "loop-a"));
    symlinkSync("loop-a", join(root, "loop-b"));
    const probes = [
      ...made,
      ...made.map((path) => join(path, "..", pick(random, ["", "a0", "nothing"]))),
      join(root, "loop-a"),
      join(root, "missing"),
    ];
    for (const path of probes) {
      assert.deepEqual(answer(path), reference(path), `${path} (DIRQ_TEST_SEED=${seed})`);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
