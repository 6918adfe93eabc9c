import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, renameSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Download, Page } from "playwright-core";
import {
  browserMissing,
  finishedRuns,
  launchChromium,
  runSql,
  tableHeader,
  tableRows,
  testOutputPath,
  typeSql,
  waitUntil,
} from "./browser.js";
import { seededRandom } from "./differential.js";
import { seededRows, sqlValue } from "./seeded-rows.js";
import { makeTree, removeTree } from "./helpers.js";
import {
  clockTicks,
  cpuTicks,
  eventually,
  postQuery,
  processTree,
  type ServerProcess,
  startServer,
} from "./server-support.js";

/*
 * The web console's result and work tools in Debian's Chromium: columns as the answer has
 * them, stale rows after an error, empty answers, the live panel of a server without config,
 * Cancel (the server's query process ends), history and links, CSV and JSON export (against
 * sqlite3 and the server's own JSON), sorting (against SQLite's ORDER BY), the live feed's
 * filters, readable times and the Ctrl-Enter shortcut. Seeded cases replay with their seed.
 */

const skip = browserMissing();
/** Screenshots of the new UI, for the closing note (besides test-output/). */
const SHOTS = process.env.DIRQ_CONSOLE_SHOTS;

const CONFIG = `[[table]]
name = "notes"
glob = "notes/*.json"
schema = { title = "TEXT", stars = "INTEGER" }
on-file = ${JSON.stringify(`'${process.execPath}' rows.mjs {path}`)}
`;
const ROWS_HOOK = `import { readFileSync } from "node:fs";
process.stdout.write(JSON.stringify([JSON.parse(readFileSync(process.argv[2], "utf8"))]));
`;

/** Never ends on its own. */
const RUNAWAY =
  "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c";

const roots: string[] = [];
const servers: ServerProcess[] = [];

/** A server on a fixture folder, and that folder (its working directory). */
type Served = ServerProcess & { root: string };

async function serve(files: Record<string, string>, args: string[] = []): Promise<Served> {
  const root = makeTree(files);
  roots.push(root);
  const server = await startServer([...args, "--port", "0"], { cwd: root });
  servers.push(server);
  return Object.assign(server, { root });
}

after(async () => {
  await Promise.all(servers.map((server) => server.kill()));
  for (const root of roots) removeTree(root);
});

async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: testOutputPath(name) });
  if (SHOTS) await page.screenshot({ path: join(SHOTS, name) });
}

/** The text of a download the page started with `click`. */
async function downloaded(page: Page, click: () => Promise<void>): Promise<[string, Download]> {
  const [download] = await Promise.all([page.waitForEvent("download"), click()]);
  const path = await download.path();
  return [readFileSync(path, "utf8"), download];
}

describe("web console tools in Chromium", { skip }, () => {
  let browser: Browser;
  /** Pages opened, with what they requested and any error they raised. */
  const opened: { page: Page; requests: string[]; problems: string[] }[] = [];

  before(async () => {
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
  });

  async function open(server: ServerProcess, path = "/"): Promise<Page> {
    const context = await browser.newContext({
      viewport: { width: 1280, height: 800 },
      timezoneId: "UTC",
      acceptDownloads: true,
    });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    const record = { page, requests: [] as string[], problems: [] as string[] };
    page.on("request", (request) => record.requests.push(request.url()));
    page.on("pageerror", (error) => record.problems.push(`pageerror: ${error.message}`));
    page.on("console", (message) => {
      if (message.type() === "error" && !/status of 400\b/.test(message.text())) {
        record.problems.push(`console: ${message.text()}`);
      }
    });
    await page.goto(`${server.url}${path}`);
    opened.push(record);
    return page;
  }

  it("shows columns in the answer's order and multiplicity, integer-like names included", async () => {
    const server = await serve({ "a.txt": "aa", "b.txt": "b" });
    const page = await open(server);
    await runSql(page, `SELECT path, size, 2024 AS "2024", 7 AS "10" FROM './a.txt'`);
    assert.deepEqual(await tableHeader(page), ["path", "size", "2024", "10"]);
    assert.deepEqual(await tableRows(page), [["a.txt", "2", "2024", "7"]]);
    // A join of two path-tables: every column twice, each with its own table's value.
    await runSql(page, "SELECT * FROM './a.txt', './b.txt'");
    const stat = ["path", "basename", "dir", "ext", "size", "mtime", "ctime"];
    assert.deepEqual(await tableHeader(page), [...stat, ...stat]);
    const [row] = await tableRows(page);
    assert.deepEqual(
      [row?.[0], row?.[1], row?.[4], row?.[7], row?.[8], row?.[11]],
      ["a.txt", "a.txt", "2", "b.txt", "b.txt", "1"],
    );
    await runSql(page, `SELECT 1 AS a, 2 AS a, 3 AS "1", 4 AS "0"`);
    assert.deepEqual(await tableHeader(page), ["a", "a", "1", "0"]);
    assert.deepEqual(await tableRows(page), [["1", "2", "3", "4"]]);
  });

  it("marks the rows stale after a failed statement, and not after the next answer", async () => {
    const server = await serve({ "a.txt": "a" });
    const page = await open(server);
    await runSql(page, "SELECT path FROM './'");
    assert.equal(await page.locator("#results.stale").count(), 0);
    await runSql(page, "SELECT nope FROM './'");
    const error = page.locator("#query-error");
    assert.match(await error.innerText(), /no such column: nope[\s\S]*earlier statement/);
    assert.equal(await page.locator("#results.stale").count(), 1);
    const opacity = await page.evaluate(
      `getComputedStyle(document.querySelector("table.grid")).opacity`,
    );
    assert.ok(Number(opacity) < 1, `stale rows are greyed (opacity ${opacity})`);
    await screenshot(page, "console-stale.png");
    await runSql(page, "SELECT path FROM './'");
    assert.equal(await page.locator("#results.stale").count(), 0);
    assert.ok(await error.isHidden());
  });

  it("shows the header of an empty answer", async () => {
    const server = await serve({ "a.txt": "a" });
    const page = await open(server);
    await runSql(page, "SELECT path, size AS bytes, 1 AS path FROM './' WHERE size > 100");
    assert.deepEqual(await tableHeader(page), ["path", "bytes", "path"]);
    assert.deepEqual(await tableRows(page), []);
    assert.equal(await page.locator("#results .empty").innerText(), "No rows.");
    assert.match(await page.locator("#result-status").innerText(), /^0 rows · /);
  });

  it("says in the empty live panel what a server without config follows", async () => {
    const server = await serve({ "docs/a.md": "a" });
    const page = await open(server);
    await page.locator("#connection[data-state=live]").waitFor();
    const empty = page.locator("#events-empty");
    await empty.getByText(/Nothing is followed yet/).waitFor();
    assert.match(await empty.innerText(), /no config tables[\s\S]*FROM '\.\/'/);
    await screenshot(page, "console-live-empty.png");
    await runSql(page, "SELECT path FROM './docs'");
    await empty.getByText("No changes yet. Followed: './docs'.").waitFor();
    writeFileSync(join(server.root, "docs", "b.md"), "b");
    await page.locator("#event-list li.insert", { hasText: "docs/b.md" }).waitFor();
    assert.ok(await empty.isHidden());
  });

  it("cancels a running statement: the server ends its query process", async () => {
    const server = await serve({ "a.txt": "a" });
    const page = await open(server);
    const queryProcesses = () =>
      processTree(server.pid).filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("--dirq-query-process");
        } catch {
          return false;
        }
      });
    const runs = await finishedRuns(page);
    await typeSql(page, RUNAWAY);
    await page.keyboard.press("Control+Enter");
    const cancel = page.getByRole("button", { name: "Cancel" });
    await cancel.waitFor();
    // The query process running it: the one burning CPU.
    const start = new Map<number, number>();
    let busy = 0;
    await eventually(
      () => {
        for (const pid of queryProcesses()) {
          const ticks = cpuTicks(pid);
          if (ticks === null) continue;
          if (!start.has(pid)) start.set(pid, ticks);
          if (ticks - (start.get(pid) as number) >= clockTicks() / 5) busy = pid;
        }
        return busy !== 0;
      },
      "a query process running the statement",
      20_000,
    );
    await screenshot(page, "console-running.png");
    await cancel.click();
    await waitUntil(page, `Number(document.body.dataset.runs ?? 0) > ${runs}`);
    assert.match(await page.locator("#query-error").innerText(), /^Cancelled/);
    assert.ok(await cancel.isHidden(), "Cancel is gone once nothing runs");
    await eventually(
      () => {
        try {
          const stat = readFileSync(`/proc/${busy}/stat`, "utf8");
          return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
        } catch {
          return true;
        }
      },
      `the query process ${busy} ends`,
      20_000,
    );
    await runSql(page, "SELECT 1 AS one");
    assert.deepEqual(await tableRows(page), [["1"]]);
  });

  it("keeps a history, and a link with the statement that runs it again", async () => {
    const server = await serve({ "a.txt": "a" });
    const page = await open(server);
    const hostile = `SELECT '#%20 ''quoted'' & ü 😀' AS "x#y", path -- comment ?a=b\nFROM './'`;
    await runSql(page, "SELECT 1 AS first");
    await runSql(page, hostile);
    await runSql(page, "SELECT 1 AS first");
    const link = page.url();
    assert.ok(link.includes("#sql="), link);
    assert.equal(decodeURIComponent(link.slice(link.indexOf("#sql=") + 5)), "SELECT 1 AS first");

    await page.reload();
    await page.getByText("History", { exact: true }).click();
    const entries = page.locator("#history-list button.history-entry");
    assert.deepEqual(await entries.evaluateAll((all) => all.map((entry) => entry.title)), [
      "SELECT 1 AS first",
      hostile,
    ]);
    await screenshot(page, "console-history.png");
    await entries.nth(1).click();
    assert.equal(await page.getByLabel(/SQL statement/).innerText(), hostile);

    // The link of the hostile statement, opened in a fresh page, shows its answer.
    await page.getByRole("button", { name: "Copy link" }).click();
    const hostileLink = new URL(page.url());
    const fresh = await open(server, `${hostileLink.pathname}${hostileLink.hash}`);
    await waitUntil(fresh, "Number(document.body.dataset.runs ?? 0) > 0");
    assert.equal(await fresh.getByLabel(/SQL statement/).innerText(), hostile);
    assert.deepEqual(await tableHeader(fresh), ["x#y", "path"]);
    assert.deepEqual(await tableRows(fresh), [["#%20 'quoted' & ü 😀", "a.txt"]]);
  });

  it("exports CSV as sqlite3 writes it and JSON as the server answers, for seeded rows", async () => {
    const server = await serve({ "a.txt": "a" });
    const page = await open(server);
    const random = seededRandom(3009);
    for (let round = 0; round < 8; round++) {
      const sql = seededRows(random, 1 + Math.floor(random() * 5));
      await runSql(page, sql);
      assert.ok(await page.locator("#query-error").isHidden(), sql);
      const [csv, csvFile] = await downloaded(page, () =>
        page.getByRole("button", { name: "CSV" }).click(),
      );
      assert.equal(csvFile.suggestedFilename(), "dirq-result.csv");
      const expectedCsv = execFileSync("sqlite3", ["-csv", "-header", ":memory:", sql], {
        encoding: "utf8",
      });
      assert.equal(csv, expectedCsv, sql);
      const [json] = await downloaded(page, () =>
        page.getByRole("button", { name: "JSON" }).click(),
      );
      assert.equal(json, (await postQuery(server, sql)).text, sql);
    }
  });

  it("sorts by a clicked column as SQLite's ORDER BY does, then descending, then as answered", async () => {
    const server = await serve({ "a.txt": "a" });
    const page = await open(server);
    const random = seededRandom(3010);
    for (let round = 0; round < 6; round++) {
      const values = Array.from({ length: 12 }, () => sqlValue(random, { reals: true }));
      const rows = values.map((value, index) => `SELECT ${index} AS n, ${value} AS v`);
      const sql = rows.join(" UNION ALL ");
      await runSql(page, sql);
      const column = async () =>
        (await tableRows(page)).map((row) => [row[1], row[0]] as [string, string]);
      const answered = await column();
      const expected = async (order: string) => {
        const answer = await postQuery(server, `SELECT * FROM (${sql}) ORDER BY v ${order}`);
        assert.equal(answer.status, 200, answer.text);
        return (
          (JSON.parse(answer.text) as { v: unknown }[])
            .map((row) => (row.v === null ? "NULL" : String(row.v)))
            // The table shows control characters escaped, as the CLI's table does.
            .map((text) =>
              text.replaceAll("\r", "\\r").replaceAll("\n", "\\n").replaceAll("\t", "\\t"),
            )
        );
      };
      const header = page.locator("table.grid thead th").nth(2);
      await header.getByRole("button").click();
      assert.equal(await header.getAttribute("aria-sort"), "ascending");
      assert.deepEqual(
        (await column()).map(([v]) => v),
        await expected("ASC"),
        sql,
      );
      await header.getByRole("button").click();
      assert.equal(await header.getAttribute("aria-sort"), "descending");
      assert.deepEqual(
        (await column()).map(([v]) => v),
        await expected("DESC"),
        sql,
      );
      if (round === 0) await screenshot(page, "console-sorted.png");
      await header.getByRole("button").click();
      assert.equal(await header.getAttribute("aria-sort"), "none");
      assert.deepEqual(await column(), answered);
    }
  });

  it("filters the live feed by table and by action", async () => {
    const server = await serve(
      {
        "rows.mjs": ROWS_HOOK,
        "dirq.toml": CONFIG,
        "notes/a.json": '{"title":"a","stars":1}',
        "docs/a.md": "a",
      },
      ["-c", "dirq.toml"],
    );
    const page = await open(server);
    await page.locator("#connection[data-state=live]").waitFor();
    await runSql(page, "SELECT path FROM './docs'");
    await page.locator("#events-empty", { hasText: "Followed: notes, './docs'" }).waitFor();
    // Each file written whole at once (a rename): one event each, however the watcher times it.
    const write = (path: string, text: string) => {
      writeFileSync(join(server.root, "next.tmp"), text);
      renameSync(join(server.root, "next.tmp"), join(server.root, path));
    };
    write("notes/b.json", '{"title":"b","stars":2}');
    await page.locator("#event-list li.insert", { hasText: "notes/b.json" }).waitFor();
    write("notes/a.json", '{"title":"a","stars":5}');
    await page.locator("#event-list li.update", { hasText: "notes/a.json" }).waitFor();
    write("docs/c.md", "c");
    await page.locator("#event-list li.insert", { hasText: "docs/c.md" }).waitFor();
    const visible = () =>
      page.evaluate(
        `[...document.querySelectorAll("#event-list li")].filter((li) => !li.hidden).map((li) => li.dataset.action + " " + li.querySelector(".event-file").textContent)`,
      );
    const all = (await visible()) as string[];
    assert.ok(all.includes("insert docs/c.md") && all.includes("update notes/a.json"), `${all}`);

    await page.getByLabel("Filter changes by table").selectOption("./docs");
    assert.deepEqual(await visible(), ["insert docs/c.md"]);
    await page.getByLabel("Filter changes by table").selectOption("notes");
    await page.getByLabel("Filter changes by action").selectOption("update");
    assert.deepEqual(await visible(), ["update notes/a.json"]);
    await screenshot(page, "console-filtered.png");
    // A new change the filters leave out arrives hidden.
    write("docs/d.md", "d");
    await page.locator("#event-list li.insert", { hasText: "docs/d.md" }).waitFor({
      state: "attached",
    });
    assert.deepEqual(await visible(), ["update notes/a.json"]);
    await page.getByLabel("Filter changes by action").selectOption("");
    await page.getByLabel("Filter changes by table").selectOption("");
    assert.equal(((await visible()) as string[]).length, all.length + 1);
  });

  it("shows mtime and ctime as dates, with the stored number on hover", async () => {
    const server = await serve({ "a.txt": "a" });
    const when = new Date("2021-03-04T05:06:07Z");
    utimesSync(join(server.root, "a.txt"), when, when);
    const page = await open(server);
    await runSql(page, "SELECT path, mtime, size, 1795440548 AS ctime, 'x' AS mtime FROM './'");
    assert.deepEqual(await tableRows(page), [
      ["a.txt", "2021-03-04 05:06:07", "1", "2026-11-23 13:29:08", "x"],
    ]);
    const cells = page.locator("table.grid tr.row td");
    assert.equal(await cells.nth(2).getAttribute("title"), String(when.getTime() / 1000));
    assert.equal(await cells.nth(4).getAttribute("title"), "1795440548");
    // Exports keep the stored number.
    const [csv] = await downloaded(page, () => page.getByRole("button", { name: "CSV" }).click());
    assert.equal(csv.split("\n")[1], `a.txt,${when.getTime() / 1000},1,1795440548,x`);
  });

  it("runs with Ctrl-Enter or Cmd-Enter from anywhere on the page", async () => {
    const server = await serve({ "a.txt": "a" });
    const page = await open(server);
    await typeSql(page, "SELECT 'from the page' AS w");
    await page.locator("#results").focus();
    let runs = await finishedRuns(page);
    await page.keyboard.press("Control+Enter");
    await waitUntil(page, `Number(document.body.dataset.runs ?? 0) > ${runs}`);
    assert.deepEqual(await tableRows(page), [["from the page"]]);
    await typeSql(page, "SELECT 'cmd' AS w");
    runs = await finishedRuns(page);
    await page.keyboard.press("Meta+Enter");
    await waitUntil(page, `Number(document.body.dataset.runs ?? 0) > ${runs}`);
    assert.deepEqual(await tableRows(page), [["cmd"]]);
  });

  it("made no request to another origin and raised no error in any page", () => {
    assert.ok(opened.length >= 10);
    for (const { page, requests, problems } of opened) {
      const origin = new URL(page.url()).origin;
      for (const url of requests) {
        assert.ok(url.startsWith(`${origin}/`), `${url} is not on ${origin}`);
      }
      assert.deepEqual(problems, []);
    }
  });
});
