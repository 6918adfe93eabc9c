// Cold start: a new Node process imports the client and makes its first call, against a local
// server that answers at once. Compares lmclient's `forward` and `aforward` with the official
// `openai` client, in alternating runs (so a change in the machine's load hits all alike), and
// prints medians, ratios to the official client and the load average before and after.
//
//   npm run build -w packages/lmclient && node packages/lmclient/scripts/cold-start.mjs [runs]
//     [other-lmclient-dir]
//
// With a second argument, the lmclient built in that folder (say, a checkout of an earlier
// commit, built) is timed too, as "other".
//
// Each child measures from just before its `import` to the first response (Node's own start-up
// is the same for all and left out); the whole process's wall time is shown too, and the CPU
// time of the whole process (every thread, user and system), which a loaded machine distorts
// less than wall time (a worker thread's start-up shows there even where a second core hides
// it from the wall clock).
import { execFile } from "node:child_process";
import { createServer } from "node:http";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";

const runs = Number(process.argv[2] ?? 30);
const packageDir = fileURLToPath(new URL("..", import.meta.url));
const otherDir = process.argv[3] && resolve(process.argv[3]);

const completion = JSON.stringify({
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1_700_000_000,
  model: "m",
  choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});
const server = createServer((request, response) => {
  request.resume();
  request.on("end", () => {
    response.writeHead(200, { "content-type": "application/json" });
    response.end(completion);
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const baseUrl = `http://127.0.0.1:${server.address().port}/v1`;

const measure = (body) =>
  `const start = performance.now();${body}` +
  "const ms = performance.now() - start;" +
  "const usage = process.resourceUsage();" +
  "const cpu = (usage.userCPUTime + usage.systemCPUTime) / 1000;" +
  "console.log(JSON.stringify({ ms, total: performance.now(), cpu }));";

const clients = {
  openai: measure(
    'const { default: OpenAI } = await import("openai");' +
      'const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: "k" });' +
      'await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });',
  ),
  ...lmclient("lmclient", packageDir),
  ...(otherDir ? lmclient("other", otherDir) : {}),
};

function lmclient(label, dir) {
  const entry = JSON.stringify(pathToFileURL(join(dir, "dist/src/index.js")).href);
  const make = 'new CompatLM({ model: "m", base_url: process.env.BASE_URL, api_key: "k" })';
  return {
    [`${label} forward`]: measure(
      `const { CompatLM } = await import(${entry});${make}.forward("hi");`,
    ),
    [`${label} aforward`]: measure(
      `const { CompatLM } = await import(${entry});await ${make}.aforward("hi");`,
    ),
  };
}

async function once(script) {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--input-type=module", "-e", script],
    { cwd: packageDir, env: { ...process.env, BASE_URL: baseUrl } },
  );
  return JSON.parse(stdout);
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

const loadBefore = loadavg();
const results = Object.fromEntries(Object.keys(clients).map((name) => [name, []]));
// One warm-up round (disk cache of the files), not counted.
for (const script of Object.values(clients)) await once(script);
for (let round = 0; round < runs; round += 1) {
  // Alternate the order each round as well.
  const names = Object.keys(clients);
  if (round % 2) names.reverse();
  for (const name of names) results[name].push(await once(clients[name]));
}
const loadAfter = loadavg();
server.close();

const reference = median(results.openai.map((r) => r.ms));
console.log(`cold start, ${runs} alternating runs each (node ${process.version})`);
const referenceCpu = median(results.openai.map((r) => r.cpu));
console.log(
  "client               import + first call   ratio   whole process   process CPU   ratio",
);
const cell = (value, width) => `${value.toFixed(1)} ms`.padStart(width);
for (const [name, samples] of Object.entries(results)) {
  const ms = median(samples.map((r) => r.ms));
  const total = median(samples.map((r) => r.total));
  const cpu = median(samples.map((r) => r.cpu));
  console.log(
    `${name.padEnd(20)} ${cell(ms, 19)}   ${(ms / reference).toFixed(2)}x   ${cell(total, 13)}` +
      `   ${cell(cpu, 11)}   ${(cpu / referenceCpu).toFixed(2)}x`,
  );
}
const load = (values) => values.map((value) => value.toFixed(2)).join(" ");
console.log(`load average before: ${load(loadBefore)}, after: ${load(loadAfter)}`);
