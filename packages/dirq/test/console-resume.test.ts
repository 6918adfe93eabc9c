import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { browserMissing, launchChromium, runSql, tableRows, waitUntil } from "./browser.js";
import { makeTree, removeTree } from "./helpers.js";
import { type ServerProcess, startServer } from "./server-support.js";

/**
 * The web console's event feed resumes, and so does a live answer: across a restart of the
 * server (another run) the live stream gets a new snapshot (docs/console.md).
 */

const CONFIG = `[[table]]
name = "items"
glob = "data/*.json"
format = "json"
schema = { name = "TEXT" }
`;

const roots: string[] = [];
const servers: ServerProcess[] = [];

after(async () => {
  await Promise.all(servers.map((server) => server.kill()));
  for (const root of roots) removeTree(root);
});

async function serve(root: string, port: number): Promise<ServerProcess> {
  const server = await startServer(
    ["-c", "dirq.toml", "--host", "127.0.0.1", "--port", `${port}`],
    {
      cwd: root,
    },
  );
  servers.push(server);
  return server;
}

describe("web console: resuming the event feed", { skip: browserMissing() }, () => {
  it("after a restart of the server (another run: reset) the live answer is current again", async () => {
    const root = makeTree({ "dirq.toml": CONFIG, "data/a.json": '{"name":"a"}' });
    roots.push(root);
    const first = await serve(root, 0);
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      page.setDefaultTimeout(20_000);
      await page.goto(`${first.url}/`);
      await page.locator("#connection[data-state=live]").waitFor();
      await page.getByRole("checkbox", { name: /Live: keep the answer current/ }).check();
      await runSql(page, "SELECT name FROM items ORDER BY name");
      await page.locator("body[data-live=on][data-live-commit]").waitFor();
      assert.deepEqual(await tableRows(page), [["a"]]);
      // The server goes away; a change happens meanwhile; a new run comes up on the same port.
      assert.deepEqual(await first.stop(), { code: 0, signal: null });
      writeFileSync(join(root, "data", "b.json"), '{"name":"b"}');
      await serve(root, first.port);
      // Both EventSources reconnect with the old run's ids: /events says reset, and /live
      // sends a new snapshot, which holds b.
      await waitUntil(
        page,
        `[...document.querySelectorAll("table.grid tr.row")].some((row) => row.cells[1]?.textContent === "b")`,
        30_000,
      );
      assert.deepEqual(
        (await tableRows(page)).map((row) => row.at(-1)),
        ["a", "b"],
      );
      assert.match(await page.locator("#events-note").innerText(), /missed/);
      await page.locator("#connection[data-state=live]").waitFor();
    } finally {
      await browser.close();
    }
  });
});
