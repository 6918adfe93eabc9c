import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import {
  flooredSeconds,
  STAT_FIELDS,
  statJoinedPaths,
  statPaths,
} from "../../src/scan/file-stats.js";
import { nativeBatchStat } from "../../src/scan/native-stat.js";

// The native batch stat (native/dirq-stat.c) against Node's own stat, entry by entry: regular
// files, a symlink to a file (followed), and what is not a regular file (a folder, a symlink to
// one, a broken symlink, a FIFO, a missing path), which all get a NaN size (dropped rows).

let root = "";
const paths: string[] = [];

before(() => {
  root = mkdtempSync(join(tmpdir(), "dirq-native-stat-"));
  mkdirSync(join(root, "dir"));
  for (let i = 0; i < 40; i++) {
    writeFileSync(join(root, "dir", `f${i}`), "x".repeat(i * 37));
    paths.push(`dir/f${i}`);
  }
  // Times before 1970 and on a whole second: the kernel's seconds field, floored.
  execFileSync("touch", ["-m", "-d", "@-12345.999999999", join(root, "dir", "f3")]);
  execFileSync("touch", ["-m", "-d", "@1700000000.000000000", join(root, "dir", "f4")]);
  symlinkSync("dir/f5", join(root, "to-file"));
  symlinkSync("dir", join(root, "to-dir"));
  symlinkSync("nowhere", join(root, "broken"));
  execFileSync("mkfifo", [join(root, "fifo")]);
  const long = `${"n".repeat(200)}/${"m".repeat(200)}`;
  mkdirSync(join(root, "n".repeat(200)));
  writeFileSync(join(root, long), "long");
  paths.push("to-file", "to-dir", "broken", "fifo", "gone", "dir", long, "dir/f1");
});
after(() => rmSync(root, { recursive: true, force: true }));

/** What the extension must answer, from Node's stat with nanoseconds. */
function expected(): number[] {
  return paths.flatMap((path) => {
    const stats = statSync(join(root, path), { bigint: true, throwIfNoEntry: false });
    if (stats === undefined || !stats.isFile()) return [Number.NaN, 0, 0];
    return [Number(stats.size), flooredSeconds(stats.mtimeNs), flooredSeconds(stats.ctimeNs)];
  });
}

test(
  "the extension is built and loads on this platform",
  { skip: process.platform === "win32" },
  () => {
    assert.notEqual(nativeBatchStat(), null, "run `npm run build` in packages/dirq (needs cc)");
  },
);

test(
  "a batch stat equals Node's stat, entry by entry",
  { skip: process.platform === "win32" },
  () => {
    const batchStat = nativeBatchStat();
    assert.ok(batchStat !== null);
    const bytes = batchStat(`${root}/`, paths.join("\0"));
    const numbers = [
      ...new Float64Array(bytes.buffer, bytes.byteOffset, paths.length * STAT_FIELDS),
    ];
    assert.deepEqual(numbers, expected());
  },
);

test("statPaths and statJoinedPaths give the same numbers through the extension", () => {
  const want = expected();
  assert.deepEqual([...statPaths(root, paths)], want);
  assert.deepEqual([...statJoinedPaths(root, paths.join("\0"))], want);
  assert.deepEqual([...statJoinedPaths(root, "")], []);
  // Small batches go through JavaScript: the same numbers.
  assert.deepEqual([...statPaths(root, paths.slice(-3))], want.slice(-9));
});
