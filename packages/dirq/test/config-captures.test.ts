/**
 * Path captures, `[table.columns]` and `strict` in a config, through the built CLI: the cases
 * of dirsql's own config tests and its docs (docs/guide/config.md), as dirq reads them, and
 * dirq's rules where the two meet (brace alternation, a capture named as a key of the file,
 * strict without a schema).
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { assertUserError, parseRows, runDirq, runOk, tempTree } from "./helpers.js";

/** A config of one `[[table]]`: its name, glob and format, then any other keys as written. */
function table(name: string, glob: string, format: string, rest = ""): string {
  return `[[table]]\nname = "${name}"\nglob = "${glob}"\nformat = "${format}"\n${rest}`;
}

async function rowsOf(root: string, sql: string): Promise<Record<string, unknown>[]> {
  return parseRows(await runOk(root, ["-c", "c.toml", sql, "--format", "json"]));
}

describe("path captures", () => {
  it("puts a folder's name in a column of every row of its file (dirsql's example)", async () => {
    const root = tempTree({
      "_comments/abc123/index.jsonl": '{"body":"hi","author":"al"}\n{"body":"yo","author":"bo"}\n',
      "_comments/def456/index.jsonl": '{"body":"q","author":"cy"}\n',
      "c.toml": table(
        "comments",
        "_comments/{thread_id}/index.jsonl",
        "jsonl",
        `schema = { thread_id = "TEXT", body = "TEXT", author = "TEXT" }
`,
      ),
    });
    const rows = await rowsOf(root, "SELECT * FROM comments ORDER BY thread_id, body");
    assert.deepEqual(rows, [
      { thread_id: "abc123", body: "hi", author: "al" },
      { thread_id: "abc123", body: "yo", author: "bo" },
      { thread_id: "def456", body: "q", author: "cy" },
    ]);
  });

  it("captures part of a name, several per path, and comes first in inferred columns", async () => {
    const root = tempTree({
      "posts/2024/post-7.json": '{"title":"A"}',
      "posts/2025/post-12.json": '{"title":"B"}',
      "posts/2025/notes.json": '{"title":"not a post"}',
      "c.toml": table("posts", "posts/{year}/post-{id}.json", "json"),
    });
    const rows = await rowsOf(root, "SELECT * FROM posts ORDER BY year");
    assert.deepEqual(rows, [
      { year: "2024", id: "7", title: "A" },
      { year: "2025", id: "12", title: "B" },
    ]);
    const counts = await rowsOf(root, "SELECT year, count(*) AS n FROM posts GROUP BY year");
    assert.deepEqual(counts, [
      { year: "2024", n: 1 },
      { year: "2025", n: 1 },
    ]);
  });

  it("may be named as a path-table's column (path, dir, size): a config table has none", async () => {
    const root = tempTree({
      "logs/web/a.json": '{"n":1}',
      "c.toml": `[[table]]\nname = "t"\nglob = "logs/{dir}/*.json"\nformat = "json"\n`,
    });
    assert.deepEqual(await rowsOf(root, "SELECT * FROM t"), [{ dir: "web", n: 1 }]);
  });

  it("takes the schema's type, and replaces a key of the file with the same name", async () => {
    const root = tempTree({
      "data/2024/a.json": '{"year":1999,"n":1}',
      "c.toml": table(
        "t",
        "data/{year}/*.json",
        "json",
        `schema = { year = "INTEGER", n = "INTEGER" }
`,
      ),
    });
    assert.deepEqual(await rowsOf(root, "SELECT year, typeof(year) AS type, n FROM t"), [
      { year: 2024, type: "integer", n: 1 },
    ]);
  });

  it("keeps {a,b} brace alternation, and a capture in one alternative is NULL in the other", async () => {
    const root = tempTree({
      "a/x/1.json": '{"v":1}',
      "b/2.json": '{"v":2}',
      "c/3.json": '{"v":3}',
      "c.toml": table(
        "t",
        "{a/{slot},b}/*.json",
        "json",
        `schema = { slot = "TEXT", v = "INTEGER" }
`,
      ),
    });
    assert.deepEqual(await rowsOf(root, "SELECT slot, v FROM t ORDER BY v"), [
      { slot: "x", v: 1 },
      { slot: null, v: 2 },
    ]);
  });

  it("an escaped brace is a literal name, and a capture twice in one path is a config error", async () => {
    const root = tempTree({
      "{id}/a.json": '{"v":1}',
      "c.toml": `[[table]]
name = "t"
glob = "\\\\{id}/*.json"
format = "json"
`,
    });
    assert.deepEqual(await rowsOf(root, "SELECT * FROM t"), [{ v: 1 }]);
    writeFileSync(
      join(root, "c.toml"),
      `[[table]]\nname = "t"\nglob = "{x}/{x}.json"\nformat = "json"\n`,
    );
    const result = await runDirq(["-c", "c.toml", "SELECT 1"], { cwd: root });
    assertUserError(result, "c.toml: table[0].glob: the capture {x} appears twice in one path");
  });

  it("fills a table with an on-file hook too", async () => {
    const root = tempTree({
      "logs/web/a.log": "x\ny\n",
      "c.toml": `[[table]]
name = "lines"
glob = "logs/{service}/*.log"
on-file = "node -e 'const t=require(\\"fs\\").readFileSync(process.argv[1],\\"utf8\\").split(\\"\\\\n\\").filter(Boolean);console.log(JSON.stringify(t.map(line=>({line}))))' {path}"
`,
    });
    assert.deepEqual(await rowsOf(root, "SELECT service, line FROM lines"), [
      { service: "web", line: "x" },
      { service: "web", line: "y" },
    ]);
  });
});

describe("in the REPL", () => {
  it("answers from a config table's captures and columns", async () => {
    const root = tempTree({
      "posts/2024/a.json": '{"meta":{"title":"A"}}',
      "c.toml": table(
        "posts",
        "posts/{year}/*.json",
        "json",
        `columns = { year = "year", title = "meta.title" }
`,
      ),
    });
    const result = await runDirq(["-c", "c.toml"], {
      cwd: root,
      input: "SELECT * FROM posts;\n",
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout.trim(), '[{"year":"2024","title":"A"}]');
  });
});

describe("[table.columns]", () => {
  it("maps dot paths into nested objects and arrays, and capture names (dirsql's example)", async () => {
    const root = tempTree({
      "posts/2024/a.json": JSON.stringify({
        metadata: { author: { name: "Alice" } },
        body: "hello",
        items: [{ name: "first" }, { name: "second" }],
      }),
      "c.toml": table(
        "posts",
        "posts/{year}/*.json",
        "json",
        `schema = { display_name = "TEXT", body = "TEXT", second = "TEXT", year = "INTEGER", items = "TEXT" }

[table.columns]
display_name = "metadata.author.name"
body         = "body"
second       = "items.1.name"
year         = "year"
items        = "items"
`,
      ),
    });
    assert.deepEqual(await rowsOf(root, "SELECT * FROM posts"), [
      {
        display_name: "Alice",
        body: "hello",
        second: "second",
        year: 2024,
        items: '[{"name":"first"},{"name":"second"}]',
      },
    ]);
  });

  it("is the whole projection: a column it does not list is NULL (dirsql's trap)", async () => {
    const root = tempTree({
      "one.json": '{"id": "a1", "body": "hello", "author": "Alice"}',
      "c.toml": table(
        "comments",
        "*.json",
        "json",
        `schema = { id = "TEXT", body = "TEXT", display_name = "TEXT" }

[table.columns]
display_name = "author"
`,
      ),
    });
    assert.deepEqual(await rowsOf(root, "SELECT * FROM comments"), [
      { id: null, body: null, display_name: "Alice" },
    ]);
  });

  it("works with each, and without a schema its columns are the mapping's", async () => {
    const root = tempTree({
      "catalog/shop.json": JSON.stringify({
        data: { items: [{ spec: { name: "pen", price: 2.5 } }, { spec: { name: "ink" } }] },
      }),
      "c.toml": table(
        "items",
        "catalog/{shop}.json",
        "json",
        `each = "data.items"

[table.columns]
name  = "spec.name"
price = "spec.price"
shop  = "shop"
`,
      ),
    });
    assert.deepEqual(await rowsOf(root, "SELECT * FROM items"), [
      { name: "pen", price: 2.5, shop: "shop" },
      { name: "ink", price: null, shop: "shop" },
    ]);
  });

  it("names a column outside the schema as a config error", async () => {
    const root = tempTree({
      "c.toml": table(
        "t",
        "*.json",
        "json",
        `schema = { a = "TEXT" }
columns = { b = "x.y" }
`,
      ),
    });
    const result = await runDirq(["-c", "c.toml", "SELECT 1"], { cwd: root });
    assertUserError(result, "c.toml: table[0].columns.b: is not a column of the schema");
  });
});

describe("strict", () => {
  const tree = (files: Record<string, string>, extra = "") =>
    tempTree({
      ...files,
      "c.toml": table(
        "posts",
        "posts/*.json",
        "json",
        `schema = { title = "TEXT", author = "TEXT" }
strict = true
${extra}`,
      ),
    });

  it("accepts rows with exactly the schema's keys", async () => {
    const root = tree({ "posts/a.json": '{"title":"T","author":"A"}' });
    assert.deepEqual(await rowsOf(root, "SELECT * FROM posts"), [{ title: "T", author: "A" }]);
  });

  it("skips a file with a key outside the schema or without one of its keys, and only it", async () => {
    const root = tree({
      "posts/good.json": '{"title":"T","author":"A"}',
      "posts/extra.json": '{"title":"T","author":"A","color":"red"}',
      "posts/missing.json": '{"title":"T"}',
    });
    const result = await runDirq(["-c", "c.toml", "SELECT * FROM posts", "--format", "json"], {
      cwd: root,
    });
    assert.equal(result.code, 23, result.stderr);
    assert.deepEqual(parseRows(result.stdout), [{ title: "T", author: "A" }]);
    assert.match(
      result.stderr,
      /dirq: skipped posts\/extra\.json: row 0 has keys outside the schema: color \(strict = true in c\.toml: table\[0\]/,
    );
    assert.match(
      result.stderr,
      /dirq: skipped posts\/missing\.json: row 0 lacks schema columns: author \(strict/,
    );
  });

  it("counts a capture as one of the row's keys", async () => {
    const root = tempTree({
      "t/abc/index.json": '{"body":"b"}',
      "c.toml": table(
        "comments",
        "t/{thread_id}/index.json",
        "json",
        `schema = { thread_id = "TEXT", body = "TEXT" }
strict = true
`,
      ),
    });
    assert.deepEqual(await rowsOf(root, "SELECT * FROM comments"), [
      { thread_id: "abc", body: "b" },
    ]);
  });

  it("with columns: a dot path a row lacks is the file's error", async () => {
    const root = tempTree({
      "a.json": '{"meta":{"name":"n"}}',
      "b.json": '{"meta":{}}',
      "c.toml": table(
        "t",
        "*.json",
        "json",
        `schema = { name = "TEXT" }
strict = true
columns = { name = "meta.name" }
`,
      ),
    });
    const result = await runDirq(["-c", "c.toml", "SELECT * FROM t", "--format", "json"], {
      cwd: root,
    });
    assert.equal(result.code, 23);
    assert.deepEqual(parseRows(result.stdout), [{ name: "n" }]);
    assert.match(result.stderr, /skipped b\.json: row 0 has no value at meta\.name/);
  });

  it("without a schema is a config error naming the key", async () => {
    const root = tempTree({
      "c.toml": `[[table]]\nname = "t"\nglob = "*.json"\nformat = "json"\nstrict = true\n`,
    });
    const result = await runDirq(["-c", "c.toml", "SELECT 1"], { cwd: root });
    assertUserError(result, "c.toml: table[0].strict: needs a schema");
  });

  it("must be true or false", async () => {
    const root = tree({}, "");
    writeFileSync(
      join(root, "c.toml"),
      `[[table]]\nname = "t"\nglob = "*.json"\nformat = "json"\nschema = { a = "TEXT" }\nstrict = "yes"\n`,
    );
    const result = await runDirq(["-c", "c.toml", "SELECT 1"], { cwd: root });
    assertUserError(result, "c.toml: table[0].strict: expected true or false");
  });
});
