/**
 * The native `dirq_rows` table (native/dirq-fs.c) makes a fill's rows from a batch's joined
 * paths and stat blob. Its rows must be the ones the JavaScript writer binds: name columns as
 * `pushNameColumns` derives them, stats as numbers, a NaN size dropping the file. Checked on
 * seeded generated paths (dots anywhere, nested folders, non-ASCII names) through RowWriter
 * both ways, for every column group.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { openSqlite, type SqliteDatabase } from "../../src/indexer/database.js";
import { pushNameColumns, RowWriter } from "../../src/indexer/path-fill.js";
import { loadNativeRows } from "../../src/scan/native-fs.js";
import { PathBatch } from "../../src/scan/path-batch.js";
import { harnessSeed, pick, seededRandom } from "../differential.js";

const SEED = harnessSeed(3637);
const PARTS = ["a", ".", "..x", "b.md", ".env", "x.", "tar.gz", "é", "日本.txt", "😀", " ", "-"];

function generatedPaths(random: () => number, count: number): string[] {
  const paths = new Set<string>();
  while (paths.size < count) {
    const depth = Math.floor(random() * 4);
    const segments = Array.from({ length: depth + 1 }, () =>
      Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(random, PARTS)).join(""),
    );
    paths.add(segments.join("/"));
  }
  return [...paths];
}

function generatedStats(random: () => number, count: number): Float64Array {
  const stats = new Float64Array(count * 3);
  for (let i = 0; i < count; i++) {
    const gone = random() < 0.1;
    stats[i * 3] = gone ? Number.NaN : Math.floor(random() * 2 ** 40);
    stats[i * 3 + 1] = gone ? 0 : Math.floor((random() - 0.2) * 2 ** 33);
    stats[i * 3 + 2] = gone ? 0 : Math.floor(random() * 2 ** 31);
  }
  return stats;
}

const CREATE =
  "CREATE TABLE t (path TEXT NOT NULL, basename TEXT, dir TEXT, ext TEXT, " +
  "size INTEGER, mtime INTEGER, ctime INTEGER) STRICT";

/** A connection with the table, and with `dirq_rows` or (`native: false`) without it. */
function database(native: boolean): SqliteDatabase {
  const db = openSqlite(":memory:");
  db.exec(CREATE);
  if (native) assert.equal(loadNativeRows(db), true, "the extension loads");
  return db;
}

function rowsOf(db: SqliteDatabase): unknown[] {
  return db
    .prepare("SELECT *, typeof(size), typeof(mtime), typeof(ext) FROM t ORDER BY rowid")
    .raw(true)
    .all();
}

test("dirq_rows derives basename, dir and ext as the JavaScript writer does", () => {
  const db = database(true);
  const paths = generatedPaths(seededRandom(SEED), 2_000);
  const rows = db
    .prepare("SELECT path, basename, dir, ext FROM dirq_rows(?)")
    .raw(true)
    .all(paths.join("\0"));
  const expected = paths.map((path) => {
    const values: unknown[] = [path];
    pushNameColumns(values, path);
    return values;
  });
  assert.deepEqual(rows, expected);
  // No paths, no rows; stats shorter than the paths drop the paths they lack.
  assert.deepEqual(db.prepare("SELECT * FROM dirq_rows('')").all(), []);
  const short = db
    .prepare("SELECT count(*) AS n FROM dirq_rows(?, ?)")
    .get("a\0b", Buffer.alloc(24));
  assert.deepEqual(short, { n: 1 });
});

for (const groups of [
  { paths: false, names: false, stat: false },
  { paths: true, names: false, stat: false },
  { paths: true, names: true, stat: false },
  { paths: true, names: false, stat: true },
  { paths: true, names: true, stat: true },
]) {
  test(`RowWriter writes the same rows through dirq_rows as bound from JavaScript (${JSON.stringify(groups)}, seed ${SEED})`, async () => {
    const random = seededRandom(SEED + 1);
    const batches = Array.from({ length: 12 }, () => {
      const paths = generatedPaths(random, 1 + Math.floor(random() * 300));
      return { batch: PathBatch.of(paths), stats: generatedStats(random, paths.length) };
    });
    const write = async (db: SqliteDatabase, native: boolean) => {
      const saved = process.env.DIRQ_NATIVE_FS;
      if (!native) process.env.DIRQ_NATIVE_FS = "0";
      try {
        const writer = new RowWriter(db, "t", groups);
        return await writer.replaceAll(async () => {
          for (const { batch, stats } of batches) writer.write(batch, groups.stat ? stats : null);
        });
      } finally {
        if (saved === undefined) delete process.env.DIRQ_NATIVE_FS;
        else process.env.DIRQ_NATIVE_FS = saved;
      }
    };
    const native = database(true);
    const bound = openSqlite(":memory:");
    bound.exec(CREATE);
    const counts = [await write(native, true), await write(bound, false)];
    assert.equal(counts[0], counts[1]);
    assert.deepEqual(rowsOf(native), rowsOf(bound));
    assert.equal(loadNativeRows(bound), false, "the JavaScript side had no dirq_rows");
  });
}
