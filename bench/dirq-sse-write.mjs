// What one Server-Sent Events frame costs the sending thread: a Node http server in this
// process writes `--frames` frames of `--bytes` bytes, one per turn of the event loop
// (`--pace-ms` apart, as a live query's diffs come), to a client in another process over
// loopback, which reads and drops them. The main thread's own CPU (Linux:
// /proc/thread-self/schedstat) per frame, for each way of writing, less the same paced loop
// writing nothing:
//   - res.write(string): the http response, chunked encoding (how `EventStreamResponse` writes)
//   - res.write(Buffer)
//   - socket.write(string): the raw socket under the response, no chunk framing
//   - the same through `EventStreamResponse` itself (its turn-end flush)
//
//   node bench/dirq-sse-write.mjs [--frames 2000] [--bytes 300] [--pace-ms 1] [--rounds 3]
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { median, parseOptions, positiveInteger, REPO_ROOT, requireDirqBuilt } from "./lib.mjs";

const USAGE =
  "usage: node bench/dirq-sse-write.mjs [--frames 2000] [--bytes 300] [--pace-ms 1] [--rounds 3]";
const options = parseOptions(
  process.argv.slice(2),
  {
    frames: { type: "string", default: "2000" },
    bytes: { type: "string", default: "300" },
    "pace-ms": { type: "string", default: "1" },
    rounds: { type: "string", default: "3" },
  },
  USAGE,
);
const FRAMES = positiveInteger(options.frames, "--frames");
const BYTES = positiveInteger(options.bytes, "--bytes");
const PACE_MS = positiveInteger(options["pace-ms"], "--pace-ms");
const ROUNDS = positiveInteger(options.rounds, "--rounds");
requireDirqBuilt();
const { EventStreamResponse } = await import(
  join(REPO_ROOT, "packages/dirq/dist/src/server/http-helpers.js")
);

/** This thread's CPU time so far, in microseconds. */
function threadCpuMicros() {
  return Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[0]) / 1000;
}

const payload = `{"commit":1,"removed":[],"added":[{"at":3,"row":${JSON.stringify({ id: 1, name: "x".repeat(Math.max(1, BYTES - 80)) })}}],"updated":[]}`;
const frameText = `id: 0123456789abcdef-1\nevent: diff\ndata: ${payload}\n\n`;
const frameBytes = Buffer.from(frameText);

// A raw TCP reader (an http client would refuse the raw socket's frames, which lack the chunked
// encoding's framing): it asks once, then reads and drops everything until the server closes.
const CLIENT = `
const socket = require("node:net").connect(Number(process.argv[1]), "127.0.0.1", () =>
  socket.write("GET / HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n"));
socket.on("data", () => {});
socket.on("end", () => process.exit(0));
`;

const WAYS = {
  none: () => {},
  "res.write(string)": (ctx) => ctx.response.write(frameText),
  "res.write(Buffer)": (ctx) => ctx.response.write(frameBytes),
  "socket.write(string)": (ctx) => ctx.response.socket.write(frameText),
  EventStreamResponse: (ctx) => void ctx.stream.send("diff", payload, "0123456789abcdef-1"),
};

/** One way: a server, a client process, `FRAMES` paced writes; CPU µs per frame. */
async function measure(way) {
  let ready;
  const connected = new Promise((resolve) => (ready = resolve));
  const server = createServer((request, response) => {
    const ctx = { response };
    if (way === "EventStreamResponse") ctx.stream = new EventStreamResponse(response);
    else {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.flushHeaders();
    }
    ready(ctx);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const client = spawn(process.execPath, ["-e", CLIENT, String(server.address().port)], {
    stdio: "ignore",
  });
  const ctx = await connected;
  const write = WAYS[way];
  // Warm up, then measure.
  for (let n = 0; n < 50; n++) {
    write(ctx);
    await new Promise((resolve) => setTimeout(resolve, PACE_MS));
  }
  const before = threadCpuMicros();
  for (let n = 0; n < FRAMES; n++) {
    write(ctx);
    await new Promise((resolve) => setTimeout(resolve, PACE_MS));
  }
  const micros = threadCpuMicros() - before;
  const exited = new Promise((resolve) => client.once("exit", resolve));
  if (ctx.stream) ctx.stream.end();
  else ctx.response.end();
  ctx.response.socket?.end();
  await exited;
  await new Promise((resolve) => server.close(resolve));
  return micros / FRAMES;
}

const totals = Object.fromEntries(Object.keys(WAYS).map((way) => [way, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const way of Object.keys(WAYS)) totals[way].push(await measure(way));
}
const none = median(totals.none);
console.log(
  `${FRAMES} frames of ${frameBytes.length} bytes, ${PACE_MS} ms apart, ${ROUNDS} rounds (median); main thread CPU per frame:`,
);
console.log(`  paced loop writing nothing: ${none.toFixed(1)} µs`);
for (const way of Object.keys(WAYS).filter((w) => w !== "none")) {
  const rounds = totals[way].map((v) => (v - none).toFixed(1)).join(", ");
  console.log(
    `  ${way}: ${(median(totals[way]) - none).toFixed(1)} µs beyond it (rounds: ${rounds})`,
  );
}
console.log(
  `load average: ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`,
);
