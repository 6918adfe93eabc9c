// Errors: a rejected statement is a DirqError with a code; a bad file is skipped, not fatal.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDirqError, open } from "dirq";

const root = mkdtempSync(join(tmpdir(), "dirq-example-"));
writeFileSync(join(root, "good.json"), '{"n": 1}');
writeFileSync(join(root, "bad.json"), "{oops");

// `await using db = open(...)` (TypeScript 5.2+, or Node with explicit resource management)
// closes it at the end of the block; plain JavaScript calls close() itself.
const db = open({
  root,
  progress: false,
  tables: [{ name: "docs", glob: "*.json", extract: (path, content) => [JSON.parse(content)] }],
});
try {
  console.log(await db.query("SELECT n FROM docs"));
  console.log(db.skipped.map((file) => file.path));
  await db.query("DELETE FROM docs");
} catch (error) {
  if (!isDirqError(error)) throw error;
  console.log(error.code);
} finally {
  await db.close();
  rmSync(root, { recursive: true });
}
