/**
 * Differential harness for one-shot scans (issue 36): the statements the scan benchmark times
 * answer the same whichever way the scan runs, and what bash and stat(1) say:
 * - with the native extension reading folders and stats ahead on its own thread (the default),
 *   and with Node's fs and worker threads instead (`DIRQ_NATIVE_FS=0`);
 * - a statement that reads no stat column (never stats) and the same statement made to read
 *   one (stats every file);
 * - against bash `globstar` for the file list (`[[ -f ]]`: symlinks to files count, symlinks to
 *   folders are not entered) and Node's `stat` for sizes.
 * The tree is seeded (DIRQ_TEST_SEED): nested folders, symlinks to files and folders, a broken
 * symlink, a symlink loop, names that are not valid UTF-8, an empty folder, an unreadable one.
 */
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { harnessSeed, pick, reference, seededRandom } from "./differential.js";
import { runDirq } from "./helpers.js";

const SEED = harnessSeed(36);
/** Enough files that stat batches go to the extension's thread and a helper starts. */
const FILES = 3_000;
const EXTENSIONS = [".md", ".json", ".txt", ".ts", "", ".MD"];

let root = "";

function generateTree(random: () => number): void {
  const folders = [""];
  for (let i = 0; i < 60; i++) {
    const parent = pick(random, folders);
    const name = random() < 0.1 ? `dir ${i}` : `d${i}`;
    const folder = parent === "" ? name : `${parent}/${name}`;
    mkdirSync(join(root, folder));
    folders.push(folder);
  }
  for (let i = 0; i < FILES; i++) {
    const folder = pick(random, folders);
    const name = `f${i}${pick(random, EXTENSIONS)}`;
    const size = Math.floor(random() * 3000);
    writeFileSync(join(root, folder, name), "x".repeat(size));
  }
  // Names that are not valid UTF-8: a file, and a folder with a file in it.
  writeFileSync(Buffer.from(`${root}/caf\xe9.md`, "latin1"), "latin-1 name");
  mkdirSync(Buffer.from(`${root}/d\xff`, "latin1"));
  writeFileSync(Buffer.from(`${root}/d\xff/inner.md`, "latin1"), "in a latin-1 folder");
  writeFileSync(join(root, "target.md"), "a symlink's target");
  // folders[1] is at the top (the first one made), so `..` leads back to the root.
  symlinkSync(`${folders[1]}/../target.md`, join(root, "link-to-file.md"));
  symlinkSync(folders[2] as string, join(root, "link-to-folder"));
  symlinkSync("nowhere", join(root, "broken.md"));
  symlinkSync(".", join(root, folders[3] as string, "loop"));
  // Folders of plain files that a walk takes whole, but for names it skips (a worktree's
  // `.git` file, a `node_modules` file) or must read (a `.gitignore`, here ignoring nothing).
  mkdirSync(join(root, "plain"));
  for (const name of ["a.md", "b.json", ".git", "node_modules", ".dirq", "z.txt"]) {
    writeFileSync(join(root, "plain", name), name);
  }
  mkdirSync(join(root, "plain-ignore"));
  for (const name of [".gitignore", "c.md", "d.md"]) {
    writeFileSync(join(root, "plain-ignore", name), "# ignores nothing\n");
  }
  mkdirSync(join(root, "empty"));
  mkdirSync(join(root, "locked"));
  writeFileSync(join(root, "locked", "hidden.md"), "unreadable folder (unless root)");
  chmodSync(join(root, "locked"), 0o000);
}

/** Names dirq never lists, file or folder (docs/path-tables.md). */
const BUILT_IN_SKIPS = new Set(["node_modules", ".git", ".dirq"]);

/** Files bash's globstar lists (symlinks to files included), as dirq names them. */
function bashFiles(glob: string): string[] {
  const script = `shopt -s globstar dotglob nullglob; for f in ${glob}; do [[ -f "$f" ]] && printf '%s\\0' "$f"; done`;
  const out = reference("bash", ["-c", script], { cwd: root });
  return out
    .split("\0")
    .filter((path) => path !== "" && !path.split("/").some((name) => BUILT_IN_SKIPS.has(name)))
    .sort();
}

/** Every file bash lists with the size stat(1) gives it (following symlinks), by dirq's name. */
function statSizes(): { path: string; size: number }[] {
  const script =
    'shopt -s globstar dotglob nullglob; for f in **; do [[ -f "$f" ]] && printf \'%s\\0\' "$f"; done' +
    " | xargs -0 stat -L --printf '%s\\0%n\\0'";
  const out = reference("bash", ["-c", script], { cwd: root }).split("\0");
  const sizes: { path: string; size: number }[] = [];
  for (let i = 0; i + 1 < out.length; i += 2) {
    const path = out[i + 1] as string;
    if (path.split("/").some((name) => BUILT_IN_SKIPS.has(name))) continue;
    sizes.push({ path, size: Number(out[i]) });
  }
  return sizes;
}

interface Answer {
  code: number | null;
  rows: Record<string, unknown>[];
  stderr: string;
}

async function ask(sql: string, env: Record<string, string> = {}): Promise<Answer> {
  const result = await runDirq([sql, "--format", "json"], { cwd: root, env });
  const rows = result.stdout === "" ? [] : (JSON.parse(result.stdout) as Record<string, unknown>[]);
  return { code: result.code, rows, stderr: result.stderr };
}

const MODES: { name: string; env: Record<string, string> }[] = [
  { name: "native read-ahead", env: {} },
  { name: "Node fs and worker threads", env: { DIRQ_NATIVE_FS: "0" } },
];

/** The statements of the scan benchmark, and the same made to read a stat column. */
const STATEMENTS = [
  "SELECT count(*) AS n FROM './'",
  "SELECT path FROM './'",
  "SELECT path FROM './**/*.md'",
  "SELECT path, basename, dir, ext FROM './**/*.json'",
  "SELECT path, size FROM './' ORDER BY size DESC, path LIMIT 10",
  "SELECT * FROM './d1/**' ORDER BY path",
];

describe(`one-shot scans agree however they run (seed ${SEED}, ${FILES} files)`, () => {
  before(() => {
    root = mkdtempSync(join(tmpdir(), "dirq-diff-scan-"));
    generateTree(seededRandom(SEED));
  });
  after(() => {
    chmodSync(join(root, "locked"), 0o755);
    rmSync(root, { recursive: true, force: true });
  });

  for (const sql of STATEMENTS) {
    it(`${sql}: the same answer with the native extension and without`, async () => {
      const native = await ask(sql, {});
      const node = await ask(sql, { DIRQ_NATIVE_FS: "0" });
      assert.equal(native.stderr, node.stderr);
      assert.equal(native.code, node.code);
      // Same rows in the same (walk) order: both walks list by name.
      assert.deepEqual(native.rows, node.rows);
    });
  }

  it("a statement that never stats (or reads no column) lists what the same statement reading one lists", async () => {
    for (const [plain, stating] of [
      ["SELECT path FROM './'", "SELECT path FROM './' WHERE size IS NOT NULL"],
      ["SELECT path FROM './**/*.md'", "SELECT path FROM './**/*.md' WHERE size >= 0"],
      ["SELECT count(*) AS n FROM './'", "SELECT count(size) AS n FROM './'"],
      // count(*) reads no column: one-shot rows have no paths (ColumnGroups.paths).
      ["SELECT count(*) AS n FROM './**/*.md'", "SELECT count(path) AS n FROM './**/*.md'"],
      ["SELECT count(*) AS n FROM './d1/**'", "SELECT count(DISTINCT path) AS n FROM './d1/**'"],
    ] as const) {
      for (const mode of MODES) {
        const [a, b] = await Promise.all([ask(plain, mode.env), ask(stating, mode.env)]);
        assert.deepEqual(a.rows, b.rows, `${plain} vs ${stating} (${mode.name})`);
      }
    }
  });

  it("the file list equals bash globstar's, and sizes equal stat's", async () => {
    const all = bashFiles("**");
    const md = bashFiles("**/*.md");
    const count = await ask("SELECT count(*) AS n FROM './'");
    assert.deepEqual(count.rows, [{ n: all.length }]);
    const paths = (await ask("SELECT path FROM './'")).rows.map((row) => row.path as string);
    assert.deepEqual([...paths].sort(), all);
    const mdPaths = (await ask("SELECT path FROM './**/*.md'")).rows.map((row) => row.path);
    assert.deepEqual([...mdPaths].sort(), md);
    const sizes = statSizes();
    assert.deepEqual(sizes.map((entry) => entry.path).sort(), all);
    const bySize = sizes
      .sort((a, b) => b.size - a.size || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
      .slice(0, 10);
    const top = await ask("SELECT path, size FROM './' ORDER BY size DESC, path LIMIT 10");
    assert.deepEqual(top.rows, bySize);
  });
});
