import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { strToU8, zipSync } from "fflate";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { startRegistries } from "./fake-registries.js";
import { makeTree, removeTree, runPubtool, sendJson, startServer } from "./helpers.js";

const trees: string[] = [];
const closers: (() => Promise<void>)[] = [];
after(async () => {
  await Promise.all(closers.map((close) => close()));
  trees.forEach(removeTree);
});

const CONFIG = `[[package]]
name = "demo-app"
kind = "jsreg"
path = "js/app"

[[package]]
name = "demo-lib"
kind = "jsreg"
path = "js/lib"

[[package]]
name = "pubtool-demo-core"
kind = "rustreg"
path = "crates/core"

[[package]]
name = "demo-py"
kind = "pyreg"
path = "py"
`;

/** Core metadata of the demo-py distributions, as a build backend writes it. */
const PY_METADATA = `Metadata-Version: 2.1
Name: demo-py
Version: 1.2.0
Summary: A demo package
Requires-Python: >=3.9
Requires-Dist: requests>=2.31
Requires-Dist: click>=8; extra == "cli"
Provides-Extra: cli
Classifier: Programming Language :: Python :: 3
Classifier: License :: OSI Approved :: MIT License
Project-URL: Source, https://example.org/demo
Description-Content-Type: text/markdown

# demo-py

Long description with ünïcode.
`;

/** A real wheel (zip) holding `demo_py-1.2.0.dist-info/METADATA`. */
function wheel(metadata: string): Uint8Array {
  return zipSync({
    "demo_py/__init__.py": strToU8(""),
    "demo_py-1.2.0.dist-info/METADATA": strToU8(metadata),
    "demo_py-1.2.0.dist-info/WHEEL": strToU8("Wheel-Version: 1.0\n"),
  });
}

/** A real sdist made by the system tar: `demo_py-1.2.0/PKG-INFO`. */
function sdist(metadata: string, top = "demo_py-1.2.0"): Uint8Array {
  const dir = mkdtempSync(join(tmpdir(), "pubtool-sdist-"));
  try {
    mkdirSync(join(dir, top));
    writeFileSync(join(dir, top, "PKG-INFO"), metadata);
    writeFileSync(join(dir, top, "pyproject.toml"), '[project]\nname = "demo-py"\n');
    execFileSync("tar", ["czf", join(dir, "out.tar.gz"), "-C", dir, top]);
    return readFileSync(join(dir, "out.tar.gz"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const PACKAGES: Record<string, string | Uint8Array> = {
  "js/app/package.json": JSON.stringify({
    name: "demo-app",
    version: "1.0.0",
    dependencies: { "demo-lib": "^1.0.0" },
  }),
  "js/app/index.js": "export {};\n",
  "js/lib/package.json": JSON.stringify({ name: "demo-lib", version: "1.0.0" }),
  "js/lib/index.js": "export {};\n",
  "crates/core/Cargo.toml":
    '[package]\nname = "pubtool-demo-core"\nversion = "0.1.0"\nedition = "2021"\nlicense = "MIT"\ndescription = "fixture crate"\n',
  "crates/core/src/lib.rs": "pub fn answer() -> u32 { 42 }\n",
  "py/pyproject.toml": '[project]\nname = "demo-py"\nversion = "1.2.0"\n',
  "py/dist/demo_py-1.2.0-py3-none-any.whl": wheel(PY_METADATA),
  "py/dist/demo_py-1.2.0.tar.gz": sdist(PY_METADATA),
  "py/dist/demo_py-1.1.0.tar.gz": sdist(PY_METADATA.replace("1.2.0", "1.1.0"), "demo_py-1.1.0"),
};

function fixture(config = CONFIG, extra: Record<string, string | Uint8Array> = {}): string {
  const root = makeTree({ "pubtool.toml": config, ...PACKAGES, ...extra });
  trees.push(root);
  return root;
}

async function registries(
  existing: {
    rust?: Record<string, string[]>;
    py?: Record<string, string[]>;
    js?: Record<string, string[]>;
  } = {},
) {
  const started = await startRegistries(existing);
  closers.push(started.close);
  return started;
}

const TOKENS = {
  RUST_REGISTRY_TOKEN: "rust-token-value",
  PYREG_API_TOKEN: "pypi-fallback-token-value",
  JSREG_AUTH_TOKEN: "js-token-value",
};

function assertNoSecrets(text: string) {
  for (const value of [...Object.values(TOKENS), "pypi-minted-token", "request-token"]) {
    assert.ok(!text.includes(value), `secret ${value} printed`);
  }
}

describe("preflight", { concurrency: true }, () => {
  it("reports every package in dependency order and passes with credentials", async () => {
    const { env } = await registries();
    const result = await runPubtool(["preflight"], { cwd: fixture(), env: { ...env, ...TOKENS } });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    const headings = result.stdout.split("\n").filter((line) => line.startsWith("package "));
    assert.deepEqual(headings, [
      "package demo-lib (jsreg, js/lib):",
      "package demo-app (jsreg, js/app):",
      "package pubtool-demo-core (rustreg, crates/core):",
      "package demo-py (pyreg, py):",
    ]);
    assert.match(result.stdout, /✓ manifest: Cargo\.toml: pubtool-demo-core 0\.1\.0/);
    assert.match(result.stdout, /✓ version: 1\.2\.0 is not published yet/);
    assert.match(result.stdout, /✓ auth: PYREG_API_TOKEN \(fallback token\)/);
    assert.match(result.stdout, /preflight: ok\n$/);
    assertNoSecrets(result.stdout + result.stderr);
  });

  it("fails without credentials, treats empty variables as unset, and names missing manifests", async () => {
    const { env } = await registries({ py: { "demo-py": ["1.2.0"] } });
    const root = fixture(
      `${CONFIG}\n[[package]]\nname = "ghost"\nkind = "pyreg"\npath = "nowhere"\n`,
    );
    const result = await runPubtool(["preflight", "--json"], {
      cwd: root,
      env: { ...env, JSREG_AUTH_TOKEN: "" },
    });
    assert.equal(result.code, 1);
    const report = JSON.parse(result.stdout) as {
      ok: boolean;
      packages: {
        name: string;
        alreadyPublished: boolean;
        checks: { label: string; status: string; message: string }[];
      }[];
    };
    const byName = Object.fromEntries(report.packages.map((p) => [p.name, p]));
    assert.equal(byName["demo-py"]?.alreadyPublished, true);
    assert.match(
      byName["demo-lib"]?.checks.find((c) => c.label === "auth")?.message ?? "",
      /JSREG_AUTH_TOKEN \/ JSREG_TOKEN is not set/,
    );
    assert.match(
      byName["pubtool-demo-core"]?.checks.find((c) => c.label === "auth")?.message ?? "",
      /neither RUST_REGISTRY_TOKEN nor CARGO_REGISTRY_TOKEN is set/,
    );
    assert.match(
      byName.ghost?.checks[0]?.message ?? "",
      /package ghost: nowhere: no such directory/,
    );
  });

  it("with OIDC available pyreg and jsreg need no token", async () => {
    const { env } = await registries();
    const result = await runPubtool(["preflight"], {
      cwd: fixture(),
      env: {
        ...env,
        ACTIONS_ID_TOKEN_REQUEST_URL: "http://127.0.0.1:9/x",
        ACTIONS_ID_TOKEN_REQUEST_TOKEN: "t",
      },
    });
    assert.equal(result.code, 1, "rustreg still needs RUST_REGISTRY_TOKEN from the auth action");
    assert.match(result.stdout, /✓ auth: OIDC trusted publishing/);
    assert.match(
      result.stdout,
      /✗ auth: neither RUST_REGISTRY_TOKEN nor CARGO_REGISTRY_TOKEN is set: run the registry's authentication action/,
    );
  });
});

describe("publish", { concurrency: true }, () => {
  it("--dry-run uploads nothing", async () => {
    const { env, rustreg, pyreg, jsreg } = await registries();
    const result = await runPubtool(["publish", "--dry-run"], {
      cwd: fixture(),
      env: { ...env, ...TOKENS },
    });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /demo-py \(pyreg\): dry run ok/);
    assert.match(result.stdout, /would upload dist\/demo_py-1\.2\.0-py3-none-any\.whl/);
    assert.match(result.stdout, /would upload dist\/demo_py-1\.2\.0\.tar\.gz/);
    assert.doesNotMatch(result.stdout, /1\.1\.0/);
    assert.match(
      result.stderr,
      /Packaging\s+pubtool-demo-core v0\.1\.0/,
      "cargo publish --dry-run ran",
    );
    assert.equal(rustreg.published.size, 0);
    assert.equal(pyreg.uploads.length, 0);
    assert.equal(jsreg.publishes.length, 0);
    assertNoSecrets(result.stdout + result.stderr);
  });

  it("publishes everything with the fallback tokens, in dependency order, then skips on a re-run", async () => {
    const { env, rustreg, pyreg, jsreg } = await registries();
    const root = fixture();
    const result = await runPubtool(["publish"], {
      cwd: root,
      env: { ...env, ...TOKENS, UNRELATED: "x" },
    });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.deepEqual(
      jsreg.publishes.map((p) => p.name),
      ["demo-lib", "demo-app"],
    );
    assert.equal(
      rustreg.published.get("pubtool-demo-core")?.[0]?.authorization,
      "rust-token-value",
    );
    assert.deepEqual(pyreg.uploads.map((u) => u.file).sort(), [
      "demo_py-1.2.0-py3-none-any.whl",
      "demo_py-1.2.0.tar.gz",
    ]);
    const basic = `Basic ${Buffer.from("__token__:pypi-fallback-token-value").toString("base64")}`;
    assert.ok(pyreg.uploads.every((u) => u.authorization === basic));
    assertNoSecrets(result.stdout + result.stderr);

    const again = await runPubtool(["publish"], { cwd: root, env: { ...env, ...TOKENS } });
    assert.equal(again.code, 0, again.stderr);
    assert.equal((again.stdout.match(/is already published, skipped/g) ?? []).length, 4);
    assert.equal(pyreg.uploads.length, 2);
  });

  it("jsreg with paths: publishes the tarball the build packed, byte for byte, not the folder", async () => {
    const { env, jsreg } = await registries();
    const root = fixture(
      '[[package]]\nname = "demo-lib"\nkind = "jsreg"\npath = "js/lib"\npaths = ["../../dist/*.tgz"]\n',
    );
    mkdirSync(join(root, "dist"));
    execFileSync("npm", ["pack", "--pack-destination", join(root, "dist"), "./js/lib"], {
      cwd: root,
      stdio: "ignore",
    });
    // Changed after packing: a publish of the folder would carry this, the tarball does not.
    writeFileSync(join(root, "js/lib/index.js"), "export const changed = true;\n");
    const result = await runPubtool(["publish"], { cwd: root, env: { ...env, ...TOKENS } });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /from \.\.\/\.\.\/dist\/demo-lib-1\.0\.0\.tgz/);
    const packed = readFileSync(join(root, "dist/demo-lib-1.0.0.tgz"));
    assert.deepEqual(jsreg.tarballs.get("/demo-lib/-/demo-lib-1.0.0.tgz"), packed);

    const missing = await runPubtool(["publish"], {
      cwd: fixture(
        '[[package]]\nname = "demo-app"\nkind = "jsreg"\npath = "js/app"\npaths = ["*.tgz"]\n',
      ),
      env: { ...env, ...TOKENS },
    });
    assert.equal(missing.code, 1);
    assert.match(
      missing.stderr,
      /no demo-app-1\.0\.0\.tgz matching \*\.tgz; pack it first \(npm pack\)/,
    );
  });

  it("pyreg: the OIDC-minted token wins over PYREG_API_TOKEN", async () => {
    // An existing project (a first publish uses the token; see below).
    const { env, pyreg } = await registries({ py: { "demo-py": ["1.0.0"] } });
    const root = fixture('[[package]]\nname = "demo-py"\nkind = "pyreg"\npath = "py"\n');
    const result = await runPubtool(["publish"], {
      cwd: root,
      env: {
        ...env,
        PYREG_API_TOKEN: TOKENS.PYREG_API_TOKEN,
        ACTIONS_ID_TOKEN_REQUEST_URL: `${pyreg.url}/actions-oidc?scenario=good`,
        ACTIONS_ID_TOKEN_REQUEST_TOKEN: "request-token",
      },
    });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /with OIDC trusted publishing/);
    const audienceAsked = pyreg.requests.some((r) => r.url === "/_/oidc/audience");
    assert.ok(audienceAsked);
    assert.ok(
      pyreg.requests.some((r) =>
        r.url.startsWith("/actions-oidc?scenario=good&audience=pyreg-test"),
      ),
    );
    const basic = `Basic ${Buffer.from("__token__:pypi-minted-token").toString("base64")}`;
    assert.equal(pyreg.uploads.length, 2);
    assert.ok(pyreg.uploads.every((u) => u.authorization === basic));
    assertNoSecrets(result.stdout + result.stderr);
  });

  it("pyreg: a refused mint-token exchange fails with the registry's reason", async () => {
    const { env, pyreg } = await registries();
    const root = fixture('[[package]]\nname = "demo-py"\nkind = "pyreg"\npath = "py"\n');
    const result = await runPubtool(["publish"], {
      cwd: root,
      env: {
        ...env,
        ACTIONS_ID_TOKEN_REQUEST_URL: `${pyreg.url}/actions-oidc?scenario=renamed`,
        ACTIONS_ID_TOKEN_REQUEST_TOKEN: "request-token",
      },
    });
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /pyreg refused to mint a token \(HTTP 422\): valid token, but no corresponding publisher \(environment mismatch\)/,
    );
    assert.equal(pyreg.uploads.length, 0);
  });

  it("pyreg without built distributions names the fix", async () => {
    const { env } = await registries();
    const root = fixture(
      '[[package]]\nname = "demo-py"\nkind = "pyreg"\npath = "py"\npaths = ["wheels/*.whl"]\n',
    );
    const result = await runPubtool(["publish"], { cwd: root, env: { ...env, ...TOKENS } });
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /no built distributions of demo-py 1\.2\.0 matching wheels\/\*\.whl; build them first \(python -m build\)/,
    );
  });

  it("a failure stops the packages that come after it", async () => {
    const { env, jsreg } = await registries();
    const result = await runPubtool(["publish"], {
      cwd: fixture(),
      env: { ...env, JSREG_AUTH_TOKEN: "wrong-token" },
    });
    assert.equal(result.code, 1);
    assert.match(result.stdout, /demo-lib \(jsreg\): failed/);
    assert.match(result.stdout, /demo-app \(jsreg\): not attempted/);
    assert.equal(jsreg.publishes.length, 0);
    assert.ok(!(result.stdout + result.stderr).includes("wrong-token"));
  });
});

describe("publish: what subprocesses receive", { concurrency: true }, () => {
  // Stand-ins for npm and cargo that record their arguments, environment and npmrc.
  // \`--version\` answers FAKE_NPM_VERSION (default 11.6.0); FAKE_PRINT is printed in two
  // writes split in the middle, 50 ms apart, on stdout and on stderr.
  const recorder = `#!/usr/bin/env node
const fs = require("node:fs");
const path = require("node:path");
if (process.argv[2] === "--version") { console.log(process.env.FAKE_NPM_VERSION || "11.6.0"); process.exit(0); }
const print = process.env.FAKE_PRINT_VALUE ? process.env[process.env.FAKE_PRINT_VALUE] : "";
if (print) {
  const half = Math.floor(print.length / 2);
  process.stdout.write("token: " + print.slice(0, half));
  process.stderr.write("err: " + print.slice(0, half));
  setTimeout(() => { process.stdout.write(print.slice(half) + " done\\n"); process.stderr.write(print.slice(half) + "\\n"); }, 50);
}
let npmrc = null;
if (process.env.NPM_CONFIG_USERCONFIG) npmrc = fs.readFileSync(process.env.NPM_CONFIG_USERCONFIG, "utf8");
fs.appendFileSync(path.join(__dirname, "calls.jsonl"), JSON.stringify({ tool: path.basename(__filename), args: process.argv.slice(2), env: process.env, npmrc }) + "\\n");
`;

  function withRecorders(config: string) {
    const root = fixture(config, {
      "fakebin/npm": recorder,
      "fakebin/cargo": recorder,
      "fakebin/package.json": '{"type":"commonjs"}',
    });
    chmodSync(join(root, "fakebin/npm"), 0o755);
    chmodSync(join(root, "fakebin/cargo"), 0o755);
    const calls = () =>
      readFileSync(join(root, "fakebin/calls.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map(
          (line) =>
            JSON.parse(line) as {
              tool: string;
              args: string[];
              env: Record<string, string>;
              npmrc: string | null;
            },
        );
    return { root, calls, path: `${join(root, "fakebin")}:${process.env.PATH ?? ""}` };
  }

  it("jsreg with a token: the token only in the environment, referenced by a temporary npmrc", async () => {
    const { env } = await registries();
    const { root, calls, path } = withRecorders(
      '[[package]]\nname = "demo-lib"\nkind = "jsreg"\npath = "js/lib"\n',
    );
    const result = await runPubtool(["publish"], {
      cwd: root,
      env: {
        ...env,
        PATH: path,
        JSREG_TOKEN: "js-token-value",
        UNRELATED_SECRET: "s3",
        PYREG_API_TOKEN: "p",
      },
    });
    assert.equal(result.code, 0, result.stderr);
    const [call] = calls();
    assert.deepEqual(call?.args, ["publish", "--registry", `${env.PUBTOOL_JSREG_URL}/`]);
    assert.equal(call?.env.PUBTOOL_JSREG_TOKEN, "js-token-value");
    assert.match(call?.npmrc ?? "", /:_authToken=\$\{PUBTOOL_JSREG_TOKEN\}/);
    assert.ok(!(call?.npmrc ?? "").includes("js-token-value"));
    for (const name of [
      "UNRELATED_SECRET",
      "PYREG_API_TOKEN",
      "JSREG_TOKEN",
      "RUST_REGISTRY_TOKEN",
    ]) {
      assert.equal(call?.env[name], undefined, name);
    }
  });

  it("jsreg under OIDC: npm publish --provenance with the workflow's identity variables, no token", async () => {
    const { env } = await registries({ js: { "demo-lib": ["0.9.0"] } });
    const { root, calls, path } = withRecorders(
      '[[package]]\nname = "demo-lib"\nkind = "jsreg"\npath = "js/lib"\n',
    );
    const result = await runPubtool(["publish"], {
      cwd: root,
      env: {
        ...env,
        PATH: path,
        JSREG_AUTH_TOKEN: "js-token-value",
        ACTIONS_ID_TOKEN_REQUEST_URL: "http://127.0.0.1:9/token",
        ACTIONS_ID_TOKEN_REQUEST_TOKEN: "request-token",
        GITHUB_ACTIONS: "true",
        GITHUB_REPOSITORY: "acme/demo",
        GITHUB_TOKEN: "ghs_workflow_token_value",
        ACTIONS_RUNTIME_TOKEN: "runtime-token-value",
        NODE_AUTH_TOKEN: "XXXXX-XXXXX-XXXXX-XXXXX",
        CI: "true",
      },
    });
    assert.equal(result.code, 0, result.stderr);
    const [call] = calls();
    assert.ok(call?.args.includes("--provenance"));
    for (const name of ["GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "NODE_AUTH_TOKEN"]) {
      assert.equal(call?.env[name], undefined, name);
    }
    assert.equal(call?.env.ACTIONS_ID_TOKEN_REQUEST_TOKEN, "request-token");
    assert.equal(call?.env.GITHUB_REPOSITORY, "acme/demo");
    assert.equal(call?.env.JSREG_AUTH_TOKEN, undefined);
    assert.equal(call?.env.PUBTOOL_JSREG_TOKEN, undefined);
  });

  it("rustreg: cargo gets RUST_REGISTRY_TOKEN as the registry token and nothing else secret", async () => {
    const { env } = await registries();
    const { root, calls, path } = withRecorders(
      '[[package]]\nname = "pubtool-demo-core"\nkind = "rustreg"\npath = "crates/core"\n',
    );
    const { PUBTOOL_RUSTREG_INDEX: _index, ...withoutIndex } = env;
    void _index;
    const result = await runPubtool(["publish"], {
      cwd: root,
      env: { ...withoutIndex, PATH: path, ...TOKENS, UNRELATED_SECRET: "s3" },
    });
    assert.equal(result.code, 0, result.stderr);
    const [call] = calls();
    assert.deepEqual(call?.args, ["publish"]);
    assert.equal(call?.env.CARGO_REGISTRY_TOKEN, "rust-token-value");
    for (const name of [
      "UNRELATED_SECRET",
      "PYREG_API_TOKEN",
      "JSREG_AUTH_TOKEN",
      "RUST_REGISTRY_TOKEN",
    ]) {
      assert.equal(call?.env[name], undefined, name);
    }
  });
});

describe("publish: masking, npm version, provenance, first publish", { concurrency: true }, () => {
  const stand = `#!/usr/bin/env node
const fs = require("node:fs");
const path = require("node:path");
const versionFile = path.join(__dirname, "npm-version");
if (process.argv[2] === "--version") { console.log(fs.existsSync(versionFile) ? fs.readFileSync(versionFile, "utf8").trim() : "11.6.0"); process.exit(0); }
fs.appendFileSync(path.join(__dirname, "calls.jsonl"), JSON.stringify({ tool: path.basename(__filename), args: process.argv.slice(2), env: process.env }) + "\\n");
// Every token it was given, printed in two writes split in the middle, 50 ms apart.
(async () => {
  for (const [name, value] of Object.entries(process.env)) {
    if (!/_TOKEN$/.test(name) || !value) continue;
    const half = Math.floor(value.length / 2);
    process.stdout.write(name + ": " + value.slice(0, half));
    process.stderr.write("err " + name + ": " + value.slice(0, half));
    await new Promise((resolve) => setTimeout(resolve, 50));
    process.stdout.write(value.slice(half) + " done\\n");
    process.stderr.write(value.slice(half) + "\\n");
  }
})();
`;
  function standIns(config: string) {
    const root = fixture(config, {
      "fakebin/npm": stand,
      "fakebin/cargo": stand,
      "fakebin/package.json": '{"type":"commonjs"}',
    });
    chmodSync(join(root, "fakebin/npm"), 0o755);
    chmodSync(join(root, "fakebin/cargo"), 0o755);
    const calls = () =>
      readFileSync(join(root, "fakebin/calls.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { args: string[]; env: Record<string, string> });
    return { root, calls, path: `${join(root, "fakebin")}:${process.env.PATH ?? ""}` };
  }
  const JS = '[[package]]\nname = "demo-lib"\nkind = "jsreg"\npath = "js/lib"\n';
  const RUST = '[[package]]\nname = "pubtool-demo-core"\nkind = "rustreg"\npath = "crates/core"\n';
  const OIDC = {
    ACTIONS_ID_TOKEN_REQUEST_URL: "http://127.0.0.1:9/token",
    ACTIONS_ID_TOKEN_REQUEST_TOKEN: "oidc-request-token-0123456789",
    GITHUB_ACTIONS: "true",
    GITHUB_REPOSITORY: "acme/demo",
  };

  it("cargo: a token printed across two writes is masked on stdout and stderr", async () => {
    const { env } = await registries();
    const { root, path } = standIns(RUST);
    const token = "cio_split_token_0123456789abcdef";
    const result = await runPubtool(["publish"], {
      cwd: root,
      env: { ...env, PATH: path, RUST_REGISTRY_TOKEN: token },
    });
    assert.equal(result.code, 0, result.stderr);
    const all = result.stdout + result.stderr;
    assert.ok(!all.includes(token), all);
    assert.ok(!all.includes(token.slice(0, 16)) || !all.includes(token.slice(16)), all);
    assert.match(result.stderr, /^ {4}CARGO_REGISTRIES_PUBTOOL_TOKEN: \*\*\* done$/m);
    assert.match(result.stderr, /^ {4}err CARGO_REGISTRIES_PUBTOOL_TOKEN: \*\*\*$/m);
  });

  it("npm under OIDC: the OIDC request token reaches npm but never the output", async () => {
    const { env } = await registries({ js: { "demo-lib": ["0.9.0"] } });
    const { root, calls, path } = standIns(JS);
    const result = await runPubtool(["publish"], {
      cwd: root,
      env: {
        ...env,
        ...OIDC,
        PATH: path,
        GITHUB_TOKEN: "ghs_should_not_pass",
        UNRELATED: "x",
      },
    });
    assert.equal(result.code, 0, result.stderr);
    const [call] = calls();
    assert.equal(call?.env.ACTIONS_ID_TOKEN_REQUEST_TOKEN, OIDC.ACTIONS_ID_TOKEN_REQUEST_TOKEN);
    assert.equal(call?.env.GITHUB_TOKEN, undefined);
    assert.equal(call?.env.UNRELATED, undefined);
    assert.match(result.stderr, /^ {4}ACTIONS_ID_TOKEN_REQUEST_TOKEN: \*\*\* done$/m);
    assert.ok(!(result.stdout + result.stderr).includes("oidc-request-token"));
  });

  it("npm older than 11.5.1: preflight and publish say so under OIDC", async () => {
    const { env } = await registries({ js: { "demo-lib": ["0.9.0"] } });
    const { root, path } = standIns(JS);
    writeFileSync(join(root, "fakebin/npm-version"), "10.9.2\n");
    const run = (args: string[]) =>
      runPubtool(args, { cwd: root, env: { ...env, ...OIDC, PATH: path } });
    const preflight = await run(["preflight"]);
    assert.equal(preflight.code, 1);
    assert.match(preflight.stdout, /✗ npm: npm 10\.9\.2 is older than 11\.5\.1/);
    const publish = await run(["publish"]);
    assert.equal(publish.code, 1);
    assert.match(publish.stderr, /npm 10\.9\.2 is older than 11\.5\.1.*npm install -g npm@latest/);
  });

  it("private repository or self-hosted runner: provenance skipped with a note", async () => {
    const { env } = await registries({ js: { "demo-lib": ["0.9.0"] } });
    const { root, calls, path } = standIns(JS);
    writeFileSync(
      join(root, "event.json"),
      JSON.stringify({ repository: { private: true, visibility: "private" } }),
    );
    const result = await runPubtool(["publish"], {
      cwd: root,
      env: { ...env, ...OIDC, PATH: path, GITHUB_EVENT_PATH: join(root, "event.json") },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /provenance skipped: the repository is private/);
    const [call] = calls();
    assert.ok(!call?.args.includes("--provenance"));
    assert.equal(call?.env.NPM_CONFIG_PROVENANCE, "false");
    const hosted = await runPubtool(["preflight"], {
      cwd: root,
      env: { ...env, ...OIDC, PATH: path, RUNNER_ENVIRONMENT: "self-hosted" },
    });
    assert.match(hosted.stdout, /- provenance: skipped: the job runs on a self-hosted runner/);
  });

  it("first publish: jsreg explains and falls back to the token; without one it fails clearly", async () => {
    const { env } = await registries();
    const { root, calls, path } = standIns(JS);
    const withToken = await runPubtool(["publish"], {
      cwd: root,
      env: { ...env, ...OIDC, PATH: path, JSREG_AUTH_TOKEN: "js-token-value" },
    });
    assert.equal(withToken.code, 0, withToken.stderr);
    assert.match(
      withToken.stdout,
      /first publish: jsreg trusted publishing needs an existing package/,
    );
    const [call] = calls();
    assert.equal(call?.env.PUBTOOL_JSREG_TOKEN, "js-token-value");
    assert.ok(!call?.args.includes("--provenance"));
    const without = await runPubtool(["preflight"], {
      cwd: root,
      env: { ...env, ...OIDC, PATH: path },
    });
    assert.equal(without.code, 1);
    assert.match(
      without.stdout,
      /✗ first publish: the package is not on jsreg yet.*Set JSREG_AUTH_TOKEN/,
    );
  });

  it("first publish: rustreg preflight explains that the crate must exist for trusted publishing", async () => {
    const { env } = await registries();
    const { root, path } = standIns(RUST);
    const result = await runPubtool(["preflight"], {
      cwd: root,
      env: { ...env, ...OIDC, PATH: path, RUST_REGISTRY_TOKEN: "cio_long_lived" },
    });
    assert.equal(result.code, 0, result.stdout);
    assert.match(
      result.stdout,
      /- first publish: the crate is not on rustreg yet, and trusted publishing only works for an existing crate/,
    );
  });
});

describe("publish: pyreg metadata from the built distributions", { concurrency: true }, () => {
  const PY = '[[package]]\nname = "demo-py"\nkind = "pyreg"\npath = "py"\n';

  it("sends the wheel's METADATA and the sdist's PKG-INFO fields the upload API takes", async () => {
    const { pyreg, env } = await registries();
    const root = fixture(PY);
    const result = await runPubtool(["publish"], {
      cwd: root,
      env: { ...env, PYREG_API_TOKEN: "pypi-fallback-token-value" },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(pyreg.uploads.length, 2);
    for (const upload of pyreg.uploads) {
      // Byte for byte: no line ending is rewritten to CRLF on the way.
      const fields = upload.fields;
      const all = (name: string) => fields.filter(([k]) => k === name).map(([, v]) => v);
      assert.deepEqual(all("metadata_version"), ["2.1"], upload.file);
      assert.deepEqual(all("summary"), ["A demo package"]);
      assert.deepEqual(all("requires_python"), [">=3.9"]);
      assert.deepEqual(all("requires_dist"), ["requests>=2.31", 'click>=8; extra == "cli"']);
      assert.deepEqual(all("provides_extra"), ["cli"]);
      assert.equal(all("classifiers").length, 2);
      assert.deepEqual(all("project_urls"), ["Source, https://example.org/demo"]);
      assert.deepEqual(all("description_content_type"), ["text/markdown"]);
      assert.deepEqual(all("description"), ["# demo-py\n\nLong description with ünïcode.\n"]);
      assert.deepEqual(all("filetype"), [upload.file.endsWith(".whl") ? "bdist_wheel" : "sdist"]);
    }
  });

  it("a distribution whose metadata disagrees with pyproject.toml, or has none, is refused by name", async () => {
    const { pyreg, env } = await registries();
    const root = fixture(PY, {
      "py/dist/demo_py-1.2.0-py3-none-any.whl": wheel(
        PY_METADATA.replace("Version: 1.2.0", "Version: 1.1.9"),
      ),
      "py/dist/demo_py-1.2.0.tar.gz": "not gzip",
    });
    const dry = await runPubtool(["publish", "--dry-run"], { cwd: root, env });
    assert.equal(dry.code, 1);
    assert.match(
      dry.stderr,
      /demo_py-1\.2\.0-py3-none-any\.whl: its metadata says demo-py 1\.1\.9, but pyproject\.toml says demo-py 1\.2\.0/,
    );
    writeFileSync(
      join(root, "py/dist/demo_py-1.2.0-py3-none-any.whl"),
      zipSync({ "x.txt": strToU8("x") }),
    );
    rmSync(join(root, "py/dist/demo_py-1.2.0.tar.gz"));
    const none = await runPubtool(["publish"], {
      cwd: root,
      env: { ...env, PYREG_API_TOKEN: "pypi-fallback-token-value" },
    });
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no \*\.dist-info\/METADATA in the wheel; rebuild it/);
    assert.equal(pyreg.uploads.length, 0);
  });
});

describe(
  "publish: rustreg token variables (real cargo, loopback registry)",
  { concurrency: true },
  () => {
    const RUST =
      '[[package]]\nname = "pubtool-demo-core"\nkind = "rustreg"\npath = "crates/core"\n';

    it("CARGO_REGISTRY_TOKEN, as the registry's auth action README wires it, is accepted", async () => {
      const { env, rustreg } = await registries({ rust: { "pubtool-demo-core": ["0.0.1"] } });
      const root = fixture(RUST);
      const cargoToken = "cio_cargo_variable_token_0123456789";
      const preflight = await runPubtool(["preflight"], {
        cwd: root,
        env: { ...env, CARGO_REGISTRY_TOKEN: cargoToken },
      });
      assert.equal(preflight.code, 0, preflight.stdout + preflight.stderr);
      assert.match(
        preflight.stdout,
        /✓ auth: CARGO_REGISTRY_TOKEN \(set by the registry's auth action/,
      );
      const result = await runPubtool(["publish"], {
        cwd: root,
        env: { ...env, CARGO_REGISTRY_TOKEN: cargoToken },
      });
      assert.equal(result.code, 0, result.stdout + result.stderr);
      assert.equal(rustreg.published.get("pubtool-demo-core")?.[0]?.authorization, cargoToken);
      assert.ok(!(result.stdout + result.stderr).includes(cargoToken));
    });

    it("with both set, RUST_REGISTRY_TOKEN wins and the other is named as ignored", async () => {
      const { env, rustreg } = await registries({ rust: { "pubtool-demo-core": ["0.0.1"] } });
      const result = await runPubtool(["publish"], {
        cwd: fixture(RUST),
        env: { ...env, RUST_REGISTRY_TOKEN: "rust-token-value", CARGO_REGISTRY_TOKEN: "cio_other" },
      });
      assert.equal(result.code, 0, result.stdout + result.stderr);
      assert.match(
        result.stdout,
        /with RUST_REGISTRY_TOKEN .*; CARGO_REGISTRY_TOKEN is also set and ignored/,
      );
      assert.equal(
        rustreg.published.get("pubtool-demo-core")?.[0]?.authorization,
        "rust-token-value",
      );
    });

    it("with neither, publish names both variables and the auth action", async () => {
      const { env } = await registries({ rust: { "pubtool-demo-core": ["0.0.1"] } });
      const result = await runPubtool(["publish"], {
        cwd: fixture(RUST),
        env: {
          ...env,
          ACTIONS_ID_TOKEN_REQUEST_URL: "http://127.0.0.1:9/token",
          ACTIONS_ID_TOKEN_REQUEST_TOKEN: "request-token",
        },
      });
      assert.equal(result.code, 1);
      assert.match(
        result.stderr,
        /neither RUST_REGISTRY_TOKEN nor CARGO_REGISTRY_TOKEN is set: run the registry's authentication action \(v1\) before pubtool publish and pass its token output as RUST_REGISTRY_TOKEN/,
      );
    });
  },
);

describe("publish: pyreg first publish and registry messages", { concurrency: true }, () => {
  const PY = '[[package]]\nname = "demo-py"\nkind = "pyreg"\npath = "py"\n';
  const OIDC_GOOD = (url: string) => ({
    ACTIONS_ID_TOKEN_REQUEST_URL: `${url}/actions-oidc?scenario=good`,
    ACTIONS_ID_TOKEN_REQUEST_TOKEN: "request-token",
  });

  it("a new project under OIDC with PYREG_API_TOKEN set: the token publishes the first version", async () => {
    const { env, pyreg } = await registries();
    const root = fixture(PY);
    const runEnv = { ...env, ...OIDC_GOOD(pyreg.url), PYREG_API_TOKEN: TOKENS.PYREG_API_TOKEN };
    const preflight = await runPubtool(["preflight"], { cwd: root, env: runEnv });
    assert.equal(preflight.code, 0, preflight.stdout);
    assert.match(
      preflight.stdout,
      /- first publish: the project is not on pyreg yet, so this first version is published with PYREG_API_TOKEN/,
    );
    assert.match(preflight.stdout, /✓ auth: PYREG_API_TOKEN \(fallback token, first publish\)/);
    const result = await runPubtool(["publish"], { cwd: root, env: runEnv });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    const basic = `Basic ${Buffer.from(`__token__:${TOKENS.PYREG_API_TOKEN}`).toString("base64")}`;
    assert.equal(pyreg.uploads.length, 2);
    assert.ok(pyreg.uploads.every((u) => u.authorization === basic));
    assert.ok(!pyreg.requests.some((r) => r.url.startsWith("/_/oidc/mint-token")));
    assertNoSecrets(result.stdout + result.stderr);
  });

  it("a new project under OIDC without a token: OIDC is tried (a pending publisher may exist)", async () => {
    const { env, pyreg } = await registries();
    const result = await runPubtool(["publish"], {
      cwd: fixture(PY),
      env: { ...env, ...OIDC_GOOD(pyreg.url) },
    });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /OIDC works only if a pending publisher was registered/);
    const basic = `Basic ${Buffer.from("__token__:pypi-minted-token").toString("base64")}`;
    assert.ok(pyreg.uploads.every((u) => u.authorization === basic));
  });

  it("an upload error that echoes the credential is printed masked", async () => {
    const { env } = await registries({ py: { "demo-py": ["1.0.0"] } });
    // PyPI-style 403 text, quoting back the token and the Basic credentials it was sent.
    const upload = await startServer((request, response) => {
      const basic = (request.headers.authorization ?? "").replace(/^Basic /, "");
      const token = Buffer.from(basic, "base64")
        .toString("utf8")
        .replace(/^__token__:/, "");
      response.writeHead(403, { "content-type": "text/plain" });
      response.end(
        `403 Invalid or non-existent authentication information. Token ${token} (basic ${basic}) is not valid for project demo-py.`,
      );
    });
    closers.push(upload.close);
    const result = await runPubtool(["publish"], {
      cwd: fixture(PY),
      env: {
        ...env,
        PUBTOOL_PYREG_UPLOAD_URL: `${upload.url}/legacy/`,
        PYREG_API_TOKEN: TOKENS.PYREG_API_TOKEN,
      },
    });
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /failed \(HTTP 403\): 403 Invalid or non-existent authentication information\. Token \*\*\* \(basic \*\*\*\) is not valid/,
    );
    const basic = Buffer.from(`__token__:${TOKENS.PYREG_API_TOKEN}`).toString("base64");
    assert.ok(!(result.stdout + result.stderr).includes(basic));
    assertNoSecrets(result.stdout + result.stderr);
  });

  it("a refused mint-token exchange that echoes the OIDC token is printed masked", async () => {
    const { env } = await registries();
    const pyreg = await startServer((request, response, base) => {
      const url = new URL(request.url, base);
      if (url.pathname === "/pypi/demo-py/json") return sendJson(response, 200, { info: {} });
      if (url.pathname.startsWith("/pypi/")) return sendJson(response, 404, {});
      if (url.pathname === "/_/oidc/audience") return sendJson(response, 200, { audience: "a" });
      if (url.pathname === "/actions-oidc")
        return sendJson(response, 200, { value: "eyJ.jwt-value.sig" });
      const { token } = JSON.parse(request.body.toString("utf8")) as { token: string };
      return sendJson(response, 422, {
        message: "Token request failed",
        errors: [{ code: "invalid-publisher", description: `no publisher for ${token}` }],
      });
    });
    closers.push(pyreg.close);
    const result = await runPubtool(["publish"], {
      cwd: fixture(PY),
      env: {
        ...env,
        PUBTOOL_PYREG_URL: pyreg.url,
        ACTIONS_ID_TOKEN_REQUEST_URL: `${pyreg.url}/actions-oidc`,
        ACTIONS_ID_TOKEN_REQUEST_TOKEN: "request-token",
      },
    });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /refused to mint a token \(HTTP 422\): no publisher for \*\*\*/);
    assert.ok(!(result.stdout + result.stderr).includes("jwt-value"));
  });
});

describe(
  "publish and preflight --package: one package of a monorepo per job",
  { concurrency: true },
  () => {
    it("publish --package publishes only the named packages, still in dependency order", async () => {
      const { env, rustreg, pyreg, jsreg } = await registries();
      const root = fixture();
      const py = await runPubtool(["publish", "--package", "demo-py"], {
        cwd: root,
        env: { ...env, ...TOKENS },
      });
      assert.equal(py.code, 0, py.stdout + py.stderr);
      assert.equal(pyreg.uploads.length, 2);
      assert.equal(jsreg.publishes.length, 0);
      assert.equal(rustreg.published.size, 0);
      assert.doesNotMatch(py.stdout, /demo-lib|demo-app|pubtool-demo-core/);

      const js = await runPubtool(
        ["publish", "--package", "demo-app", "--package", "jsreg:demo-lib"],
        { cwd: root, env: { ...env, ...TOKENS } },
      );
      assert.equal(js.code, 0, js.stdout + js.stderr);
      assert.deepEqual(
        jsreg.publishes.map((p) => p.name),
        ["demo-lib", "demo-app"],
      );
      assert.equal(rustreg.published.size, 0);
    });

    it("preflight --package reports only the named package", async () => {
      const { env } = await registries();
      const result = await runPubtool(["preflight", "--json", "--package", "pubtool-demo-core"], {
        cwd: fixture(),
        env: { ...env, ...TOKENS },
      });
      assert.equal(result.code, 0, result.stdout + result.stderr);
      const report = JSON.parse(result.stdout) as { packages: { name: string }[] };
      assert.deepEqual(
        report.packages.map((p) => p.name),
        ["pubtool-demo-core"],
      );
    });

    it("a --package that names no package is a usage error listing the packages", async () => {
      const { env, jsreg } = await registries();
      for (const command of ["publish", "preflight"]) {
        const result = await runPubtool([command, "--package", "demo-pyy"], {
          cwd: fixture(),
          env: { ...env, ...TOKENS },
        });
        assert.equal(result.code, 2, command);
        assert.equal(
          result.stderr,
          "pubtool: --package demo-pyy: no such package in pubtool.toml (it has: demo-app, demo-lib, pubtool-demo-core, demo-py)\n",
        );
      }
      const empty = await runPubtool(["publish", "--package", ""], { cwd: fixture(), env });
      assert.equal(empty.code, 2);
      assert.match(empty.stderr, /--package needs a package name/);
      const doctor = await runPubtool(["doctor", "--package", "demo-py"], { cwd: fixture(), env });
      assert.equal(doctor.code, 2);
      assert.equal(jsreg.publishes.length, 0);
    });
  },
);
