// Query a folder: a path-table, and a table whose rows an in-process function extracts.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { open } from "dirq";

const root = mkdtempSync(join(tmpdir(), "dirq-example-"));
mkdirSync(join(root, "posts"));
writeFileSync(join(root, "posts", "a.json"), JSON.stringify({ title: "Hello", words: 120 }));
writeFileSync(join(root, "posts", "b.json"), JSON.stringify({ title: "Again", words: 80 }));

const db = open({
  root,
  progress: false,
  tables: [
    {
      name: "posts",
      glob: "posts/*.json",
      schema: { title: "TEXT", words: "INTEGER" },
      // Called once per file, in this process: (path relative to the root, content) => rows.
      extract: (path, content) => [JSON.parse(content.toString("utf8"))],
    },
  ],
});
try {
  await db.ready;
  console.log(await db.query("SELECT title, words FROM posts ORDER BY words DESC"));
  console.log(await db.query("SELECT path, size FROM './posts/*.json' ORDER BY path"));
} finally {
  await db.close();
  rmSync(root, { recursive: true });
}
