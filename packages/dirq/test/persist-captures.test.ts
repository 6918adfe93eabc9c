/**
 * `--persist` and a table's captures, `[table.columns]` and `strict`: all are part of its
 * definition, so changing one rebuilds the table (the notice says which), and an unchanged
 * definition keeps it.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parseRows, runDirq, tempTree } from "./helpers.js";

function config(columns: string, strict: boolean, glob = "posts/{year}/*.json"): string {
  return `[[table]]
name = "posts"
glob = "${glob}"
format = "json"
schema = { year = "TEXT", title = "TEXT" }
strict = ${strict}
columns = { ${columns} }
`;
}

describe("--persist with captures, columns and strict", () => {
  it("keeps the table while they stay, rebuilds it when one changes", async () => {
    const root = tempTree({
      "posts/2024/a.json": '{"title":"A","meta":{"title":"Meta A"}}',
      "c.toml": config('year = "year", title = "title"', false),
    });
    const run = async () => {
      const result = await runDirq(
        ["-c", "c.toml", "--persist", "SELECT * FROM posts", "--format", "json"],
        { cwd: root },
      );
      assert.equal(result.code, 0, result.stderr);
      return { rows: parseRows(result.stdout), stderr: result.stderr };
    };
    assert.deepEqual((await run()).rows, [{ year: "2024", title: "A" }]);
    assert.deepEqual(await run(), { rows: [{ year: "2024", title: "A" }], stderr: "" });

    writeFileSync(join(root, "c.toml"), config('year = "year", title = "meta.title"', false));
    assert.deepEqual(await run(), {
      rows: [{ year: "2024", title: "Meta A" }],
      stderr: "dirq: rebuilding table posts: its columns or strict changed\n",
    });
    assert.equal((await run()).stderr, "");

    writeFileSync(join(root, "c.toml"), config('year = "year", title = "meta.title"', true));
    assert.equal(
      (await run()).stderr,
      "dirq: rebuilding table posts: its columns or strict changed\n",
    );

    const renamed = config('year = "y", title = "meta.title"', true, "posts/{y}/*.json");
    writeFileSync(join(root, "c.toml"), renamed);
    assert.deepEqual(await run(), {
      rows: [{ year: "2024", title: "Meta A" }],
      stderr: "dirq: rebuilding table posts: its glob changed\n",
    });
  });
});
