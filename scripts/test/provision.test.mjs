// `npm test`'s first step (scripts/provision.mjs): which system packages it finds missing, and
// what it tells a user who cannot install them.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { installLine, missingNeeds, NEEDS } from "../provision.mjs";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

describe("npm test's provisioning", () => {
  test("a need with a command is met by the command, the others by their Debian package", () => {
    const probes = {
      hasCommand: (command) => command === "gcc",
      hasDebianPackage: (name) => name === "python3-yaml",
    };
    const missing = missingNeeds(NEEDS, probes).map((need) => need.package);
    assert.ok(!missing.includes("gcc"));
    assert.ok(!missing.includes("python3-yaml"));
    assert.ok(missing.includes("chromium"));
    assert.ok(missing.includes("python3-pytest"));
    assert.ok(missing.includes("cargo-web"), "no cargo: Debian's cargo-web");
  });

  test("the install line is the one a user types: sudo unless root", () => {
    assert.equal(
      installLine(["chromium", "python3-mypy"], false),
      "sudo apt-get update && sudo apt-get install -y --no-install-recommends chromium python3-mypy",
    );
    assert.equal(
      installLine(["zsh"], true),
      "apt-get update && apt-get install -y --no-install-recommends zsh",
    );
  });

  test("every package CI used to install itself is provisioned by npm test now", () => {
    const ci = readFileSync(join(REPO, ".ci", "run"), "utf8");
    assert.doesNotMatch(ci, /apt-get/, ".ci/run is only the README's commands");
    const packages = NEEDS.map((need) => need.package);
    for (const name of ["chromium", "python3-pytest", "python3-mypy", "libsqlite3-dev"]) {
      assert.ok(packages.includes(name), name);
    }
  });

  test("on this machine, after npm test provisioned it, nothing is missing", () => {
    const check = spawnSync(process.execPath, [join(REPO, "scripts", "provision.mjs"), "--check"], {
      encoding: "utf8",
    });
    assert.equal(check.status, 0, check.stderr);
    assert.equal(check.stderr, "");
  });
});
