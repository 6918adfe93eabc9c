import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

/**
 * scan/ is a library that needs no SQLite: its walker, ignore rules, globs and stats, used from
 * scan/ alone in a process of their own, never load the SQLite binding. A preload makes loading
 * it fatal; a control proves the preload sees the binding when the indexer opens SQLite.
 */

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));
const BINDING = "@rocicorp/zero-sqlite3";

/** Makes every load of the binding (a `require` of it or a file inside it) end the process. */
const PRELOAD = `
const Module = require("node:module");
const load = Module._load;
Module._load = function (request, ...rest) {
  if (String(request).includes(${JSON.stringify(BINDING)})) {
    process.stderr.write("SQLite binding loaded: " + request + "\\n");
    process.exit(3);
  }
  return load.call(this, request, ...rest);
};
`;

/** Walks, matches and stats through scan/ only, and prints what it found as JSON. */
const SCAN_ONLY = `
import { createRequire } from "node:module";
const scan = (name) => import(new URL(name + ".js", ${JSON.stringify(`file://${SRC}scan/`)}).href);
const { walkSelection } = await scan("walk");
const { parsePathTableName, compileGlob } = await scan("path-selection");
const { statPaths } = await scan("file-stats");
const root = process.argv[1];
const walk = (name, more = {}) =>
  walkSelection({ root, selection: parsePathTableName(name, root), useGitignore: true, ...more })
    .paths.slice().sort();
const found = {
  tree: walk("./", { extraIgnores: ["tmp/**", "many/**"] }),
  noIgnore: walk("./", { useGitignore: false, extraIgnores: ["many/**"] }),
  markdown: walk("./**/*.md", { extraIgnores: ["tmp/**"] }),
  braces: walk("./src/{a,b}/*.ts"),
  readAhead: walk("./docs", { readAhead: true }),
  glob: ["docs/guide.md", "docs/.hidden.md", "a.txt"].map(compileGlob("**/*.md")),
  // Enough paths for a batch the native extension would take, were SQLite there to host it.
  sizes: [...statPaths(root, walk("./many"))].filter((_, i) => i % 3 === 0),
};
const cached = Object.keys(createRequire(import.meta.url).cache);
found.bindingInCache = cached.some((path) => path.includes(${JSON.stringify(BINDING)}));
process.stdout.write(JSON.stringify(found));
`;

/** The indexer opening SQLite: what the preload must catch. */
const OPENS_SQLITE = `
const { openSqlite } = await import(${JSON.stringify(`file://${SRC}indexer/database.js`)});
openSqlite(":memory:");
`;

let dir = "";
let tree = "";

function file(path: string, text = "x"): void {
  mkdirSync(dirname(join(tree, path)), { recursive: true });
  writeFileSync(join(tree, path), text);
}

function run(script: string): { status: number | null; stdout: string; stderr: string } {
  const preload = join(dir, "no-sqlite.cjs");
  writeFileSync(preload, PRELOAD);
  const child = spawnSync(
    process.execPath,
    ["--require", preload, "--input-type=module", "-e", script, tree],
    { encoding: "utf8", timeout: 30_000 },
  );
  return { status: child.status, stdout: child.stdout, stderr: child.stderr };
}

describe("scan/ without SQLite", { timeout: 60_000 }, () => {
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "dirq-scan-alone-"));
    tree = join(dir, "tree");
    file(".gitignore", "*.log\nbuild/\n");
    file("a.md", "hello");
    file("b.txt");
    file("x.log");
    file("build/out.md");
    file("node_modules/pkg/index.js");
    file("docs/guide.md", "guide!");
    file("docs/.hidden.md");
    file("docs/sub/deep.md");
    file("docs/sub/.gitignore", "deep.md\n");
    file("src/a/one.ts");
    file("src/b/two.ts");
    file("src/c/three.ts");
    file("tmp/scratch.md");
    for (let size = 10; size < 40; size++) file(`many/${size}.txt`, "x".repeat(size));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("walks with ignore rules and globs, and stats, never loading the SQLite binding", () => {
    const child = run(SCAN_ONLY);
    assert.equal(child.status, 0, child.stderr);
    const found = JSON.parse(child.stdout);
    assert.deepEqual(found.tree, [
      ".gitignore",
      "a.md",
      "b.txt",
      "docs/.hidden.md",
      "docs/guide.md",
      "docs/sub/.gitignore",
      "src/a/one.ts",
      "src/b/two.ts",
      "src/c/three.ts",
    ]);
    assert.deepEqual(
      found.noIgnore.filter((path: string) => !found.tree.includes(path)),
      ["build/out.md", "docs/sub/deep.md", "tmp/scratch.md", "x.log"],
    );
    assert.deepEqual(found.markdown, ["a.md", "docs/guide.md"]);
    assert.deepEqual(found.braces, ["src/a/one.ts", "src/b/two.ts"]);
    assert.deepEqual(found.readAhead, ["docs/.hidden.md", "docs/guide.md", "docs/sub/.gitignore"]);
    assert.deepEqual(found.glob, [true, false, false]);
    assert.deepEqual(
      found.sizes,
      Array.from({ length: 30 }, (_, index) => 10 + index),
    );
    assert.equal(found.bindingInCache, false);
  });

  it("catches the binding when the indexer opens SQLite (the control)", () => {
    const child = run(OPENS_SQLITE);
    assert.equal(child.status, 3, `${child.stdout}\n${child.stderr}`);
    assert.match(child.stderr, /SQLite binding loaded/);
  });
});
