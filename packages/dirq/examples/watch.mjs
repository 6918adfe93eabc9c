// Follow row changes as files change; stop with an AbortSignal (or `break`).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { open } from "dirq";

const root = mkdtempSync(join(tmpdir(), "dirq-example-"));
writeFileSync(join(root, "todo.txt"), "buy milk\n");

const lines = (path, content) =>
  content
    .toString("utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((text) => ({ text }));
const db = open({
  root,
  progress: false,
  tables: [{ name: "todo", glob: "*.txt", extract: lines }],
});
const stop = new AbortController();
try {
  const events = db.watch({ signal: stop.signal });
  await events.ready; // the watcher sees the tree: changes from now on are events
  writeFileSync(join(root, "todo.txt"), "buy milk\nwrite docs\n");
  for await (const event of events) {
    if (event.table !== "todo") continue;
    console.log(event.action, event.file_path, event.row);
    stop.abort();
  }
} finally {
  await db.close();
  rmSync(root, { recursive: true });
}
