// The `/events` client of bench/dirq-million.mjs, on a thread of its own: parsing a burst's
// 200,000 frames on the bench's own event loop delayed the settle check's timers and answers
// there, so the faster the server sent its events, the later the index was seen equal.
// It counts row frames and notes when the last one came (epoch ms); it hands frames to the
// bench only while the bench asks for them (`forward`: the writes' few).
import { request } from "node:http";
import { parentPort, workerData } from "node:worker_threads";

let events = 0;
let cutOff = "";
let lastRowAt = 0;
let forward = false;

parentPort.on("message", (message) => {
  if (message.forward !== undefined) forward = message.forward;
  if (message.ask) parentPort.postMessage({ stats: { events, cutOff, lastRowAt } });
});

const req = request({ host: "127.0.0.1", port: workerData.port, path: "/events" }, (res) => {
  let buffer = "";
  res.setEncoding("utf8").on("data", (chunk) => {
    buffer += chunk;
    const frames = buffer.split("\n\n");
    buffer = frames.pop() ?? "";
    const at = performance.timeOrigin + performance.now();
    const forwarded = [];
    for (const frame of frames) {
      if (frame.includes("event: reset")) cutOff ||= "a reset frame";
      if (!frame.includes("event: row")) continue;
      events++;
      lastRowAt = at;
      if (forward) forwarded.push(frame);
    }
    if (forwarded.length > 0) parentPort.postMessage({ frames: forwarded, at });
  });
  res.on("error", (error) => (cutOff ||= error.message));
  res.on("end", () => (cutOff ||= "the stream ended"));
  parentPort.postMessage({ connected: true });
});
req.on("error", (error) => (cutOff ||= error.message));
req.end();
