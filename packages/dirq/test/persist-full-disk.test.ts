import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  closeSync,
  mkdtempSync,
  openSync,
  renameSync,
  rmSync,
  writeSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { openSqlite } from "../src/indexer/database.js";
import { makeTree, removeTree } from "./helpers.js";
import { delay, eventually, queryRows, type ServerProcess, startServer } from "./server-support.js";

const CONFIG = `[[table]]
name = "posts"
glob = "posts/*.json"
format = "json"
`;

const roots: string[] = [];
after(() => {
  for (const dir of roots) removeTree(dir);
});

/** A post whose body is `size` bytes long. */
function post(n: number, size: number): string {
  return `${JSON.stringify({ n, body: "x".repeat(size) })}\n`;
}

/** Mounts a tmpfs of `size` at a new folder (root only); null where that is not allowed. */
function mountTmpfs(size: string): string | null {
  const dir = mkdtempSync(join(tmpdir(), "dirq-full-disk-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir], { stdio: "ignore" });
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
}

/** Writes zeros into `path` until its disk is full. */
function fillDisk(path: string): void {
  const fd = openSync(path, "w");
  const chunk = Buffer.alloc(64 * 1024);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
  } finally {
    closeSync(fd);
  }
}

/** Writes `path` whole at once (a rename), so the watcher never sees it half written. */
function replaceFile(root: string, path: string, content: string): void {
  writeFileSync(join(root, "next.tmp"), content);
  renameSync(join(root, "next.tmp"), join(root, path));
}

const ROWS = "SELECT _dirq_file_path AS file, n, length(body) AS size FROM posts ORDER BY file";
const SIZES = "SELECT path, size FROM './' WHERE path LIKE 'posts/%' ORDER BY path";

/** The rows and sizes a fresh scan would show for posts `n → body size`. */
function expected(posts: Record<number, number>) {
  const entries = Object.entries(posts).map(([n, size]) => [Number(n), size] as const);
  return {
    rows: entries.map(([n, size]) => ({ file: `posts/p${n}.json`, n, size })),
    sizes: entries.map(([n, size]) => ({
      path: `posts/p${n}.json`,
      size: Buffer.byteLength(post(n, size)),
    })),
  };
}

async function indexMatches(server: ServerProcess, posts: Record<number, number>) {
  const [rows, sizes] = [await queryRows(server, ROWS), await queryRows(server, SIZES)];
  return JSON.stringify({ rows, sizes }) === JSON.stringify(expected(posts));
}

/** Waits until the index matches `posts`; else fails showing what it holds and stderr. */
async function eventuallyMatches(server: ServerProcess, posts: Record<number, number>) {
  try {
    await eventually(() => indexMatches(server, posts), "every row is as the files are", 20_000);
  } catch {
    const [rows, sizes] = [await queryRows(server, ROWS), await queryRows(server, SIZES)];
    assert.deepEqual({ rows, sizes }, expected(posts), server.stderr());
  }
}

describe("--persist: a commit that fails on a full disk", () => {
  it("leaves nothing stale: once space returns, every changed file's rows are applied", async (t) => {
    const mount = mountTmpfs("8m");
    if (mount === null) {
      t.skip("mounting a tmpfs is not allowed here");
      return;
    }
    const root = makeTree({
      "dirq.toml": CONFIG,
      "posts/p1.json": post(1, 10),
      "posts/p2.json": post(2, 10),
      "posts/p3.json": post(3, 10),
    });
    roots.push(root);
    const args = ["-c", "dirq.toml", `--persist=${mount}/cache.db`, "--port", "0"];
    const server = await startServer([...args, "--host", "127.0.0.1"], { cwd: root });
    const filler = join(mount, "filler");
    try {
      assert.ok(await indexMatches(server, { 1: 10, 2: 10, 3: 10 }), "the first build");
      fillDisk(filler);
      // Larger than the write-ahead log holds already: the commit must grow it, and cannot.
      replaceFile(root, "posts/p1.json", post(1, 1_500_000));
      replaceFile(root, "posts/p2.json", post(2, 1_500_000));
      await eventually(
        () => /full/.test(server.stderr()),
        "the refresh's commit failed on the full disk",
        15_000,
      );
      assert.ok(await indexMatches(server, { 1: 10, 2: 10, 3: 10 }), "the last commit stands");
      // Past the watcher's recheck of the changed files: the disk was still full for it.
      await delay(500);
      rmSync(filler);
      // p1 changes again once space is back; p2 is never touched again.
      writeFileSync(join(root, "posts/p1.json"), post(1, 20));
      await eventuallyMatches(server, { 1: 20, 2: 1_500_000, 3: 10 });
    } finally {
      await server.kill();
      rmSync(filler, { force: true });
      execFileSync("umount", [mount]);
      rmSync(mount, { recursive: true, force: true });
    }
  });
});

const BOXES_CONFIG = `[[table]]
name = "boxes"
glob = "box/**/*.json"
format = "json"
`;

/** Folders renamed at once: a burst the move thread writes (16 or more). */
const BOXES = 20;
const BOX_ROWS =
  "SELECT _dirq_file_path AS file, n, length(body) AS size FROM boxes ORDER BY file, n";

/** Checkpoints the index's write-ahead log and truncates it; whether that was done. */
function logTruncated(database: string): boolean {
  const db = openSqlite(database);
  try {
    const [result] = db.pragma("wal_checkpoint(TRUNCATE)") as { busy: number; log: number }[];
    return result?.busy === 0 && result.log === 0;
  } finally {
    db.close();
  }
}

const OTHER_SIZE = "SELECT size FROM './' WHERE path = 'other.json'";

/** The rows of the boxes under the folder names `prefix<i>`: four posts a box. */
function boxRows(prefix: string) {
  const rows = [];
  for (let i = 0; i < BOXES; i++) {
    for (let j = 0; j < 4; j++)
      rows.push({ file: `box/${prefix}${i}/p${j}.json`, n: i * 4 + j, size: 40_000 });
  }
  return rows.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}

describe("--persist: a burst of folder moves whose commit fails on a full disk", () => {
  it("loses no move: once space returns, the folders' rows are under their new names", async (t) => {
    const mount = mountTmpfs("16m");
    if (mount === null) {
      t.skip("mounting a tmpfs is not allowed here");
      return;
    }
    const spec: Record<string, string> = { "dirq.toml": BOXES_CONFIG, "other.json": "{}" };
    for (let i = 0; i < BOXES; i++) {
      for (let j = 0; j < 4; j++) spec[`box/f${i}/p${j}.json`] = post(i * 4 + j, 40_000);
    }
    const root = makeTree(spec);
    roots.push(root);
    const args = ["-c", "dirq.toml", `--persist=${mount}/cache.db`, "--port", "0"];
    const server = await startServer([...args, "--host", "127.0.0.1"], { cwd: root });
    const filler = join(mount, "filler");
    const matches = async (prefix: string) =>
      JSON.stringify(await queryRows(server, BOX_ROWS)) === JSON.stringify(boxRows(prefix));
    try {
      assert.ok(await matches("f"), "the first build");
      // A first change, seen through the path-table: the tables' lookup indexes are made
      // before the disk is full, so the moves' own commit is what fails.
      writeFileSync(join(root, "other.json"), '{"first": "change"}');
      await eventually(
        async () => JSON.stringify(await queryRows(server, OTHER_SIZE)) === '[{"size":19}]',
        "the first change",
      );
      // The write-ahead log emptied: the moves' commit must grow it, on a full disk.
      await eventually(() => Promise.resolve(logTruncated(`${mount}/cache.db`)), "an empty log");
      fillDisk(filler);
      // Each moved row is rewritten whole (its 40 KB body too).
      for (let i = 0; i < BOXES; i++) renameSync(join(root, `box/f${i}`), join(root, `box/g${i}`));
      await eventually(
        () => /full/.test(server.stderr()),
        "the moves' commit failed on the full disk",
        15_000,
      );
      assert.ok(await matches("f"), "the last commit stands");
      await delay(500);
      rmSync(filler);
      // Any change once space is back: the moved folders are applied with it.
      writeFileSync(join(root, "other.json"), '{"again": true}');
      await eventually(() => matches("g"), "every moved row under its new name", 20_000);
    } finally {
      await server.kill();
      rmSync(filler, { force: true });
      execFileSync("umount", [mount]);
      rmSync(mount, { recursive: true, force: true });
    }
  });
});
