import assert from "node:assert/strict";
import { existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  delay,
  eventually,
  openReadyEvents,
  postQuery,
  queryRows,
  serverFixtures,
} from "./server-support.js";

/*
 * Files are independent end to end: one file whose hook prints a row of tens of megabytes
 * must not hold back the rows and events of files written after it. Asserted on the order of
 * the `row` frames a real client receives, never on timings.
 */

const { tree, serve } = serverFixtures();
const scratch = mkdtempSync(join(tmpdir(), "dirq-large-rows-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

const BLOB_CHARS = 24 * 1024 * 1024;

/** Prints the file; for the big one, then leaves a marker: its whole output is written. */
const HOOK = `cat "$1"
case "$1" in *big.json) : > "$2" ;; esac
`;

/** Written beside, then renamed into place: the hook never reads half a file. */
function writeWhole(root: string, path: string, text: string): void {
  const staged = join(scratch, `staged-${path.replaceAll("/", "-")}`);
  writeFileSync(staged, text);
  renameSync(staged, join(root, path));
}

describe("dirq server: a row of tens of megabytes holds back no other file", () => {
  it("a file written once the big file's hook is done gets its row frame first", async () => {
    const hook = join(scratch, "hook.sh");
    writeFileSync(hook, HOOK);
    const marker = join(scratch, "big-printed");
    const root = tree({
      "dirq.toml": `[[table]]\nname = "items"\nglob = "data/*.json"\non-file = "sh ${hook} {path} ${marker}"\n`,
      "data/start.json": '[{"n": 0}]',
    });
    const server = await serve(root, ["-c", "dirq.toml"]);
    const events = await openReadyEvents(server);
    // Up to three versions of the big file: on a loaded machine the quick files' own hooks can
    // be slower than all the big row's work, so one try may see no quick file first. A big row
    // that held the others back would lose every try.
    const written: string[] = [];
    let order: string[] = [];
    let before: string[] = [];
    for (let version = 1; version <= 3 && before.length === 0; version++) {
      rmSync(marker, { force: true });
      writeWhole(
        root,
        "data/big.json",
        `[{"blob": "${"x".repeat(BLOB_CHARS)}", "n": -${version}}]`,
      );
      await eventually(() => existsSync(marker), "the big file's hook to print its row", 60_000);
      const seen = events.frames.length;
      const fresh = () => events.frames.slice(seen);
      const bigArrived = () => fresh().some((f) => f.data.includes('"data/big.json"'));
      // Quick files, one after another, until the big file's frame is out.
      const thisTry: string[] = [];
      for (let i = written.length; i < written.length + 400 && !bigArrived(); i++) {
        const path = `data/quick-${i}.json`;
        writeWhole(root, path, `[{"n": ${i + 1}}]`);
        thisTry.push(path);
        await delay(50);
      }
      written.push(...thisTry);
      await events.until(bigArrived, "the big file's row frame", 60_000);
      order = fresh()
        .filter((frame) => frame.event === "row")
        .map((frame) => /"file_path":("(?:[^"\\]|\\.)*")/.exec(frame.data.slice(0, 400))?.[1])
        .map((path) => (path === undefined ? "" : (JSON.parse(path) as string)));
      before = order.slice(0, order.indexOf("data/big.json")).filter((p) => thisTry.includes(p));
    }
    assert.ok(
      before.length > 0,
      `a quick file's frame came before the big file's (order: ${order.slice(0, 12).join(", ")}...)`,
    );
    // The big row is whole, in the frame and in the index.
    const bigFrame = events.frames.findLast((f) => f.data.includes('"data/big.json"'));
    const bigRow = JSON.parse(bigFrame?.data ?? "{}") as { row?: { blob: string; n: number } };
    assert.equal(bigRow.row?.blob.length, BLOB_CHARS);
    const lastVersion = -(bigRow.row?.n ?? 0);
    assert.ok(lastVersion >= 1 && lastVersion <= 3, `the big row's version: ${lastVersion}`);
    // Every quick file's row, as a fresh scan would have them.
    const quickRows = async () =>
      (
        await queryRows(
          server,
          "SELECT _dirq_file_path AS path FROM items WHERE _dirq_file_path LIKE 'data/quick-%'",
        )
      ).map((row) => row.path as string);
    // Every quick file has a hook to run, hundreds of them on a loaded machine: the wait ends
    // when they are all in, or when none came for a minute (a file held back for good).
    let count = 0;
    let progressAt = Date.now();
    while (count < written.length && Date.now() - progressAt < 60_000) {
      await delay(100);
      const now = (await quickRows()).length;
      if (now > count) progressAt = Date.now();
      count = now;
    }
    assert.deepEqual((await quickRows()).sort(), [...written].sort());
    assert.deepEqual(
      await queryRows(
        server,
        "SELECT length(blob) AS chars, n FROM items WHERE _dirq_file_path = 'data/big.json'",
      ),
      [{ chars: BLOB_CHARS, n: -lastVersion }],
    );
    events.close();
  });

  it("a row's event carries the values a query returns, whatever the hook printed", async () => {
    const root = tree({
      "dirq.toml": `[[table]]\nname = "items"\nglob = "data/*.json"\non-file = "cat {path}"\n`,
      "data/start.json": '[{"n": 0}]',
    });
    const server = await serve(root, ["-c", "dirq.toml"]);
    const events = await openReadyEvents(server);
    // Exact and whole-valued numbers, out-of-range ones, nesting, NUL, a surrogate pair; and,
    // in a file of its own, an unpaired surrogate (SQLite's UTF-8 replaces it).
    const files: Record<string, string> = {
      "data/values.json":
        '[{"big": 9007199254740993, "real": 3.0, "huge": 1e400, "neg": -0.0,' +
        ' "nested": {"a": [1.0, 2]}, "nul": "a\\u0000b", "pair": "\\ud83d\\ude00", "t": true}, {"n": 2}]',
      "data/lone.json": '[{"lone": "x\\ud800y"}]',
    };
    for (const [path, text] of Object.entries(files)) {
      writeWhole(root, path, text);
      const rows = (JSON.parse(text.replace(/\\u[0-9a-f]{4}/g, "")) as unknown[]).length;
      const framesOf = () =>
        events.frames.filter((f) => f.event === "row" && f.data.includes(`"${path}"`));
      await events.until(() => framesOf().length === rows, `the row frames of ${path}`, 60_000);
      const texts = framesOf().map((frame) =>
        frame.data.slice(frame.data.indexOf(',"row":') + 7, frame.data.lastIndexOf(',"old_row":')),
      );
      const answer = await postQuery(
        server,
        `SELECT * FROM items WHERE _dirq_file_path = '${path}' ORDER BY _dirq_row_index`,
      );
      assert.equal(answer.status, 200, answer.text);
      assert.equal(`[${texts.join(",")}]\n`, answer.text, path);
    }
    events.close();
  });

  it("a large text value: the same value and the same event text as a small one, in every kind of table", async () => {
    // Over the size a hook's value is handed from the output thread as UTF-8 bytes, with every
    // kind of character JSON escapes or UTF-8 spells in several bytes.
    const piece = 'aé✓😀"\\\n\t\u0000\u2028/';
    const big = (mark: string) => `${mark}${piece.repeat(40_000)}${mark}`;
    const root = tree({
      "dirq.toml":
        `[[table]]\nname = "plain"\nglob = "data/*.json"\non-file = "cat {path}"\n\n` +
        `[[table]]\nname = "typed"\nglob = "data/*.json"\non-file = "cat {path}"\n` +
        `schema = { big = "TEXT", n = "INTEGER" }\n\n` +
        `[[table]]\nname = "indexed"\nglob = "data/*.json"\non-file = "cat {path}"\n` +
        `ddl = "CREATE INDEX indexed_n ON indexed(n)"\n`,
      "data/start.json": '[{"n": 0}]',
    });
    const server = await serve(root, ["-c", "dirq.toml"]);
    const events = await openReadyEvents(server);
    const rowTexts = (path: string, since: number) =>
      events.frames
        .slice(since)
        .filter((f) => f.event === "row" && f.data.includes(`"file_path":"${path}"`))
        .map(
          (f) =>
            JSON.parse(f.data) as { table: string; action: string; row: unknown; old_row: unknown },
        );
    const version = async (value: string, frames: number) => {
      const since = events.frames.length;
      writeWhole(root, "data/big.json", JSON.stringify([{ big: value, n: 1 }, { n: 2 }]));
      await events.until(
        () => rowTexts("data/big.json", since).length >= frames,
        `${frames} row frames of the big file`,
        60_000,
      );
      return since;
    };
    const first = big("<1>");
    const since = await version(first, 6);
    for (const table of ["plain", "typed", "indexed"]) {
      const answer = await postQuery(
        server,
        `SELECT * FROM ${table} WHERE _dirq_file_path = 'data/big.json' ORDER BY _dirq_row_index`,
      );
      assert.equal(answer.status, 200, answer.text);
      const frames = rowTexts("data/big.json", since).filter((f) => f.table === table);
      assert.deepEqual(
        frames.map((f) => f.action),
        ["insert", "insert"],
        table,
      );
      // The event's rows are the query's rows, and the value is the one written.
      assert.deepEqual(
        frames.map((f) => f.row),
        JSON.parse(answer.text),
        table,
      );
      assert.equal((frames[0]?.row as { big: string }).big, first, table);
      assert.deepEqual(
        await queryRows(
          server,
          `SELECT typeof(big) AS type, length(CAST(big AS BLOB)) AS bytes FROM ${table} WHERE big IS NOT NULL`,
        ),
        [{ type: "text", bytes: Buffer.byteLength(first) }],
        table,
      );
    }
    // Written again unchanged: no event; changed: an update whose old row is the first value.
    const quiet = events.frames.length;
    writeWhole(root, "data/big.json", JSON.stringify([{ big: first, n: 1 }, { n: 2 }]));
    writeWhole(root, "data/after.json", '[{"n": 9}]');
    await events.until(
      () =>
        events.frames.slice(quiet).filter((f) => f.data.includes('"data/after.json"')).length >= 3,
      "the frames of a file written after the unchanged one",
      60_000,
    );
    assert.deepEqual(rowTexts("data/big.json", quiet), []);
    const second = big("<2>");
    const changed = await version(second, 3);
    for (const frame of rowTexts("data/big.json", changed)) {
      assert.equal(frame.action, "update", frame.table);
      assert.equal((frame.row as { big: string }).big, second, frame.table);
      assert.equal((frame.old_row as { big: string }).big, first, frame.table);
    }
    events.close();
  });
});
