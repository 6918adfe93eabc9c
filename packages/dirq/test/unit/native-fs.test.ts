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
import { type Listing, listDirectory } from "../../src/scan/list-directory.js";
import { nativeFs } from "../../src/scan/native-fs.js";
// The module that opens SQLite provides the extension's connection (scan/ has no SQLite).
import "../../src/indexer/database.js";

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

/** A `Listing` (names and type letters) as entries Node's `Dirent`s can be compared with. */
function entriesOf(listing: Listing): ListedEntryLike[] {
  return listing.names.map((name, i) => {
    const type = listing.types[i];
    return {
      name,
      isDirectory: () => type === "d",
      isFile: () => type === "f",
      isSymbolicLink: () => type === "l",
    };
  });
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
      const listing = listDirectory(folder);
      assert.equal(listing.types.length, listing.names.length);
      assert.deepEqual(kinds(entriesOf(listing)), kinds(node), folder);
    }
    // Sorted in byte order by the extension, and again in UTF-16 order for the walk.
    const native = nativeFs()?.listDir(root) ?? "";
    const bytewise = native.slice(native.indexOf("\0") + 1).split("\0");
    assert.deepEqual(
      bytewise,
      [...bytewise].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))),
    );
    const names = listDirectory(root).names;
    assert.deepEqual(names, [...names].sort());
    assert.notDeepEqual(names, bytewise);
  },
);

test("a folder that cannot be listed throws Node's error", () => {
  assert.throws(() => listDirectory(join(root, "gone")), { code: "ENOENT" });
  assert.throws(() => listDirectory(join(root, "dir", "f1")), { code: "ENOTDIR" });
});

/** The extension's read-ahead, with nothing an earlier test queued left in it. */
function clearedReadAhead() {
  const native = nativeFs();
  assert.ok(native !== null);
  native.readAhead.dropAll();
  return { native, readAhead: native.readAhead };
}

// Reading ahead on the extension's thread (dirq-fs.c, "Reading ahead"): listings and stat
// batches taken by ticket equal the direct calls, in any order, whether the thread ran them,
// the caller did, or the ticket was dropped (then the caller lists or stats itself).

test(
  "listings read ahead equal direct listings, taken in any order or after a drop",
  { skip: process.platform === "win32" },
  () => {
    const { native, readAhead } = clearedReadAhead();
    const folders = [root, join(root, "dir"), join(root, "n".repeat(200)), join(root, "gone")];
    const { first, accepted } = readAhead.list(folders);
    assert.equal(accepted, folders.length);
    // The last first: the thread may have begun any of them; each answer is its own folder's.
    for (const index of [3, 1, 0, 2]) {
      const want = native.listDir(folders[index] as string);
      assert.equal(readAhead.take(first + index, true), want, folders[index]);
    }
    // A ticket taken twice, or never given, is unknown: null, the caller lists itself.
    assert.equal(readAhead.take(first, true), null);
    assert.equal(readAhead.take(first + 1_000_000, true), null);
    // Dropped before they were taken: null, and the thread goes on with later work.
    const dropped = readAhead.list(folders);
    readAhead.dropAll();
    for (let i = 0; i < dropped.accepted; i++) {
      assert.equal(readAhead.take(dropped.first + i, true), null);
    }
    const again = readAhead.list([root]);
    assert.equal(readAhead.take(again.first, true), native.listDir(root));
  },
);

/** `count` stat batches of every path queued for reading ahead, and the direct answer. */
function queuedStatBatches(count: number) {
  const native = nativeFs();
  assert.ok(native !== null);
  const { readAhead } = native;
  const joined = paths.join("\0");
  const tickets = Array.from({ length: count }, () => readAhead.stat(`${root}/`, joined));
  assert.ok(tickets.every((ticket) => ticket > 0));
  return { native, readAhead, direct: native.statBatch(`${root}/`, joined), tickets };
}

test(
  "stat batches claimed by the caller while threads run others are each answered once",
  { skip: process.platform === "win32" },
  () => {
    const { readAhead, direct, tickets } = queuedStatBatches(40);
    // Claimed newest first: the caller runs those no thread began; the rest come by waiting.
    const answers = new Map<number, string | Buffer | null>();
    for (const ticket of [...tickets].reverse()) {
      const answer = readAhead.take(ticket, "claim");
      if (answer !== null) answers.set(ticket, answer);
    }
    for (const ticket of tickets) {
      if (!answers.has(ticket)) answers.set(ticket, readAhead.take(ticket, true));
    }
    for (const ticket of tickets) assert.deepEqual(answers.get(ticket), direct);
    // Each was answered once: taken again, a ticket is unknown.
    for (const ticket of tickets) assert.equal(readAhead.take(ticket, "claim"), null);
  },
);

test(
  "stats read ahead equal a direct batch stat; a file gone before its stat is dropped (NaN)",
  { skip: process.platform === "win32" },
  () => {
    const { native, readAhead, direct, tickets } = queuedStatBatches(20);
    // Not waiting: null until done; waiting: always the answer.
    for (const ticket of tickets) {
      const answer = readAhead.take(ticket, false) ?? readAhead.take(ticket, true);
      assert.ok(Buffer.isBuffer(answer));
      assert.deepEqual(answer, direct);
    }
    // A file removed after it was listed and before its stat: NaN size, as with statBatch.
    const doomed = join(root, "dir", "doomed");
    writeFileSync(doomed, "soon gone");
    assert.match(native.listDir(join(root, "dir")) ?? "", /\0doomed/);
    rmSync(doomed);
    const ticket = readAhead.stat(`${root}/`, "dir/doomed\0dir/f1");
    const answer = readAhead.take(ticket, true) as Buffer;
    const numbers = new Float64Array(answer.buffer, answer.byteOffset, 2 * STAT_FIELDS);
    assert.ok(Number.isNaN(numbers[0]));
    assert.equal(numbers[3], 37);
    readAhead.dropAll();
  },
);

test(
  "many more queued folders than the ring holds: the rest are the caller's, nothing is lost",
  { skip: process.platform === "win32" },
  () => {
    const { native, readAhead } = clearedReadAhead();
    const folders = Array.from({ length: 5000 }, () => join(root, "dir"));
    const { first, accepted } = readAhead.list(folders);
    assert.ok(accepted > 0 && accepted < folders.length, `accepted ${accepted}`);
    const want = native.listDir(join(root, "dir"));
    for (let i = 0; i < accepted; i++) assert.equal(readAhead.take(first + i, true), want);
    readAhead.dropAll();
  },
);

test("trimMemory asks glibc's allocator to give freed memory back, and says null elsewhere", () => {
  const native = nativeFs();
  assert.ok(native !== null);
  const report = process.report.getReport() as { header: { glibcVersionRuntime?: string } };
  const glibc = report.header.glibcVersionRuntime !== undefined;
  // How much comes back depends on what glibc holds free at the moment (bench/notes/million.md
  // measures it): here only that the call is made where it exists.
  const trimmed = native.trimMemory();
  if (glibc) assert.equal(typeof trimmed, "boolean");
  else assert.equal(trimmed, null);
});
