// Path captures, column mapping, strict tables and bytes stored as BLOBs.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { open } from "dirq";

const root = mkdtempSync(join(tmpdir(), "dirq-example-"));
for (const [year, name, post] of [
  ["2024", "a", { meta: { author: { name: "Ann" } } }],
  ["2025", "b", { meta: { author: { name: "Bo" } } }],
  ["2025", "c", { meta: {} }],
]) {
  mkdirSync(join(root, "posts", year), { recursive: true });
  writeFileSync(join(root, "posts", year, `${name}.json`), JSON.stringify(post));
}

const db = open({
  root,
  progress: false,
  tables: [
    {
      // {year}: a capture, a column of every row of the file.
      name: "posts",
      glob: "posts/{year}/*.json",
      format: "json",
      schema: { year: "INTEGER", author: "TEXT" },
      // Where each column comes from: a capture, or a dot path into the row.
      columns: { year: "year", author: "meta.author.name" },
      // A row whose path leads nowhere skips its file (db.skipped names it).
      strict: true,
    },
    {
      // Bytes an extract returns are a BLOB: hex in rows and row events.
      name: "heads",
      glob: "posts/{year}/{name}.json",
      extract: (path, content) => [{ head: content.subarray(0, 4) }],
    },
  ],
});
try {
  console.log(await db.query("SELECT year, author FROM posts ORDER BY year"));
  console.log(db.skipped.map((file) => file.path));
  console.log(
    await db.query("SELECT name, head, typeof(head) AS type FROM heads WHERE name = 'a'"),
  );
} finally {
  await db.close();
  rmSync(root, { recursive: true });
}
