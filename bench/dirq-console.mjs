#!/usr/bin/env node
// Benchmarks the dirq web console in Debian's Chromium (headless, playwright-core) against a
// real `dirq server` on loopback: how long the page takes to load and become usable, compared
// with a one-line HTML page from a plain node:http server (the floor), and how long 10,000
// result rows take from Ctrl-Enter to the screen, compared with the same rows fetched and
// parsed but not shown (the floor) and with a plain table that puts every row in the DOM (the
// naive peer); then how long one scroll step takes in the virtual table. See bench/README.md.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import {
  DIRQ_BIN,
  DIRQ_ENV,
  fail,
  formatNumber,
  log,
  median,
  parseOptions,
  positiveInteger,
  requireDirqBuilt,
  table,
} from "./lib.mjs";

const USAGE = `usage: node bench/dirq-console.mjs [--runs N] [--rows N] [--json]
  --runs N   timed runs of each measurement after one warm-up (default 7)
  --rows N   result rows for the rendering measurements (default 10000)
  --json     results as JSON on stdout`;

const options = parseOptions(
  process.argv.slice(2),
  { runs: { type: "string" }, rows: { type: "string" }, json: { type: "boolean", default: false } },
  USAGE,
);
const RUNS = options.runs === undefined ? 7 : positiveInteger(options.runs, "--runs");
const ROWS = options.rows === undefined ? 10_000 : positiveInteger(options.rows, "--rows");
const CHROMIUM = process.env.DIRQ_TEST_CHROMIUM ?? "/usr/bin/chromium";

requireDirqBuilt();
if (!existsSync(CHROMIUM)) fail(`${CHROMIUM} is missing: apt-get install chromium`);

const SQL = `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < ${ROWS}) SELECT x, 'row ' || x AS label, x * 1.5 AS half, hex(randomblob(12)) AS token, CASE WHEN x % 7 = 0 THEN NULL ELSE x % 100 END AS maybe FROM n`;

function startDirq(root) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [DIRQ_BIN, "server", "--port", "0"], {
      cwd: root,
      env: DIRQ_ENV,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => {
      out += chunk;
      const match = /^Running at (\S+):(\d+)$/m.exec(out);
      if (match) resolve({ child, url: `http://${match[1]}:${match[2]}` });
    });
    child.once("exit", (code) => reject(new Error(`dirq server exited (${code})`)));
  });
}

/** The floor for page loads: a one-line HTML page from plain node:http. */
function startFloorServer() {
  const body = "<!doctype html><title>floor</title><p>hello</p>";
  const server = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    response.end(body);
  });
  return new Promise((resolve) =>
    server.listen(0, "localhost", () =>
      resolve({ server, url: `http://localhost:${server.address().port}` }),
    ),
  );
}

const root = mkdtempSync(join(tmpdir(), "dirq-console-bench-"));
writeFileSync(join(root, "readme.md"), "# bench\n");
const dirq = await startDirq(root);
const floor = await startFloorServer();
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});

/** Navigation to `load` (from the page's own timing) and to `ready` (selector visible). */
async function navigate(page, url, readySelector) {
  const started = performance.now();
  await page.goto(url);
  await page.locator(readySelector).first().waitFor();
  const ready = performance.now() - started;
  const load = await page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd");
  return { load, ready };
}

/**
 * A cold load in a fresh browser context (empty cache), then a warm one in the same context
 * (the hashed assets come from the cache, as for a user who comes back).
 */
async function loadOnce(url, readySelector) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const cold = await navigate(page, url, readySelector);
  const blank = await context.newPage();
  const warm = await navigate(blank, url, readySelector);
  await context.close();
  return { cold, warm };
}

async function measureLoads(url, readySelector) {
  await loadOnce(url, readySelector);
  const samples = [];
  for (let run = 0; run < RUNS; run++) samples.push(await loadOnce(url, readySelector));
  const pick = (kind, field) => median(samples.map((sample) => sample[kind][field]));
  return {
    load: pick("cold", "load"),
    ready: pick("cold", "ready"),
    warmLoad: pick("warm", "load"),
    warmReady: pick("warm", "ready"),
  };
}

log(`load average ${loadavg()[0].toFixed(1)} (an idle machine: near 0)`);
log(`page loads: ${RUNS} runs each after a warm-up, fresh browser context each time`);
const consoleLoad = await measureLoads(
  `${dirq.url}/`,
  "#connection[data-state=live] >> visible=true",
);
const floorLoad = await measureLoads(`${floor.url}/`, "p");

log(`${ROWS} rows: ${RUNS} runs each after a warm-up`);
const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
const page = await context.newPage();
await page.goto(`${dirq.url}/`);
await page.locator("#connection[data-state=live]").waitFor();

/** Through the page: Ctrl-Enter to rows on screen, from the page's own `dirq:run` measure. */
async function consoleRun() {
  const runs = Number((await page.locator("body").getAttribute("data-runs")) ?? 0);
  await page.locator(".cm-content").click();
  await page.keyboard.press("Control+A");
  await page.keyboard.insertText(SQL);
  await page.keyboard.press("Control+Enter");
  for (;;) {
    const done = await page.evaluate(`Number(document.body.dataset.runs ?? 0) > ${runs}`);
    if (done) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const status = await page.locator("#result-status").innerText();
  if (!status.startsWith(`${ROWS.toLocaleString("en-US")} rows`)) fail(`unexpected: ${status}`);
  return page.evaluate("performance.getEntriesByName('dirq:run').at(-1).duration");
}

/** The floor: the same request, parsed in the page, nothing shown. */
function fetchOnly() {
  return page.evaluate(`(async () => {
    const started = performance.now();
    const response = await fetch("/query", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ sql: ${JSON.stringify(SQL)} }) });
    const rows = JSON.parse(await response.text());
    if (rows.length !== ${ROWS}) throw new Error("rows: " + rows.length);
    return performance.now() - started;
  })()`);
}

/** The naive peer: fetch, parse, and put every row in one plain table, laid out. */
function naiveTable() {
  return page.evaluate(`(async () => {
    const started = performance.now();
    const response = await fetch("/query", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ sql: ${JSON.stringify(SQL)} }) });
    const rows = JSON.parse(await response.text());
    const table = document.createElement("table");
    const columns = Object.keys(rows[0]);
    const head = table.createTHead().insertRow();
    for (const column of columns) { const th = document.createElement("th"); th.textContent = column; head.append(th); }
    const body = table.createTBody();
    for (const row of rows) { const tr = body.insertRow(); for (const column of columns) tr.insertCell().textContent = row[column] === null ? "NULL" : String(row[column]); }
    const holder = document.getElementById("results");
    const saved = [...holder.childNodes];
    holder.replaceChildren(table);
    table.offsetHeight;
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
    const elapsed = performance.now() - started;
    holder.replaceChildren(...saved);
    return elapsed;
  })()`);
}

/**
 * Scrolls the console's table for 180 frames, `step` pixels further on every frame (or, with
 * `step` 0, from top to bottom: ~55 rows a frame, so every frame renders new rows), and records
 * the interval between painted frames and any long task (over 50 ms).
 */
function scrollFrames(step) {
  return page.evaluate(`(async () => {
    const results = document.getElementById("results");
    results.scrollTop = 0;
    await new Promise((resolve) => requestAnimationFrame(resolve));
    let longTasks = 0;
    const observer = new PerformanceObserver((list) => { longTasks += list.getEntries().length; });
    observer.observe({ type: "longtask" });
    const frames = 180;
    const intervals = [];
    let last = performance.now();
    for (let frame = 1; frame <= frames; frame++) {
      results.scrollTop = ${step} === 0
        ? ((results.scrollHeight - results.clientHeight) * frame) / frames
        : results.scrollTop + ${step};
      await new Promise((resolve) => requestAnimationFrame(resolve));
      const now = performance.now();
      intervals.push(now - last);
      last = now;
    }
    observer.disconnect();
    intervals.sort((a, b) => a - b);
    const lastRow = [...document.querySelectorAll("table.grid tr.row")].at(-1)?.cells[1]?.textContent;
    return {
      median: intervals[Math.floor(frames / 2)],
      p95: intervals[Math.floor(frames * 0.95)],
      max: intervals[frames - 1],
      longTasks,
      lastRow,
      rowsInDom: document.querySelectorAll("table.grid tr.row").length,
    };
  })()`);
}

async function repeat(measure) {
  await measure();
  const samples = [];
  for (let run = 0; run < RUNS; run++) samples.push(await measure());
  return median(samples);
}

const fetchMs = await repeat(fetchOnly);
const consoleMs = await repeat(consoleRun);
const wheel = await scrollFrames(40);
const scroll = await scrollFrames(0);
if (scroll.lastRow !== String(ROWS)) fail(`the scroll ended at row ${scroll.lastRow}`);
const naiveMs = await repeat(naiveTable);

const chromiumVersion = browser.version();
await browser.close();
dirq.child.kill("SIGTERM");
floor.server.close();
rmSync(root, { recursive: true, force: true });

const results = {
  runs: RUNS,
  rows: ROWS,
  chromium: chromiumVersion,
  load: {
    consoleLoadEventMs: consoleLoad.load,
    consoleReadyMs: consoleLoad.ready,
    consoleWarmLoadEventMs: consoleLoad.warmLoad,
    consoleWarmReadyMs: consoleLoad.warmReady,
    floorLoadEventMs: floorLoad.load,
    floorReadyMs: floorLoad.ready,
    floorWarmLoadEventMs: floorLoad.warmLoad,
    floorWarmReadyMs: floorLoad.warmReady,
  },
  rowsRender: {
    fetchAndParseMs: fetchMs,
    consoleRunToScreenMs: consoleMs,
    naiveFullTableMs: naiveMs,
    wheelFrameMedianMs: wheel.median,
    wheelFrameP95Ms: wheel.p95,
    wheelFrameMaxMs: wheel.max,
    wheelLongTasks: wheel.longTasks,
    scrollFrameMedianMs: scroll.median,
    scrollFrameP95Ms: scroll.p95,
    scrollFrameMaxMs: scroll.max,
    scrollLongTasks: scroll.longTasks,
    rowsInDom: scroll.rowsInDom,
  },
};

if (options.json) {
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
} else {
  const ms = (value) => formatNumber(value, 1);
  const ratio = (value, base) => `${(value / base).toFixed(2)}x`;
  console.log(
    `Page load on loopback (median of ${RUNS}; cold: fresh browser context, warm: same context again)`,
  );
  for (const line of table(
    ["page", "cache", "load event ms", "usable ms", "usable vs floor"],
    [
      [
        "dirq console (GET /, editor, /events live)",
        "cold",
        ms(consoleLoad.load),
        ms(consoleLoad.ready),
        ratio(consoleLoad.ready, floorLoad.ready),
      ],
      [
        "",
        "warm",
        ms(consoleLoad.warmLoad),
        ms(consoleLoad.warmReady),
        ratio(consoleLoad.warmReady, floorLoad.warmReady),
      ],
      [
        "floor: one-line page, plain node:http",
        "cold",
        ms(floorLoad.load),
        ms(floorLoad.ready),
        "1.00x",
      ],
      ["", "warm", ms(floorLoad.warmLoad), ms(floorLoad.warmReady), "1.00x"],
    ],
  )) {
    console.log(line);
  }
  console.log("");
  console.log(`${ROWS.toLocaleString("en-US")} rows x 5 columns (median of ${RUNS})`);
  for (const line of table(
    ["how", "ms", "vs floor"],
    [
      ["floor: fetch + JSON.parse, not shown", ms(fetchMs), "1.00x"],
      ["dirq console: Ctrl-Enter to rows on screen", ms(consoleMs), ratio(consoleMs, fetchMs)],
      ["naive: every row in one plain <table>", ms(naiveMs), ratio(naiveMs, fetchMs)],
    ],
  )) {
    console.log(line);
  }
  console.log("");
  console.log(
    `Scrolling the console's ${ROWS.toLocaleString("en-US")}-row table for 180 frames (16.7 ms = 60 frames/s)`,
  );
  for (const line of table(
    ["how", "frame median ms", "p95 ms", "worst ms", "long tasks", "rows in DOM"],
    [
      [
        "40 px a frame (a wheel or trackpad)",
        ms(wheel.median),
        ms(wheel.p95),
        ms(wheel.max),
        String(wheel.longTasks),
        String(wheel.rowsInDom),
      ],
      [
        "top to bottom (~55 rows a frame)",
        ms(scroll.median),
        ms(scroll.p95),
        ms(scroll.max),
        String(scroll.longTasks),
        String(scroll.rowsInDom),
      ],
    ],
  )) {
    console.log(line);
  }
}
