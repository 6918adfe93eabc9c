// The README's Quick start, run as written in a fresh copy of this repository: a clone with the
// working tree's changes on top (what CI's clean clone holds once they are committed). Its
// first command must install, build and answer the query, and every warning npm prints on the
// way must be one the Quick start explains.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const README = readFileSync(join(REPO, "README.md"), "utf8");
const QUICK_START = README.slice(
  README.indexOf("## Quick start"),
  README.indexOf("\n## ", README.indexOf("## Quick start") + 1),
);
/** The Quick start's first command, exactly as the README shows it. */
const FIRST_COMMAND = /```sh\n([^\n]+)\n```/.exec(QUICK_START)?.[1] ?? "";

/** A clone of the repository with the working tree's uncommitted files copied over it. */
function freshCopy() {
  const parent = mkdtempSync(join(tmpdir(), "quick-start-"));
  const copy = join(parent, "dirq");
  const clone = spawnSync("git", ["clone", "--quiet", "--no-local", REPO, copy], {
    encoding: "utf8",
  });
  assert.equal(clone.status, 0, clone.stderr);
  const changed = spawnSync("git", ["ls-files", "-mo", "--exclude-standard", "-z"], {
    cwd: REPO,
    encoding: "utf8",
  });
  for (const path of changed.stdout.split("\0").filter(Boolean)) {
    mkdirSync(dirname(join(copy, path)), { recursive: true });
    copyFileSync(join(REPO, path), join(copy, path));
  }
  return { parent, copy };
}

/** Runs a shell command line in bash, as a reader pastes it. */
function runLine(line, cwd) {
  return new Promise((resolveRun) => {
    const child = spawn("bash", ["-e", "-o", "pipefail", "-c", line], {
      cwd,
      env: { ...process.env, DIRQ_PROGRESS: "never" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
    child.on("close", (code) => resolveRun({ code, stdout, stderr }));
  });
}

/** The files git would list in the copy (dirq's ignore rules are git's), largest first. */
function largestFiles(copy, count) {
  const listed = spawnSync("git", ["ls-files", "-co", "--exclude-standard", "-z"], {
    cwd: copy,
    encoding: "utf8",
  });
  return listed.stdout
    .split("\0")
    .filter(Boolean)
    .map((path) => ({ path, size: statSync(join(copy, path)).size }))
    .sort((a, b) => b.size - a.size)
    .slice(0, count);
}

describe("README Quick start, in a fresh copy of the repository", { timeout: 900_000 }, () => {
  let where;
  let run;
  before(async () => {
    where = freshCopy();
    run = await runLine(FIRST_COMMAND, where.copy);
  });
  after(() => rmSync(where.parent, { recursive: true, force: true }));

  test("the first command installs, builds and answers the query", () => {
    assert.match(FIRST_COMMAND, /^npm ci && npx dirq /);
    assert.equal(run.code, 0, run.stderr);
    // npm ci prints its `prepare` build first; dirq's answer is the JSON array at the end.
    const rows = JSON.parse(run.stdout.slice(run.stdout.lastIndexOf("\n[") + 1));
    const expected = largestFiles(where.copy, 5);
    assert.deepEqual(
      rows.map((row) => row.size),
      expected.map((file) => file.size),
    );
    for (const row of rows) assert.equal(statSync(join(where.copy, row.path)).size, row.size);
  });

  test("every warning npm prints is one the Quick start explains", () => {
    const codes = new Set([...run.stderr.matchAll(/^npm warn (\S+)/gm)].map((m) => m[1]));
    assert.ok(!codes.has("install-scripts"), `npm asked about install scripts:\n${run.stderr}`);
    for (const code of codes) {
      assert.ok(QUICK_START.includes(code), `the Quick start does not explain ${code}`);
    }
  });

  test("after npm ci, npm pack gives a dirq tarball that holds the CLI", () => {
    const pack = spawnSync("npm", ["pack", "-w", "packages/dirq", "--dry-run", "--json"], {
      cwd: where.copy,
      encoding: "utf8",
    });
    assert.equal(pack.status, 0, pack.stderr);
    const files = JSON.parse(pack.stdout)[0].files.map((file) => file.path);
    assert.ok(files.includes("dist/src/cli-bundle/dirq.cjs"), files.join("\n"));
    assert.ok(files.includes("dist/src/index.js"));
  });
});
