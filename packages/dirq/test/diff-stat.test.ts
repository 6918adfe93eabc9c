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
import { open } from "../src/index.js";
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

/** Stats through the native extension (the default) and through JavaScript (`DIRQ_NATIVE_FS=0`). */
const STATTERS = [
  { name: "native", env: {} },
  { name: "JavaScript", env: { DIRQ_NATIVE_FS: "0" } },
];

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

  for (const statter of STATTERS)
    it(`agrees with stat -L -c '%n %s %Y %Z' on every file (${statter.name} stats)`, async () => {
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
        .map(
          ([name, size, mtime, ctime]) => `${(name as string).slice(2)} ${size} ${mtime} ${ctime}`,
        )
        .sort();
      const result = await runDirq(
        ["SELECT path, size, mtime, ctime FROM './'", "--format", "json"],
        { cwd: root, env: statter.env },
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

/**
 * Many batches, plain files, symlinks and names that are not valid UTF-8 (stat'ed through their
 * raw bytes), whether the root is the working directory (stats go by relative path) or not.
 * The helper thread's share of the stats: unit/stat-helper.test.ts.
 */
describe(`stat columns equal stat(1) on a larger tree (seed ${SEED})`, () => {
  const MANY = 9_000;
  const random = seededRandom(SEED + 1);
  const parent = mkdtempSync(join(tmpdir(), "dirq-stat-many-"));
  const root = join(parent, "tree");
  after(() => rmSync(parent, { recursive: true, force: true }));
  assert.notEqual(process.cwd(), root);
  for (let i = 0; i < MANY; i++) {
    const dir = join(root, `d${i % 37}`);
    if (i < 37) mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `f${i}`), "y".repeat(Math.floor(random() * 3000)));
  }
  for (let i = 0; i < 40; i++) symlinkSync(`d${i % 37}/f${i}`, join(root, `link${i}`));
  // Latin-1 bytes: not valid UTF-8.
  for (let i = 0; i < 40; i++) {
    writeFileSync(Buffer.from(`${root}/d${i % 37}/caf\xe9-${i}`, "latin1"), "z".repeat(i));
  }
  const listing = reference(
    "bash",
    [
      "-c",
      "find . -mindepth 1 \\( -type f -o -type l \\) -print0 | xargs -0 stat -L -c '%s\t%Y\t%Z'",
    ],
    { cwd: root },
  );
  const expected = listing.trim().split("\n").sort();

  for (const statter of STATTERS)
    it(`agrees with stat -L on ${MANY + 80} files, the root the working directory (${statter.name} stats)`, async () => {
      const result = await runDirq(["SELECT size, mtime, ctime FROM './'", "--format", "json"], {
        cwd: root,
        env: statter.env,
      });
      assert.equal(result.code, 0, result.stderr);
      const rows = JSON.parse(result.stdout) as StatRow[];
      assert.deepEqual(statLines(rows), expected, `seed ${SEED}`);
    });

  it(`agrees with stat -L through the SDK, the root elsewhere (absolute paths)`, async () => {
    await using db = open({ root, progress: false });
    const rows = (await db.query("SELECT size, mtime, ctime FROM './'")) as unknown as StatRow[];
    assert.deepEqual(statLines(rows), expected, `seed ${SEED}`);
  });
});

interface StatRow {
  size: number;
  mtime: number;
  ctime: number;
}

function statLines(rows: readonly StatRow[]): string[] {
  return rows.map((row) => `${row.size}\t${row.mtime}\t${row.ctime}`).sort();
}
