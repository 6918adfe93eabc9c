import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { encodeFrame as encodeQueryFrame, FrameReader } from "../../src/runner/query-frames.js";
import {
  encodeFrame as encodeStdioFrame,
  FrameError,
  FrameReader as StdioFrameReader,
} from "../../src/sdk-stdio/frames.js";
import { seededRandom as random } from "../differential.js";

/** `bytes` cut into chunks of random sizes (empty ones included), as a socket may hand them. */
function cut(bytes: Buffer, next: () => number): Buffer[] {
  const chunks: Buffer[] = [];
  let at = 0;
  while (at < bytes.length) {
    const size = Math.floor(next() ** 3 * 64);
    chunks.push(bytes.subarray(at, at + size));
    at += size;
  }
  return chunks;
}

function payloads(next: () => number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => "é".repeat(Math.floor(next() * 40)) + String(i));
}

describe("frame readers (one frame cutter under both)", () => {
  it("the query processes' frames come out whole and in order, however the stream is cut", () => {
    for (let seed = 1; seed <= 50; seed++) {
      const next = random(seed);
      const sent = payloads(next, 20);
      const stream = Buffer.concat(sent.map((text, i) => encodeQueryFrame(i, 1, text, i % 2)));
      const reader = new FrameReader();
      const got = cut(stream, next).flatMap((chunk) => reader.push(chunk));
      assert.deepEqual(
        got.map((frame) => [frame.id, frame.kind, frame.flags, frame.payload.toString()]),
        sent.map((text, i) => [i, 1, i % 2, text]),
        `seed ${seed}`,
      );
    }
  });

  it("the stdio SDK's frames come out whole and in order; a broken header is an error", () => {
    for (let seed = 1; seed <= 50; seed++) {
      const next = random(seed);
      const sent = payloads(next, 20);
      const stream = Buffer.concat(sent.map((text, i) => encodeStdioFrame({ id: i }, text)));
      const reader = new StdioFrameReader();
      const got = cut(stream, next).flatMap((chunk) => reader.push(chunk));
      assert.deepEqual(
        got.map((frame) => [frame.header, frame.payload.toString()]),
        sent.map((text, i) => [{ id: i }, text]),
        `seed ${seed}`,
      );
    }
    const notFrames = Buffer.from("GET / HTTP/1.1\r\n\r\n");
    assert.throws(() => new StdioFrameReader().push(notFrames), FrameError);
  });
});
