import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { ESLint } from "eslint";

/** The layering rules of eslint.config.js, run on snippets placed where a client's file is. */

const REPOSITORY = fileURLToPath(new URL("../../../../../", import.meta.url));
const CLIENT_FILE = `${REPOSITORY}packages/dirq/src/cli/probe.ts`;

async function refusals(text: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: REPOSITORY });
  const [result] = await eslint.lintText(text, { filePath: CLIENT_FILE });
  return (result?.messages ?? [])
    .filter((message) => /documented internal API/.test(message.message))
    .map((message) => `${message.line}:${message.ruleId}`);
}

describe("the client import rule", { timeout: 60_000 }, () => {
  it("refuses a client's import() of an internal module", async () => {
    const text = 'export const walk = () => import("../scan/walk.js");\n';
    assert.deepEqual(await refusals(text), ["1:no-restricted-syntax"]);
  });

  it("refuses a client's static import of one", async () => {
    const text = 'export { walkTree } from "../scan/walk.js";\nimport "../query/execute.js";\n';
    assert.deepEqual(await refusals(text), [
      "1:@typescript-eslint/no-restricted-imports",
      "2:@typescript-eslint/no-restricted-imports",
    ]);
  });

  it("lets the CLI load the other clients by their entries, and the row-change format", async () => {
    const text = [
      'export const a = () => import("../server/run-server.js");',
      'export const b = () => import("../repl/run-repl.js");',
      'export const c = () => import("../indexer/row-changes.js");',
      'export const d = () => import("../live/live-session.js");',
      "",
    ].join("\n");
    assert.deepEqual(await refusals(text), []);
  });
});

/** What the layering rules (dirq/no-upward-import, dirq/no-module) say of `text` at `path`. */
async function layerRefusals(path: string, text: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: REPOSITORY });
  const [result] = await eslint.lintText(text, {
    filePath: `${REPOSITORY}packages/dirq/src/${path}`,
  });
  return (result?.messages ?? [])
    .filter((message) => message.ruleId?.startsWith("dirq/"))
    .map((message) => `${message.line}:${message.ruleId}`);
}

describe("the core's layering rule", { timeout: 60_000 }, () => {
  it("refuses an upward import, static, re-exported or import()", async () => {
    const text = [
      'import { openSqlite } from "../indexer/database.js";',
      'export { sqlError } from "../query/execute.js";',
      'export const engine = () => import("../engine.js");',
      "",
    ].join("\n");
    assert.deepEqual(await layerRefusals("scan/probe.ts", text), [
      "1:dirq/no-upward-import",
      "2:dirq/no-upward-import",
      "3:dirq/no-upward-import",
    ]);
  });

  it("lets a module import its own layer and those below, and types from anywhere", async () => {
    const text = [
      'import { statPaths } from "./file-stats.js";',
      'import { DirqError } from "../errors.js";',
      'import type { SqliteDatabase } from "../indexer/database.js";',
      'export type { DirqIndex } from "../engine.js";',
      "export const db: SqliteDatabase | null = null;",
      "",
    ].join("\n");
    assert.deepEqual(await layerRefusals("scan/probe.ts", text), []);
    const nested = 'import { walkSelection } from "../../scan/walk.js";\n';
    assert.deepEqual(await layerRefusals("parse/formats/probe.ts", nested), []);
  });

  it("refuses SQLite's binding in scan/ and below, however it is loaded", async () => {
    const text = [
      'import Database from "@rocicorp/zero-sqlite3";',
      'export const later = () => import("@rocicorp/zero-sqlite3");',
      'export const binding = require("@rocicorp/zero-sqlite3");',
      'export const lazy = lazyModule("@rocicorp/zero-sqlite3");',
      "export { Database };",
      "",
    ].join("\n");
    const refused = await layerRefusals("scan/probe.ts", text);
    assert.deepEqual(refused, [
      "1:dirq/no-module",
      "2:dirq/no-module",
      "3:dirq/no-module",
      "4:dirq/no-module",
    ]);
    assert.deepEqual(await layerRefusals("shared/probe.ts", text), refused);
    assert.deepEqual(await layerRefusals("indexer/probe.ts", text), []);
  });

  it("asks for a layer for a folder that has none", async () => {
    assert.deepEqual(await layerRefusals("newfolder/probe.ts", "export const x = 1;\n"), [
      "1:dirq/no-upward-import",
    ]);
  });
});
