import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  diffRows,
  EncodedJson,
  rowChangeJson,
  rowJson,
  rowText,
} from "../../src/indexer/row-changes.js";
import { LargeText } from "../../src/parse/large-text.js";

/** A large text as the output thread makes it. */
function large(text: string): LargeText {
  return new LargeText(Buffer.from(text), Buffer.from(JSON.stringify(text)));
}

describe("row changes with a large text", () => {
  const columns = ["a", "big", "n"];
  const text = 'é✓😀"\\\n\u0000\u2028'.repeat(10);

  it("a row's JSON in pieces is the JSON of the row as strings, its large piece the same bytes", () => {
    const value = large(text);
    const row = rowText(columns, [1n, value, null]);
    assert.ok(row instanceof EncodedJson);
    assert.equal(row.toString(), rowJson(columns, [1n, text, null]));
    assert.ok(row.utf8().includes(value.json), "the large text's JSON is sent as it was made");
    assert.equal(rowText(columns, [1n, "x", null]), rowJson(columns, [1n, "x", null]));
  });

  it("an event's JSON in pieces decodes to the event's JSON as text", () => {
    const row = rowText(columns, [1n, large(text), null]);
    const old = rowJson(columns, [1n, "before", null]);
    const change = {
      action: "update",
      table: "t",
      file_path: "a.json",
      row,
      old_row: old,
    } as const;
    const pieces = rowChangeJson(change);
    assert.ok(pieces instanceof EncodedJson);
    assert.equal(
      Buffer.concat(pieces.utf8()).toString(),
      rowChangeJson({ ...change, row: row.toString() }),
    );
  });

  it("a row in pieces equal to the row it replaces is no change; a different one is an update", () => {
    const same = rowText(columns, [1n, large(text), null]);
    const before = [rowJson(columns, [1n, text, null])];
    assert.deepEqual(diffRows("t", "a.json", before, [same]), []);
    const other = rowText(columns, [1n, large(`${text}!`), null]);
    const [change] = diffRows("t", "a.json", before, [other]);
    assert.equal(change?.action, "update");
  });
});
