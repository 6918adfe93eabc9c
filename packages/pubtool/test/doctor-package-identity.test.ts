import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { makeTree, removeTree, runPubtool } from "./helpers.js";

/**
 * Issue 51: a package is its registry and its name, whichever config names it. Monorepos that
 * publish each package from its own workflow with its own config (the hatch/hatchling shape)
 * pass; a second workflow that publishes a package is reported, inside a run and outside.
 */
const trees: string[] = [];
after(() => trees.forEach(removeTree));

interface StepRef {
  workflow: string;
  file: string;
  job: string;
  line: number;
  config: string | null;
}

interface JsonReport {
  ok: boolean;
  phases: { id: string; checks: { id: string; status: string; messages: string[] }[] }[];
  packages: { name: string; kind: string; steps: StepRef[] }[];
}

const ROOT_CONFIG = `[[package]]
name = "acme-app"
kind = "pyreg"
path = "app"
[package.trust_policy]
workflow = "release-app.yml"
environment = "pypi"

[[package]]
name = "acme-lib"
kind = "pyreg"
path = "lib"
[package.trust_policy]
workflow = "release-lib.yml"
environment = "pypi"
`;

const single = (name: string, path = ".") =>
  `[[package]]\nname = "${name}"\nkind = "pyreg"\npath = "${path}"\n`;

/** A release workflow whose one job runs `run` (line 13), with `extra` step keys after it. */
const release = (run: string, extra = "") => `name: release
on:
  push:
    tags: ["v*"]
permissions:
  id-token: write
  contents: write
jobs:
  publish:
    runs-on: ubuntu-latest
    environment: pypi
    steps:
      - run: ${run}
${extra}`;

const perConfig = {
  "pubtool.toml": ROOT_CONFIG,
  "pubtool-app.toml": single("acme-app", "app"),
  "pubtool-lib.toml": single("acme-lib", "lib"),
  ".github/workflows/release-app.yml": release("pubtool --config pubtool-app.toml publish"),
  ".github/workflows/release-lib.yml": release("pubtool --config pubtool-lib.toml publish"),
};

const perFolder = {
  "pubtool.toml": ROOT_CONFIG,
  "app/pubtool.toml": single("acme-app"),
  "lib/pubtool.toml": single("acme-lib"),
  ".github/workflows/release-app.yml": release(
    "pubtool publish",
    "        working-directory: app\n",
  ),
  ".github/workflows/release-lib.yml": `${release("pubtool publish")}    defaults:\n      run:\n        working-directory: lib\n`,
};

const withSecondWorkflow = {
  ...perConfig,
  ".github/workflows/release-all.yml": release("pubtool publish"),
};

function repo(files: Record<string, string>): string {
  const root = makeTree(files);
  trees.push(root);
  return root;
}

const inRun = (file: string) => ({
  GITHUB_ACTIONS: "true",
  GITHUB_WORKFLOW_REF: `acme/widget/.github/workflows/${file}@refs/tags/v1.0.0`,
});

async function doctorJson(root: string, env: Record<string, string> = {}): Promise<JsonReport> {
  const result = await runPubtool(["doctor", "--json"], { cwd: root, env });
  assert.equal(result.stderr, "");
  const report = JSON.parse(result.stdout) as JsonReport;
  assert.equal(result.code, report.ok ? 0 : 1);
  return report;
}

function check(report: JsonReport, phase: string, id: string) {
  const found = report.phases.find((p) => p.id === phase)?.checks.find((c) => c.id === id);
  assert.ok(found, `no check ${phase}/${id}`);
  return { status: found.status, text: found.messages.join("\n") };
}

function stepsOf(report: JsonReport, name: string): string[] {
  const entry = report.packages.find((candidate) => candidate.name === name);
  assert.ok(entry, `no package ${name} in ${JSON.stringify(report.packages)}`);
  return entry.steps.map((step) => `${step.workflow}:${step.job}:${step.line}:${step.config}`);
}

const RUNS: [string, Record<string, string>][] = [
  ["outside a run", {}],
  ["in the release-app.yml run", inRun("release-app.yml")],
  ["in the release-lib.yml run", inRun("release-lib.yml")],
];

describe(
  "doctor: a package is its registry and name, whichever config names it",
  {
    concurrency: true,
  },
  () => {
    for (const [when, env] of RUNS) {
      it(`(a) one --config per workflow passes ${when}`, async () => {
        const report = await doctorJson(repo(perConfig), env);
        const shown = JSON.stringify(report, null, 1);
        assert.equal(report.ok, true, shown);
        const workflow = check(report, "declared", "workflow-file");
        assert.equal(workflow.status, "pass");
        assert.match(
          workflow.text,
          /release-app\.yml: job publish publishes package acme-app as declared/,
        );
        assert.match(
          workflow.text,
          /release-lib\.yml: job publish publishes package acme-lib as declared/,
        );
        assert.equal(check(report, "declared", "environment").status, "pass");
        assert.deepEqual(stepsOf(report, "acme-app"), [
          "release-app.yml:publish:13:pubtool-app.toml",
        ]);
        assert.deepEqual(stepsOf(report, "acme-lib"), [
          "release-lib.yml:publish:13:pubtool-lib.toml",
        ]);
        const ref = check(report, "declared", "workflow-ref");
        if (env.GITHUB_ACTIONS === undefined) {
          assert.equal(ref.status, "neutral");
        } else {
          assert.equal(ref.status, "pass", shown);
          assert.match(
            ref.text,
            /which does not publish package acme-(app|lib) \(it reads pubtool-(app|lib)\.toml, which has no pyreg package acme-(app|lib)\)/,
          );
        }
      });

      it(`(b) working-directory with its own pubtool.toml passes ${when}`, async () => {
        const report = await doctorJson(repo(perFolder), env);
        assert.equal(report.ok, true, JSON.stringify(report, null, 1));
        assert.deepEqual(stepsOf(report, "acme-app"), [
          "release-app.yml:publish:13:app/pubtool.toml",
        ]);
        assert.deepEqual(stepsOf(report, "acme-lib"), [
          "release-lib.yml:publish:13:lib/pubtool.toml",
        ]);
      });

      it(`(c) a second workflow publishing through the root config is reported ${when}`, async () => {
        const report = await doctorJson(repo(withSecondWorkflow), env);
        assert.equal(report.ok, false);
        const workflow = check(report, "declared", "workflow-file");
        assert.equal(workflow.status, "fail");
        assert.match(
          workflow.text,
          /release-all\.yml: job publish also publishes package acme-lib, but pyreg matches release-all\.yml there, not the declared release-lib\.yml: the registry will reject that run's OIDC token/,
        );
        assert.match(
          workflow.text,
          /release-all\.yml: job publish also publishes package acme-app/,
        );
        assert.deepEqual(stepsOf(report, "acme-lib"), [
          "release-all.yml:publish:13:pubtool.toml",
          "release-lib.yml:publish:13:pubtool-lib.toml",
        ]);
      });
    }

    it("(c) inside the second workflow's run, the running workflow fails too", async () => {
      const report = await doctorJson(repo(withSecondWorkflow), inRun("release-all.yml"));
      const ref = check(report, "declared", "workflow-ref");
      assert.equal(ref.status, "fail");
      assert.match(
        ref.text,
        /package acme-lib \(pyreg\) declares it, but this run is release-all\.yml/,
      );
    });

    it("the text output lists, per package, the steps that publish it", async () => {
      const result = await runPubtool(["doctor"], { cwd: repo(perConfig) });
      assert.equal(result.code, 0, result.stdout);
      assert.match(
        result.stdout,
        /^published by:\n {2}acme-app \(pyreg\)\n {6}release-app\.yml: job publish, step at line 13, reads pubtool-app\.toml\n {2}acme-lib \(pyreg\)\n {6}release-lib\.yml: job publish, step at line 13, reads pubtool-lib\.toml\nnote: /m,
      );
    });

    it("a step whose config is missing or invalid is reported for that step, not a crash", async () => {
      const report = await doctorJson(
        repo({
          ...perConfig,
          "pubtool-lib.toml": "[[package]\nname =",
          ".github/workflows/release-app.yml": release(
            "pubtool --config pubtool-gone.toml publish",
          ),
        }),
      );
      assert.equal(report.ok, false);
      const workflow = check(report, "declared", "workflow-file");
      assert.match(
        workflow.text,
        /package acme-app \(pyreg\) declares it, but no job in it publishes package acme-app \(release-app\.yml: job publish: it reads pubtool-gone\.toml, which does not exist\)/,
      );
      assert.match(
        workflow.text,
        /no job in it publishes package acme-lib \(release-lib\.yml: job publish: it reads pubtool-lib\.toml, which cannot be used \(pubtool-lib\.toml: invalid TOML/,
      );
      assert.match(
        check(report, "local", "workflow").text,
        /pubtool-gone\.toml does not exist, so this step cannot publish/,
      );
    });

    it("a --package that names nothing in the step's config publishes nothing", async () => {
      const report = await doctorJson(
        repo({
          ...perConfig,
          ".github/workflows/release-app.yml": release(
            "pubtool --config pubtool-app.toml publish --package acme-lib",
          ),
        }),
      );
      assert.match(
        check(report, "declared", "workflow-file").text,
        /its --package acme-lib names no package of pubtool-app\.toml, so pubtool refuses to publish/,
      );
      assert.deepEqual(stepsOf(report, "acme-app"), []);
    });
  },
);
