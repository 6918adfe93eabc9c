// The release workflow is least-privilege and ready: built without publishing rights,
// published from the built files only, every action and tool pinned, the crates.io exchange
// gated; pubtool doctor passes on it and fails on each mutation a registry or the run would
// reject, naming what to fix.
import assert from "node:assert/strict";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, test } from "node:test";
import { parse } from "yaml";
import { exec, REPO } from "./support.mjs";

const PUBTOOL = join(REPO, "node_modules", ".bin", "pubtool");
const WORKFLOW = readFileSync(join(REPO, ".github", "workflows", "release.yml"), "utf8");
const { jobs } = parse(WORKFLOW);

const trees = [];
after(() => trees.forEach((tree) => rmSync(tree, { recursive: true, force: true })));

/** A copy of what doctor reads: the workflows, pubtool.toml and the packages' manifests. */
function repositoryWith(workflow, extra = {}) {
  const tree = mkdtempSync(join(tmpdir(), "dirq-release-workflow-"));
  trees.push(tree);
  for (const file of [
    "pubtool.toml",
    "packages/dirq/package.json",
    "packages/pubtool/package.json",
    "packages/lmclient/package.json",
    "python/pyproject.toml",
  ]) {
    mkdirSync(dirname(join(tree, file)), { recursive: true });
    cpSync(join(REPO, file), join(tree, file));
  }
  const files = { ".github/workflows/release.yml": workflow, ...extra };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(tree, file)), { recursive: true });
    writeFileSync(join(tree, file), text);
  }
  return tree;
}

async function doctor(tree) {
  const run = await exec(PUBTOOL, ["doctor", "--json"], {
    cwd: tree,
    env: { PATH: process.env.PATH, HOME: tree, GITHUB_REPOSITORY: "dirq/dirq" },
  });
  const report = JSON.parse(run.stdout);
  const checks = Object.fromEntries(
    report.phases.flatMap((phase) =>
      phase.checks.map((check) => [`${phase.id}/${check.id}`, check]),
    ),
  );
  return { run, report, checks };
}

/** The auth step's three lines, exactly as the workflow has them. */
const AUTH_STEP = WORKFLOW.slice(
  WORKFLOW.indexOf("      - uses: rust-lang/crates-io-auth-action@"),
  WORKFLOW.indexOf("        id: auth\n") + "        id: auth\n".length,
);
const PUBLISH_STEP_END = "          RUST_REGISTRY_TOKEN: ${{ steps.auth.outputs.token }}\n";

function replaced(text, from, to) {
  assert.ok(text.includes(from), `the workflow has ${JSON.stringify(from)}`);
  return text.replace(from, to);
}

describe("the release workflow's shape", () => {
  test("build has no publishing rights; publish has id-token and contents write, nothing else", () => {
    assert.deepEqual(parse(WORKFLOW).permissions, {});
    assert.deepEqual(jobs.build.permissions, { contents: "read" });
    assert.deepEqual(jobs.publish.permissions, { "id-token": "write", contents: "write" });
    assert.deepEqual(jobs.publish.needs, "build");
    assert.equal(jobs.publish.environment, "release");
  });

  test("publish builds and installs nothing: it unpacks what build uploaded", () => {
    const runs = jobs.publish.steps.map((step) => step.run ?? "").join("\n");
    assert.doesNotMatch(runs, /npm (ci|install)|pip install|release:build|npm run build/);
    const build = jobs.build.steps.map((step) => step.run ?? "").join("\n");
    assert.match(build, /npm ci/);
    assert.match(build, /npm run release:build/);
    const upload = jobs.build.steps.find((step) =>
      String(step.uses).startsWith("actions/upload-artifact@"),
    );
    const download = jobs.publish.steps.find((step) =>
      String(step.uses).startsWith("actions/download-artifact@"),
    );
    assert.equal(upload.with.name, download.with.name);
  });

  test("every action pinned to a commit, every tool to a version", () => {
    for (const job of Object.values(jobs)) {
      for (const step of job.steps) {
        if (step.uses) assert.match(step.uses, /@[0-9a-f]{40}$/, step.uses);
        if (step.with?.["node-version"]) assert.match(step.with["node-version"], /^\d+\.\d+\.\d+$/);
        if (/pip install/.test(step.run ?? "")) {
          for (const requirement of step.run.split(/\s+/).slice(4)) {
            assert.match(requirement, /==/, requirement);
          }
        }
        if (/rustup toolchain install/.test(step.run ?? "")) {
          assert.match(step.run, /install \d+\.\d+\.\d+ /);
        }
      }
    }
    assert.doesNotMatch(WORKFLOW, /npm install -g/);
  });

  test("the crates.io exchange runs only when a crate version is left to publish", () => {
    const auth = jobs.publish.steps.find((step) =>
      String(step.uses).startsWith("rust-lang/crates-io-auth-action@"),
    );
    assert.equal(auth.if, "steps.crate.outputs.left == 'true'");
    const gate = jobs.publish.steps.find((step) => step.id === "crate");
    assert.match(gate.run, /preflight --package rustreg:dirq --json/);
  });
});

describe("pubtool doctor on the release workflow and its mutations", { concurrency: 4 }, () => {
  test("as it is: doctor: ok", async () => {
    const { run, report } = await doctor(repositoryWith(WORKFLOW));
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.equal(report.ok, true);
  });

  test("another repository's reusable workflow (a dependency review) is not read, not failed", async () => {
    const review = `name: review\non: [pull_request]\npermissions:\n  contents: read\njobs:\n  dependency-review:\n    uses: sigstore/community/.github/workflows/reusable-dependency-review.yml@9b1b5aca605f92ec5b1bf3681b1e61b3dbc420cc\n`;
    const { run, checks } = await doctor(
      repositoryWith(WORKFLOW, { ".github/workflows/depsreview.yml": review }),
    );
    assert.equal(run.code, 0, run.stdout);
    assert.match(
      checks["local/workflow"].messages.join("\n"),
      /depsreview\.yml: job dependency-review: not read: sigstore\/community\/\.github\/workflows\/reusable-dependency-review\.yml@9b1b5ac/,
    );
    assert.doesNotMatch(checks["local/permissions"].messages.join("\n"), /depsreview/);
  });

  const mutations = [
    {
      name: "the auth step removed",
      workflow: () => replaced(WORKFLOW, AUTH_STEP, ""),
      check: "local/rustreg-token",
      message:
        /the publishing step \(line \d+\) reads RUST_REGISTRY_TOKEN from steps\.auth\.outputs\.token, but no step of the workflow has that id/,
    },
    {
      name: "the auth step moved after pubtool publish",
      workflow: () =>
        replaced(
          replaced(WORKFLOW, AUTH_STEP, ""),
          PUBLISH_STEP_END,
          `${PUBLISH_STEP_END}\n${AUTH_STEP}`,
        ),
      check: "local/rustreg-token",
      message:
        /the publishing step \(line \d+\) reads RUST_REGISTRY_TOKEN .* runs before the step with id auth \(rust-lang\/crates-io-auth-action@\w+, line \d+\).*Move the auth step before the publishing step/,
    },
    {
      name: "the auth step moved into the build job",
      workflow: () =>
        replaced(
          replaced(WORKFLOW, AUTH_STEP, ""),
          "      - run: npm ci\n",
          `      - run: npm ci\n\n${AUTH_STEP.replace(/ {8}if: .*\n/, "")}`,
        ),
      check: "local/rustreg-token",
      message:
        /made by the step with id auth \(rust-lang\/crates-io-auth-action@\w+, line \d+\) in job build; a step's output reaches only later steps of its own job/,
    },
    {
      name: "the token handed over through the build job's outputs",
      workflow: () =>
        replaced(
          replaced(
            replaced(
              replaced(WORKFLOW, AUTH_STEP, ""),
              "      - run: npm ci\n",
              `      - run: npm ci\n\n${AUTH_STEP.replace(/ {8}if: .*\n/, "")}`,
            ),
            "  build:\n    runs-on: ubuntu-latest\n",
            "  build:\n    runs-on: ubuntu-latest\n    outputs:\n      token: ${{ steps.auth.outputs.token }}\n",
          ),
          "RUST_REGISTRY_TOKEN: ${{ steps.auth.outputs.token }}",
          "RUST_REGISTRY_TOKEN: ${{ needs.build.outputs.token }}",
        ),
      check: "local/rustreg-token",
      message:
        /reads RUST_REGISTRY_TOKEN from needs\.build\.outputs\.token, made by the step with id auth .* in job build; .*the host drops a masked token from job outputs/,
    },
    {
      name: "a workflow_run trigger",
      workflow: () =>
        replaced(
          WORKFLOW,
          '    tags: ["v*"]\n',
          '    tags: ["v*"]\n  workflow_run:\n    workflows: [ci]\n    types: [completed]\n',
        ),
      check: "local/triggers",
      message:
        /release\.yml runs on workflow_run: crates\.io's trusted publishing refuses tokens of workflow_run runs/,
    },
    {
      name: "a pull_request_target trigger",
      workflow: () =>
        replaced(WORKFLOW, '    tags: ["v*"]\n', '    tags: ["v*"]\n  pull_request_target:\n'),
      check: "local/triggers",
      message: /runs on pull_request_target/,
    },
    {
      name: "the token passed under a name pubtool does not read",
      workflow: () => replaced(WORKFLOW, "RUST_REGISTRY_TOKEN: ${{", "CRATES_IO_TOKEN: ${{"),
      check: "local/rustreg-token",
      message: /passes the auth action's token as CRATES_IO_TOKEN, which pubtool does not read/,
    },
    {
      name: "the publish job without id-token: write",
      workflow: () => replaced(WORKFLOW, "      id-token: write #", "      # id-token: write #"),
      check: "local/permissions",
      message: /job publish lacks id-token: write/,
    },
    {
      name: "the publish job without an environment",
      workflow: () => replaced(WORKFLOW, "    environment: release\n", ""),
      check: "local/environment",
      message: /job publish has no environment: key/,
    },
    {
      name: "the publishing step commented out",
      workflow: () =>
        replaced(
          WORKFLOW,
          '      - run: node "$RUNNER_TEMP/pubtool/package/bin/pubtool.js" publish\n',
          '      # - run: node "$RUNNER_TEMP/pubtool/package/bin/pubtool.js" publish\n      - run: "true"\n',
        ),
      check: "local/step-active",
      message: /is commented out/,
    },
    {
      name: "the workflow renamed, so the registries' trusted publishers no longer match",
      rename: "publish.yml",
      workflow: () => WORKFLOW,
      check: "declared/workflow-file",
      message: /release\.yml/,
    },
  ];

  for (const mutation of mutations) {
    test(`fails: ${mutation.name}`, async () => {
      const tree = repositoryWith(mutation.workflow());
      if (mutation.rename) {
        const from = join(tree, ".github", "workflows", "release.yml");
        cpSync(from, join(tree, ".github", "workflows", mutation.rename));
        rmSync(from);
      }
      const { run, checks } = await doctor(tree);
      assert.equal(run.code, 1, run.stdout + run.stderr);
      const check = checks[mutation.check];
      assert.equal(check?.status, "fail", JSON.stringify(checks, null, 1));
      assert.match(check.messages.join("\n"), mutation.message);
    });
  }
});
