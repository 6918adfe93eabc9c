import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";

/**
 * Helpers of the core classes' own tests (event-history, event-hub, path-tables, catalog,
 * refresher, live-index, statement-preparer): each builds its class directly, in this process.
 */

const roots: string[] = [];

after(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** A temporary tree with these files, removed when the test file ends. */
export function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "dirq-core-"));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

/** A progress reporter that says nothing. */
export const quiet = { start: () => ({ update() {}, finish() {} }) };
