import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { browserMissing, launchChromium, runSql, typeSql, waitUntil } from "./browser.js";
import { makeTree, removeTree } from "./helpers.js";
import { delay, type ServerProcess, startServer } from "./server-support.js";

/*
 * The web console's newest statement always wins: with "Live" on, a statement the user runs
 * while the server is working out the change of the live statement before it (its evaluator
 * re-runs it after a file change) must be the one whose answer stays on screen, rows or error:
 * the diff of the older statement arriving later never lands on the newer one's rows. Statement
 * A is slow (a recursive CTE of 400,000 steps, some hundred milliseconds) and reads the table
 * that changes, so its diff has time to arrive after B's answer.
 */

const CONFIG = `[[table]]
name = "items"
glob = "data/*.json"
format = "json"
schema = { name = "TEXT" }
`;

/** Statement A: a count to `steps` for each row of `items` (a new `steps`, a new cache entry). */
function slowStatement(steps: number): string {
  return `SELECT name AS a_name, (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${steps}) SELECT count(*) FROM c) AS a_spin FROM items`;
}

const SLOW_A = slowStatement(400_000);

/** A statement B the user runs after A, and how to tell its answer on screen. */
interface Newer {
  sql: string;
  isShown: (shown: string) => boolean;
}

const QUICK_B: Newer = {
  sql: "SELECT name AS b_name, length(name) AS b_length FROM items ORDER BY name",
  isShown: (shown) => shown === "rows: b_name, b_length",
};
const FAILING_B: Newer = {
  sql: "SELECT b_missing FROM items",
  isShown: (shown) => shown.startsWith("error: ") && shown.includes("b_missing"),
};

/**
 * From a file change until A's diff has surely reached the page, had it been sent: the
 * server's evaluator sees the commit, runs A again (some hundred milliseconds) and sends it.
 */
const SETTLE_MS = 2_500;

/**
 * Starts recording, in the page, each answer shown from now on: `rows: <columns>` for a table,
 * `error: <message>` for an error (the first entry is what is shown now).
 */
const RECORD_SHOWN = `(() => {
  const shown = () => {
    const error = document.getElementById("query-error");
    if (!error.hidden) return "error: " + error.querySelector(".message").textContent;
    const header = [...document.querySelectorAll("table.grid thead th")].slice(1);
    return "rows: " + header.map((cell) => cell.textContent).join(", ");
  };
  window.dirqShown = [shown()];
  window.dirqRecorder?.disconnect();
  window.dirqRecorder = new MutationObserver(() => {
    const now = shown();
    if (window.dirqShown.at(-1) !== now) window.dirqShown.push(now);
  });
  window.dirqRecorder.observe(document.body, {
    subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ["hidden"],
  });
})()`;

/** When B is run: milliseconds after the file change. */
type When = number;

const roots: string[] = [];
const servers: ServerProcess[] = [];

after(async () => {
  await Promise.all(servers.map((server) => server.kill()));
  for (const root of roots) removeTree(root);
});

/** Why the answers recorded after B was run are wrong, or `null` when B's stays on screen. */
function staleAnswer(newer: Newer, recorded: string[]): string | null {
  const first = recorded.findIndex(newer.isShown);
  if (first === -1) return `B's answer never showed: ${JSON.stringify(recorded)}`;
  const later = recorded.slice(first).find((shown) => !newer.isShown(shown));
  return later === undefined ? null : `${JSON.stringify(later)} replaced B's answer`;
}

describe(
  "web console: the newest statement wins over live changes",
  { skip: browserMissing() },
  () => {
    let browser: Browser;
    let page: Page;
    let root: string;
    let changes = 0;
    const problems: string[] = [];

    before(async () => {
      root = makeTree({ "dirq.toml": CONFIG, "data/a.json": '{"name":"a"}' });
      roots.push(root);
      const server = await startServer(["-c", "dirq.toml", "--port", "0"], { cwd: root });
      servers.push(server);
      browser = await launchChromium();
      page = await browser.newPage();
      page.setDefaultTimeout(20_000);
      page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
      page.on("console", (message) => {
        // Chromium logs the 400 of FAILING_B itself.
        if (message.type() === "error" && !/status of 400\b/.test(message.text())) {
          problems.push(`console: ${message.text()}`);
        }
      });
      await page.goto(`${server.url}/`);
      await page.locator("#connection[data-state=live]").waitFor();
      await page.getByRole("checkbox", { name: /Live: keep the answer current/ }).check();
    });

    after(async () => {
      await browser?.close();
    });

    /** A is run and shown; a file changes; B is run `when`. What was shown from B's run on. */
    async function race(newer: Newer, when: When): Promise<string[]> {
      await runSql(page, SLOW_A);
      // A is followed: its snapshot came, so its evaluator runs on the next change.
      await waitUntil(
        page,
        `document.body.dataset.live === "on" && "liveCommit" in document.body.dataset`,
      );
      await typeSql(page, newer.sql);
      const changed = Date.now();
      changes++;
      writeFileSync(join(root, "data", `${changes}.json`), JSON.stringify({ name: `n${changes}` }));
      await delay(changed + when - Date.now());
      await page.evaluate(RECORD_SHOWN);
      await page.keyboard.press("Control+Enter");
      await delay(changed + SETTLE_MS - Date.now());
      await waitUntil(page, `!document.getElementById("run").hasAttribute("aria-busy")`);
      return (await page.evaluate("window.dirqShown")) as string[];
    }

    /** Races A's re-run with B at each of `times`; every failing time is reported at once. */
    async function assertNewestWins(newer: Newer, times: When[]): Promise<void> {
      const failures: string[] = [];
      for (const when of times) {
        const wrong = staleAnswer(newer, await race(newer, when));
        if (wrong !== null) failures.push(`B run ${when} ms after the change: ${wrong}`);
      }
      assert.deepEqual(failures, []);
    }

    it("shows B's rows when B is run 0 to 600 ms after a change (A's diff under way)", async () => {
      await assertNewestWins(QUICK_B, [0, 100, 200, 300, 400, 600]);
    });

    it("shows B's error when B fails, run 100 to 400 ms after a change", async () => {
      await assertNewestWins(FAILING_B, [100, 200, 400]);
    });

    it("shows the second of two statements run back to back, though the first answers later", async () => {
      await runSql(page, "SELECT 1 AS start");
      // Not run before, so not answered from the result cache.
      await typeSql(page, slowStatement(400_001));
      await page.keyboard.press("Control+Enter");
      await typeSql(page, QUICK_B.sql);
      await page.evaluate(RECORD_SHOWN);
      await page.keyboard.press("Control+Enter");
      await delay(SETTLE_MS);
      await waitUntil(page, `!document.getElementById("run").hasAttribute("aria-busy")`);
      assert.equal(
        staleAnswer(QUICK_B, (await page.evaluate("window.dirqShown")) as string[]),
        null,
      );
    });

    it("raised no error in the page", () => {
      assert.deepEqual(problems, []);
    });
  },
);
