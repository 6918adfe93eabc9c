import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { HISTORY_LIMIT, History, historyPath } from "../../src/repl/history.js";

const HISTORY_MODULE = new URL("../../src/repl/history.js", import.meta.url).href;

describe("history", () => {
  const dir = mkdtempSync(join(tmpdir(), "dirq-history-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("lives under XDG_DATA_HOME, else ~/.local/share, else APPDATA on Windows", () => {
    assert.equal(historyPath({ XDG_DATA_HOME: "/x", HOME: "/h" }, "linux"), "/x/dirq/history");
    assert.equal(
      historyPath({ XDG_DATA_HOME: "relative", HOME: "/h" }, "linux"),
      "/h/.local/share/dirq/history",
    );
    assert.equal(historyPath({ HOME: "/h" }, "darwin"), "/h/.local/share/dirq/history");
    assert.equal(historyPath({ APPDATA: "C:\\A" }, "win32"), join("C:\\A", "dirq", "history"));
    assert.equal(historyPath({}, "win32"), null);
  });

  it("keeps a multi-line statement (and backslashes) as one entry across sessions", () => {
    const path = join(dir, "multi", "history");
    const first = History.load(path);
    const statement = "SELECT path\nFROM './\\[x\\].md'\r\nWHERE 1;";
    assert.equal(first.add(statement), null);
    assert.equal(first.add("SELECT 2;"), null);
    assert.equal(first.add("SELECT 2;"), null, "a repeat is not added");
    assert.equal(readFileSync(path, "utf8").split("\n").length, 3);
    assert.deepEqual(History.load(path).entries, ["SELECT 2;", statement]);
  });

  it("keeps the last 1000 statements", () => {
    const path = join(dir, "limit", "history");
    const history = History.load(path);
    for (let i = 0; i < HISTORY_LIMIT + 50; i++) history.add(`SELECT ${i};`);
    const lines = readFileSync(path, "utf8").trimEnd().split("\n");
    assert.equal(lines.length, HISTORY_LIMIT);
    assert.equal(lines[0], "SELECT 50;");
    assert.equal(History.load(path).entries[0], `SELECT ${HISTORY_LIMIT + 49};`);
  });

  it("an unwritable file leaves the history for the session and says why", () => {
    const blocker = join(dir, "blocker");
    writeFileSync(blocker, "");
    const history = History.load(join(blocker, "dirq", "history"));
    assert.match(history.add("SELECT 1;") ?? "", /ENOTDIR|not a directory/);
    assert.deepEqual(history.entries, ["SELECT 1;"]);
  });

  it("two sessions writing at once never corrupt the file", async () => {
    const path = join(dir, "concurrent", "history");
    const writer = (name: string) =>
      new Promise<number | null>((resolve, reject) => {
        const script = `
          const { History } = await import(${JSON.stringify(HISTORY_MODULE)});
          const history = History.load(${JSON.stringify(path)});
          for (let i = 0; i < 700; i++) {
            const problem = history.add("SELECT '${name}' AS w,\\n  " + i + " AS n;");
            if (problem) throw new Error(problem);
          }`;
        const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
          stdio: "inherit",
        });
        child.on("error", reject);
        child.on("close", resolve);
      });
    assert.deepEqual(await Promise.all([writer("a"), writer("b")]), [0, 0]);
    const entries = History.load(path).entries;
    assert.equal(entries.length, HISTORY_LIMIT);
    for (const entry of entries) assert.match(entry, /^SELECT '[ab]' AS w,\n {2}\d+ AS n;$/);
    assert.equal(new Set(entries).size, entries.length);
    const lastOf = (name: string) => entries.find((entry) => entry.includes(`'${name}'`));
    assert.match(lastOf("a") ?? "", /699 AS n/);
    assert.match(lastOf("b") ?? "", /699 AS n/);
  });
});
