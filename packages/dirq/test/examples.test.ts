import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const exec = promisify(execFile);
const PACKAGE_DIR = fileURLToPath(new URL("../..", import.meta.url));
const EXAMPLES = join(PACKAGE_DIR, "examples");
const SDK_DOC = readFileSync(join(PACKAGE_DIR, "docs", "sdk.md"), "utf8");

/** Every example in the docs is one of these files, shown whole: they run here. */
describe("SDK examples (examples/*.mjs, shown in docs/sdk.md)", () => {
  const examples = readdirSync(EXAMPLES).filter((name) => name.endsWith(".mjs"));

  test("there are examples, and every ```js block of docs/sdk.md is one of them", () => {
    assert.ok(examples.length >= 3, examples.join(", "));
    const sources = examples.map((name) => readFileSync(join(EXAMPLES, name), "utf8"));
    const blocks = [...SDK_DOC.matchAll(/```js\n([\s\S]*?)```/g)].map((match) => match[1]);
    assert.equal(blocks.length, examples.length, "one block per example");
    for (const block of blocks)
      assert.ok(sources.includes(block ?? ""), `not an example file:\n${block}`);
  });

  for (const name of examples) {
    test(`${name} prints what ${name.replace(".mjs", ".expected.txt")} holds`, async () => {
      const expected = readFileSync(join(EXAMPLES, name.replace(".mjs", ".expected.txt")), "utf8");
      const { stdout, stderr } = await exec(process.execPath, [join(EXAMPLES, name)], {
        cwd: PACKAGE_DIR,
        env: { ...process.env, DIRQ_PROGRESS: "never" },
        timeout: 60_000,
      });
      assert.equal(stderr, "");
      assert.equal(stdout, expected);
    });
  }
});
