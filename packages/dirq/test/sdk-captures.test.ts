/**
 * The TypeScript SDK's tables with path captures, `columns`, `strict`, and an `extract` that
 * returns bytes: rows, row events of a live index, the skipped list, and `persist`.
 */
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { type Dirq, isDirqError, open, type RowEvent, type WatchEvent } from "../src/index.js";
import { tempTree } from "./helpers.js";

const parseJson = (_path: string, content: Buffer) => [JSON.parse(content.toString("utf8"))];

async function closing<T>(db: Dirq, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } finally {
    await db.close();
  }
}

describe("SDK tables: captures, columns, strict, bytes", () => {
  test("an extract table's glob captures are columns, beside the function's", async () => {
    const root = tempTree({
      "comments/abc/index.json": '{"body":"hi"}',
      "comments/def/index.json": '{"body":"yo"}',
    });
    const db = open({
      root,
      progress: false,
      tables: [{ name: "comments", glob: "comments/{thread_id}/index.json", extract: parseJson }],
    });
    await closing(db, async () => {
      assert.deepEqual(await db.query("SELECT * FROM comments ORDER BY thread_id"), [
        { thread_id: "abc", body: "hi" },
        { thread_id: "def", body: "yo" },
      ]);
    });
  });

  test("columns map dot paths and captures; strict skips only the file that breaks it", async () => {
    const root = tempTree({
      "posts/2024/a.json": '{"meta":{"author":{"name":"Ann"}},"tags":["x","y"]}',
      "posts/2024/b.json": '{"meta":{}}',
    });
    const db = open({
      root,
      progress: false,
      tables: [
        {
          name: "posts",
          glob: "posts/{year}/*.json",
          format: "json",
          schema: { year: "INTEGER", author: "TEXT", tag: "TEXT" },
          columns: { year: "year", author: "meta.author.name", tag: "tags.1" },
          strict: true,
        },
      ],
    });
    await closing(db, async () => {
      assert.deepEqual(await db.query("SELECT * FROM posts"), [
        { year: 2024, author: "Ann", tag: "y" },
      ]);
      const skipped = db.skipped;
      assert.equal(skipped.length, 1);
      assert.equal(skipped[0]?.path, "posts/2024/b.json");
      assert.match(skipped[0]?.reason ?? "", /row 0 has no value at meta\.author\.name, tags\.1/);
    });
  });

  test("a config's captures, columns and strict (dirsql's from_config cases, through configs)", async () => {
    const root = tempTree({
      "comments/thread-1/index.jsonl": '{"body":"hello","author":"alice"}\n',
      "comments/thread-2/index.jsonl": '{"body":"world","author":"bob"}\n',
      "people/alice.json": JSON.stringify({ metadata: { author: { name: "Alice" } }, age: 30 }),
      "items/a.json": '{"name":"apple","color":"red"}',
      "c.toml": `[[table]]
name = "comments"
glob = "comments/{thread_id}/index.jsonl"
format = "jsonl"
schema = { thread_id = "TEXT", body = "TEXT", author = "TEXT" }

[[table]]
name = "people"
glob = "people/*.json"
format = "json"
schema = { display_name = "TEXT", age = "INTEGER" }
[table.columns]
display_name = "metadata.author.name"
age = "age"

[[table]]
name = "items"
glob = "items/*.json"
format = "json"
schema = { name = "TEXT" }
strict = true
`,
    });
    const db = open({ root, progress: false, configs: [join(root, "c.toml")] });
    await closing(db, async () => {
      assert.deepEqual(await db.query("SELECT * FROM comments ORDER BY thread_id"), [
        { thread_id: "thread-1", body: "hello", author: "alice" },
        { thread_id: "thread-2", body: "world", author: "bob" },
      ]);
      assert.deepEqual(await db.query("SELECT * FROM people"), [
        { display_name: "Alice", age: 30 },
      ]);
      // dirsql rejects the whole index; dirq skips the file and keeps the table.
      assert.deepEqual(await db.query("SELECT * FROM items"), []);
      assert.deepEqual(
        db.skipped.map((file) => file.path),
        ["items/a.json"],
      );
    });
  });

  test("strict without a schema is an error naming the key", () => {
    assert.throws(
      () =>
        open({
          root: tempTree({}),
          progress: false,
          tables: [{ name: "t", glob: "*.json", extract: parseJson, strict: true }],
        }),
      (error: unknown) =>
        isDirqError(error) && /tables\[0\]\.strict: needs a schema/.test(error.message),
    );
  });

  test("bytes from extract are a BLOB: hex in rows and row events, and through persist", async () => {
    const root = tempTree({ "bin/a.dat": "\u0001\u0002" });
    const tables = [
      {
        name: "blobs",
        glob: "bin/{name}.dat",
        extract: (_path: string, content: Buffer) => [
          { data: content, view: new Uint8Array([255, 0]) },
        ],
      },
    ];
    for (const persist of [true, true] as const) {
      const db = open({ root, progress: false, persist, tables });
      await closing(db, async () => {
        assert.deepEqual(
          await db.query("SELECT name, data, typeof(data) AS type, view FROM blobs"),
          [{ name: "a", data: "0102", type: "blob", view: "ff00" }],
        );
      });
    }
    const live = open({ root, progress: false, live: true, tables });
    await closing(live, async () => {
      const stream = live.watch();
      await stream.ready;
      mkdirSync(join(root, "bin"), { recursive: true });
      writeFileSync(join(root, "bin/b.dat"), Buffer.from([0xab]));
      let row: unknown;
      for await (const event of stream as AsyncIterable<WatchEvent>) {
        if (event.action === "insert" && event.file_path === "bin/b.dat") {
          row = (event as RowEvent & { row: unknown }).row;
          break;
        }
      }
      assert.deepEqual(row, { name: "b", data: "ab", view: "ff00" });
    });
  });
});
