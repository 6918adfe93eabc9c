/**
 * A config table with a path capture, `[table.columns]` and `strict` in `dirq server`: its rows
 * over HTTP, and live: a new file's row event carries the capture and mapped columns, and a file
 * that breaks `strict` is an `error` event naming it while the table's other rows stand.
 */
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { tempTree } from "./helpers.js";
import { openReadyEvents, queryRows, type ServerProcess, startServer } from "./server-support.js";

describe("server: captures, columns and strict", () => {
  let root: string;
  let server: ServerProcess;
  before(async () => {
    root = tempTree({
      "posts/2024/a.json": '{"meta":{"title":"First"},"words":10}',
      "c.toml": `[[table]]
name = "posts"
glob = "posts/{year}/*.json"
format = "json"
schema = { year = "INTEGER", title = "TEXT", words = "INTEGER" }
strict = true

[table.columns]
year = "year"
title = "meta.title"
words = "words"
`,
    });
    server = await startServer(["-c", "c.toml", "--host", "127.0.0.1", "--port", "0"], {
      cwd: root,
    });
  });
  after(() => server.kill());

  it("answers with the capture and the mapped columns", async () => {
    assert.deepEqual(await queryRows(server, "SELECT * FROM posts"), [
      { year: 2024, title: "First", words: 10 },
    ]);
  });

  it("sends a new file's row, and an error event for a file that breaks strict", async () => {
    const stream = await openReadyEvents(server);
    try {
      mkdirSync(join(root, "posts/2025"));
      writeFileSync(join(root, "posts/2025/b.json"), '{"meta":{"title":"Second"},"words":3}');
      const insert = await stream.next(
        (row) => row.action === "insert" && row.file_path === "posts/2025/b.json",
      );
      assert.deepEqual(insert.row, { year: 2025, title: "Second", words: 3 });

      writeFileSync(join(root, "posts/2025/bad.json"), '{"meta":{}, "words":1}');
      const error = await stream.next(
        (row) => row.action === "error" && row.file_path === "posts/2025/bad.json",
      );
      assert.equal(error.table, "posts");
      assert.match(error.error ?? "", /row 0 has no value at meta\.title/);
      assert.deepEqual(await queryRows(server, "SELECT year, title FROM posts ORDER BY year"), [
        { year: 2024, title: "First" },
        { year: 2025, title: "Second" },
      ]);
    } finally {
      stream.close();
    }
  });

  it("shapes the rows of a large file, which a thread of its own reads", async () => {
    const stream = await openReadyEvents(server);
    try {
      mkdirSync(join(root, "posts/2026"));
      const rows = Array.from({ length: 30_000 }, (_, i) => ({
        meta: { title: `t${i}` },
        words: i,
      }));
      const text = JSON.stringify(rows);
      assert.ok(text.length > 1 << 20, "large enough to be read off the main thread");
      writeFileSync(join(root, "posts/2026/big.json"), text);
      await stream.next(
        (row) => row.action === "insert" && row.file_path === "posts/2026/big.json",
      );
      assert.deepEqual(
        await queryRows(
          server,
          "SELECT count(*) AS n, min(year) AS year, sum(title IS NULL) AS untitled FROM posts WHERE year = 2026",
        ),
        [{ n: 30_000, year: 2026, untitled: 0 }],
      );
    } finally {
      stream.close();
    }
  });
});
