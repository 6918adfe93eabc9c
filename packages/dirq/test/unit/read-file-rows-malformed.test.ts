import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { RowsError } from "../../src/parse/formats/document-rows.js";
import {
  lastRecordEnd,
  PIECE_BYTES,
  readFileRows,
  type RecordScan,
  THREADED_BYTES,
} from "../../src/parse/formats/read-file-rows.js";
import type { FormatName } from "../../src/parse/formats/format-names.js";

const dir = mkdtempSync(join(tmpdir(), "dirq-read-file-rows-malformed-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The `RowsError` reading `text` as `format` gives (records parsed here with `records`). */
function failure(format: FormatName, text: string, records = false): string {
  const name = `f${Math.random().toString(36).slice(2)}.${format}`;
  writeFileSync(join(dir, name), text);
  try {
    const onRecords = records ? { onRecords: () => {} } : undefined;
    readFileRows(format, null, join(dir, name), name, () => {}, onRecords);
  } catch (error) {
    assert.ok(error instanceof RowsError, String(error));
    return error.message;
  }
  assert.fail("expected the file to fail");
}

/** `bytes` of short records after a header, with a quote opened on line `openLine`. */
function openQuote(bytes: number, openLine: number, delimiter = ","): string {
  const lines = [`id${delimiter}name`];
  for (let i = 0, length = 0; length < bytes; i++) {
    const line = lines.length + 1 === openLine ? `${i}${delimiter}"open` : `${i}${delimiter}n${i}`;
    lines.push(line);
    length += line.length + 1;
  }
  return `${lines.join("\n")}\n`;
}

const OPEN = "a quoted field is still open at the end of the file";

describe("lastRecordEnd goes on where it stopped", () => {
  test("an open quote moves the scan to the last newline, with its quote count", () => {
    const scan: RecordScan = { scanned: 0, quotes: 0 };
    const bytes = Buffer.from('1,"x\ny\nz');
    assert.equal(lastRecordEnd(bytes, true, scan), -1);
    assert.deepEqual(scan, { scanned: 7, quotes: 1 });
    // More bytes after them: the quote closes, and the record ends at the newline after it.
    assert.equal(lastRecordEnd(Buffer.from('1,"x\ny\nz"\n2'), true, scan), 10);
  });

  test("bytes already scanned are not read again", () => {
    // The scan says 7 bytes hold one quote (open): the quotes now written there do not count.
    const scan: RecordScan = { scanned: 7, quotes: 1 };
    assert.equal(lastRecordEnd(Buffer.from('"""""""z\n'), true, scan), -1);
    assert.deepEqual(scan, { scanned: 9, quotes: 1 });
    assert.equal(lastRecordEnd(Buffer.from('"""""""z\n"\n'), true, scan), 11);
  });

  test("no newline after the scanned bytes: no record end, the scan moves to the end", () => {
    const scan: RecordScan = { scanned: 5, quotes: 1 };
    assert.equal(lastRecordEnd(Buffer.from('"a\nb\nccc'), true, scan), -1);
    assert.deepEqual(scan, { scanned: 8, quotes: 1 });
    const plain: RecordScan = { scanned: 4, quotes: 0 };
    assert.equal(lastRecordEnd(Buffer.from("ab\ncd"), false, plain), -1);
    assert.deepEqual(plain, { scanned: 5, quotes: 0 });
  });

  test("a newline at an even count before the scanned bytes is not taken", () => {
    // Line one ends a record (no quote before it), but the scan is past it already.
    const scan: RecordScan = { scanned: 2, quotes: 0 };
    assert.equal(lastRecordEnd(Buffer.from('a\n"b\nc\n'), true, scan), -1);
    assert.deepEqual(scan, { scanned: 7, quotes: 1 });
  });
});

/** The last line of `text` (which ends with a newline). */
function lastLine(text: string): number {
  return text.split("\n").length - 1;
}

// csv-parse names the line where the file ends (the native reader, the line the quote opened
// on: test/format-malformed.test.ts).
describe("a quote left open in a file of many pieces", () => {
  test("CSV: the file's error names its line", () => {
    const text = openQuote(PIECE_BYTES * 4, 3);
    assert.match(failure("csv", text), new RegExp(`^line ${lastLine(text)}: ${OPEN}`));
  });

  test("TSV, the quote opened on the last line", () => {
    const text = `${openQuote(PIECE_BYTES * 3, 0, "\t")}9\t"cut sho`;
    assert.match(failure("tsv", text), new RegExp(`^line ${lastLine(text) + 1}: ${OPEN}`));
  });

  test("CSV parsed here, on worker threads from their size on", () => {
    const text = openQuote(THREADED_BYTES + PIECE_BYTES, 5);
    assert.match(failure("csv", text, true), new RegExp(`^line ${lastLine(text)}: ${OPEN}`));
  });

  test("records after a long quoted field that closes late are read", () => {
    const text = `a,b\n1,"${"x\n".repeat(PIECE_BYTES * 1.5)}"\n2,y\n`;
    const name = "long-field.csv";
    writeFileSync(join(dir, name), text);
    const rows: unknown[] = [];
    readFileRows("csv", null, join(dir, name), name, (batch) => rows.push(...batch));
    assert.equal(rows.length, 2);
  });
});
