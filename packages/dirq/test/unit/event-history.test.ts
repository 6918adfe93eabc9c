import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EventHistory } from "../../src/live/event-history.js";

describe("EventHistory", () => {
  it("numbers frames consecutively with one run id, and keeps both bounds", () => {
    const history = new EventHistory({ frames: 3, bytes: 10 });
    assert.equal(history.append("aa"), 1);
    assert.equal(history.append("bb"), 2);
    assert.match(history.idOf(2), /^[0-9a-f]{16}-2$/);
    history.append("cc");
    history.append("dd");
    assert.deepEqual([history.oldest, history.head], [2, 4]);
    history.append("eeeeeeee");
    // 8 + 2 bytes: the byte bound leaves two frames.
    assert.deepEqual([history.oldest, history.head], [4, 5]);
    history.append("x".repeat(50));
    // A frame larger than the byte bound is kept alone.
    assert.deepEqual([history.oldest, history.head], [6, 6]);
  });

  it("keeps its frames' bytes apart from Node's shared buffer pool, and intact", () => {
    const history = new EventHistory({ frames: 1000, bytes: 1 << 20 });
    const pooled = new Set<ArrayBufferLike>();
    const texts: string[] = [];
    for (let i = 0; i < 200; i++) {
      texts.push(`{"n":${i},"path":"d${i}/f\u00e9.txt"}`);
      history.append(texts[i] as string);
      // What a stream makes beside each frame (its header), short-lived.
      pooled.add(Buffer.from(`id: ${i}\nevent: row\ndata: `).buffer);
    }
    const frames = history.framesAfter(0);
    assert.deepEqual(
      frames.map((frame) => frame.data),
      texts,
    );
    // A frame kept in a block of the pool would keep the short-lived buffers beside it too.
    for (const frame of frames) assert.ok(!pooled.has((frame.utf8[0] as Buffer).buffer));
  });

  it("numbers a batch of texts as one append after another would, in runs of a block", () => {
    // Seeded: ASCII and non-ASCII rows, line breaks, large ones, across many blocks.
    let seed = 66;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const pieces = ["a", "é", "\u{1F600}", "\\ud800", "\n", "x".repeat(40_000), "path/f.txt"];
    const texts = Array.from({ length: 1500 }, (_, i) => {
      let text = `{"n":${i},"v":"`;
      for (let k = Math.floor(random() * 6); k > 0; k--) {
        const piece = pieces[Math.floor(random() * pieces.length)] as string;
        text += piece === "\n" && random() < 0.9 ? "b" : piece;
      }
      return `${text}"}`;
    });
    const one = new EventHistory({ frames: 10_000, bytes: 1 << 30 });
    const batched = new EventHistory({ frames: 10_000, bytes: 1 << 30 });
    for (const text of texts) one.append(text);
    let woken = 0;
    batched.onAppend(() => woken++);
    for (let at = 0; at < texts.length; at += 64) {
      assert.equal(batched.appendTexts(texts.slice(at, at + 64)), Math.min(at + 64, texts.length));
    }
    assert.equal(woken, texts.length);
    const sse = (history: EventHistory) =>
      history
        .framesAfter(0)
        .map((frame) => frame.sse?.toString().replace(history.run, "RUN") ?? `lines:${frame.data}`);
    // The first frame that differs, if any (the texts are too long to print whole).
    const firstDifference = (got: readonly unknown[], want: readonly unknown[]) =>
      got.length === want.length ? got.findIndex((item, i) => item !== want[i]) : got.length;
    assert.equal(firstDifference(sse(batched), sse(one)), -1);
    const frames = batched.framesAfter(0);
    assert.equal(
      firstDifference(
        frames.map((frame) => frame.data),
        texts,
      ),
      -1,
    );
    assert.equal(
      firstDifference(
        frames.map((frame) => frame.bytes),
        texts.map((text) => Buffer.byteLength(text)),
      ),
      -1,
    );
    // Frames of a run lie one after another in a block, their data inside their frame.
    const [first, second] = frames;
    assert.equal(first?.sse?.buffer, second?.sse?.buffer);
    assert.equal(
      (first?.sse?.byteOffset ?? 0) + (first?.sse?.length ?? 0),
      second?.sse?.byteOffset,
    );
    assert.equal(first?.utf8[0]?.buffer, first?.sse?.buffer);
  });

  it("numbers JSON texts, searched for no line break, as one append after another would", () => {
    // Seeded: JSON of ASCII and non-ASCII values, escaped line breaks, large ones, many blocks.
    let seed = 67;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const pieces = ["a", "é", "\u{1F600}", "\n", "\r\n", "\u2028", "x".repeat(40_000), "d/f.txt"];
    const texts = Array.from({ length: 1500 }, (_, i) => {
      let value = "";
      for (let k = Math.floor(random() * 6); k > 0; k--) {
        value += pieces[Math.floor(random() * pieces.length)] as string;
      }
      return JSON.stringify({ n: i, v: value });
    });
    const one = new EventHistory({ frames: 10_000, bytes: 1 << 30 });
    const batched = new EventHistory({ frames: 10_000, bytes: 1 << 30 });
    for (const text of texts) one.append(text);
    for (let at = 0; at < texts.length; at += 300) {
      assert.equal(
        batched.appendJsonTexts(texts.slice(at, at + 300)),
        Math.min(at + 300, texts.length),
      );
    }
    const sse = (history: EventHistory) =>
      history.framesAfter(0).map((frame) => frame.sse?.toString().replace(history.run, "RUN"));
    const [got, want] = [sse(batched), sse(one)];
    assert.equal(got.length, texts.length);
    assert.equal(
      got.findIndex((frame, i) => frame !== want[i]),
      -1,
    );
    assert.ok(got.every((frame) => frame !== undefined));
  });

  it("encodes each text frame once as its whole SSE frame, one after another in a block", () => {
    const history = new EventHistory();
    const texts = ['{"a":"é"}', '{"b":2}', "line\nbreak"];
    for (const text of texts) history.append(text);
    const [one, two, three] = history.framesAfter(0);
    const frame = (n: number, text: string) =>
      `id: ${history.idOf(n)}\nevent: row\ndata: ${text}\n\n`;
    assert.equal(one?.sse?.toString(), frame(1, texts[0] as string));
    assert.equal(two?.sse?.toString(), frame(2, texts[1] as string));
    assert.equal(one?.sse?.buffer, two?.sse?.buffer);
    assert.equal((one?.sse?.byteOffset ?? 0) + (one?.sse?.length ?? 0), two?.sse?.byteOffset);
    // Its data is that frame's data line, not a copy; `bytes` counts the data alone.
    assert.equal(one?.utf8[0]?.buffer, one?.sse?.buffer);
    assert.equal(one?.data, texts[0]);
    assert.equal(one?.bytes, Buffer.byteLength(texts[0] as string));
    // Text with a line break is not one data line: it is sent line by line, not encoded here.
    assert.equal(three?.sse, null);
    assert.equal(three?.data, texts[2]);
  });

  it("keeps frames for its bound in time: older ones leave as new ones come, the newest stays", async () => {
    const history = new EventHistory({ frames: 1000, bytes: 1 << 20, ms: 200 });
    history.append("a");
    history.appendTexts(["b", "c"]);
    assert.deepEqual(history.size, { frames: 3, bytes: 3, dropped: 0 });
    await new Promise((resolve) => setTimeout(resolve, 400));
    // Nothing new: the old frames stay (memory does not grow without frames).
    assert.equal(history.size.frames, 3);
    history.appendTexts(["d", "e"]);
    assert.deepEqual(history.size, { frames: 2, bytes: 2, dropped: 3 });
    // What the frames hold is their block, whole: at least their bytes.
    assert.ok(history.heldBytes() >= 2 + 2 * "id: x-1\nevent: row\ndata: \n\n".length);
    assert.deepEqual(history.startPoint(history.idOf(1)), { reset: true });
    assert.deepEqual(history.startPoint(history.idOf(3)), { after: 3 });
    await new Promise((resolve) => setTimeout(resolve, 400));
    history.append("f");
    // However old, the newest frame is kept: a reader of "e" continues.
    assert.deepEqual([history.oldest, history.head], [6, 6]);
    assert.deepEqual(history.startPoint(history.idOf(5)), { after: 5 });
  });

  it("continues an id of its run still in reach; resets others", () => {
    const history = new EventHistory({ frames: 2, bytes: 1000 });
    for (const data of ["a", "b", "c"]) history.append(data);
    assert.deepEqual(history.startPoint(undefined), { after: 3 });
    assert.deepEqual(history.startPoint(history.idOf(1)), { after: 1 });
    assert.deepEqual(history.startPoint(history.idOf(3)), { after: 3 });
    assert.deepEqual(history.startPoint(history.idOf(0)), { reset: true });
    assert.deepEqual(history.startPoint(history.idOf(4)), { reset: true });
    assert.deepEqual(history.startPoint(new EventHistory().idOf(1)), { reset: true });
    for (const bad of [
      "nonsense",
      "-1",
      `${history.run}-`,
      `${history.run}-x`,
      `${history.run}-1.5`,
    ]) {
      assert.deepEqual(history.startPoint(bad), { reset: true }, bad);
    }
  });

  it("a cursor reads in order; one the history left behind gets a reset and goes on", () => {
    const history = new EventHistory({ frames: 3, bytes: 1000 });
    const quick = history.cursor(0);
    const slow = history.cursor(0);
    for (let i = 1; i <= 5; i++) {
      history.append(String(i));
      const item = quick.next();
      assert.ok(item !== undefined && "frame" in item && item.frame.data === String(i));
    }
    assert.deepEqual(slow.next(), { reset: 5 });
    assert.equal(slow.next(), undefined);
    history.append("later");
    const item = slow.next();
    assert.ok(item !== undefined && "frame" in item && item.frame.data === "later");
    const lagging = history.cursor(history.head, 1);
    history.append("x");
    history.append("y");
    assert.deepEqual(lagging.next(), { reset: 8 });
  });
});
