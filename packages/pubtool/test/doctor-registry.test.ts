import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  type FakeServer,
  makeTree,
  refusedUrl,
  removeTree,
  runPubtool,
  sendJson,
  startServer,
} from "./helpers.js";

const WORKFLOW = `on: push
permissions:
  id-token: write
  contents: write
jobs:
  publish:
    runs-on: ubuntu-latest
    environment: release
    steps:
      - run: pubtool publish
`;

const CONFIG = `[[package]]
name = "%CRATE%"
kind = "rustreg"
path = "other"
[package.trust_policy]
workflow = "release.yml"
environment = "release"
repository = "acme/demo"

[[package]]
name = "py-demo"
kind = "pyreg"
[package.trust_policy]
workflow = "release.yml"
`;

const registration = (overrides: Record<string, unknown> = {}) => ({
  id: 1,
  crate: "x",
  repository_owner: "acme",
  repository_name: "demo",
  workflow_filename: "release.yml",
  environment: "release",
  ...overrides,
});

let registry: FakeServer;
const trees: string[] = [];

before(async () => {
  registry = await startServer((request, response) => {
    const url = new URL(request.url, "http://x");
    if (url.pathname !== "/api/v1/trusted_publishing/github_configs")
      return sendJson(response, 404, {});
    if (request.headers.authorization !== "doctor-token")
      return sendJson(response, 401, { errors: [{ detail: "bad token" }] });
    const crate = url.searchParams.get("crate");
    switch (crate) {
      case "good-crate":
        return sendJson(response, 200, {
          github_configs: [registration({ workflow_filename: "old.yml" }), registration()],
        });
      case "renamed-env":
        return sendJson(response, 200, {
          github_configs: [registration({ environment: "production" })],
        });
      case "other-repo":
        return sendJson(response, 200, {
          github_configs: [
            registration({ repository_name: "fork", workflow_filename: "publish.yml" }),
          ],
        });
      case "any-environment":
        return sendJson(response, 200, { github_configs: [registration({ environment: null })] });
      case "rate-limited":
        return sendJson(response, 429, { errors: [{ detail: "too many requests" }] });
      case "garbled":
        response.writeHead(200, { "content-type": "text/html" });
        return void response.end("<html>maintenance</html>");
      case "forbidden":
        return sendJson(response, 403, {
          errors: [
            { detail: "this token does not have the required permissions to perform this action" },
          ],
        });
      case "echoes-token":
        // A registry (or a proxy in front of it) that quotes the credential it was sent.
        return sendJson(response, 403, {
          errors: [{ detail: `token ${request.headers.authorization ?? ""} lacks the scope` }],
        });
      case "bad-request":
        return sendJson(response, 400, { errors: [{ detail: "invalid crate name" }] });
      case "none-registered":
        return sendJson(response, 200, { github_configs: [] });
      case "broken":
        return sendJson(response, 500, { errors: [] });
      case "slow":
        return void setTimeout(() => sendJson(response, 200, { github_configs: [] }), 4000).unref();
      default:
        return sendJson(response, 404, { errors: [{ detail: "not found" }] });
    }
  });
});
after(async () => {
  await registry.close();
  trees.forEach(removeTree);
});

function repoFor(crate: string): string {
  const root = makeTree({
    ".github/workflows/release.yml": WORKFLOW,
    "pubtool.toml": CONFIG.replace("%CRATE%", crate),
  });
  trees.push(root);
  return root;
}

async function doctor(crate: string, env: Record<string, string> = {}) {
  const result = await runPubtool(["doctor"], {
    cwd: repoFor(crate),
    env: { RUSTREG_DOCTOR_TOKEN: "doctor-token", PUBTOOL_RUSTREG_URL: registry.url, ...env },
  });
  const phase = result.stdout.slice(result.stdout.indexOf("trust policy (rustreg registry):"));
  return { ...result, phase };
}

describe("doctor phase 3: rustreg registry", { concurrency: true }, () => {
  it("passes when any registered config matches", async () => {
    const result = await doctor("good-crate");
    assert.equal(result.code, 0, result.stdout);
    assert.match(
      result.phase,
      /✓ crate good-crate\n {6}trust-policy: release\.yml: crate good-crate: matches the registration for acme\/demo/,
    );
  });

  it("names the differing field: environment", async () => {
    const result = await doctor("renamed-env");
    assert.equal(result.code, 1);
    assert.match(
      result.phase,
      /✗ crate renamed-env\n {6}trust-policy: release\.yml: crate renamed-env: no registration matches; differing: environment \(registered production, declared release\)/,
    );
  });

  it("names the differing fields: workflow filename and repository", async () => {
    const result = await doctor("other-repo");
    assert.equal(result.code, 1);
    assert.match(
      result.phase,
      /workflow filename \(registered publish\.yml, declared release\.yml\)/,
    );
    assert.match(result.phase, /repository \(registered acme\/fork, declared acme\/demo\)/);
  });

  it("fails when nothing is registered or the crate is unknown", async () => {
    const [none, unknown] = await Promise.all([
      doctor("none-registered"),
      doctor("never-published"),
    ]);
    assert.equal(none.code, 1);
    assert.match(none.phase, /no trusted publisher is registered for this crate/);
    assert.equal(unknown.code, 1);
    assert.match(unknown.phase, /does not know this crate \(HTTP 404\)/);
  });

  it("401: the phase fails", async () => {
    const result = await doctor("good-crate", { RUSTREG_DOCTOR_TOKEN: "wrong" });
    assert.equal(result.code, 1);
    assert.match(
      result.phase,
      /✗ crate good-crate\n {6}trust-policy: release\.yml: crate good-crate: the registry rejected RUSTREG_DOCTOR_TOKEN \(HTTP 401\)/,
    );
    assert.doesNotMatch(result.stdout + result.stderr, /wrong/);
  });

  it("timeout: a neutral skip with the reason", async () => {
    const result = await doctor("slow", { PUBTOOL_HTTP_TIMEOUT_MS: "300" });
    assert.equal(result.code, 0, result.stdout);
    assert.match(
      result.phase,
      /- crate slow\n {6}skipped: the registry could not be read \(timed out after 300 ms\)/,
    );
  });

  it("connection refused: a neutral skip with the reason", async () => {
    const result = await doctor("good-crate", { PUBTOOL_RUSTREG_URL: await refusedUrl() });
    assert.equal(result.code, 0, result.stdout);
    assert.match(
      result.phase,
      /- crate good-crate\n {6}skipped: the registry could not be read \(network error: ECONNREFUSED\)/,
    );
  });

  it("without a declared repository, GITHUB_REPOSITORY is compared", async () => {
    const root = makeTree({
      ".github/workflows/release.yml": WORKFLOW,
      "pubtool.toml": CONFIG.replace("%CRATE%", "good-crate").replaceAll(
        'repository = "acme/demo"\n',
        "",
      ),
    });
    trees.push(root);
    const env = { RUSTREG_DOCTOR_TOKEN: "doctor-token", PUBTOOL_RUSTREG_URL: registry.url };
    const [other, same] = await Promise.all([
      runPubtool(["doctor"], { cwd: root, env: { ...env, GITHUB_REPOSITORY: "acme/other" } }),
      runPubtool(["doctor"], { cwd: root, env: { ...env, GITHUB_REPOSITORY: "Acme/Demo" } }),
    ]);
    assert.equal(other.code, 1);
    assert.match(
      other.stdout,
      /differing: repository \(registered acme\/demo, declared acme\/other\)/,
    );
    assert.equal(same.code, 0, same.stdout);
  });

  it("checks every declared crate", async () => {
    const root = makeTree({
      ".github/workflows/release.yml": WORKFLOW,
      "pubtool.toml":
        CONFIG.replace("%CRATE%", "good-crate") +
        CONFIG.split("\n\n")[0]?.replace("%CRATE%", "renamed-env"),
    });
    trees.push(root);
    const result = await runPubtool(["doctor"], {
      cwd: root,
      env: { RUSTREG_DOCTOR_TOKEN: "doctor-token", PUBTOOL_RUSTREG_URL: registry.url },
    });
    assert.equal(result.code, 1);
    assert.match(result.stdout, /✓ crate good-crate/);
    assert.match(result.stdout, /✗ crate renamed-env/);
  });

  it("pyreg packages are never diffed (closing note)", async () => {
    const result = await doctor("good-crate");
    // The package is listed with the steps that publish it, never compared with a registration.
    const registryPhase = result.phase.slice(0, result.phase.indexOf("published by:"));
    assert.doesNotMatch(registryPhase, /py-demo/);
    assert.match(result.stdout, /not diffed against pyreg or jsreg registrations/);
  });
});

describe("doctor phase 3: what the registry's answers mean", { concurrency: true }, () => {
  it("a registration without an environment accepts any environment", async () => {
    const result = await doctor("any-environment");
    assert.equal(result.code, 0, result.stdout);
    assert.match(result.phase, /✓ crate any-environment/);
  });

  it("429 and an unreadable 200 are neutral skips", async () => {
    const [limited, garbled] = await Promise.all([doctor("rate-limited"), doctor("garbled")]);
    assert.equal(limited.code, 0, limited.stdout);
    assert.match(
      limited.phase,
      /- crate rate-limited\n {6}skipped: the registry could not be read \(rate limited, HTTP 429\)/,
    );
    assert.equal(garbled.code, 0, garbled.stdout);
    assert.match(
      garbled.phase,
      /- crate garbled\n {6}skipped: the registry answered HTTP 200 with a body doctor cannot read/,
    );
  });

  it("400 and 403 fail with the registry's own message", async () => {
    const [forbidden, bad] = await Promise.all([doctor("forbidden"), doctor("bad-request")]);
    assert.equal(forbidden.code, 1);
    assert.match(
      forbidden.phase,
      /refused the read \(HTTP 403\): this token does not have the required permissions to perform this action; RUSTREG_DOCTOR_TOKEN must belong to an owner of the crate .*trusted-publishing scope/,
    );
    assert.doesNotMatch(forbidden.phase, /not an owner|missing scope/);
    assert.equal(bad.code, 1);
    assert.match(bad.phase, /refused the read \(HTTP 400\): invalid crate name$/m);
  });
});

describe("doctor phase 3: a registry that echoes the credential", () => {
  it("the token is masked in the registry's message, as text and as JSON", async () => {
    const text = await doctor("echoes-token");
    assert.equal(text.code, 1);
    assert.match(text.phase, /refused the read \(HTTP 403\): token \*\*\* lacks the scope/);
    assert.ok(!text.stdout.includes("doctor-token"), text.stdout);
    const json = await runPubtool(["doctor", "--json"], {
      cwd: repoFor("echoes-token"),
      env: { RUSTREG_DOCTOR_TOKEN: "doctor-token", PUBTOOL_RUSTREG_URL: registry.url },
    });
    assert.match(json.stdout, /token \*\*\* lacks the scope/);
    assert.ok(!json.stdout.includes("doctor-token"));
  });
});

describe("doctor phase 3: request counts", () => {
  it("500: a neutral skip with the reason, retried once", async () => {
    const before = registry.requests.filter((r) => r.url.includes("crate=broken")).length;
    const result = await doctor("broken");
    assert.equal(result.code, 0, result.stdout);
    assert.match(
      result.phase,
      /- crate broken\n {6}skipped: the registry could not be read \(HTTP 500\)/,
    );
    const after = registry.requests.filter((r) => r.url.includes("crate=broken")).length;
    assert.equal(after - before, 2);
  });

  it("without RUSTREG_DOCTOR_TOKEN the registry is never asked", async () => {
    const before = registry.requests.length;
    const result = await doctor("good-crate", { RUSTREG_DOCTOR_TOKEN: "" });
    assert.equal(result.code, 0);
    assert.match(result.phase, /- skipped: RUSTREG_DOCTOR_TOKEN is not set/);
    assert.equal(registry.requests.length, before);
  });
});
