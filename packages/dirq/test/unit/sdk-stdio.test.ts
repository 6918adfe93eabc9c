import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { open } from "../../src/index.js";
import { exactJson } from "../../src/sdk-stdio/exact-json.js";
import { encodeFrame, FrameError, FrameReader } from "../../src/sdk-stdio/frames.js";

describe("sdk-stdio frames", () => {
  test("frames come out whole, whatever the chunks they arrive in", () => {
    const content = Buffer.from([0, 1, 2, 255, 10, 13]);
    const bytes = Buffer.concat([
      encodeFrame({ op: "query", id: 1, params: [1] }),
      encodeFrame({ extract: 2, path: "a/é.txt" }, content),
      encodeFrame({ re: 3 }, '[{"n":1}]'),
    ]);
    for (const size of [1, 3, 8, 9, bytes.length]) {
      const reader = new FrameReader();
      const frames = [];
      for (let at = 0; at < bytes.length; at += size) {
        frames.push(...reader.push(bytes.subarray(at, at + size)));
      }
      assert.deepEqual(
        frames.map((frame) => frame.header),
        [{ op: "query", id: 1, params: [1] }, { extract: 2, path: "a/é.txt" }, { re: 3 }],
        `chunks of ${size}`,
      );
      assert.deepEqual(frames[1]?.payload, content);
      assert.equal(frames[2]?.payload.toString(), '[{"n":1}]');
    }
  });

  test("an integer beyond 2^53 in a header stays exact", () => {
    const header = '{"params":[9223372036854775807,-9007199254740993,2.5]}';
    const frame = Buffer.concat([Buffer.alloc(8), Buffer.from(header)]);
    frame.writeUInt32BE(Buffer.byteLength(header), 0);
    const [read] = new FrameReader().push(frame);
    assert.deepEqual(read?.header.params, [9223372036854775807n, -9007199254740993n, 2.5]);
  });

  test("a stream that is not frames is a FrameError", () => {
    const text = Buffer.from("SELECT 1 -- typed at the wrong program\n");
    assert.throws(() => new FrameReader().push(Buffer.concat([text, text])), FrameError);
  });
});

describe("sdk-stdio exact JSON", () => {
  test("bigints are written as their digits, anywhere", () => {
    const rows = [
      { a: 1, big: 2n ** 63n - 1n, text: "x" },
      { a: 2.5, big: -(2n ** 60n), text: null },
    ];
    assert.equal(
      exactJson(rows),
      '[{"a":1,"big":9223372036854775807,"text":"x"},{"a":2.5,"big":-1152921504606846976,"text":null}]',
    );
    const event = { action: "update", row: { n: 2n ** 62n }, old_row: { n: 1 } };
    assert.equal(
      exactJson(event),
      '{"action":"update","row":{"n":4611686018427387904},"old_row":{"n":1}}',
    );
    assert.equal(exactJson([{ n: 1 }]), JSON.stringify([{ n: 1 }]));
  });

  test("text holding the bigint mark is still written exactly", () => {
    const rows = [{ text: "\uE000123", big: 2n ** 60n }, { ["\uE0007"]: 1n << 55n }];
    assert.equal(
      exactJson(rows),
      '[{"text":"\uE000123","big":1152921504606846976},{"\uE0007":36028797018963968}]',
    );
  });
});

describe("SDK table concurrency", () => {
  test("only an extract table takes it, as a whole number of calls", async () => {
    const extract = () => [];
    for (const [table, message] of [
      [{ concurrency: 0, extract }, /tables\[0\]\.concurrency: expected a whole number/],
      [{ concurrency: 2.5, extract }, /tables\[0\]\.concurrency: expected a whole number/],
      [{ concurrency: 4, format: "json" }, /tables\[0\]\.concurrency: only a table with extract/],
    ] as const) {
      assert.throws(
        () => open({ progress: false, tables: [{ name: "t", glob: "*.json", ...table }] }),
        (error: Error & { code?: string }) =>
          error.code === "CONFIG_INVALID" && message.test(error.message),
      );
    }
    const db = open({
      progress: false,
      tables: [{ name: "t", glob: "none/*", extract, concurrency: 64 }],
    });
    await db.ready;
    await db.close();
  });
});
