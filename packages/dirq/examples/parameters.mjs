// Bound parameters, and a statement cancelled with an AbortSignal.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDirqError, open } from "dirq";

const root = mkdtempSync(join(tmpdir(), "dirq-example-"));
writeFileSync(join(root, "a.md"), "short");
writeFileSync(join(root, "b.md"), "a little longer");
writeFileSync(join(root, "c.txt"), "not markdown");

const db = open({ root, progress: false });
try {
  // Positional: one value per ?, in order.
  console.log(await db.query("SELECT path FROM './' WHERE ext = ? AND size > ?", ["md", 10]));
  // Named: :name, @name and $name take the value keyed by name.
  console.log(
    await db.query("SELECT :greeting || ', ' || @who AS text", { greeting: "hi", who: "you" }),
  );

  // A statement that would run for ever, stopped after 200 ms: its process is killed.
  const endless =
    "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT count(*) FROM c";
  try {
    await db.query(endless, { signal: AbortSignal.timeout(200) });
  } catch (error) {
    if (!isDirqError(error)) throw error;
    console.log(error.code);
  }
} finally {
  await db.close();
  rmSync(root, { recursive: true });
}
