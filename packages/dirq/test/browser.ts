import { existsSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";

/** Debian's Chromium; never a browser downloaded by a test tool. */
export const CHROMIUM = process.env.DIRQ_TEST_CHROMIUM ?? "/usr/bin/chromium";

/** Screenshots and other artefacts for humans (git-ignored). */
export const TEST_OUTPUT = fileURLToPath(new URL("../../test-output/", import.meta.url));

/**
 * Why browser tests cannot run here, or `false` when they can. In CI a missing browser is a
 * failure (`npm test` installs it: scripts/provision.mjs), never a silent skip.
 */
export function browserMissing(): string | false {
  if (existsSync(CHROMIUM)) return false;
  const why = `${CHROMIUM} is missing: apt-get install chromium (or set DIRQ_TEST_CHROMIUM)`;
  if (process.env.CI) throw new Error(why);
  return why;
}

/**
 * Headless Chromium as this machine allows it: no sandbox (root), no GPU, and none of the
 * background connections Chromium makes on its own. Playwright gives each launch a fresh,
 * temporary profile (`--user-data-dir`).
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
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
}

export function testOutputPath(name: string): string {
  mkdirSync(TEST_OUTPUT, { recursive: true });
  return `${TEST_OUTPUT}${name}`;
}

/** Results as text, one array of cells per rendered row (the row number left out). */
export function tableRows(page: Page): Promise<string[][]> {
  return page.evaluate(
    `[...document.querySelectorAll("table.grid tr.row")].map((row) => [...row.cells].slice(1).map((cell) => cell.textContent))`,
  );
}

/** The result table's column names (the row number column left out). */
export function tableHeader(page: Page): Promise<string[]> {
  return page.evaluate(
    `[...document.querySelectorAll("table.grid thead th")].slice(1).map((cell) => cell.textContent)`,
  );
}

/**
 * Polls a JavaScript expression in the page until it is truthy. (Playwright's waitForFunction
 * evaluates strings with eval, which the console's Content-Security-Policy forbids.)
 */
export async function waitUntil(page: Page, expression: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await page.evaluate(expression))) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${expression}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Replaces the editor's text as a paste would. */
export async function typeSql(page: Page, sql: string): Promise<void> {
  await page.getByLabel(/SQL statement/).click();
  await page.keyboard.press("Control+A");
  await page.keyboard.insertText(sql);
}

/** How many runs the page has finished (answered, failed or cancelled). */
export async function finishedRuns(page: Page): Promise<number> {
  return Number((await page.locator("body").getAttribute("data-runs")) ?? 0);
}

/** Types `sql`, runs it with Ctrl-Enter and waits for the answer on screen. */
export async function runSql(page: Page, sql: string): Promise<void> {
  const runs = await finishedRuns(page);
  await typeSql(page, sql);
  await page.keyboard.press("Control+Enter");
  await waitUntil(page, `Number(document.body.dataset.runs ?? 0) > ${runs}`);
}
