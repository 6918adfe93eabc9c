// The `/events` client of bench/dirq-million.mjs, on a thread of its own: parsing a burst's
// 200,000 frames on the bench's own event loop delayed the settle check's timers and answers
// there, so the faster the server sent its events, the later the index was seen equal.
// It counts row frames and notes when the last one came (epoch ms); it hands frames to the
// bench only while the bench asks for them (`forward`: the writes' few). It reads the stream
// as bytes and makes text only of what it forwards: decoding and splitting a burst's 50 MB of
// frames into strings took a share of the two cores the server's burst runs on.
import { request } from "node:http";
import { parentPort, workerData } from "node:worker_threads";

const FRAME_END = Buffer.from("\n\n");
// A row frame's event line comes after its id line.
const ROW = Buffer.from("\nevent: row\n");
const RESET = Buffer.from("event: reset\n");

let events = 0;
let cutOff = "";
let lastRowAt = 0;
let forward = false;

parentPort.on("message", (message) => {
  if (message.forward !== undefined) forward = message.forward;
  if (message.ask) parentPort.postMessage({ stats: { events, cutOff, lastRowAt } });
});

/** How many times `marker` occurs in `bytes`. */
function count(bytes, marker) {
  let n = 0;
  for (let at = bytes.indexOf(marker); at !== -1; at = bytes.indexOf(marker, at + marker.length))
    n++;
  return n;
}

const req = request({ host: "127.0.0.1", port: workerData.port, path: "/events" }, (res) => {
  // The bytes after the last whole frame (a frame ends with a blank line).
  let pending = Buffer.alloc(0);
  res.on("data", (chunk) => {
    const bytes = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    const end = bytes.lastIndexOf(FRAME_END);
    if (end === -1) {
      pending = bytes;
      return;
    }
    const whole = bytes.subarray(0, end + FRAME_END.length);
    pending = Buffer.from(bytes.subarray(end + FRAME_END.length));
    const at = performance.timeOrigin + performance.now();
    if (whole.includes(RESET)) cutOff ||= "a reset frame";
    const rows = count(whole, ROW);
    if (rows === 0) return;
    events += rows;
    lastRowAt = at;
    if (!forward) return;
    const frames = whole
      .toString("utf8")
      .split("\n\n")
      .filter((frame) => frame.includes("event: row"));
    if (frames.length > 0) parentPort.postMessage({ frames, at });
  });
  res.on("error", (error) => (cutOff ||= error.message));
  res.on("end", () => (cutOff ||= "the stream ended"));
  parentPort.postMessage({ connected: true });
});
req.on("error", (error) => (cutOff ||= error.message));
req.end();
