import assert from "node:assert/strict";
import { test } from "node:test";
import { type ParsedOutput, parseHookOutput } from "../../src/parse/hook-rows.js";
import { LARGE_OUTPUT_BYTES, parseOutput } from "../../src/parse/large-output.js";
import { LargeText } from "../../src/parse/large-text.js";

/** The rows with every `LargeText` as the string it holds. */
function asStrings(parsed: ParsedOutput): ParsedOutput {
  if (!parsed.ok) return parsed;
  const rows = parsed.rows.map(
    (row) =>
      new Map(
        [...row].map(([key, value]) => [key, value instanceof LargeText ? String(value) : value]),
      ),
  );
  return { ok: true, rows };
}

/** A hook output just over the size read on the output thread. */
function largeOutput(tail: string): Buffer {
  const pad = "p".repeat(LARGE_OUTPUT_BYTES);
  return Buffer.from(`[{"pad": "${pad}", ${tail}}, {"n": 2}]`);
}

test("a large output read on the thread gives what parseHookOutput gives", async () => {
  const text = largeOutput('"big": 9007199254740993, "real": 3.0, "nested": {"a": [1.0]}');
  const here = parseHookOutput(Buffer.from(text));
  // From a pooled slice too: the bytes are copied out before they move.
  const pooled = Buffer.concat([Buffer.from("xx"), text]).subarray(2);
  for (const output of [Buffer.from(text), pooled]) {
    const parsed = await parseOutput(output);
    assert.deepEqual(asStrings(parsed), here);
    // The long text comes as its UTF-8 and its JSON, made on the thread.
    const pad = parsed.ok ? parsed.rows[0]?.get("pad") : null;
    assert.ok(pad instanceof LargeText);
    const expected = "p".repeat(LARGE_OUTPUT_BYTES);
    assert.deepEqual(pad.utf8, Buffer.from(expected));
    assert.deepEqual(pad.json, Buffer.from(JSON.stringify(expected)));
  }
  assert.ok(here.ok);
  assert.equal(here.rows[0]?.get("big"), 9007199254740993n);
});

test("a text that is not well-formed UTF-16 stays a string: SQLite would change it", async () => {
  const lone = "\\ud800".concat("x".repeat(LARGE_OUTPUT_BYTES));
  const parsed = await parseOutput(Buffer.from(`[{"lone": "${lone}"}]`));
  assert.ok(parsed.ok);
  assert.equal(typeof parsed.rows[0]?.get("lone"), "string");
});

test("a large output that is not a JSON array of objects is a reason, not a throw", async () => {
  const broken = Buffer.concat([largeOutput('"n": 1'), Buffer.from("trailing")]);
  const parsed = await parseOutput(broken);
  assert.equal(parsed.ok, false);
  assert.match(parsed.ok ? "" : parsed.reason, /^hook printed invalid JSON/);
  assert.deepEqual(
    await parseOutput(Buffer.from('[{"n": 1}]')),
    parseHookOutput(Buffer.from('[{"n": 1}]')),
  );
});
