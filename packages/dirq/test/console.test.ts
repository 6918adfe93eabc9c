import assert from "node:assert/strict";
import { unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import {
  browserMissing,
  launchChromium,
  runSql,
  tableHeader,
  tableRows,
  testOutputPath,
  waitUntil,
} from "./browser.js";
import { makeTree, removeTree } from "./helpers.js";
import {
  assertJsonError,
  postQuery,
  request,
  type ServerProcess,
  startServer,
} from "./server-support.js";

/* ------------------------------------------------------------------------------------------ */
/* A fixture folder with a config table                                                        */
/* ------------------------------------------------------------------------------------------ */

/** Prints the file's JSON as rows: an object is one row, an array is the rows. */
const ROWS_HOOK = `import { readFileSync } from "node:fs";
const data = JSON.parse(readFileSync(process.argv[2], "utf8"));
process.stdout.write(JSON.stringify(Array.isArray(data) ? data : [data]));
`;

const LONG_BODY = `${"All work and no play makes a long cell. ".repeat(8)}The end.`;

const CONFIG = `[[table]]
name = "notes"
glob = "notes/*.json"
schema = { title = "TEXT", body = "TEXT", stars = "INTEGER" }
on-file = ${JSON.stringify(`'${process.execPath}' rows.mjs {path}`)}
`;

const roots: string[] = [];
const servers: ServerProcess[] = [];

function fixture(): string {
  const root = makeTree({
    "rows.mjs": ROWS_HOOK,
    "dirq.toml": CONFIG,
    "notes/a.json": JSON.stringify({ title: "alpha", body: LONG_BODY, stars: null }),
    "notes/b.json": JSON.stringify({ title: "beta", body: "short", stars: 3 }),
    "docs/readme.md": "# hello\n",
  });
  roots.push(root);
  return root;
}

async function serve(root: string, args: string[]): Promise<ServerProcess> {
  const server = await startServer(args, { cwd: root });
  servers.push(server);
  return server;
}

after(async () => {
  await Promise.all(servers.map((server) => server.kill()));
  for (const root of roots) removeTree(root);
});

/* ------------------------------------------------------------------------------------------ */
/* Serving (plain HTTP, no browser)                                                             */
/* ------------------------------------------------------------------------------------------ */

describe("web console: serving", () => {
  let server: ServerProcess;

  before(async () => {
    server = await serve(fixture(), ["-c", "dirq.toml", "--port", "0"]);
  });

  it("serves the page at GET / as HTML that is revalidated on every load", async () => {
    const page = await request(`${server.url}/`);
    assert.equal(page.status, 200);
    assert.equal(page.contentType, "text/html; charset=utf-8");
    assert.equal(page.headers.get("cache-control"), "no-cache");
    assert.equal(page.headers.get("x-content-type-options"), "nosniff");
    const policy = page.headers.get("content-security-policy") ?? "";
    assert.match(policy, /default-src 'none'/);
    assert.match(policy, /connect-src 'self'/);
    assert.match(policy, /script-src 'self'(;|$)/);
    assert.match(page.text, /<title>dirq console<\/title>/);
    // A query string does not change what is served.
    assert.equal((await request(`${server.url}/?sql=1`)).text, page.text);
    // Revalidation: the same ETag answers 304 with no body.
    const etag = page.headers.get("etag") ?? "";
    assert.ok(etag !== "", "the page has an ETag");
    const again = await request(`${server.url}/`, { headers: { "if-none-match": etag } });
    assert.equal(again.status, 304);
    assert.equal(again.text, "");
  });

  it("serves hashed assets under /_console/ with their types, cacheable for good", async () => {
    const page = await request(`${server.url}/`);
    const assets = [...page.text.matchAll(/(?:src|href)="(\/_console\/[^"]+)"/g)].map(
      (match) => match[1] as string,
    );
    assert.equal(assets.length, 2, `assets named by the page: ${assets.join(", ")}`);
    const types: Record<string, string> = {
      js: "text/javascript; charset=utf-8",
      css: "text/css; charset=utf-8",
    };
    for (const path of assets) {
      const extension = /\.(\w+)$/.exec(path)?.[1] ?? "";
      assert.match(path, /^\/_console\/console-[A-Z0-9]{8}\.(js|css)$/, "a content hash");
      const asset = await request(`${server.url}${path}`);
      assert.equal(asset.status, 200, path);
      assert.equal(asset.contentType, types[extension], path);
      assert.equal(asset.headers.get("cache-control"), "public, max-age=31536000, immutable");
      assert.equal(asset.headers.get("x-content-type-options"), "nosniff");
      assert.ok(asset.text.length > 1000, `${path} has content`);
      const head = await request(`${server.url}${path}`, { method: "HEAD" });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get("content-length"), String(Buffer.byteLength(asset.text)));
      assert.equal(head.text, "");
    }
    // Nothing in the bundle points at another origin (no CDN, no fonts, no analytics).
    const script = await request(`${server.url}${assets.find((path) => path.endsWith(".js"))}`);
    assert.doesNotMatch(script.text, /https?:\/\/(?!www\.w3\.org\/)[a-z0-9.-]+\.[a-z]{2,}\//i);
  });

  it("answers other console paths and methods with the API's error shapes", async () => {
    const missing = await request(`${server.url}/_console/nope.js`);
    assertJsonError(missing, 404, /\/_console\/nope\.js/);
    const post = await request(`${server.url}/`, { method: "POST", body: "{}" });
    assert.equal(post.status, 405);
    assert.match(post.contentType, /^text\/plain/);
    assert.equal(post.headers.get("allow"), "GET, HEAD");
  });

  it("leaves the JSON API as it was", async () => {
    assertJsonError(await request(`${server.url}/index.html`), 404, /no such endpoint/);
    const get = await request(`${server.url}/query`);
    assert.equal(get.status, 405);
    assert.match(get.contentType, /^text\/plain/);
    const rows = await postQuery(server, "SELECT title FROM notes ORDER BY title");
    assert.equal(rows.text, '[{"title":"alpha"},{"title":"beta"}]\n');
  });
});

/* ------------------------------------------------------------------------------------------ */
/* In a real browser                                                                            */
/* ------------------------------------------------------------------------------------------ */

const skip = browserMissing();

interface ConsolePage {
  page: Page;
  context: BrowserContext;
  /** Every URL the page requested. */
  requests: string[];
  /** Uncaught exceptions and console errors in the page. */
  problems: string[];
}

/** Waits until the results table's text includes `text`. */
function waitForResult(page: Page, text: string): Promise<void> {
  return waitUntil(
    page,
    `(document.querySelector("table.grid")?.textContent ?? "").includes(${JSON.stringify(text)})`,
  );
}

describe("web console in Chromium", { skip }, () => {
  let browser: Browser;
  let root: string;
  let server: ServerProcess;
  const opened: ConsolePage[] = [];

  before(async () => {
    root = fixture();
    server = await serve(root, ["-c", "dirq.toml", "--port", "0"]);
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
  });

  async function open(
    target: ServerProcess,
    viewport = { width: 1280, height: 800 },
  ): Promise<ConsolePage> {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    const opened_: ConsolePage = { page, context, requests: [], problems: [] };
    page.on("request", (request) => opened_.requests.push(request.url()));
    page.on("pageerror", (error) => opened_.problems.push(`pageerror: ${error.message}`));
    page.on("console", (message) => {
      // Chromium logs every non-2xx answer itself; the SQL error and degraded tests expect them.
      if (message.type() === "error" && !/status of (400|503)\b/.test(message.text())) {
        opened_.problems.push(`console: ${message.text()}`);
      }
    });
    await page.goto(`${target.url}/`);
    opened.push(opened_);
    return opened_;
  }

  it("runs a typed query with Ctrl-Enter and shows the rows, their count and time", async () => {
    const { page } = await open(server);
    await page.locator("#connection[data-state=live]").waitFor();
    // Typed key by key, so the editor's highlighting and completion are in play.
    await page.getByLabel(/SQL statement/).click();
    await page.keyboard.press("Control+A");
    await page.keyboard.press("Delete");
    await page.keyboard.type("SELECT title, stars FROM notes ORDER BY title");
    await page.keyboard.press("Escape");
    const keywordColor = await page.evaluate(
      `(() => { const line = document.querySelector(".cm-line"); const span = [...line.querySelectorAll("span")].find((s) => s.textContent === "SELECT"); return span ? [getComputedStyle(span).color, getComputedStyle(line).color] : null; })()`,
    );
    assert.ok(Array.isArray(keywordColor), "SELECT is a highlighted token");
    assert.notEqual(keywordColor[0], keywordColor[1], "keywords have their own colour");
    const runs = Number((await page.locator("body").getAttribute("data-runs")) ?? 0);
    await page.keyboard.press("Control+Enter");
    await waitUntil(page, `Number(document.body.dataset.runs ?? 0) > ${runs}`);
    assert.deepEqual(await tableHeader(page), ["title", "stars"]);
    assert.deepEqual(await tableRows(page), [
      ["alpha", "NULL"],
      ["beta", "3"],
    ]);
    assert.match(await page.locator("#result-status").innerText(), /^2 rows · [\d.]+ m?s$/);
    await page.screenshot({ path: testOutputPath("console.png") });
  });

  it("shows NULL apart from the text 'NULL', and the full value of a long cell", async () => {
    const { page } = await open(server);
    await runSql(page, "SELECT NULL AS nil, 'NULL' AS word, body FROM notes WHERE title = 'alpha'");
    const classes = await page.evaluate(
      `[...document.querySelector("table.grid tr.row").cells].map((cell) => cell.className)`,
    );
    assert.deepEqual((await tableRows(page))[0]?.slice(0, 2), ["NULL", "NULL"]);
    assert.match(String((classes as string[])[1]), /\bnull\b/, "a real NULL is marked");
    assert.doesNotMatch(String((classes as string[])[2]), /\bnull\b/, "the text 'NULL' is not");
    const cell = page.locator("table.grid tr.row td.cut");
    assert.equal(await cell.getAttribute("title"), LONG_BODY, "the full value on hover");
    const box = await cell.boundingBox();
    const width = await cell.evaluate((element: { scrollWidth: number; clientWidth: number }) => [
      element.scrollWidth,
      element.clientWidth,
    ]);
    assert.ok(box !== null && (width as number[])[0]! > (width as number[])[1]!, "cut on screen");
    await cell.click();
    const dialog = page.getByRole("dialog");
    await dialog.waitFor();
    assert.equal(await page.locator("#cell-dialog-value").textContent(), LONG_BODY);
    await dialog.getByRole("button", { name: "Close" }).click();
    await dialog.waitFor({ state: "hidden" });
  });

  it("shows a SQL error with the server's diagnostic", async () => {
    const { page } = await open(server);
    const sql = "SELECT nope FROM no_such_table";
    const expected = (JSON.parse((await postQuery(server, sql)).text) as { error: string }).error;
    await runSql(page, sql);
    const alert = page.locator("#query-error");
    await alert.waitFor();
    const text = await alert.innerText();
    assert.ok(text.includes(expected), `${JSON.stringify(text)} shows ${expected}`);
    assert.match(text, /HTTP 400/);
    assert.equal(await page.getByRole("alert").filter({ hasText: expected }).count(), 1);
  });

  it("lists named tables with their columns and hints at path-tables", async () => {
    const { page } = await open(server);
    const schema = page.getByRole("complementary", { name: "Schema" });
    await schema.getByRole("button", { name: "notes" }).waitFor();
    const columns = await schema.getByRole("list", { name: "Columns of notes" }).innerText();
    assert.deepEqual(
      columns.split("\n").map((line) => line.trim().split(/\s+/)),
      [
        ["title", "TEXT"],
        ["body", "TEXT"],
        ["stars", "INTEGER"],
      ],
    );
    assert.match(await schema.innerText(), /FROM '\.\/'/);
    assert.doesNotMatch(await schema.innerText(), /_dirq_/);
    await schema.getByRole("button", { name: "notes" }).click();
    assert.equal(
      await page.getByLabel(/SQL statement/).innerText(),
      "SELECT * FROM notes LIMIT 100",
    );
  });

  it("streams changes, keeps the answer live as rows change, and pauses", async () => {
    const { page } = await open(server);
    await page.locator("#connection[data-state=live]").waitFor();
    await page.getByRole("checkbox", { name: /Live: keep the answer current/ }).check();
    await runSql(page, "SELECT title, stars FROM notes ORDER BY title");
    assert.equal((await tableRows(page)).length, 2);
    await page.locator("body[data-live=on][data-live-commit]").waitFor();

    writeFileSync(join(root, "notes", "c.json"), JSON.stringify({ title: "gamma", stars: 1 }));
    const insert = page.locator("#event-list li.insert", { hasText: "notes/c.json" });
    await insert.waitFor();
    assert.match(
      await insert.innerText(),
      /insert[\s\S]*notes[\s\S]*notes\/c\.json[\s\S]*title=gamma/i,
    );
    await waitForResult(page, "gamma");
    assert.deepEqual(
      (await tableRows(page)).map((row) => row[0]),
      ["alpha", "beta", "gamma"],
    );

    // An update shows what changed, old and new.
    writeFileSync(
      join(root, "notes", "b.json"),
      JSON.stringify({ title: "beta", body: "short", stars: 5 }),
    );
    const update = page.locator("#event-list li.update", { hasText: "notes/b.json" });
    await update.waitFor();
    assert.match(await update.locator(".change").innerText(), /^stars: 3 → 5$/);
    assert.equal(await update.locator("del").innerText(), "3");
    assert.equal(await update.locator("ins").innerText(), "5");
    await waitUntil(
      page,
      `[...document.querySelectorAll("table.grid tr.row")].some((row) => row.textContent.includes("beta") && row.cells[2].textContent === "5")`,
    );

    // A file its hook cannot read is an error event with the hook's message; the rows stay.
    writeFileSync(join(root, "notes", "bad.json"), "{ not json");
    const failure = page.locator("#event-list li.error", { hasText: "notes/bad.json" });
    await failure.waitFor();
    assert.match(await failure.locator(".event-detail").innerText(), /\S/);

    // Paused: changes wait (and the live answer is not redrawn); on resume both show.
    await page.getByRole("button", { name: "Pause" }).click();
    assert.equal(
      await page.getByRole("button", { name: "Resume" }).getAttribute("aria-pressed"),
      "true",
    );
    unlinkSync(join(root, "notes", "c.json"));
    await page.locator("#events-note", { hasText: "Paused: 1 change waiting." }).waitFor();
    assert.equal(await page.locator("#event-list li.delete").count(), 0);
    assert.ok(
      (await tableRows(page)).some((row) => row[0] === "gamma"),
      "not redrawn while paused",
    );
    await page.getByRole("button", { name: "Resume" }).click();
    await page.locator("#event-list li.delete", { hasText: "notes/c.json" }).waitFor();
    await waitUntil(
      page,
      `![...document.querySelectorAll("table.grid tr.row")].some((row) => row.textContent.includes("gamma"))`,
    );
    await page.screenshot({ path: testOutputPath("console-events.png") });
  });

  it("shows 10,000 rows with only the visible ones in the page, and scrolls to the last", async () => {
    const { page } = await open(server);
    await runSql(
      page,
      "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 10000) SELECT x, 'row ' || x AS label FROM n",
    );
    assert.match(await page.locator("#result-status").innerText(), /^10,000 rows · /);
    const rendered = await page.locator("table.grid tr.row").count();
    assert.ok(rendered > 10 && rendered < 200, `${rendered} rows in the DOM`);
    const results = page.locator("#results");
    // Small steps (rows are reused at the edges), then a jump (the rows are rebuilt): the rows
    // in the page are always consecutive and each shows its own data.
    const consecutive = `(() => {
      const rows = [...document.querySelectorAll("table.grid tr.row")];
      return rows.length > 0 && rows.every((row, i) =>
        row.cells[0].textContent === row.cells[1].textContent &&
        Number(row.cells[0].textContent) === Number(rows[0].cells[0].textContent) + i);
    })()`;
    for (let step = 0; step < 12; step++) {
      await page.mouse.move(600, 500);
      await page.mouse.wheel(0, 170);
      await waitUntil(page, consecutive);
    }
    const firstShown = Number(
      await page.locator("table.grid tr.row td.rownum").first().innerText(),
    );
    assert.ok(firstShown > 1, `scrolled by the wheel: first row in the DOM is ${firstShown}`);
    await results.evaluate((element: { scrollTop: number; scrollHeight: number }) => {
      element.scrollTop = element.scrollHeight;
    });
    await waitUntil(
      page,
      `[...document.querySelectorAll("table.grid tr.row")].some((row) => row.cells[2]?.textContent === "row 10000")`,
    );
    // The header stays at the top of the scrolled table.
    const header = await page.locator("table.grid thead th").first().boundingBox();
    const area = await results.boundingBox();
    assert.ok(header !== null && area !== null);
    assert.ok(Math.abs(header.y - area.y) < 2, `header at ${header.y}, results at ${area.y}`);
    assert.ok((await page.locator("table.grid tr.row").count()) < 200);
    assert.ok(await page.evaluate(consecutive), "the last rows are consecutive");
  });

  it("is usable in a narrow window, with labelled controls", async () => {
    const { page } = await open(server, { width: 390, height: 844 });
    await runSql(page, "SELECT title, body FROM notes ORDER BY title");
    const overflow = await page.evaluate(
      "document.documentElement.scrollWidth - document.documentElement.clientWidth",
    );
    assert.ok(Number(overflow) <= 0, `the page scrolls sideways by ${overflow}px`);
    for (const control of [
      page.getByRole("button", { name: /^Run/ }),
      page.getByLabel(/SQL statement/),
      page.getByRole("region", { name: "Results" }),
    ]) {
      const box = await control.boundingBox();
      assert.ok(box !== null && box.x >= 0 && box.x + box.width <= 391, "inside the window");
    }
    assert.equal(
      await page.getByRole("checkbox", { name: /Live: keep the answer current/ }).count(),
      1,
    );
    assert.equal(await page.getByRole("button", { name: "Pause" }).count(), 1);
    assert.equal(await page.getByRole("list", { name: /Row changes/ }).count(), 1);
    await page.screenshot({ path: testOutputPath("console-narrow.png"), fullPage: true });
  });

  it("loads on a degraded server and shows the config error", async () => {
    const degraded = await serve(fixture(), ["-c", "missing.toml", "--port", "0"]);
    const expected = assertJsonError(await postQuery(degraded, "SELECT 1"), 503);
    assert.match(expected, /^failed to load config: .*missing\.toml/);
    const { page } = await open(degraded);
    const banner = page.locator("#degraded");
    await banner.waitFor();
    assert.ok((await banner.innerText()).includes(expected), await banner.innerText());
    await page.locator("#connection[data-state=closed]").waitFor();
    await runSql(page, "SELECT 1");
    assert.ok((await page.locator("#query-error").innerText()).includes(expected));
    await page.screenshot({ path: testOutputPath("console-degraded.png") });
  });

  it("made no request to another origin and raised no error in any page", () => {
    assert.ok(opened.length >= 7);
    for (const { page, requests, problems } of opened) {
      const origin = new URL(page.url()).origin;
      assert.ok(requests.length >= 3, `requests of ${origin}: ${requests.join(", ")}`);
      for (const url of requests) {
        assert.ok(url.startsWith(`${origin}/`), `${url} is not on ${origin}`);
      }
      assert.deepEqual(problems, []);
    }
  });
});
