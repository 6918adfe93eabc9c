import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { after, describe, it } from "node:test";
import { type RegistrySeed, startRegistries } from "./fake-registries.js";
import {
  type FakeServer,
  makeTree,
  refusedUrl,
  removeTree,
  runPubtool,
  writeTree,
} from "./helpers.js";

const trees: string[] = [];
const closers: (() => Promise<void>)[] = [];
after(async () => {
  await Promise.all(closers.map((close) => close()));
  trees.forEach(removeTree);
});

const CONFIG = `[[package]]
name = "demo-lib"
kind = "jsreg"
path = "js/lib"

[[package]]
name = "demo-core"
kind = "rustreg"
path = "crates/core"

[[package]]
name = "demo-py"
kind = "pyreg"
path = "py"
`;

function manifests(version: string): Record<string, string> {
  return {
    "js/lib/package.json": JSON.stringify({ name: "demo-lib", version }),
    "crates/core/Cargo.toml": `[package]\nname = "demo-core"\nversion = "${version}"\n`,
    "py/pyproject.toml": `[project]\nname = "demo-py"\nversion = "${version}"\n`,
  };
}

function git(root: string, date: string, ...args: string[]): void {
  execFileSync("git", ["-C", root, ...args], {
    stdio: "ignore",
    env: {
      ...process.env,
      GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_DATE: date,
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.org",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@example.org",
    },
  });
}

/** A repository released as v1.0.0, v1.1.0 and v1.2.0-rc.1 (one commit and tag each), now at 1.3.0. */
function repository(): string {
  const root = makeTree({ "pubtool.toml": CONFIG, ...manifests("1.0.0") });
  trees.push(root);
  git(root, "", "init", "-q", "-b", "main");
  for (const [day, version] of ["1.0.0", "1.1.0", "1.2.0-rc.1"].entries()) {
    // Annotated tags a day apart, so "newest first" does not depend on the clock.
    const date = `2026-01-0${day + 1}T12:00:00Z`;
    writeTree(root, manifests(version));
    git(root, date, "add", "-A");
    git(root, date, "commit", "-q", "-m", version);
    git(root, date, "tag", "-a", `v${version}`, "-m", version);
  }
  writeTree(root, manifests("1.3.0"));
  return root;
}

async function registries(seed: RegistrySeed) {
  const { rustreg, pyreg, jsreg, env, close } = await startRegistries(seed);
  closers.push(close);
  return {
    servers: [rustreg, pyreg, jsreg] as FakeServer[],
    env: {
      ...env,
      // Present, and never sent: both commands read public records only.
      RUST_REGISTRY_TOKEN: "rust-token-value",
      PYREG_API_TOKEN: "pypi-token-value",
      JSREG_AUTH_TOKEN: "js-token-value",
    },
  };
}

function assertReadOnly(servers: readonly FakeServer[]): void {
  for (const server of servers) {
    for (const seen of server.requests) {
      assert.equal(seen.method, "GET", seen.url);
      assert.equal(seen.headers.authorization, undefined, seen.url);
    }
  }
}

describe("pubtool status: the registries against the tags", { concurrency: true }, () => {
  it("names what is out, what a half release left missing, and what is out untagged", async () => {
    const { env, servers } = await registries({
      js: { "demo-lib": ["1.0.0", "1.1.0", "1.2.0-rc.1"] },
      rust: { "demo-core": ["0.9.0", "1.0.0", "1.1.0", "1.2.0-rc.1"] },
      // The half release: v1.1.0's Python launcher never went out.
      py: { "demo-py": ["1.0.0", "1.2.0rc1"] },
    });
    const root = repository();
    const result = await runPubtool(["status"], { cwd: root, env });
    assert.equal(result.code, 1, result.stdout + result.stderr);
    assert.match(result.stdout, /^status: the registries against 3 tags$/m);
    assert.match(
      result.stdout,
      /demo-lib \(jsreg\):\n {2}✓ out: 1\.2\.0-rc\.1 \(v1\.2\.0-rc\.1\), 1\.1\.0 \(v1\.1\.0\), 1\.0\.0 \(v1\.0\.0\)\n {2}- this checkout: 1\.3\.0, not published yet/,
    );
    assert.match(
      result.stdout,
      /demo-py \(pyreg\):\n {2}✓ out: 1\.2\.0-rc\.1 \(v1\.2\.0-rc\.1\), 1\.0\.0 \(v1\.0\.0\)\n {2}✗ missing: 1\.1\.0: tagged v1\.1\.0, not on pyreg/,
    );
    assert.match(
      result.stdout,
      /demo-core \(rustreg\):\n(?:.*\n)* {2}- on rustreg without a tag: 0\.9\.0/,
    );
    assert.match(
      result.stdout,
      /^status: 1 tagged version is missing from its registry; run the release again/m,
    );
    assertReadOnly(servers);

    const json = await runPubtool(["status", "--json", "--package", "demo-py"], { cwd: root, env });
    const report = JSON.parse(json.stdout) as { packages: { name: string; missing: unknown[] }[] };
    assert.deepEqual(
      report.packages.map((entry) => [entry.name, entry.missing]),
      [["demo-py", [{ version: "1.1.0", tag: "v1.1.0" }]]],
    );
  });

  it("in sync exits 0; an unreachable registry is reported, not failed", async () => {
    const all = ["1.0.0", "1.1.0", "1.2.0-rc.1"];
    const { env } = await registries({ js: { "demo-lib": all }, rust: { "demo-core": all } });
    const result = await runPubtool(["status"], {
      cwd: repository(),
      env: { ...env, PUBTOOL_PYREG_URL: await refusedUrl() },
    });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(
      result.stdout,
      /demo-py \(pyreg\):\n {2}- registry not read: network error: ECONNREFUSED .*; not judged/,
    );
    assert.match(result.stdout, /^status: every tagged version is out$/m);
  });
});

describe("pubtool verify: was the last release published by OIDC", { concurrency: true }, () => {
  it("reads crates.io's trustpub_data, npm's provenance and PyPI's PEP 740 provenance", async () => {
    const { env, servers } = await registries({
      js: { "demo-lib": ["1.0.0", "1.1.0"] },
      attested: { "demo-lib@1.1.0": "acme/widget" },
      rust: { "demo-core": ["1.0.0", "1.1.0"] },
      trusted: { "demo-core": ["1.1.0"] },
      py: { "demo-py": ["1.0.0", "1.1.0"] },
      provenance: {
        "demo-py@1.1.0": {
          repository: "acme/widget",
          workflow: "release.yml",
          environment: "release",
        },
      },
    });
    const result = await runPubtool(["verify"], { cwd: repository(), env });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(
      result.stdout,
      /^✓ demo-lib \(jsreg\) 1\.1\.0: oidc: provenance attestation from acme\/widget \.github\/workflows\/release\.yml$/m,
    );
    assert.match(
      result.stdout,
      /^✓ demo-core \(rustreg\) 1\.1\.0: oidc: trusted publishing \(github: acme\/widget, run 4242\)$/m,
    );
    assert.match(
      result.stdout,
      /^✓ demo-py \(pyreg\) 1\.1\.0: oidc: trusted publisher GitHub: acme\/widget, workflow release\.yml, environment release/m,
    );
    assertReadOnly(servers);
  });

  it("a last release published with a token fails; no provenance on pyreg is only named", async () => {
    const { env } = await registries({
      js: { "demo-lib": ["1.1.0"] },
      rust: { "demo-core": ["1.1.0"] },
      py: { "demo-py": ["1.1.0"] },
    });
    const result = await runPubtool(["verify", "--json"], { cwd: repository(), env });
    assert.equal(result.code, 1, result.stderr);
    const report = JSON.parse(result.stdout) as { packages: { name: string; verdict: string }[] };
    assert.deepEqual(
      report.packages.map((entry) => [entry.name, entry.verdict]),
      [
        ["demo-lib", "token"],
        ["demo-core", "token"],
        ["demo-py", "not-shown"],
      ],
    );
    const text = await runPubtool(["verify", "--package", "demo-core"], { cwd: repository(), env });
    assert.match(
      text.stdout,
      /✗ demo-core \(rustreg\) 1\.1\.0: token: no trusted-publishing record on the version \(published by octocat with an API token\)/,
    );
  });

  it("a package never published is unpublished, not a failure", async () => {
    const { env } = await registries({});
    const result = await runPubtool(["verify"], { cwd: repository(), env });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /- demo-lib \(jsreg\): unpublished: no release on jsreg/);
  });
});
