import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { makeTree, removeTree, runPubtool } from "./helpers.js";

const trees: string[] = [];
after(() => trees.forEach(removeTree));

function repo(files: Record<string, string>): string {
  const root = makeTree(files);
  trees.push(root);
  return root;
}

const GOOD = `name: release
on:
  push:
    tags: ["v*"]
permissions:
  id-token: write
  contents: write
jobs:
  publish:
    runs-on: ubuntu-latest
    environment: release
    steps:
      - uses: actions/checkout@v4
      - run: npx pubtool publish
`;

interface JsonReport {
  ok: boolean;
  phases: {
    id: string;
    status: string;
    checks: { id: string; status: string; messages: string[] }[];
  }[];
  packages: {
    name: string;
    kind: string;
    registry: string | null;
    steps: { workflow: string; file: string; job: string; line: number; config: string | null }[];
    undetermined: { job: string; why: string }[];
  }[];
}

async function doctorJson(
  root: string,
  env: Record<string, string | undefined> = {},
): Promise<JsonReport> {
  const result = await runPubtool(["doctor", "--json"], { cwd: root, env });
  const report = JSON.parse(result.stdout) as JsonReport;
  assert.equal(result.code, report.ok ? 0 : 1);
  return report;
}

function check(report: JsonReport, phase: string, id: string) {
  const found = report.phases.find((p) => p.id === phase)?.checks.find((c) => c.id === id);
  assert.ok(found, `no check ${phase}/${id}`);
  return found;
}

describe("doctor: output shape", { concurrency: true }, () => {
  it("prints a heading per phase, marks, indented trust-policy messages and the closing note", async () => {
    const root = repo({ ".github/workflows/release.yml": GOOD });
    const result = await runPubtool(["doctor"], { cwd: root });
    assert.equal(result.code, 0, result.stderr);
    const lines = result.stdout.split("\n");
    assert.equal(lines[0], "trust policy (local):");
    assert.equal(lines[1], "  ✓ publishing workflow");
    assert.equal(
      lines[2],
      "      trust-policy: release.yml: job publish runs `pubtool publish` (line 14)",
    );
    assert.ok(lines.includes("trust policy (declared):"));
    assert.ok(lines.includes("  - not declared: no package has a [package.trust_policy] block"));
    assert.ok(lines.includes("trust policy (rustreg registry):"));
    assert.ok(lines.includes("  - skipped: RUSTREG_DOCTOR_TOKEN is not set"));
    assert.match(
      result.stdout,
      /^note: workflow and environment names are not diffed against pyreg or jsreg registrations/m,
    );
    assert.match(result.stdout, /doctor: ok\n$/);
  });

  it("exits 1 with ✗ marks when a check fails", async () => {
    const root = repo({
      ".github/workflows/release.yml": GOOD.replace("    environment: release\n", ""),
    });
    const result = await runPubtool(["doctor"], { cwd: root });
    assert.equal(result.code, 1);
    assert.match(result.stdout, /^ {2}✗ environment$/m);
    assert.match(
      result.stdout,
      /^ {6}trust-policy: release\.yml: job publish has no environment: key/m,
    );
    assert.match(result.stdout, /doctor: 1 check failed\n$/);
  });
});

describe("doctor phase 1: finding the publishing step", { concurrency: true }, () => {
  it("no workflows directory", async () => {
    const report = await doctorJson(repo({ "README.md": "x" }));
    const found = check(report, "local", "workflow");
    assert.equal(found.status, "fail");
    assert.match(found.messages.join("\n"), /no \.github\/workflows directory/);
    assert.equal(check(report, "local", "permissions").status, "neutral");
  });

  it("a workflow that does not publish", async () => {
    const report = await doctorJson(
      repo({
        ".github/workflows/ci.yml":
          "on: push\njobs:\n  test:\n    runs-on: x\n    steps:\n      - run: npm test\n",
      }),
    );
    assert.match(
      check(report, "local", "workflow").messages.join(),
      /no workflow in \.github\/workflows runs `pubtool publish`/,
    );
  });

  it("multi-line run: | blocks and .yaml files", async () => {
    const wf = GOOD.replace(
      "      - run: npx pubtool publish\n",
      "      - run: |\n          npm ci\n          npx --yes pubtool@1 publish --dry-run=false\n",
    );
    const report = await doctorJson(repo({ ".github/workflows/release.yaml": wf }));
    assert.equal(report.ok, true);
    assert.match(
      check(report, "local", "workflow").messages[0] ?? "",
      /^trust-policy: release\.yaml: job publish runs/,
    );
  });

  it("the tool's own action with command: publish", async () => {
    const wf = GOOD.replace(
      "      - run: npx pubtool publish\n",
      "      - uses: acme/pubtool@v1\n        with:\n          command: publish\n",
    );
    const report = await doctorJson(repo({ ".github/workflows/release.yml": wf }));
    assert.equal(report.ok, true);
    assert.match(
      check(report, "local", "workflow").messages[0] ?? "",
      /uses the pubtool action \(command: publish\)/,
    );
  });

  it("the action with another command is not a publishing step", async () => {
    const wf = GOOD.replace(
      "      - run: npx pubtool publish\n",
      "      - uses: acme/pubtool/action@v1\n        with:\n          command: doctor\n",
    );
    const report = await doctorJson(repo({ ".github/workflows/release.yml": wf }));
    assert.equal(check(report, "local", "workflow").status, "fail");
  });

  it("a commented-out step alone is reported as commented out, not as no workflow", async () => {
    const wf = GOOD.replace(
      "      - run: npx pubtool publish\n",
      "      # - run: npx pubtool publish\n      - run: echo skipped\n",
    );
    const report = await doctorJson(repo({ ".github/workflows/release.yml": wf }));
    const found = check(report, "local", "workflow");
    assert.equal(found.status, "fail");
    assert.match(
      found.messages.join(),
      /release\.yml: job publish: the only publishing step \(line 14\) is commented out/,
    );
    assert.doesNotMatch(found.messages.join(), /no workflow/);
    const active = check(report, "local", "step-active");
    assert.equal(active.status, "fail");
    assert.match(active.messages.join(), /publishing step at line 14 is commented out/);
  });

  it("a commented-out action step and a shell-commented run line", async () => {
    const action = GOOD.replace(
      "      - run: npx pubtool publish\n",
      "      # - uses: acme/pubtool@v1\n      #   with:\n      #     command: publish\n",
    );
    const shell = GOOD.replace(
      "      - run: npx pubtool publish\n",
      "      - run: |\n          # pubtool publish\n          echo later\n",
    );
    const [a, b] = await Promise.all([
      doctorJson(repo({ ".github/workflows/release.yml": action })),
      doctorJson(repo({ ".github/workflows/release.yml": shell })),
    ]);
    assert.equal(check(a, "local", "step-active").status, "fail");
    assert.equal(check(b, "local", "step-active").status, "fail");
  });

  it("a commented-out step next to an active one is mentioned, not failed", async () => {
    const wf = GOOD.replace(
      "      - run: npx pubtool publish\n",
      "      # - run: pubtool publish --old\n      - run: npx pubtool publish\n",
    );
    const report = await doctorJson(repo({ ".github/workflows/release.yml": wf }));
    const active = check(report, "local", "step-active");
    assert.equal(active.status, "pass");
    assert.match(
      active.messages.join(),
      /a further publishing step at line 14 is commented out \(the workflow also has an active one\)/,
    );
  });

  it("invalid YAML is named", async () => {
    const report = await doctorJson(
      repo({ ".github/workflows/bad.yml": "jobs: [\n", ".github/workflows/release.yml": GOOD }),
    );
    const messages = check(report, "local", "workflow").messages;
    const bad = messages.find((message) => message.includes("bad.yml")) ?? "";
    // Where, then what; no dangling colon where the parser would show its source excerpt.
    assert.match(
      bad,
      /^trust-policy: bad\.yml: invalid YAML at line 2, column 1: Flow sequence in block collection must be sufficiently indented and end with a \]$/,
    );
  });
});

describe("doctor phase 1: permissions and environment", { concurrency: true }, () => {
  const cases: { name: string; workflow: string; pass: boolean; message: RegExp }[] = [
    {
      name: "workflow-level grants pass",
      workflow: GOOD,
      pass: true,
      message: /has id-token: write and contents: write \(workflow-level permissions\)/,
    },
    {
      name: "job-level permissions replace workflow-level ones",
      workflow: GOOD.replace(
        "    environment: release\n",
        "    environment: release\n    permissions:\n      contents: write\n",
      ),
      pass: false,
      message:
        /lacks id-token: write \(job-level permissions\); job-level permissions replace the workflow-level ones entirely/,
    },
    {
      name: "write-all grants all",
      workflow: GOOD.replace(
        "permissions:\n  id-token: write\n  contents: write\n",
        "permissions: write-all\n",
      ),
      pass: true,
      message: /workflow-level permissions/,
    },
    {
      name: "read-all is not enough",
      workflow: GOOD.replace(
        "permissions:\n  id-token: write\n  contents: write\n",
        "permissions: read-all\n",
      ),
      pass: false,
      message: /lacks id-token: write and contents: write/,
    },
    {
      name: "no permissions key means the repository default, which is not enough",
      workflow: GOOD.replace("permissions:\n  id-token: write\n  contents: write\n", ""),
      pass: false,
      message: /has no permissions key; the repository default applies, which is not enough/,
    },
    {
      name: "contents: read is not enough for doctor",
      workflow: GOOD.replace("  contents: write\n", "  contents: read\n"),
      pass: false,
      message: /lacks contents: write/,
    },
  ];
  for (const testCase of cases) {
    it(testCase.name, async () => {
      const report = await doctorJson(repo({ ".github/workflows/release.yml": testCase.workflow }));
      const permissions = check(report, "local", "permissions");
      assert.equal(permissions.status, testCase.pass ? "pass" : "fail");
      assert.match(permissions.messages.join("\n"), testCase.message);
    });
  }

  it("environment as {name: ...}", async () => {
    const wf = GOOD.replace(
      "    environment: release\n",
      "    environment:\n      name: production\n      url: https://example.com\n",
    );
    const report = await doctorJson(repo({ ".github/workflows/release.yml": wf }));
    assert.match(
      check(report, "local", "environment").messages.join(),
      /uses environment production/,
    );
  });

  it("YAML anchors and merge keys are followed", async () => {
    const wf = `on: push
jobs:
  build: &base
    runs-on: ubuntu-latest
    environment: &env release
    permissions: &perms
      id-token: write
      contents: write
    steps:
      - run: echo build
  publish:
    <<: *base
    needs: build
    steps:
      - run: pubtool publish
  other:
    runs-on: ubuntu-latest
    environment: *env
    permissions: *perms
    steps:
      - run: echo other
`;
    const report = await doctorJson(repo({ ".github/workflows/release.yml": wf }));
    assert.equal(report.ok, true, JSON.stringify(report, null, 1));
    assert.match(
      check(report, "local", "environment").messages.join(),
      /job publish uses environment release/,
    );
  });

  it("a reusable workflow inherits what the caller grants", async () => {
    const caller = `on: push
jobs:
  release:
    permissions:
      id-token: write
      contents: write
    uses: ./.github/workflows/publish-reusable.yml
`;
    const called = `on:
  workflow_call:
jobs:
  publish:
    runs-on: ubuntu-latest
    environment:
      name: release
    steps:
      - run: pubtool publish
`;
    const report = await doctorJson(
      repo({
        ".github/workflows/release.yml": caller,
        ".github/workflows/publish-reusable.yml": called,
      }),
    );
    assert.equal(report.ok, true, JSON.stringify(report, null, 1));
    const permissions = check(report, "local", "permissions");
    assert.match(
      permissions.messages.join(),
      /release\.yml: job release \(calls publish-reusable\.yml: job publish\) has id-token: write and contents: write \(inherited from the caller/,
    );
  });

  it("a reusable workflow cannot raise what the caller grants", async () => {
    const caller = "on: push\njobs:\n  release:\n    uses: ./.github/workflows/called.yml\n";
    const called =
      "on: workflow_call\npermissions: write-all\njobs:\n  publish:\n    environment: release\n    runs-on: x\n    steps:\n      - run: pubtool publish\n";
    const report = await doctorJson(
      repo({ ".github/workflows/release.yml": caller, ".github/workflows/called.yml": called }),
    );
    const permissions = check(report, "local", "permissions");
    assert.equal(permissions.status, "fail");
    assert.match(permissions.messages.join(), /repository default/);
  });
});

describe("doctor phase 2: declarations", { concurrency: true }, () => {
  const config = (policy: string) =>
    `[[package]]\nname = "demo"\nkind = "rustreg"\npath = "crate"\n\n[package.trust_policy]\n${policy}\n`;

  it("matching declarations pass", async () => {
    const report = await doctorJson(
      repo({
        ".github/workflows/release.yml": GOOD,
        "pubtool.toml": config('workflow = "release.yml"\nenvironment = "release"'),
      }),
    );
    assert.equal(report.ok, true);
    assert.equal(check(report, "declared", "workflow-file").status, "pass");
    assert.equal(check(report, "declared", "environment").status, "pass");
    assert.equal(check(report, "declared", "workflow-ref").status, "neutral");
  });

  it("a declared workflow that does not exist", async () => {
    const report = await doctorJson(
      repo({
        ".github/workflows/release.yaml": GOOD,
        "pubtool.toml": config('workflow = "release.yml"'),
      }),
    );
    const workflow = check(report, "declared", "workflow-file");
    assert.equal(workflow.status, "fail");
    assert.match(
      workflow.messages.join(),
      /\.github\/workflows\/release\.yml does not exist \(there is release\.yaml\)/,
    );
  });

  it("a declared workflow that does not publish", async () => {
    const report = await doctorJson(
      repo({
        ".github/workflows/release.yml": GOOD,
        ".github/workflows/ci.yml":
          "on: push\njobs:\n  t:\n    runs-on: x\n    steps:\n      - run: npm test\n",
        "pubtool.toml": config('workflow = "ci.yml"'),
      }),
    );
    assert.match(
      check(report, "declared", "workflow-file").messages.join(),
      /no job in it publishes/,
    );
  });

  it("a declared environment that differs from the job's", async () => {
    const report = await doctorJson(
      repo({
        ".github/workflows/release.yml": GOOD,
        "pubtool.toml": config('workflow = "release.yml"\nenvironment = "production"'),
      }),
    );
    const environment = check(report, "declared", "environment");
    assert.equal(environment.status, "fail");
    assert.match(
      environment.messages.join(),
      /job publish uses environment release, but package demo declares production/,
    );
  });

  it("inside a workflow run, GITHUB_WORKFLOW_REF must name the declared workflow", async () => {
    const root = repo({
      ".github/workflows/release.yml": GOOD,
      ".github/workflows/other.yml": GOOD,
      ".github/workflows/ci.yml":
        "on: pull_request\njobs:\n  t:\n    runs-on: x\n    steps:\n      - run: pubtool doctor\n",
      "pubtool.toml": config('workflow = "release.yml"'),
    });
    const ref = (file: string) => `acme/demo/.github/workflows/${file}@refs/tags/v1.0.0`;
    const [wrong, right, outside, prCheck] = await Promise.all([
      doctorJson(root, { GITHUB_ACTIONS: "true", GITHUB_WORKFLOW_REF: ref("other.yml") }),
      doctorJson(root, { GITHUB_ACTIONS: "true", GITHUB_WORKFLOW_REF: ref("release.yml") }),
      doctorJson(root, { GITHUB_WORKFLOW_REF: ref("other.yml") }),
      doctorJson(root, { GITHUB_ACTIONS: "true", GITHUB_WORKFLOW_REF: ref("ci.yml") }),
    ]);
    // A doctor run in a workflow that does not publish (a PR check) is neutral about it.
    assert.equal(check(prCheck, "declared", "workflow-ref").status, "neutral");
    assert.match(check(prCheck, "declared", "workflow-ref").messages.join(), /does not publish/);
    assert.equal(check(wrong, "declared", "workflow-ref").status, "fail");
    assert.match(
      check(wrong, "declared", "workflow-ref").messages.join(),
      /this run is other\.yml \(GITHUB_WORKFLOW_REF\)/,
    );
    assert.equal(check(right, "declared", "workflow-ref").status, "pass");
    assert.equal(check(outside, "declared", "workflow-ref").status, "neutral");
  });

  it("no declarations: one neutral line, no failure", async () => {
    const report = await doctorJson(
      repo({
        ".github/workflows/release.yml": GOOD,
        "pubtool.toml": '[[package]]\nname = "demo"\nkind = "jsreg"\n',
      }),
    );
    assert.equal(report.ok, true);
    const phase = report.phases.find((p) => p.id === "declared");
    assert.equal(phase?.status, "neutral");
    assert.equal(phase?.checks.length, 1);
  });
});

describe("doctor from a subfolder", () => {
  it("inside git, finds the repository root and the nearest pubtool.toml above", async () => {
    const root = repo({
      ".github/workflows/release.yml": GOOD,
      "pubtool.toml":
        '[[package]]\nname = "demo"\nkind = "jsreg"\npath = "js"\n[package.trust_policy]\nworkflow = "release.yml"\nenvironment = "release"\n',
      "js/src/index.js": "export {};\n",
    });
    execFileSync("git", ["init", "-q"], { cwd: root });
    const report = await doctorJson(join(root, "js", "src"));
    assert.equal(report.ok, true, JSON.stringify(report, null, 1));
    assert.equal(check(report, "local", "workflow").status, "pass");
    assert.equal(check(report, "declared", "workflow-file").status, "pass");
  });
});

describe("doctor: reusable workflow references", () => {
  it("a same-repository call to a file that does not exist fails and names it", async () => {
    const report = await doctorJson(
      repo({
        ".github/workflows/release.yml":
          "on: push\njobs:\n  release:\n    uses: $/.github/workflows/publish.yml@main\n",
      }),
    );
    const workflow = check(report, "local", "workflow");
    assert.equal(workflow.status, "fail");
    assert.match(
      workflow.messages.join(),
      /release\.yml: job release calls \$\/\.github\/workflows\/publish\.yml@main, but \.github\/workflows\/publish\.yml does not exist/,
    );
  });
});

describe("doctor: which package a publishing step publishes", { concurrency: true }, () => {
  const CONFIG = `[[package]]
name = "core"
kind = "jsreg"
path = "packages/core"
[package.trust_policy]
workflow = "release.yml"
environment = "release"

[[package]]
name = "cli"
kind = "jsreg"
path = "packages/cli"
[package.trust_policy]
workflow = "release.yml"
environment = "release"
`;
  const job = (name: string, environment: string, steps: string, extra = "") => `  ${name}:
    runs-on: ubuntu-latest
    environment: ${environment}${extra}
    steps:
${steps}`;
  const workflow = (jobs: string) =>
    `on: push\npermissions:\n  id-token: write\n  contents: write\njobs:\n${jobs}`;

  it("working-directory, defaults.run and cd find the nearest pubtool.toml, as pubtool does", async () => {
    const report = await doctorJson(
      repo({
        "pubtool.toml": CONFIG,
        "packages/cli/pubtool.toml": '[[package]]\nname = "cli"\nkind = "jsreg"\n',
        ".github/workflows/release.yml": workflow(
          job(
            "root",
            "release",
            "      - run: npx pubtool publish --package core\n        working-directory: packages\n",
          ) +
            job(
              "sub",
              "staging",
              "      - run: npx pubtool publish\n",
              "\n    defaults:\n      run:\n        working-directory: packages/cli",
            ) +
            job(
              "cd",
              "other",
              "      - run: |\n          cd packages/cli/src\n          npx pubtool publish\n",
            ),
        ),
      }),
    );
    // packages/cli/pubtool.toml names cli for jsreg, so jobs sub and cd publish cli (a package
    // is its registry and name, whichever config names it); only root publishes core.
    const workflowFile = check(report, "declared", "workflow-file");
    assert.equal(workflowFile.status, "pass", workflowFile.messages.join("\n"));
    assert.match(workflowFile.messages.join("\n"), /job root publishes package core as declared/);
    assert.match(workflowFile.messages.join("\n"), /job sub publishes package cli as declared/);
    assert.match(workflowFile.messages.join("\n"), /job cd publishes package cli as declared/);
    assert.doesNotMatch(workflowFile.messages.join("\n"), /job root publishes package cli/);
    const environment = check(report, "declared", "environment");
    assert.equal(environment.status, "fail");
    assert.match(environment.messages.join("\n"), /job root uses environment release as declared/);
    assert.match(
      environment.messages.join("\n"),
      /job sub uses environment staging, but package cli declares release/,
    );
    assert.match(
      environment.messages.join("\n"),
      /job cd uses environment other, but package cli declares release/,
    );
    const cli = report.packages.find((entry) => entry.name === "cli");
    assert.deepEqual(
      cli?.steps.map((step) => [step.job, step.config]),
      [
        ["sub", "packages/cli/pubtool.toml"],
        ["cd", "packages/cli/pubtool.toml"],
      ],
    );
    const found = check(report, "local", "workflow").messages.join("\n");
    assert.match(
      found,
      /job sub runs `pubtool publish` .*publishes every package of packages\/cli\/pubtool\.toml/,
    );
  });

  it("the pubtool action's args and a --config relative to the step's folder are read", async () => {
    const report = await doctorJson(
      repo({
        "pubtool.toml": CONFIG,
        "tools/pubtool.toml": CONFIG,
        ".github/workflows/release.yml": workflow(
          job(
            "core",
            "release",
            "      - uses: acme/pubtool@v1\n        with:\n          command: publish\n          args: --package=core\n",
          ) +
            job(
              "cli",
              "release",
              "      - run: npx pubtool -c ../pubtool.toml publish --package cli\n        working-directory: tools\n",
            ),
        ),
      }),
    );
    const workflowFile = check(report, "declared", "workflow-file");
    assert.equal(workflowFile.status, "pass", workflowFile.messages.join("\n"));
    assert.match(workflowFile.messages.join("\n"), /job core publishes package core as declared/);
    assert.match(workflowFile.messages.join("\n"), /job cli publishes package cli as declared/);
    assert.doesNotMatch(workflowFile.messages.join("\n"), /job core publishes package cli/);
  });

  it("a --package or folder from an expression is named as unknown, not guessed", async () => {
    const report = await doctorJson(
      repo({
        "pubtool.toml": CONFIG,
        ".github/workflows/release.yml": workflow(
          job(
            "publish",
            "release",
            "      - run: npx pubtool publish --package ${{ inputs.package }}\n",
          ),
        ),
      }),
    );
    const workflowFile = check(report, "declared", "workflow-file");
    assert.equal(workflowFile.status, "neutral", workflowFile.messages.join("\n"));
    assert.match(
      workflowFile.messages.join("\n"),
      /release\.yml: job publish: cannot tell locally whether it publishes package core \(its --package is \$\{\{ inputs\.package \}\}\); not judged/,
    );
    assert.match(
      check(report, "local", "workflow").messages.join("\n"),
      /what it publishes cannot be known locally: its --package is \$\{\{ inputs\.package \}\}/,
    );
    assert.equal(check(report, "declared", "environment").status, "neutral");
  });
});
