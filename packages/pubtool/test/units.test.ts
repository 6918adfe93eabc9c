import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { workflowFromRef } from "../src/doctor/declared-phase.js";
import { combinedStatus, neutralPhase } from "../src/doctor/report.js";
import { nextLink } from "../src/github/api.js";
import { parseCoreMetadata } from "../src/publish/dist-metadata.js";
import { SecretMasker } from "../src/publish/secret-mask.js";
import { repositoryFromRemote } from "../src/repository.js";
import { registryOfSecret, toolVariable } from "../src/token/credential-names.js";
import { classifyStep, findCommentedSteps } from "../src/workflows/publish-step.js";
import {
  levelOf,
  resolveCalledPermissions,
  resolvePermissions,
} from "../src/workflows/permissions.js";

describe("pure helpers", () => {
  it("repositoryFromRemote reads https, ssh and scp-like remotes", () => {
    assert.equal(repositoryFromRemote("https://github.com/acme/demo.git"), "acme/demo");
    assert.equal(repositoryFromRemote("https://token@github.com/acme/demo"), "acme/demo");
    assert.equal(repositoryFromRemote("git@github.com:acme/demo.git\n"), "acme/demo");
    assert.equal(repositoryFromRemote("ssh://git@github.com/acme/demo.git"), "acme/demo");
    assert.equal(repositoryFromRemote("/srv/git/demo"), null);
  });

  it("nextLink follows rel=next only", () => {
    assert.equal(
      nextLink('<https://x/a?page=2>; rel="next", <https://x/a?page=5>; rel="last"'),
      "https://x/a?page=2",
    );
    assert.equal(nextLink('<https://x/a?page=1>; rel="prev"'), null);
    assert.equal(nextLink(null), null);
  });

  it("workflowFromRef takes the bare file name", () => {
    assert.equal(
      workflowFromRef("acme/demo/.github/workflows/release.yml@refs/tags/v1"),
      "release.yml",
    );
    assert.equal(workflowFromRef("garbage"), null);
  });

  it("registryOfSecret: exact fallback names and registry prefixes", () => {
    assert.equal(registryOfSecret("PYREG_API_TOKEN"), "pyreg");
    assert.equal(registryOfSecret("pypi_token"), "pyreg");
    assert.equal(registryOfSecret("CARGO_REGISTRY_TOKEN"), "rustreg");
    assert.equal(registryOfSecret("NPM_TOKEN"), "jsreg");
    assert.equal(registryOfSecret("SLACK_WEBHOOK"), null);
  });

  it("toolVariable: names and patterns, with the registry whose tool reads them", () => {
    assert.deepEqual(toolVariable("CARGO_REGISTRY_TOKEN"), {
      name: "CARGO_REGISTRY_TOKEN",
      registry: "rustreg",
      purpose: "read by cargo publish",
    });
    assert.equal(toolVariable("CARGO_REGISTRIES_MY_REGISTRY_TOKEN")?.registry, "rustreg");
    assert.equal(toolVariable("POETRY_PYPI_TOKEN_PROD")?.registry, "pyreg");
    assert.equal(toolVariable("PDM_PUBLISH_PASSWORD")?.purpose, "read by pdm publish");
    assert.equal(toolVariable("npm_config_//registry.example/:_authToken")?.registry, "jsreg");
    assert.equal(toolVariable("YARN_NPM_AUTH_TOKEN")?.registry, "jsreg");
    assert.equal(toolVariable("RUST_REGISTRY_TOKEN"), undefined);
  });

  it("combinedStatus: fail over pass over neutral; nothing is neutral", () => {
    assert.equal(combinedStatus([]), "neutral");
    assert.equal(combinedStatus(["neutral", "neutral"]), "neutral");
    assert.equal(combinedStatus(["neutral", "pass"]), "pass");
    assert.equal(combinedStatus(["pass", "fail", "neutral"]), "fail");
  });

  it("neutralPhase: one neutral check under the phase's id", () => {
    assert.deepEqual(neutralPhase("registry", "heading", "why"), {
      id: "registry",
      heading: "heading",
      status: "neutral",
      checks: [{ id: "registry", label: "why", status: "neutral", messages: [] }],
    });
  });

  it("permissions: levels, replacement, default, inheritance", () => {
    assert.equal(levelOf("write-all", "id-token"), "write");
    assert.equal(levelOf("read-all", "id-token"), "none");
    assert.equal(levelOf({}, "contents"), "none");
    const replaced = resolvePermissions(
      { "id-token": "write", contents: "write" },
      { contents: "write" },
    );
    assert.equal(replaced.levels["id-token"], "none");
    assert.equal(replaced.replacedWorkflowGrant, true);
    assert.equal(resolvePermissions(undefined, undefined).isDefault, true);
    const caller = resolvePermissions(undefined, "write-all");
    const lowered = resolveCalledPermissions(caller, undefined, {
      contents: "read",
      "id-token": "write",
    });
    assert.deepEqual(lowered.levels, { "id-token": "write", contents: "read" });
  });

  it("classifyStep and findCommentedSteps", () => {
    assert.deepEqual(classifyStep({ run: "set -e\nnpx -y pubtool publish" }), {
      kind: "run",
      state: "active",
    });
    assert.deepEqual(classifyStep({ run: "# pubtool publish\necho" }), {
      kind: "run",
      state: "commented",
    });
    assert.equal(classifyStep({ run: "pubtool doctor" }), null);
    assert.equal(classifyStep({ run: "mypubtool publish" }), null);
    assert.deepEqual(classifyStep({ uses: "acme/pubtool@v1", with: { command: "publish" } }), {
      kind: "action",
      state: "active",
    });
    assert.equal(classifyStep({ uses: "acme/not-pubtool@v1", with: { command: "publish" } }), null);
    assert.deepEqual(
      findCommentedSteps(
        "a: 1\n# - run: pubtool publish\n#- uses: o/pubtool@v2\n#  with:\n#    command: publish\n",
      ),
      [2, 3],
    );
  });
});

describe("SecretMasker", () => {
  it("masks secrets split at every possible chunk boundary (seeded random splits)", () => {
    let seed = 11;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const secrets = ["cio_0123456789abcdef", "pypi-AgEIcHlwaS5vcmc", "tok"];
    for (let round = 0; round < 500; round++) {
      const parts: string[] = [];
      for (let i = 0; i < 6; i++) {
        parts.push(random() < 0.5 ? (secrets[Math.floor(random() * 3)] ?? "") : "ab\nc ");
      }
      const text = parts.join(random() < 0.5 ? "" : "\n");
      const masker = new SecretMasker(secrets);
      let out = "";
      let at = 0;
      while (at < text.length) {
        const size = 1 + Math.floor(random() * 7);
        out += masker.write(Buffer.from(text.slice(at, at + size)));
        at += size;
      }
      out += masker.end();
      assert.equal(
        out,
        text
          .split("cio_0123456789abcdef")
          .join("***")
          .split("pypi-AgEIcHlwaS5vcmc")
          .join("***")
          .split("tok")
          .join("***"),
      );
    }
  });

  it("keeps a multi-byte character split across chunks intact", () => {
    const masker = new SecretMasker(["secret"]);
    const bytes = Buffer.from("é secret\n");
    assert.equal(
      masker.write(bytes.subarray(0, 1)) + masker.write(bytes.subarray(1)) + masker.end(),
      "é ***\n",
    );
  });
});

describe("publishing-step detection", () => {
  const runs = (run: string) => classifyStep({ run })?.state ?? null;
  it("finds every way of invoking pubtool publish, and only those", () => {
    for (const line of [
      "pubtool publish",
      "npx pubtool publish",
      "npx --yes pubtool@1.2.0 publish",
      "npm exec pubtool -- publish",
      "npm exec -- pubtool publish",
      "./node_modules/.bin/pubtool publish",
      "node_modules/.bin/pubtool --config release/pubtool.toml publish",
      "pubtool -c x.toml publish",
      "pnpm exec pubtool publish",
      "yarn pubtool publish",
      "bunx pubtool publish",
      "FOO=1 pubtool publish",
      "make build && pubtool publish",
      "npx pubtool \\\n  --config x \\\n  publish",
    ]) {
      assert.equal(runs(line), "active", line);
    }
    for (const line of [
      "pubtool publish --dry-run",
      "npx pubtool --dry-run publish",
      "echo pubtool publish",
      'echo "run pubtool publish later"',
      "pubtool doctor",
      "pubtool preflight",
      "npm publish",
      "# we call pubtool publish from release.yml",
    ]) {
      assert.notEqual(runs(line), "active", line);
    }
    assert.equal(runs("# pubtool publish"), "commented");
    assert.equal(runs("# Do not run pubtool publish from a fork"), null);
    assert.equal(classifyStep({ run: "pubtool publish", if: false }), null);
    assert.equal(classifyStep({ run: "pubtool publish", if: "${{ false }}" }), null);
  });

  it("counts only commented lines that would themselves publish", () => {
    const text = [
      "jobs:",
      "  a:",
      "    steps:",
      "      # - run: npx pubtool publish",
      "      # Then pubtool publish uploads everything",
      "      # - run: pubtool publish --dry-run",
      "      #   run: |",
      "      #     pubtool publish",
    ].join("\n");
    assert.deepEqual(findCommentedSteps(text), [4, 8]);
  });
});

describe("core metadata", () => {
  it("reads headers, repeated fields, indented continuations and the body description", () => {
    const old = parseCoreMetadata(
      "Metadata-Version: 1.2\r\nName: old\r\nVersion: 0.1\r\nDescription: first line\r\n        |second line\r\nClassifier: A\r\nClassifier: B\r\nHome-page: https://x\r\n",
    );
    assert.deepEqual(old, [
      ["metadata_version", "1.2"],
      ["name", "old"],
      ["version", "0.1"],
      ["description", "first line\nsecond line"],
      ["classifiers", "A"],
      ["classifiers", "B"],
      ["home_page", "https://x"],
    ]);
    const modern = parseCoreMetadata("Name: n\nVersion: 1\nX-Unknown: y\n\nBody text\n\n\n");
    assert.deepEqual(modern, [
      ["name", "n"],
      ["version", "1"],
      ["description", "Body text\n"],
    ]);
  });
});

describe("publishing steps through package scripts", () => {
  it("follows npm/pnpm/yarn run into the root package.json scripts", () => {
    const scripts = {
      release: "npm run build && pubtool publish",
      check: "pubtool publish --dry-run",
      build: "tsc",
    };
    for (const run of ["npm run release", "pnpm release", "yarn run release", "pnpm run release"]) {
      assert.equal(classifyStep({ run }, scripts)?.state, "active", run);
    }
    assert.equal(classifyStep({ run: "npm run check" }, scripts), null);
    assert.equal(classifyStep({ run: "npm run build" }, scripts), null);
    assert.equal(classifyStep({ run: "npm run release" }), null);
    const loop = { a: "npm run b", b: "npm run a" };
    assert.equal(classifyStep({ run: "npm run a" }, loop), null);
  });
});
