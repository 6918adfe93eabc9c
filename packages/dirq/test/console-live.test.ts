import assert from "node:assert/strict";
import { unlinkSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import {
  browserMissing,
  launchChromium,
  runSql,
  tableHeader,
  tableRows,
  testOutputPath,
  waitUntil,
} from "./browser.js";
import { makeTree, removeTree, saveWhole } from "./helpers.js";
import { type ServerProcess, startServer } from "./server-support.js";

const CONFIG = `[[table]]
name = "items"
glob = "data/*.json"
format = "json"
schema = { name = "TEXT", n = "INTEGER" }
`;

/** The rows of `POST /query` for `sql`, as the table shows them (text cells). */
async function freshRows(server: ServerProcess, sql: string): Promise<string[][]> {
  const response = await fetch(`${server.url}/query`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ sql }),
  });
  const rows = (await response.json()) as Record<string, unknown>[];
  return rows.map((row) => Object.values(row).map(String));
}

/*
 * With "Live" on, the console follows the statement it shows with GET /live: the rows change
 * as files change, in the statement's order, by the diffs the server sends. The page sends no
 * statement of its own after the first run (it never re-runs or diffs).
 */
describe("web console: a live answer", { skip: browserMissing() }, () => {
  let root: string;
  let server: ServerProcess;
  let browser: Browser;
  let page: Page;
  const queries: string[] = [];
  const lives: string[] = [];
  const problems: string[] = [];

  before(async () => {
    root = makeTree({
      "dirq.toml": CONFIG,
      "data/a.json": '{"name":"a","n":2}',
      "data/b.json": '{"name":"b","n":5}',
      "e/1": "1",
      "e/2": "2",
    });
    server = await startServer(["-c", "dirq.toml", "--port", "0"], { cwd: root });
    browser = await launchChromium();
    page = await browser.newPage();
    page.setDefaultTimeout(30_000);
    page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
    page.on("request", (request) => {
      const url = new URL(request.url());
      if (url.pathname === "/query") queries.push(request.postData() ?? "");
      if (url.pathname === "/live") lives.push(url.searchParams.get("sql") ?? "");
    });
    await page.goto(`${server.url}/`);
    await page.locator("#connection[data-state=live]").waitFor();
    await page.getByRole("checkbox", { name: /Live: keep the answer current/ }).check();
  });

  after(async () => {
    await browser?.close();
    await server?.kill();
    removeTree(root);
  });

  it("applies the server's diffs in the statement's order, and runs nothing itself", async () => {
    const sql = "SELECT name, n FROM items WHERE n > 1 ORDER BY n DESC";
    await runSql(page, sql);
    await page.locator("body[data-live=on][data-live-commit]").waitFor();
    assert.deepEqual(await tableHeader(page), ["name", "n"]);
    const before = queries.filter((body) => body.includes("FROM items")).length;
    assert.deepEqual(lives, [sql]);

    saveWhole(root, "data/c.json", '{"name":"c","n":3}');
    await waitUntil(page, `document.querySelectorAll("table.grid tbody tr.row").length === 3`);
    assert.deepEqual(await tableRows(page), await freshRows(server, sql));
    assert.match(
      await page.locator("#result-status").innerText(),
      /3 rows · live, commit \d+ · \+1 −0/,
    );

    saveWhole(root, "data/a.json", '{"name":"a","n":9}');
    unlinkSync(`${root}/data/b.json`);
    await waitUntil(
      page,
      `[...document.querySelectorAll("table.grid tbody tr.row")].map((row) => row.cells[1].textContent).join() === "a,c"`,
    );
    assert.deepEqual(await tableRows(page), await freshRows(server, sql));
    const after = queries.filter((body) => body.includes("FROM items")).length;
    assert.equal(after, before, "the page sent no statement of its own after the first run");
    await page.screenshot({ path: testOutputPath("console-live.png") });
  });

  it("a new statement closes the old live answer and follows its own; unchecked, none", async () => {
    await runSql(page, "SELECT name FROM items ORDER BY name");
    await waitUntil(page, `document.body.dataset.live === "on"`);
    assert.equal(lives.at(-1), "SELECT name FROM items ORDER BY name");
    await page.getByRole("checkbox", { name: /Live: keep the answer current/ }).uncheck();
    await waitUntil(page, `document.body.dataset.live === undefined`);
    saveWhole(root, "data/d.json", '{"name":"d","n":1}');
    await page.locator("#event-list li.insert", { hasText: "data/d.json" }).waitFor();
    assert.ok(!(await tableRows(page)).some((row) => row[0] === "d"), "not live once unchecked");
  });

  it("a later run that fails says so over the last good rows; the next good answer follows", async () => {
    // A file named as no JSON value is makes json() fail on the run after it appears.
    const sql = "SELECT basename, json(basename) AS j FROM './e' ORDER BY basename";
    await page.getByRole("checkbox", { name: /Live: keep the answer current/ }).check();
    await runSql(page, sql);
    await page.locator("body[data-live=on][data-live-commit]").waitFor();
    const good = [
      ["1", "1"],
      ["2", "2"],
    ];
    assert.deepEqual(await tableRows(page), good);
    saveWhole(root, "e/x", "x");
    await waitUntil(
      page,
      `document.querySelector("#result-status").textContent.includes("failed on a later run")`,
    );
    assert.equal(
      await page.locator("#result-status").innerText(),
      "live: the statement failed on a later run (malformed JSON); the rows are its last good answer",
    );
    assert.deepEqual(await tableRows(page), good);
    await page.screenshot({ path: testOutputPath("console-live-error.png") });
    unlinkSync(join(root, "e/x"));
    saveWhole(root, "e/3", "3");
    await waitUntil(page, `document.querySelectorAll("table.grid tbody tr.row").length === 3`);
    assert.deepEqual(await tableRows(page), await freshRows(server, sql));
    assert.match(
      await page.locator("#result-status").innerText(),
      /3 rows · live, commit \d+ · \+1 −0/,
    );
  });

  it("raised no error in the page", () => {
    assert.deepEqual(problems, []);
  });
});
