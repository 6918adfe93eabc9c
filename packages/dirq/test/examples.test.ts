import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { DIRQ_BIN } from "./helpers.js";

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

/**
 * The sample outputs shown in the docs are what dirq prints. A sample over this package's own
 * files runs right here (`cwd` is the package folder); the others run in a tree with the files
 * (and sizes) their output shows. `UPDATE_DOC_SAMPLES=1` writes what dirq prints now into the
 * doc instead of failing, so a sample is regenerated, never edited by hand.
 */
describe("CLI samples in the docs (README.md, docs/cli.md)", () => {
  const samples: { doc: string; command: string; tree: Record<string, number> | "package" }[] = [
    {
      doc: "README.md",
      command: `dirq "SELECT path, size FROM './examples' ORDER BY size DESC LIMIT 3" --format table`,
      tree: "package",
    },
    {
      doc: "docs/cli.md",
      command: `dirq "SELECT path, size FROM './' ORDER BY path" --format json`,
      tree: { "a.txt": 5, "docs/b.md": 3 },
    },
    {
      doc: "docs/cli.md",
      command: `dirq "SELECT path, size FROM './' ORDER BY path" --format table`,
      tree: { "a.txt": 5, "docs/b.md": 3 },
    },
  ];
  for (const { doc, command, tree } of samples) {
    test(`${doc}: ${command}`, async () => {
      const text = readFileSync(join(PACKAGE_DIR, doc), "utf8");
      const at = text.indexOf(`$ ${command}\n`);
      assert.ok(at >= 0, `${doc} shows no "$ ${command}"`);
      const start = at + command.length + 3;
      const end = text.indexOf("```", start);
      const dir = tree === "package" ? PACKAGE_DIR : sizedTree(tree);
      try {
        const [, sql, ...rest] = /^dirq "([^"]*)" (.*)$/.exec(command) ?? [];
        const args = [sql ?? "", ...(rest[0] ?? "").split(" ")];
        const { stdout, stderr } = await exec(process.execPath, [DIRQ_BIN, ...args], {
          cwd: dir,
          env: { ...process.env, DIRQ_PROGRESS: "never" },
          timeout: 60_000,
        });
        assert.equal(stderr, "");
        if (process.env.UPDATE_DOC_SAMPLES === "1") {
          writeFileSync(join(PACKAGE_DIR, doc), text.slice(0, start) + stdout + text.slice(end));
          return;
        }
        assert.equal(
          stdout,
          text.slice(start, end),
          `${doc}'s sample is stale: regenerate it with UPDATE_DOC_SAMPLES=1 node --test dist/test/examples.test.js`,
        );
      } finally {
        if (tree !== "package") rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});

/** A temporary tree of files of these sizes. */
function sizedTree(tree: Record<string, number>): string {
  const dir = mkdtempSync(join(tmpdir(), "dirq-doc-sample-"));
  for (const [path, size] of Object.entries(tree)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), "x".repeat(size));
  }
  return dir;
}
