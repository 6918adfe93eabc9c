import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { workflowFromRef } from "../src/doctor/declared-phase.js";
import { nextLink } from "../src/github/api.js";
import { repositoryFromRemote } from "../src/repository.js";
import { registryOfSecret } from "../src/token/credential-names.js";
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
