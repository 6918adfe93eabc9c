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
/** Docs whose ```js blocks must each be a whole example file. */
const DOCS = ["docs/sdk.md", "README.md"].map((path) => ({
  path,
  text: readFileSync(join(PACKAGE_DIR, path), "utf8"),
}));

/** Every example in the docs is one of these files, shown whole: they run here. */
describe("SDK examples (examples/*.mjs, shown in docs/sdk.md)", () => {
  const examples = readdirSync(EXAMPLES).filter((name) => name.endsWith(".mjs"));

  test("there are examples, and every ```js block of the docs is one of them", () => {
    assert.ok(examples.length >= 3, examples.join(", "));
    const sources = examples.map((name) => readFileSync(join(EXAMPLES, name), "utf8"));
    const shown = new Set<string>();
    for (const doc of DOCS) {
      for (const [, block] of doc.text.matchAll(/```js\n([\s\S]*?)```/g)) {
        assert.ok(sources.includes(block ?? ""), `${doc.path}: not an example file:\n${block}`);
        shown.add(block ?? "");
      }
    }
    assert.equal(shown.size, examples.length, "the docs show every example");
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
