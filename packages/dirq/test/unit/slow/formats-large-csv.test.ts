import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { batchRows, type RecordBatch } from "../../../src/parse/formats/csv-rows.js";
import { RowsError } from "../../../src/parse/formats/document-rows.js";
import { readFileRows, THREADED_BYTES } from "../../../src/parse/formats/read-file-rows.js";

/**
 * CSV files large enough to be read on worker threads (tens of megabytes each): slow for
 * `npm run test:unit`, so kept in test/unit/slow/ (docs/internals.md, "Where tests live").
 */
const dir = mkdtempSync(join(tmpdir(), "dirq-formats-slow-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Every row of a CSV file read in this thread, as small files are read. */
function readInThread(text: string): Record<string, unknown>[] {
  const name = `f${Math.random().toString(36).slice(2)}.csv`;
  writeFileSync(join(dir, name), text);
  const rows: Record<string, unknown>[] = [];
  readFileRows("csv", null, join(dir, name), name, (batch) => {
    for (const row of batch) rows.push(Object.fromEntries(row));
  });
  return rows;
}

describe("large CSV files parsed on worker threads", () => {
  /** A file's records as rows, read as a table build reads them (records, threads). */
  function readRecords(text: string): { rows: Record<string, unknown>[]; batches: number } {
    const name = `f${Math.random().toString(36).slice(2)}.csv`;
    writeFileSync(join(dir, name), text);
    const rows: Record<string, unknown>[] = [];
    let batches = 0;
    const onRecords = (batch: RecordBatch) => {
      batches++;
      for (const row of batchRows(batch)) rows.push(Object.fromEntries(row));
    };
    readFileRows("csv", null, join(dir, name), name, () => assert.fail("rows"), { onRecords });
    return { rows, batches };
  }

  function largeCsv(): { text: string; lines: string[] } {
    const lines = ["id,text,n,_dirq_x,e"];
    for (let i = 0, length = 0; length < THREADED_BYTES * 1.5; i++) {
      const line = `${i},"quoted, ""é""\r\nnext",${i % 7 === 0 ? "" : i * 0.5},x,${i % 3 === 0 ? "007" : "9223372036854775808"}`;
      lines.push(line);
      length += line.length + 1;
    }
    return { text: `\uFEFF${lines.join("\n")}\r\n`, lines };
  }

  test("the rows are those read in this thread, every value typed alike", () => {
    const { text, lines } = largeCsv();
    const threaded = readRecords(text);
    assert.ok(threaded.batches > 8, `read in ${threaded.batches} pieces`);
    assert.deepEqual(threaded.rows, readInThread(text));
    assert.equal(threaded.rows.length, lines.length - 1);
    assert.deepEqual(threaded.rows[14], {
      id: 14n,
      text: 'quoted, "é"\r\nnext',
      n: null,
      e: 9223372036854775808,
    });
  });

  test("a record that breaks a rule deep in the file is named by its line, and the next file reads", () => {
    const { text, lines } = largeCsv();
    // The header is line 1 and every record takes two lines (its quoted field has a CRLF).
    const at = Math.floor(lines.length * 0.8);
    const broken = `${[...lines.slice(0, at), "1,2", ...lines.slice(at)].join("\n")}\n`;
    const line = 2 * at;
    assert.throws(
      () => readRecords(broken),
      (error: unknown) =>
        error instanceof RowsError &&
        error.message === `line ${line}: 2 fields, but the header has 5`,
    );
    // The pieces still out for the failed file were dropped: the next file's rows are its own.
    assert.equal(readRecords(text).rows.length, lines.length - 1);
  });

  test("a consumer's error stops the file and is the consumer's", () => {
    const { text } = largeCsv();
    const name = "consumer.csv";
    writeFileSync(join(dir, name), text);
    let batches = 0;
    assert.throws(
      () =>
        readFileRows("csv", null, join(dir, name), name, () => assert.fail("rows"), {
          onRecords: () => {
            if (++batches === 3) throw new Error("constraint");
          },
        }),
      /^Error: constraint$/,
    );
    assert.equal(readRecords(text).batches > 8, true);
  });
});
