// Tables dirq reads itself with a built-in format: no extract function, no hook.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { open } from "dirq";

const root = mkdtempSync(join(tmpdir(), "dirq-example-"));
mkdirSync(join(root, "sales"));
writeFileSync(join(root, "sales", "2024.csv"), "id,zip,amount\n1,007,19.5\n2,10115,\n");
mkdirSync(join(root, "api"));
writeFileSync(
  join(root, "api", "page1.json"),
  '{"page": 1, "items": [{"sku": "a"}, {"sku": "b"}]}',
);
mkdirSync(join(root, "posts"));
writeFileSync(join(root, "posts", "hello.md"), "---\ntitle: Hello\ndraft: no\n---\n# Hello\n");

const db = open({
  root,
  progress: false,
  tables: [
    // CSV: the header names the columns, a number is a number (007 stays text), an empty
    // field is NULL; the schema makes every zip TEXT.
    {
      name: "sales",
      glob: "sales/*.csv",
      format: "csv",
      schema: { id: "INTEGER", zip: "TEXT", amount: "REAL" },
    },
    // each: the rows are the objects of the array under "items" in every file.
    { name: "items", glob: "api/*.json", format: "json", each: "items" },
    // Markdown: the front matter's keys, and the text after it in body.
    { name: "posts", glob: "posts/**/*.md", format: "markdown" },
  ],
});
try {
  console.log(await db.query("SELECT id, zip, amount FROM sales ORDER BY id"));
  console.log(await db.query("SELECT _dirq_file_path AS file, sku FROM items ORDER BY sku"));
  console.log(await db.query("SELECT title, draft, body FROM posts"));
} finally {
  await db.close();
  rmSync(root, { recursive: true });
}
