import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { strToU8, zipSync } from "fflate";
import { pep440 } from "../src/publish/prerelease.js";
import { startJsreg, startRegistries } from "./fake-registries.js";
import { makeTree, removeTree, runPubtool } from "./helpers.js";

const trees: string[] = [];
const closers: (() => Promise<void>)[] = [];
after(async () => {
  await Promise.all(closers.map((close) => close()));
  trees.forEach(removeTree);
});

/** A small seeded generator, so the generated versions are the same on every run. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

function generatedVersions(count: number): string[] {
  const next = random(68);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  const labels = [
    "alpha",
    "a",
    "beta",
    "b",
    "rc",
    "c",
    "pre",
    "preview",
    "dev",
    "next",
    "post",
    "RC",
  ];
  const seps = ["-", ".", "_", ""];
  const versions: string[] = [];
  for (let i = 0; i < count; i++) {
    const release = [0, 1, 2].map(() => String(Math.floor(next() * 12))).join(".");
    const number = pick(["", "0", "1", "2", "07", "10"]);
    const label = pick(labels);
    const tail = pick(["", "", "+build.5", "+Local-1", "+x_y"]);
    versions.push(
      `${pick(["", "", "v"])}${release}${pick(seps)}${label}${pick(seps)}${number}${tail}`,
    );
  }
  return [
    ...versions,
    "0.2.0-rc.1",
    "1.0.0-alpha.2",
    "1.0.0-beta",
    "2.0.0",
    "1!2.0.0-rc.3",
    "1.0.0-next.1",
  ];
}

describe("prerelease versions: the PEP 440 form", () => {
  it("matches Python's packaging.version on generated versions", () => {
    const versions = generatedVersions(400);
    const script = `
import json, sys
from packaging.version import Version, InvalidVersion
out = []
for v in json.load(sys.stdin):
    try:
        out.append(str(Version(v)))
    except InvalidVersion:
        out.append(None)
print(json.dumps(out))
`;
    const expected = JSON.parse(
      execFileSync("python3", ["-c", script], {
        input: JSON.stringify(versions),
        encoding: "utf8",
      }),
    ) as (string | null)[];
    versions.forEach((version, at) => {
      assert.equal(pep440(version), expected[at], version);
    });
  });
});

/** Core metadata of the demo-py prerelease, as a build backend writes it (PEP 440 form). */
const PY_METADATA = "Metadata-Version: 2.1\nName: demo-py\nVersion: 0.2.0rc1\nSummary: demo\n";

function wheel(): Uint8Array {
  return zipSync({
    "demo_py/__init__.py": strToU8(""),
    "demo_py-0.2.0rc1.dist-info/METADATA": strToU8(PY_METADATA),
    "demo_py-0.2.0rc1.dist-info/WHEEL": strToU8("Wheel-Version: 1.0\n"),
  });
}

const CONFIG = `[[package]]
name = "demo-app"
kind = "jsreg"
path = "js/app"

[[package]]
name = "demo-lib"
kind = "jsreg"
path = "js/lib"
dist_tag = "beta"

[[package]]
name = "pubtool-demo-core"
kind = "rustreg"
path = "crates/core"

[[package]]
name = "demo-py"
kind = "pyreg"
path = "py"
`;

function prereleaseTree(pyVersion = "0.2.0-rc.1"): string {
  const root = makeTree({
    "pubtool.toml": CONFIG,
    "js/app/package.json": JSON.stringify({ name: "demo-app", version: "0.2.0-rc.1" }),
    "js/app/index.js": "export {};\n",
    "js/lib/package.json": JSON.stringify({ name: "demo-lib", version: "0.2.0-rc.1" }),
    "js/lib/index.js": "export {};\n",
    "crates/core/Cargo.toml":
      '[package]\nname = "pubtool-demo-core"\nversion = "0.2.0-rc.1"\nedition = "2021"\nlicense = "MIT"\ndescription = "fixture crate"\n',
    "crates/core/src/lib.rs": "pub fn answer() -> u32 { 42 }\n",
    "py/pyproject.toml": `[project]\nname = "demo-py"\nversion = "${pyVersion}"\n`,
    "py/dist/demo_py-0.2.0rc1-py3-none-any.whl": wheel(),
  });
  trees.push(root);
  return root;
}

async function registries() {
  const started = await startRegistries();
  closers.push(started.close);
  return {
    ...started,
    env: {
      ...started.env,
      RUST_REGISTRY_TOKEN: "rust-token-value",
      PYREG_API_TOKEN: "pypi-fallback-token-value",
      JSREG_AUTH_TOKEN: "js-token-value",
    },
  };
}

describe("prerelease publish, end to end", { concurrency: true }, () => {
  it("npm under a dist-tag (next, or the package's own), pyreg in PEP 440 form, rustreg as is", async () => {
    const { rustreg, pyreg, jsreg, env } = await registries();
    const root = prereleaseTree();
    const result = await runPubtool(["publish"], { cwd: root, env });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.deepEqual(jsreg.tags.get("demo-app"), { next: "0.2.0-rc.1" });
    assert.deepEqual(jsreg.tags.get("demo-lib"), { beta: "0.2.0-rc.1" });
    assert.deepEqual(
      pyreg.uploads.map((upload) => [upload.file, upload.version]),
      [["demo_py-0.2.0rc1-py3-none-any.whl", "0.2.0rc1"]],
    );
    assert.equal(rustreg.published.get("pubtool-demo-core")?.[0]?.version, "0.2.0-rc.1");
    assert.match(
      result.stdout,
      /demo-py \(pyreg\): publishing 0\.2\.0rc1 .*; pyreg gets prerelease 0\.2\.0rc1 \(the PEP 440 form of 0\.2\.0-rc\.1\)/,
    );

    const again = await runPubtool(["publish"], { cwd: root, env });
    assert.equal(again.code, 0, again.stderr);
    assert.equal((again.stdout.match(/is already published, skipped/g) ?? []).length, 4);
  });

  it("publish --dry-run and doctor say what each registry gets", async () => {
    const { env } = await registries();
    const root = prereleaseTree();
    const dry = await runPubtool(["publish", "--dry-run"], { cwd: root, env });
    assert.equal(dry.code, 0, dry.stdout + dry.stderr);
    assert.match(
      dry.stdout,
      /demo-app \(jsreg\): dry run of 0\.2\.0-rc\.1 .*; jsreg gets prerelease 0\.2\.0-rc\.1 under dist-tag next/,
    );
    assert.match(dry.stdout, /demo-lib \(jsreg\): .*under dist-tag beta/);
    assert.match(
      dry.stdout,
      /pubtool-demo-core \(rustreg\): .*rustreg gets prerelease 0\.2\.0-rc\.1 as is/,
    );
    assert.match(dry.stdout, /would upload dist\/demo_py-0\.2\.0rc1-py3-none-any\.whl/);
    const doctor = await runPubtool(["doctor"], { cwd: root, env });
    assert.match(doctor.stdout, /✓ what each registry gets\n/);
    assert.match(
      doctor.stdout,
      /demo-py \(pyreg\): 0\.2\.0-rc\.1: prerelease 0\.2\.0rc1 \(the PEP 440 form of 0\.2\.0-rc\.1\)/,
    );
    assert.match(
      doctor.stdout,
      /demo-app \(jsreg\): 0\.2\.0-rc\.1: prerelease 0\.2\.0-rc\.1 under dist-tag next/,
    );
  });

  it("a prerelease pyreg cannot take fails doctor, naming the form it can", async () => {
    const root = prereleaseTree("0.2.0-next.1");
    const doctor = await runPubtool(["doctor", "--json"], { cwd: root });
    const report = JSON.parse(doctor.stdout) as {
      ok: boolean;
      phases: { id: string; checks: { id: string; status: string; messages: string[] }[] }[];
    };
    const check = report.phases[0]?.checks.find((c) => c.id === "versions");
    assert.equal(check?.status, "fail");
    assert.match(
      check?.messages.join("\n") ?? "",
      /0\.2\.0-next\.1 has no PEP 440 form, so pyreg cannot take it/,
    );
    assert.equal(doctor.code, 1);
  });
});

describe("npm's publish failures, in plain words", { concurrency: true }, () => {
  const JS_CONFIG = '[[package]]\nname = "demo-lib"\nkind = "jsreg"\npath = "js/lib"\n';
  const files = {
    "pubtool.toml": JS_CONFIG,
    "js/lib/package.json": JSON.stringify({ name: "demo-lib", version: "1.0.0" }),
    "js/lib/index.js": "export {};\n",
  };

  const refusals = [
    {
      name: "E404 on the publish: who may not publish, and where to look",
      refusal: { status: 404, error: "Not found" },
      message:
        /pubtool: demo-lib \(jsreg\): npm publish exited with 1: npm answered E404: the token may not publish demo-lib/,
    },
    {
      name: "E403 for a name too similar to another: rename or scope it",
      refusal: {
        status: 403,
        error:
          "Package name too similar to existing package demolib; try renaming your package to '@acme/demo-lib' and publishing with 'npm publish --access=public' instead",
      },
      message:
        /the registry refuses the name demo-lib: it is too similar to an existing package's .* publish it under a scope \(@owner\/demo-lib\)/,
    },
  ];
  for (const { name, refusal, message } of refusals) {
    it(name, async () => {
      const jsreg = await startJsreg({}, undefined, { refusal });
      closers.push(jsreg.close);
      const root = makeTree(files);
      trees.push(root);
      const result = await runPubtool(["publish"], {
        cwd: root,
        env: { PUBTOOL_JSREG_URL: jsreg.url, JSREG_AUTH_TOKEN: "js-token-value" },
      });
      assert.equal(result.code, 1);
      assert.match(result.stderr, message);
    });
  }

  // The transparency log's 409 comes from npm's provenance signing, which needs the workflow
  // host; a stand-in npm plays the retried publish: the real npm publishes (or not), then the
  // stand-in fails as npm does when the retry's log entry is refused.
  function tlogTree(publishFirst: boolean): string {
    const realNpm = execFileSync("sh", ["-c", "command -v npm"], { encoding: "utf8" }).trim();
    const stand = `#!/usr/bin/env node
const { spawnSync } = require("node:child_process");
if (process.argv[2] === "--version") { console.log("11.6.0"); process.exit(0); }
if (${publishFirst}) {
  const first = spawnSync(${JSON.stringify(realNpm)}, process.argv.slice(2), { stdio: "inherit" });
  if (first.status !== 0) process.exit(first.status ?? 1);
}
console.error("npm error code TLOG_CREATE_ENTRY_ERROR");
console.error("npm error error creating tlog entry - (409) an equivalent entry already exists in the transparency log with UUID 1234");
process.exit(1);
`;
    const root = makeTree({ ...files, "fakebin/npm": stand });
    chmodSync(join(root, "fakebin/npm"), 0o755);
    trees.push(root);
    return root;
  }

  it("E404 under OIDC: the registry did not take this workflow as the trusted publisher", async () => {
    // Only the workflow host can make npm's OIDC exchange; a stand-in npm answers as npm does
    // when the registry refuses it.
    const stand = `#!/usr/bin/env node
if (process.argv[2] === "--version") { console.log("11.6.0"); process.exit(0); }
console.error("npm error code E404");
console.error("npm error 404 Not Found - PUT https://registry.npmjs.org/demo-lib - Not found");
process.exit(1);
`;
    const jsreg = await startJsreg({ "demo-lib": ["0.9.0"] });
    closers.push(jsreg.close);
    const root = makeTree({ ...files, "fakebin/npm": stand });
    chmodSync(join(root, "fakebin/npm"), 0o755);
    trees.push(root);
    const result = await runPubtool(["publish"], {
      cwd: root,
      env: {
        PUBTOOL_JSREG_URL: jsreg.url,
        GITHUB_ACTIONS: "true",
        ACTIONS_ID_TOKEN_REQUEST_URL: "http://127.0.0.1:9/token",
        ACTIONS_ID_TOKEN_REQUEST_TOKEN: "request-token",
        PATH: `${join(root, "fakebin")}:${process.env.PATH ?? ""}`,
      },
    });
    assert.equal(result.code, 1, result.stdout);
    assert.match(
      result.stderr,
      /npm answered E404: the registry did not accept this workflow as a trusted publisher of demo-lib: .*Check the package's settings \(Trusted publishing\)/,
    );
  });

  for (const landed of [true, false]) {
    it(`a retried publish refused by the transparency log (409): ${landed ? "on the registry, counted as published" : "not on the registry, fails with the remedy"}`, async () => {
      const jsreg = await startJsreg();
      closers.push(jsreg.close);
      const root = tlogTree(landed);
      const result = await runPubtool(["publish"], {
        cwd: root,
        env: {
          PUBTOOL_JSREG_URL: jsreg.url,
          JSREG_AUTH_TOKEN: "js-token-value",
          PATH: `${join(root, "fakebin")}:${process.env.PATH ?? ""}`,
        },
      });
      if (landed) {
        assert.equal(result.code, 0, result.stdout + result.stderr);
        assert.match(
          result.stdout,
          /refused by the transparency log as a duplicate .* the registry has demo-lib@1\.0\.0: the first attempt went through, counted as published/,
        );
        assert.match(result.stdout, /demo-lib \(jsreg\): published 1\.0\.0/);
      } else {
        assert.equal(result.code, 1);
        assert.match(
          result.stderr,
          /TLOG_CREATE_ENTRY_ERROR\) and the registry does not have it; run the release again/,
        );
      }
    });
  }
});
