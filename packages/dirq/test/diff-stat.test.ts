/**
 * Differential harness: `size`, `mtime` and `ctime` equal what `stat` prints (`%s %Y %Z`,
 * whole seconds as the kernel's tv_sec) for generated files whose times sit on and around
 * whole seconds (…999999999 ns, 0 ns, before 1970), and for symlinks to files (the target's
 * numbers). Seeded: DIRQ_TEST_SEED.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { harnessSeed, pick, reference, seededRandom } from "./differential.js";
import { runDirq } from "./helpers.js";

const SEED = harnessSeed(77);
const FILES = 300;

const NANOS = ["000000000", "999999999", "500000000", "000000001", "999000000", "123456789"];

/** A `touch -d @<seconds>.<nanoseconds>` time. */
function timeSpec(random: () => number): string {
  const seconds = pick(random, [
    Math.floor(random() * 2_000_000_000),
    -Math.floor(random() * 1_000_000),
    0,
    -1,
    1_700_000_000,
  ]);
  return `@${seconds}.${pick(random, NANOS)}`;
}

describe(`stat columns equal stat(1) (seed ${SEED}, ${FILES} files)`, () => {
  const random = seededRandom(SEED);
  const root = mkdtempSync(join(tmpdir(), "dirq-stat-"));
  after(() => rmSync(root, { recursive: true, force: true }));
  const touch: string[] = [];
  for (let i = 0; i < FILES; i++) {
    const dir = `d${i % 7}`;
    mkdirSync(join(root, dir), { recursive: true });
    const path = `${dir}/f${i}`;
    writeFileSync(join(root, path), "x".repeat(Math.floor(random() * 5000)));
    touch.push(`touch -m -d ${timeSpec(random)} ${path}`);
  }
  for (let i = 0; i < 20; i++) symlinkSync(`d${i % 7}/f${i}`, join(root, `link${i}`));
  const touched = spawnSync("bash", ["-c", touch.join("\n")], { cwd: root, encoding: "utf8" });
  assert.equal(touched.status, 0, touched.stderr);

  it("agrees with stat -L -c '%n %s %Y %Z' on every file", async () => {
    const listing = reference(
      "bash",
      [
        "-c",
        "find . -mindepth 1 \\( -type f -o -type l \\) -print0 | xargs -0 stat -L -c '%n\t%s\t%Y\t%Z'",
      ],
      { cwd: root },
    );
    const expected = listing
      .trim()
      .split("\n")
      .map((line) => line.split("\t"))
      .map(([name, size, mtime, ctime]) => `${(name as string).slice(2)} ${size} ${mtime} ${ctime}`)
      .sort();
    const result = await runDirq(
      ["SELECT path, size, mtime, ctime FROM './'", "--format", "json"],
      { cwd: root },
    );
    assert.equal(result.code, 0, result.stderr);
    const rows = JSON.parse(result.stdout) as {
      path: string;
      size: number;
      mtime: number;
      ctime: number;
    }[];
    const actual = rows.map((row) => `${row.path} ${row.size} ${row.mtime} ${row.ctime}`).sort();
    assert.equal(actual.length, FILES + 20);
    assert.deepEqual(actual, expected, `seed ${SEED}`);
  });
});
