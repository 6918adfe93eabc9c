import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";
import { openIndexDatabase, type SqliteDatabase } from "../../src/indexer/database.js";
import { RowWriter, streamSplit } from "../../src/indexer/path-fill.js";
import { parsePathTableName } from "../../src/scan/path-selection.js";
import { SelectionWalker } from "../../src/scan/walk.js";
import { WalkHelper } from "../../src/scan/walk-helper.js";

// A paths-only fill split with the walk helper writes the rows one walk writes, in walk order
// (by row id), whether the helper walks its part or fails on the way (then its rows are
// deleted and its part is walked on the calling thread).

let root = "";
const options = () => {
  const selection = parsePathTableName("./", root);
  assert.ok(selection !== null);
  return { root, selection, useGitignore: true };
};

before(() => {
  root = mkdtempSync(join(tmpdir(), "dirq-split-fill-"));
  for (let d = 0; d < 30; d++) {
    for (let s = 0; s < 3; s++) {
      const dir = join(root, `d${d}`, `s${s}`);
      mkdirSync(dir, { recursive: true });
      for (let f = 0; f < 40; f++)
        writeFileSync(join(dir, `f${f}.${f % 5 === 0 ? "log" : "md"}`), "");
    }
  }
  writeFileSync(join(root, ".gitignore"), "*.log\n");
});
after(() => rmSync(root, { recursive: true, force: true }));

function wholeWalk(): string[] {
  const walker = new SelectionWalker(options());
  const paths: string[] = [];
  for (let batch = walker.next(); batch !== null; batch = walker.next()) paths.push(...batch.paths);
  return paths;
}

async function readyHelper(): Promise<WalkHelper> {
  const helper = new WalkHelper(options(), null);
  helper.start();
  while (!helper.ready) await sleep(5);
  return helper;
}

function table(): { db: SqliteDatabase; rows: RowWriter } {
  const db = openIndexDatabase(root);
  db.exec(
    "CREATE TABLE t (path TEXT NOT NULL, basename TEXT, dir TEXT, ext TEXT, " +
      "size INTEGER, mtime INTEGER, ctime INTEGER)",
  );
  return { db, rows: new RowWriter(db, "t", { paths: true, names: false, stat: false }) };
}

const tablePaths = (db: SqliteDatabase) =>
  db.prepare("SELECT path FROM t ORDER BY rowid").pluck().all() as string[];

test("the helper walks the end of the tree; the rows are one walk's, in order", async () => {
  const expected = wholeWalk();
  const helper = await readyHelper();
  const { db, rows } = table();
  try {
    let end: Awaited<ReturnType<typeof streamSplit>> = null;
    await rows.replaceAll(async () => {
      end = await streamSplit(new SelectionWalker(options(), 64), helper, rows, () => undefined);
    });
    assert.ok(end !== null, "the walk was split");
    assert.deepEqual(tablePaths(db), expected);
  } finally {
    await helper.close();
    db.close();
  }
});

test("when the helper fails, its part is walked on the calling thread", async () => {
  const expected = wholeWalk();
  const helper = await readyHelper();
  const { db, rows } = table();
  try {
    let stopped = false;
    await rows.replaceAll(async () => {
      await streamSplit(new SelectionWalker(options(), 64), helper, rows, (found) => {
        if (found > 0 && !stopped) {
          stopped = true;
          void helper.close();
        }
      });
    });
    assert.ok(stopped, "the helper was stopped after it had sent rows");
    assert.deepEqual(tablePaths(db), expected);
  } finally {
    await helper.close();
    db.close();
  }
});
