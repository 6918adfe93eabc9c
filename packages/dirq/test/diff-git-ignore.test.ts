/**
 * Differential harness: which files dirq lists must equal `git ls-files -co --exclude-standard`
 * on generated trees (nested `.gitignore` files with negations, anchors, classes and case
 * variants; `info/exclude`; a root below the repository's top; a worktree, where `.git` is a
 * file). Seeded: set DIRQ_TEST_SEED to replay a failing run.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { harnessSeed, pick, reference, seededRandom } from "./differential.js";
import { runDirq } from "./helpers.js";

const SEED = harnessSeed(9001);
const CASES = 300;

const NAMES = [
  "a",
  "b",
  "A",
  "B",
  "foo",
  "Foo",
  "FOO",
  "build",
  "Build",
  "x.log",
  "X.LOG",
  "y.txt",
  "y.TXT",
  ".env",
  ".hidden",
  "log",
  "tmp",
  "keep",
  "important.log",
  "out.js",
  "main.ts",
  "[x]",
  "q?",
  "#x",
  "!x",
];
const DIRS = ["src", "Src", "build", "lib", "tmp", "a", "b", "deep", ".cache", "Build", "logs"];
const PATTERNS = [
  "*.log",
  "*.LOG",
  "*.txt",
  "build/",
  "build",
  "Build",
  "/foo",
  "foo",
  "!x.log",
  "!X.LOG",
  "foo/**",
  "**/tmp",
  "a/b",
  "[ab]*",
  "[AB]",
  "?.txt",
  "!important.log",
  "!/b",
  ".env",
  "Foo",
  "tmp/",
  "!tmp/keep",
  "# comment",
  "",
  "lib/*.js",
  "*.js",
  "!out.js",
  "src/**/a",
  "deep/",
  "!deep/",
  "**/*.ts",
  "/*.txt",
  "logs/*",
  "!logs/keep",
  ".*",
  "!.hidden",
  "a?",
  "[!a]*",
  "\\[x\\]",
  "y.*",
  "**/b/",
  "src",
  "!src",
  "*",
  "!*.ts",
  "b/**/keep",
  "\\#x",
  "\\!x",
  "foo  ",
  "**/a/**",
  "a/**/",
  "*.[lL][oO][gG]",
  "[[:upper:]]*",
];

const home = mkdtempSync(join(tmpdir(), "dirq-git-home-"));
/** Git without the user's or the system's configuration (no global excludes file). */
const GIT_ENV = {
  HOME: home,
  XDG_CONFIG_HOME: join(home, ".config"),
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.com",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.com",
};
after(() => rmSync(home, { recursive: true, force: true }));

function git(cwd: string, ...args: string[]): string {
  return reference("git", args, { cwd, env: GIT_ENV });
}

function write(root: string, path: string, content: string): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), content);
}

function patterns(random: () => number, count: number): string {
  return `${Array.from({ length: count }, () => pick(random, PATTERNS)).join("\n")}\n`;
}

/** One generated case under `dir`: files at depth 0-3 and `.gitignore` files here and there. */
function generateCase(random: () => number, root: string, dir: string): string[] {
  const files: string[] = [];
  const folders = new Set<string>([dir]);
  const fileCount = 4 + Math.floor(random() * 12);
  for (let i = 0; i < fileCount; i++) {
    let path = dir;
    const depth = Math.floor(random() * 4);
    for (let d = 0; d < depth; d++) {
      path += `/${pick(random, DIRS)}`;
      folders.add(path);
    }
    path += `/${pick(random, NAMES)}`;
    if (folders.has(path)) continue;
    files.push(path);
  }
  // A name used both as a folder and as a file cannot exist: keep the folder.
  const kept = files.filter(
    (file) => ![...folders].some((folder) => folder === file || folder.startsWith(`${file}/`)),
  );
  for (const file of kept) write(root, file, "x");
  for (const folder of folders) {
    if (random() < 0.5)
      write(root, `${folder}/.gitignore`, patterns(random, 1 + Math.floor(random() * 5)));
  }
  return [...folders];
}

function byCase(paths: Iterable<string>): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const path of paths) {
    const key = path.split("/")[0] as string;
    groups.set(key, [...(groups.get(key) ?? []), path]);
  }
  for (const list of groups.values()) list.sort();
  return groups;
}

async function dirqPaths(cwd: string): Promise<string[]> {
  const result = await runDirq(["SELECT path FROM './'", "--format", "json"], { cwd });
  assert.equal(result.code, 0, result.stderr);
  return (JSON.parse(result.stdout) as { path: string }[]).map((row) => row.path);
}

function gitPaths(cwd: string): string[] {
  return git(cwd, "ls-files", "-co", "--exclude-standard", "-z")
    .split("\0")
    .filter((path) => path !== "");
}

describe(`ignore rules equal git's (seed ${SEED}, ${CASES} cases)`, () => {
  const random = seededRandom(SEED);
  const repo = mkdtempSync(join(tmpdir(), "dirq-git-"));
  after(() => process.env.DIRQ_TEST_KEEP || rmSync(repo, { recursive: true, force: true }));
  git(repo, "init", "-q");
  write(repo, ".git/info/exclude", patterns(random, 2));
  write(repo, ".gitignore", "/c1*/deep/\n*.LOG\n");
  const foldersByCase: string[][] = [];
  for (let c = 0; c < CASES; c++) foldersByCase.push(generateCase(random, repo, `c${c}`));

  it("lists the same files as git ls-files -co --exclude-standard, case by case", async () => {
    const expected = byCase(gitPaths(repo));
    const actual = byCase(await dirqPaths(repo));
    const failures: string[] = [];
    for (let c = 0; c < CASES; c++) {
      const key = `c${c}`;
      const want = expected.get(key) ?? [];
      const got = actual.get(key) ?? [];
      if (JSON.stringify(want) !== JSON.stringify(got)) {
        failures.push(`case ${key}: git ${JSON.stringify(want)}\n   dirq ${JSON.stringify(got)}`);
      }
    }
    assert.deepEqual(failures, [], `seed ${SEED}, tree in ${repo}:\n${failures.join("\n")}`);
  });

  it("from a folder below the repository's top, parent .gitignore files apply", async () => {
    const failures: string[] = [];
    const subfolders = foldersByCase.flatMap((folders) => folders.filter((f) => f.includes("/")));
    for (const folder of subfolders.slice(0, 24)) {
      const cwd = join(repo, folder);
      const want = gitPaths(cwd).sort();
      const got = (await dirqPaths(cwd)).sort();
      if (JSON.stringify(want) !== JSON.stringify(got)) {
        failures.push(`${folder}: git ${JSON.stringify(want)}\n   dirq ${JSON.stringify(got)}`);
      }
    }
    assert.deepEqual(failures, [], `seed ${SEED}:\n${failures.join("\n")}`);
  });
});

describe(`in a git worktree (.git is a file), info/exclude applies (seed ${SEED})`, () => {
  it("lists the same files as git in the worktree", async () => {
    const random = seededRandom(SEED + 1);
    const base = mkdtempSync(join(tmpdir(), "dirq-gitwt-"));
    try {
      const main = join(base, "main");
      mkdirSync(main);
      git(main, "init", "-q");
      write(main, ".git/info/exclude", "*.secret\nexcluded/\n");
      for (let c = 0; c < 20; c++) generateCase(random, main, `c${c}`);
      git(main, "add", "-A");
      git(main, "commit", "-q", "-m", "files");
      git(main, "worktree", "add", "-q", join(base, "wt"));
      const wt = join(base, "wt");
      write(wt, "a.secret", "");
      write(wt, "c1/b.secret", "");
      write(wt, "excluded/x.txt", "");
      write(wt, "c2/new.txt", "");
      const want = gitPaths(wt).sort();
      assert.ok(!want.includes("a.secret"), "git hides info/exclude matches in a worktree");
      assert.deepEqual((await dirqPaths(wt)).sort(), want);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});
