// The repository is ready to release: one version for the three dirq packages, five packages
// declared for pubtool, and `pubtool doctor` on the repository itself ending `doctor: ok`.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { readVersions } from "../versions.mjs";
import { exec, REPO } from "./support.mjs";

const PUBTOOL = join(REPO, "node_modules", ".bin", "pubtool");

/** pubtool's environment: no CI variables or tokens of whoever runs the tests. */
function cleanEnv(extra = {}) {
  return { PATH: process.env.PATH, HOME: process.env.HOME ?? "/", ...extra };
}

test("the npm package, the Python launcher and the crate have one version", () => {
  const versions = readVersions(REPO);
  const listed = Object.entries(versions).map(([where, version]) => `${where}: ${version}`);
  assert.equal(new Set(Object.values(versions)).size, 1, listed.join("\n"));
  assert.ok(Object.values(versions).every(Boolean), listed.join("\n"));
});

test("pubtool doctor on the repository: doctor: ok", async () => {
  const run = await exec(PUBTOOL, ["doctor"], { env: cleanEnv() });
  assert.equal(run.code, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /\ndoctor: ok\n$/);
  assert.doesNotMatch(run.stdout, /✗/);
});

test("pubtool doctor inside the release workflow's run: doctor: ok, this run is declared", async () => {
  const run = await exec(PUBTOOL, ["doctor", "--json"], {
    env: cleanEnv({
      GITHUB_ACTIONS: "true",
      GITHUB_REPOSITORY: "dirq/dirq",
      GITHUB_WORKFLOW_REF: "dirq/dirq/.github/workflows/release.yml@refs/tags/v0.1.0",
    }),
  });
  assert.equal(run.code, 0, run.stdout + run.stderr);
  const report = JSON.parse(run.stdout);
  assert.equal(report.ok, true);
  const running = report.phases
    .flatMap((phase) => phase.checks)
    .find((check) => check.id === "workflow-ref");
  assert.equal(running?.status, "pass", JSON.stringify(running));
});

test("pubtool.toml declares the five packages, each trusting release.yml in environment release", async () => {
  const run = await exec(PUBTOOL, ["publish", "--dry-run", "--package", "nothing"], {
    env: cleanEnv(),
  });
  // pubtool reads the config (a package name that is not there lists the ones that are).
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /it has: dirq, pubtool, lmclient, dirq, dirq\)/);
  const config = readFileSync(join(REPO, "pubtool.toml"), "utf8");
  const packages = [...config.matchAll(/name = "([^"]+)"\nkind = "([^"]+)"/g)].map(
    ([, name, kind]) => `${kind}:${name}`,
  );
  assert.deepEqual(packages, [
    "jsreg:dirq",
    "jsreg:pubtool",
    "jsreg:lmclient",
    "pyreg:dirq",
    "rustreg:dirq",
  ]);
  assert.equal([...config.matchAll(/workflow = "release\.yml"/g)].length, 5);
  assert.equal([...config.matchAll(/environment = "release"/g)].length, 5);
});
