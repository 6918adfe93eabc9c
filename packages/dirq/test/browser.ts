import { existsSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Browser, chromium } from "playwright-core";

/** Debian's Chromium; never a browser downloaded by a test tool. */
export const CHROMIUM = process.env.DIRQ_TEST_CHROMIUM ?? "/usr/bin/chromium";

/** Screenshots and other artefacts for humans (git-ignored). */
export const TEST_OUTPUT = fileURLToPath(new URL("../../test-output/", import.meta.url));

/**
 * Why browser tests cannot run here, or `false` when they can. In CI a missing browser is a
 * failure (`.ci/run` installs it), never a silent skip.
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
