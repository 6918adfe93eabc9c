import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import {
  flooredSeconds,
  STAT_FIELDS,
  statJoinedPaths,
  statPaths,
} from "../../src/scan/file-stats.js";
import { listDirectory } from "../../src/scan/list-directory.js";
import { nativeFs } from "../../src/scan/native-fs.js";

// The native batch stat (native/dirq-fs.c) against Node's own stat, entry by entry: regular
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
    assert.notEqual(nativeFs(), null, "run `npm run build` in packages/dirq (needs cc)");
  },
);

test(
  "a batch stat equals Node's stat, entry by entry",
  { skip: process.platform === "win32" },
  () => {
    const native = nativeFs();
    assert.ok(native !== null);
    const bytes = native.statBatch(`${root}/`, paths.join("\0"));
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

/** Name and kind of each entry, sorted by name: what the walk reads of a listing. */
function kinds(entries: readonly ListedEntryLike[]): string[] {
  return entries
    .map((entry) => {
      const kind = entry.isDirectory()
        ? "dir"
        : entry.isFile()
          ? "file"
          : entry.isSymbolicLink()
            ? "link"
            : "other";
      return `${entry.name} ${kind}`;
    })
    .sort();
}

interface ListedEntryLike {
  name: string;
  isDirectory(): boolean;
  isFile(): boolean;
  isSymbolicLink(): boolean;
}

test(
  "a native listing equals Node's readdir, name and kind of every entry",
  { skip: process.platform === "win32" },
  () => {
    assert.ok(nativeFs() !== null);
    // Names that are not valid UTF-8 decode to the same U+FFFD text as Node's.
    writeFileSync(Buffer.from(`${root}/caf\xe9`, "latin1"), "latin-1 name");
    writeFileSync(join(root, "\u{1F600} emoji"), "astral");
    writeFileSync(join(root, "\uFF21 fullwidth"), "BMP");
    mkdirSync(join(root, "empty"));
    for (const folder of [root, join(root, "dir"), join(root, "empty")]) {
      const node = readdirSync(folder, { withFileTypes: true, encoding: "utf8" });
      assert.deepEqual(kinds(listDirectory(folder)), kinds(node), folder);
    }
    // Sorted in byte order by the extension; the walk sorts again in UTF-16 order.
    const names = listDirectory(root).map((entry) => entry.name);
    assert.deepEqual(
      names,
      [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))),
    );
  },
);

test("a folder that cannot be listed throws Node's error", () => {
  assert.throws(() => listDirectory(join(root, "gone")), { code: "ENOENT" });
  assert.throws(() => listDirectory(join(root, "dir", "f1")), { code: "ENOTDIR" });
});
