import assert from "node:assert/strict";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";
import { EventStreamResponse } from "../../src/server/http-helpers.js";

/** What a client reads of a stream that `write` writes to, then ends. */
async function served(write: (stream: EventStreamResponse) => Promise<void>): Promise<string> {
  const server = createServer(async (_, response) => {
    const stream = new EventStreamResponse(response);
    await write(stream);
    stream.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise<string>((resolve, reject) => {
      request({ host: "127.0.0.1", port, path: "/" }, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => resolve(Buffer.concat(chunks).toString()));
      })
        .on("error", reject)
        .end();
    });
  } finally {
    server.close();
  }
}

/** What a client reads of a stream that sends `frames` and ends. */
function streamed(
  frames: readonly { event: string; data: string | readonly Buffer[]; id?: string }[],
): Promise<string> {
  return served(async (stream) => {
    for (const frame of frames) await stream.send(frame.event, frame.data, frame.id);
  });
}

describe("EventStreamResponse", () => {
  it("waits while the client does not read: a slow client is never written to without end", async () => {
    const frame = Buffer.alloc(8 * 1024, "x");
    let sent = 0;
    let waited = false;
    const server = createServer(async (_, response) => {
      const stream = new EventStreamResponse(response);
      // At most 64 MiB: far beyond what the kernel's buffers of one loopback socket hold.
      while (sent * frame.length < 64 * 1024 * 1024) {
        const sending = stream.send("row", [frame]);
        const done = await Promise.race([
          sending.then(() => true),
          new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 100)),
        ]);
        if (!done) {
          waited = true;
          break;
        }
        sent++;
      }
      response.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const client = request({ host: "127.0.0.1", port, path: "/" }, (response) => response.pause());
    client.on("error", () => {});
    client.end();
    try {
      while (!waited && sent * frame.length < 64 * 1024 * 1024) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.ok(waited, `sent ${sent} frames of 8 KiB to a client that reads nothing`);
    } finally {
      client.destroy();
      server.close();
    }
  });

  it("sends a frame's UTF-8 bytes as they are, and text alike", async () => {
    const row = '{"title":"é ✓"}';
    const body = await streamed([
      { event: "row", data: [Buffer.from(row)], id: "r-1" },
      { event: "row", data: row, id: "r-2" },
    ]);
    assert.equal(
      body,
      `id: r-1\nevent: row\ndata: ${row}\n\nid: r-2\nevent: row\ndata: ${row}\n\n`,
    );
  });

  it("sends frames encoded already, back to back in one block, between others, as they are", async () => {
    const frames = ['id: h-1\nevent: row\ndata: {"é":1}\n\n', "id: h-2\nevent: row\ndata: {}\n\n"];
    const block = Buffer.from(frames.join(""));
    const first = block.subarray(0, Buffer.byteLength(frames[0] as string));
    const second = block.subarray(first.length);
    const body = await served(async (stream) => {
      await stream.send("row", "{}", "t-1");
      await stream.sendEncoded(first);
      await stream.sendEncoded(second);
      await stream.send("row", [Buffer.from("{}")], "t-2");
      await stream.sendEncoded(first);
    });
    const text = (id: string) => `id: ${id}\nevent: row\ndata: {}\n\n`;
    assert.equal(body, `${text("t-1")}${frames[0]}${frames[1]}${text("t-2")}${frames[0]}`);
    // The block is sent, not changed.
    assert.equal(block.toString(), frames.join(""));
  });

  it("sends a frame in pieces, small or large, as one data line of those bytes", async () => {
    const large = `"${"é".repeat(100 * 1024)}"`;
    const body = await streamed([
      { event: "row", data: [Buffer.from('{"a":'), Buffer.from('"✓"}')], id: "r-1" },
      { event: "row", data: [Buffer.from('{"a":'), Buffer.from(large), Buffer.from("}")] },
    ]);
    assert.equal(
      body,
      `id: r-1\nevent: row\ndata: {"a":"✓"}\n\nevent: row\ndata: {"a":${large}}\n\n`,
    );
  });

  it("gives each line of data its own data field, from bytes as from text", async () => {
    const body = await streamed([
      { event: "note", data: [Buffer.from("a\nb"), Buffer.from("\r\nc")] },
    ]);
    assert.equal(body, "event: note\ndata: a\ndata: b\ndata: c\n\n");
  });
});
