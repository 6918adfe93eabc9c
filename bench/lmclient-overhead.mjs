// Per-call cost of lmclient's forward (synchronous) and aforward against the official openai
// client, all calling one local OpenAI-compatible server that answers at once, so the numbers
// are client overhead plus a loopback round trip. The server runs in its own process (forward
// blocks this thread). Calls are sequential; the methods take turns in blocks (round-robin) so
// machine drift hits them alike. Plain Node ESM; needs the built lmclient (`npm run build`).
//
//   node bench/lmclient-overhead.mjs [--calls 500] [--block 50] [--warmup 50] [--json]
import { spawn } from "node:child_process";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import OpenAI from "openai";
import { CompatLM } from "lmclient";

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "500" },
    block: { type: "string", default: "50" },
    warmup: { type: "string", default: "50" },
    json: { type: "boolean", default: false },
  },
});
const CALLS = Number(values.calls);
const BLOCK = Number(values.block);
const WARMUP = Number(values.warmup);

const SERVER = `
const body = JSON.stringify({
  id: "chatcmpl-bench", object: "chat.completion", created: 1700000000, model: "bench",
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
});
const server = require("node:http").createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
process.stdin.resume();
process.stdin.on("end", () => process.exit(0));
`;

const server = spawn(process.execPath, ["-e", SERVER], { stdio: ["pipe", "pipe", "inherit"] });
const port = await new Promise((resolve) =>
  server.stdout.once("data", (chunk) => resolve(Number(String(chunk).trim()))),
);
const baseURL = `http://127.0.0.1:${port}/v1`;
const messages = [{ role: "user", content: "Say ok." }];

const official = new OpenAI({ baseURL, apiKey: "sk-bench" });
// Without the response cache: every call must reach the server, as the official client's do.
const lm = new CompatLM({ model: "bench", base_url: baseURL, api_key: "sk-bench", cache: false });

const methods = {
  "openai (official, async)": () => official.chat.completions.create({ model: "bench", messages }),
  "lmclient aforward": () => lm.aforward(undefined, messages),
  "lmclient forward (sync)": () => lm.forward(undefined, messages),
  "fetch (bare, no client)": () =>
    globalThis
      .fetch(`${baseURL}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer sk-bench" },
        body: JSON.stringify({ model: "bench", messages }),
      })
      .then((response) => response.json()),
};

// Figures taken on a busy machine mean little: print the load before and after with them.
const loadBefore = loadavg();
const samples = Object.fromEntries(Object.keys(methods).map((name) => [name, []]));
for (const call of Object.values(methods)) for (let i = 0; i < WARMUP; i += 1) await call();
for (let done = 0; done < CALLS; done += BLOCK) {
  for (const [name, call] of Object.entries(methods)) {
    for (let i = 0; i < Math.min(BLOCK, CALLS - done); i += 1) {
      const start = performance.now();
      await call();
      samples[name].push(performance.now() - start);
    }
  }
}
server.stdin.end();
const loadAfter = loadavg();

const stats = (list) => {
  const sorted = [...list].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return {
    calls: list.length,
    meanUs: Math.round((list.reduce((a, b) => a + b, 0) / list.length) * 1000),
    medianUs: Math.round(at(0.5) * 1000),
    p95Us: Math.round(at(0.95) * 1000),
  };
};
const results = Object.fromEntries(
  Object.entries(samples).map(([name, list]) => [name, stats(list)]),
);
const reference = results["openai (official, async)"].medianUs;
if (values.json) {
  console.log(JSON.stringify({ node: process.version, loadBefore, loadAfter, results }, null, 2));
} else {
  const load = (values) => values.map((value) => value.toFixed(2)).join(", ");
  console.log(`Node ${process.version}, ${CALLS} sequential calls per method, local server`);
  console.log(`load average before: ${load(loadBefore)}; after: ${load(loadAfter)}\n`);
  console.log("| method | median µs/call | mean | p95 | median vs official |");
  console.log("| --- | ---: | ---: | ---: | ---: |");
  for (const [name, r] of Object.entries(results)) {
    console.log(
      `| ${name} | ${r.medianUs} | ${r.meanUs} | ${r.p95Us} | ${(r.medianUs / reference).toFixed(2)}× |`,
    );
  }
}
