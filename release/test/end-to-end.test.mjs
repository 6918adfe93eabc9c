// The release, end to end and offline: `npm run release:build`, then `pubtool publish` of all
// five packages to local registries on 127.0.0.1 (pubtool's own fakes of a sparse cargo
// registry, the Python upload API and the npm registry protocol), then each installed from
// there as a user would: `cargo install dirq --features cli --registry <local>` and queries
// through that binary, `npm install` of the three npm packages, `pip install` of the wheel the
// Python registry received. Expects the npm packages built (`npm run build`), as `npm test`
// does before it. Needs cargo (1.68 or later: sparse registries), npm and python3 with venv.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync } from "node:fs";
import { readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { gunzipSync, gzipSync } from "node:zlib";
import {
  startJsreg,
  startPyreg,
  startRustreg,
} from "../../packages/pubtool/dist/test/fake-registries.js";
import { exec, lockedThirdParty, NODE_DIR, npmCache, REPO, rustupHome } from "./support.mjs";

const VERSION = JSON.parse(readFileSync(join(REPO, "packages/dirq/package.json"), "utf8")).version;
const PYTHON = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
const RELEASE = join(REPO, "dist", "release");

describe("a release, published with pubtool and installed from local registries", () => {
  let work;
  let registries;
  let thirdParty;
  let cache;
  let cargoBin;
  let tree;
  let userEnv;
  const timings = {};

  /** Seconds a step took, for the log (never asserted: the machine is shared). */
  async function timed(label, step) {
    const started = process.hrtime.bigint();
    const result = await step();
    timings[label] = Number(process.hrtime.bigint() - started) / 1e9;
    return result;
  }

  /** A user's environment: their own HOME, the local npm registry, npm's cache, Node on PATH. */
  function userEnvironment(extra = {}) {
    return {
      PATH: [join(work, "cargo-root", "bin"), NODE_DIR, "/usr/local/bin", "/usr/bin", "/bin"].join(
        ":",
      ),
      HOME: join(work, "home"),
      XDG_CACHE_HOME: join(work, "home", ".cache"),
      npm_config_registry: `${registries.jsreg.url}/`,
      npm_config_cache: cache,
      npm_config_update_notifier: "false",
      DIRQ_PROGRESS: "never",
      ...extra,
    };
  }

  const dirq = (args, extra = {}, options = {}) =>
    exec(cargoBin, args, { cwd: tree, env: { ...userEnv, ...extra }, ...options });

  before(async () => {
    work = mkdtempSync(join(tmpdir(), "dirq-release-"));
    mkdirSync(join(work, "home"));
    cache = await npmCache();
    let jsregUrl = "";
    thirdParty = await lockedThirdParty(() => jsregUrl);
    const [rustreg, pyreg, jsreg] = await Promise.all([
      startRustreg(),
      startPyreg(),
      startJsreg({}, thirdParty),
    ]);
    jsregUrl = jsreg.url;
    registries = { rustreg, pyreg, jsreg };
    userEnv = userEnvironment();
    // As the release workflow builds: dirq is not on the registry yet, so the build's own
    // tarball is the one recorded.
    const build = await timed("release build", () =>
      exec(
        process.execPath,
        [join(REPO, "release", "build.mjs"), "--skip-npm-build", "--pin-published"],
        { env: { ...process.env, npm_config_registry: `${jsreg.url}/` } },
      ),
    );
    assert.equal(build.code, 0, `release build failed:\n${build.stdout}\n${build.stderr}`);
    tree = join(work, "tree");
    mkdirSync(join(tree, "docs"), { recursive: true });
    writeFileSync(join(tree, "README.md"), "# hello\n");
    writeFileSync(join(tree, "docs", "guide.md"), "guide\n");
    cargoBin = join(work, "cargo-root", "bin", "dirq");
  });

  after(async () => {
    await Promise.all(Object.values(registries ?? {}).map((registry) => registry.close()));
    rmSync(work, { recursive: true, force: true });
    process.stdout.write(
      `# release end to end, seconds: ${Object.entries(timings)
        .map(([label, seconds]) => `${label} ${seconds.toFixed(1)}`)
        .join(", ")}; npm tarballs fetched upstream: ${thirdParty?.fetchedUpstream.length}\n`,
    );
  });

  test("pubtool publish sends all five packages to their registries", async () => {
    const { rustreg, pyreg, jsreg } = registries;
    const rustup = rustupHome();
    const published = await timed("pubtool publish", () =>
      exec(join(REPO, "node_modules", ".bin", "pubtool"), ["publish"], {
        env: {
          PATH: process.env.PATH,
          HOME: join(work, "home"),
          ...(rustup ? { RUSTUP_HOME: rustup } : {}),
          CARGO_HOME: join(work, "publish-cargo-home"),
          PUBTOOL_RUSTREG_URL: rustreg.url,
          PUBTOOL_RUSTREG_INDEX: rustreg.index,
          PUBTOOL_PYREG_URL: pyreg.url,
          PUBTOOL_JSREG_URL: jsreg.url,
          PUBTOOL_GITHUB_API_URL: "http://127.0.0.1:9",
          RUST_REGISTRY_TOKEN: "cio-local-token",
          PYREG_API_TOKEN: "pypi-local-token",
          JSREG_AUTH_TOKEN: "js-token-value",
        },
      }),
    );
    assert.equal(published.code, 0, `${published.stdout}\n${published.stderr}`);
    assert.deepEqual(
      jsreg.publishes.map((entry) => `${entry.name}@${entry.versions.join()}`),
      ["dirq", "pubtool", "lmclient"].map((name) => `${name}@${VERSION}`),
    );
    assert.deepEqual(pyreg.uploads.map((upload) => upload.file).sort(), [
      `dirq-${VERSION}-py3-none-any.whl`,
      `dirq-${VERSION}.tar.gz`,
    ]);
    assert.deepEqual(
      rustreg.published.get("dirq")?.map((entry) => entry.version),
      [VERSION],
    );
    // pubtool published the tarball the build packed: the bytes the launchers pin.
    const record = JSON.parse(readFileSync(join(RELEASE, "dirq-npm.json"), "utf8"));
    const tarball = jsreg.tarballs.get(`/dirq/-/dirq-${VERSION}.tgz`);
    assert.ok(tarball, "the registry holds dirq's tarball");
    const integrity = `sha512-${createHash("sha512").update(tarball).digest("base64")}`;
    assert.equal(integrity, record.integrity);
  });

  test("cargo install dirq --features cli --registry <local> gives a dirq that answers", async () => {
    const cargoHome = join(work, "cargo-home");
    mkdirSync(cargoHome);
    // As a user of a private registry sets it up: a named registry in cargo's config.
    writeFileSync(
      join(cargoHome, "config.toml"),
      `[registries.local]\nindex = "${registries.rustreg.index}"\n`,
    );
    const rustup = rustupHome();
    const args = ["install", "dirq", "--features", "cli", "--registry", "local"];
    const installed = await timed("cargo install", () =>
      exec("cargo", [...args, "--root", join(work, "cargo-root")], {
        cwd: work,
        env: {
          PATH: process.env.PATH,
          HOME: join(work, "home"),
          CARGO_HOME: cargoHome,
          ...(rustup ? { RUSTUP_HOME: rustup } : {}),
        },
      }),
    );
    assert.equal(installed.code, 0, installed.stderr);
    assert.ok(existsSync(cargoBin), installed.stderr);

    const first = await timed("first run (installs the npm release)", () =>
      dirq(["SELECT path, size FROM './' ORDER BY path"]),
    );
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(JSON.parse(first.stdout), [
      { path: "README.md", size: 8 },
      { path: "docs/guide.md", size: 6 },
    ]);
    const prefix = join(work, "home", ".cache", "dirq", "npm", VERSION);
    assert.match(
      first.stderr,
      new RegExp(
        `^dirq: first run: installing the dirq CLI \\(npm package dirq@${VERSION}\\) into ${prefix} with npm`,
      ),
    );
    const manifest = JSON.parse(
      readFileSync(join(prefix, "node_modules", "dirq", "package.json"), "utf8"),
    );
    assert.equal(manifest.version, VERSION);
    assert.deepEqual(
      readdirSync(join(work, "home", ".cache", "dirq", "npm")),
      [VERSION],
      "no staging folder is left",
    );
  });

  test("a later run starts the installed CLI with no npm call", async () => {
    const requestsBefore = registries.jsreg.requests.length;
    // An npm that fails if it is run at all.
    const trap = join(work, "npm-trap");
    writeFileSync(trap, "#!/bin/sh\necho npm was run >&2\nexit 99\n");
    chmodSync(trap, 0o755);
    const second = await timed("second run", () =>
      dirq(["SELECT count(*) AS files FROM './'"], { DIRQ_NPM: trap }),
    );
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stdout, '[{"files":2}]\n');
    assert.equal(second.stderr, "");
    assert.equal(registries.jsreg.requests.length, requestsBefore);
  });

  test("two first runs at once leave one good install", async () => {
    const fresh = { DIRQ_CACHE_DIR: join(work, "race-cache") };
    const runs = await timed("two concurrent first runs", () =>
      Promise.all([1, 2].map((n) => dirq([`SELECT ${n} AS n`], fresh))),
    );
    runs.forEach((run, index) => {
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout, `[{"n":${index + 1}}]\n`);
    });
    assert.deepEqual(readdirSync(join(work, "race-cache", "npm")), [VERSION]);
    const later = await dirq(["SELECT 3 AS n"], fresh);
    assert.equal(later.stderr, "");
    assert.equal(later.stdout, '[{"n":3}]\n');
  });

  test("a registry serving other bytes for the release installs nothing", async () => {
    // The same package, compressed anew: valid, but not the tarball the crate was built for.
    const genuine = readFileSync(join(RELEASE, `dirq-${VERSION}.tgz`));
    const other = gzipSync(gunzipSync(genuine), { level: 1 });
    const otherIntegrity = `sha512-${createHash("sha512").update(other).digest("base64")}`;
    let url = "";
    const tampered = await startJsreg(
      {},
      {
        packument: (name) =>
          name === "dirq"
            ? {
                name,
                "dist-tags": { latest: VERSION },
                versions: {
                  [VERSION]: {
                    name,
                    version: VERSION,
                    dist: {
                      tarball: `${url}/dirq/-/dirq-${VERSION}.tgz`,
                      integrity: otherIntegrity,
                    },
                  },
                },
              }
            : thirdParty.packument(name),
        tarball: async (path) => (path === `/dirq/-/dirq-${VERSION}.tgz` ? other : undefined),
      },
    );
    url = tampered.url;
    try {
      const cacheDir = join(work, "tampered-cache");
      const run = await dirq(["SELECT 1"], {
        DIRQ_CACHE_DIR: cacheDir,
        npm_config_registry: `${tampered.url}/`,
      });
      assert.equal(run.code, 1, run.stderr);
      assert.equal(run.stdout, "");
      assert.match(
        run.stderr,
        new RegExp(
          `dirq: the npm registry served a dirq@${VERSION} tarball whose integrity is ${otherIntegrity.replace(/[+/]/g, "\\$&")}, not sha512-`,
        ),
      );
      assert.deepEqual(readdirSync(join(cacheDir, "npm")), [], "nothing installed");
    } finally {
      await tampered.close();
    }
  });

  test("arguments, stdin, exit code and signals are the CLI's own (exec)", async () => {
    const script = join(work, "fake-cli.cjs");
    writeFileSync(
      script,
      [
        "if (process.argv[2] === 'wait') {",
        "  process.stdout.write(String(process.pid) + '\\n');",
        "  setInterval(() => {}, 1000);",
        "} else {",
        "  const input = require('fs').readFileSync(0, 'utf8');",
        "  process.stdout.write(JSON.stringify({ pid: process.pid, args: process.argv.slice(2), input }));",
        "  process.exitCode = 7;",
        "}",
      ].join("\n"),
    );
    const env = { DIRQ_BIN: script };
    const args = ["SELECT 'two words'", "--", "-x", "ü"];
    const run = await dirq(args, env, { input: "from stdin" });
    assert.equal(run.code, 7, run.stderr);
    const seen = JSON.parse(run.stdout);
    assert.deepEqual(seen.args, args);
    assert.equal(seen.input, "from stdin");
    assert.equal(seen.pid, run.pid, "the launcher became the CLI (same process)");

    const waiting = spawn(cargoBin, ["wait"], {
      cwd: tree,
      env: { ...userEnv, ...env },
      stdio: ["pipe", "pipe", "inherit"],
    });
    const pid = await new Promise((resolvePid) =>
      waiting.stdout.setEncoding("utf8").once("data", (line) => resolvePid(Number(line))),
    );
    assert.equal(pid, waiting.pid);
    const ended = new Promise((resolveEnd) =>
      waiting.on("close", (code, signal) => resolveEnd({ code, signal })),
    );
    waiting.kill("SIGTERM");
    assert.deepEqual(await ended, { code: null, signal: "SIGTERM" });
  });

  test("no Node.js, an old one, no npm or an old one: an error that says what to install", async () => {
    const empty = { DIRQ_CACHE_DIR: join(work, "empty-cache") };
    const expectError = (run, pattern) => {
      assert.equal(run.code, 1, run.stderr);
      assert.equal(run.stdout, "");
      assert.match(run.stderr, pattern);
    };
    const noNode = await dirq(["SELECT 1"], { ...empty, PATH: "/usr/bin/none" });
    expectError(
      noNode,
      /^dirq: Node\.js not found \(no node on PATH\): dirq's CLI needs Node\.js 20\.11 or later, with npm: install Node\.js 20\.11 or later \(the LTS from https:\/\/nodejs\.org/,
    );
    const stub = (name, text) => {
      const file = join(work, name);
      writeFileSync(file, `#!/bin/sh\necho ${text}\n`);
      chmodSync(file, 0o755);
      return file;
    };
    const oldNode = await dirq(["SELECT 1"], { DIRQ_NODE: stub("node18", "v18.19.0") });
    expectError(
      oldNode,
      /^dirq: Node\.js 18\.19\.0 at .*node18 is too old: dirq's CLI needs 20\.11 or later; upgrade it, or set DIRQ_NODE to a newer node\n$/,
    );
    const nodeOnly = join(work, "node-only");
    mkdirSync(nodeOnly);
    symlinkSync(process.execPath, join(nodeOnly, "node"));
    const noNpm = await dirq(["SELECT 1"], { ...empty, PATH: nodeOnly });
    expectError(
      noNpm,
      /^dirq: npm not found: on its first run dirq installs its CLI \(the npm package dirq@/,
    );
    const oldNpm = await dirq(["SELECT 1"], { ...empty, DIRQ_NPM: stub("npm7", "7.24.2") });
    expectError(
      oldNpm,
      /^dirq: npm 7\.24\.2 at .*npm7 is too old: dirq installs its CLI with npm 8 or later/,
    );
    const missingBin = await dirq(["SELECT 1"], { DIRQ_BIN: join(work, "nope.cjs") });
    expectError(missingBin, /^dirq: DIRQ_BIN is set to .*nope\.cjs, which is not a file/);
  });

  test("npm install of dirq, pubtool and lmclient from the local registry", async () => {
    const project = join(work, "npm-user");
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), '{ "name": "npm-user", "private": true }\n');
    const installed = await timed("npm install of the three", () =>
      exec(
        "npm",
        ["install", "--no-audit", "--no-fund", "--prefer-offline", "dirq", "pubtool", "lmclient"],
        { cwd: project, env: userEnv },
      ),
    );
    assert.equal(installed.code, 0, installed.stderr);
    const lock = JSON.parse(readFileSync(join(project, "package-lock.json"), "utf8"));
    const record = JSON.parse(readFileSync(join(RELEASE, "dirq-npm.json"), "utf8"));
    assert.equal(lock.packages["node_modules/dirq"].integrity, record.integrity);
    for (const name of ["dirq", "pubtool", "lmclient"]) {
      assert.equal(lock.packages[`node_modules/${name}`].version, VERSION);
    }
    const bin = join(project, "node_modules", ".bin");
    const query = await exec(join(bin, "dirq"), ["SELECT count(*) AS files FROM './'"], {
      cwd: tree,
      env: userEnv,
    });
    assert.equal(query.stdout, '[{"files":2}]\n', query.stderr);
    const pubtool = await exec(join(bin, "pubtool"), ["--version"], { cwd: project, env: userEnv });
    assert.match(pubtool.stdout, new RegExp(VERSION));
    const lmclient = await exec(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        "import { CompatLM } from 'lmclient'; console.log(typeof CompatLM)",
      ],
      { cwd: project, env: userEnv },
    );
    assert.equal(lmclient.stdout, "function\n", lmclient.stderr);
  });

  test("pip install of the wheel the Python registry received", async () => {
    const upload = registries.pyreg.uploads.find((entry) => entry.file.endsWith(".whl"));
    assert.ok(upload, "a wheel was uploaded");
    assert.deepEqual(upload.content, readFileSync(join(RELEASE, upload.file)));
    const wheel = join(work, upload.file);
    writeFileSync(wheel, upload.content);
    // The launcher pins the npm release the registry received, as the crate does.
    const read =
      "import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).decode())";
    const pinned = await exec(PYTHON, ["-c", read, wheel, "dirq_launcher/npm-package.json"]);
    assert.equal(pinned.code, 0, pinned.stderr);
    const release = JSON.parse(readFileSync(join(RELEASE, "dirq-npm.json"), "utf8"));
    assert.deepEqual(JSON.parse(pinned.stdout), release);
    const venv = join(work, "venv");
    const made = await exec(PYTHON, ["-m", "venv", venv], { env: userEnv });
    assert.equal(made.code, 0, made.stderr);
    const pip = await timed("pip install", () =>
      exec(join(venv, "bin", "pip"), ["install", "--no-index", "-q", wheel], { env: userEnv }),
    );
    assert.equal(pip.code, 0, pip.stderr);
    // The same cache folder as the cargo launcher: the Python launcher finds the CLI there.
    const query = await exec(join(venv, "bin", "dirq"), ["SELECT count(*) AS files FROM './'"], {
      cwd: tree,
      env: userEnv,
    });
    assert.equal(query.code, 0, query.stderr);
    assert.equal(query.stdout, '[{"files":2}]\n');
    assert.equal(query.stderr, "");
  });
});
