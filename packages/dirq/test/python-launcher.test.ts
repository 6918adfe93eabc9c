import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  chmodSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { gunzipSync, gzipSync } from "node:zlib";
import { DIRQ_BIN, removeTree } from "./helpers.js";

const exec = promisify(execFile);

/** A file's sha512 integrity, as npm writes it. */
function integrityOf(path: string): string {
  return `sha512-${createHash("sha512").update(readFileSync(path)).digest("base64")}`;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

const REPO = fileURLToPath(new URL("../../../..", import.meta.url));
const LAUNCHER_SOURCE = join(REPO, "python");
const PLUGIN_SOURCE = join(REPO, "packages", "dirq", "test", "fixtures", "python-plugin");
const NODE_DIR = dirname(process.execPath);

/**
 * Debian's python3 has setuptools and wheel (python3-setuptools, python3-wheel; `npm test`
 * installs them when missing); another interpreter can be chosen with DIRQ_TEST_PYTHON.
 */
const PYTHON =
  process.env.DIRQ_TEST_PYTHON ?? (existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3");

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Copies a source folder without build output (pip builds in the folder it is given). */
function copySource(from: string, to: string): string {
  cpSync(from, to, {
    recursive: true,
    filter: (path) => !["build", "dist"].includes(basename(path)) && !path.endsWith(".egg-info"),
  });
  return to;
}

function writeFiles(dir: string, files: Record<string, string>): string {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

/** A plugin distribution whose entry point is broken in one of the two ways. */
function brokenPlugin(dir: string, name: string, module: string, shipped: string): string {
  return writeFiles(dir, {
    "pyproject.toml": `[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "${name}"
version = "1.0.0"

[project.entry-points.dirq]
broken = "${module}"

[tool.setuptools]
packages = ["${shipped}"]
`,
    [`${shipped}/__init__.py`]: "",
  });
}

describe("Python launcher, installed in a venv", { timeout: 900_000 }, () => {
  let work: string;
  let venvBin: string;
  let data: string;
  let baseEnv: NodeJS.ProcessEnv;

  const pip = (...args: string[]) =>
    exec(join(venvBin, "pip"), [...args, "--no-index", "--no-build-isolation", "-q"], {
      cwd: work,
      maxBuffer: 1 << 24,
    });
  const pipUninstall = (name: string) =>
    exec(join(venvBin, "pip"), ["uninstall", "-y", "-q", name]);

  async function dirq(
    args: string[],
    env: NodeJS.ProcessEnv = {},
    cwd: string = data,
  ): Promise<Outcome> {
    try {
      const { stdout, stderr } = await exec(join(venvBin, "dirq"), args, {
        cwd,
        env: { ...baseEnv, ...env },
        maxBuffer: 1 << 24,
      });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  }

  function assertLauncherError(outcome: Outcome, pattern: RegExp): void {
    assert.equal(outcome.code, 1, outcome.stderr);
    assert.equal(outcome.stdout, "");
    assert.match(outcome.stderr, /^dirq: /);
    assert.doesNotMatch(outcome.stderr, /Traceback/);
    assert.match(outcome.stderr, pattern);
  }

  let tarball: string;

  before(async () => {
    work = mkdtempSync(join(tmpdir(), "dirq-python-"));
    await exec(PYTHON, ["-m", "venv", "--system-site-packages", join(work, "venv")]);
    venvBin = join(work, "venv", "bin");
    // The npm tarball this launcher pins, as the release build records it (npm-package.json):
    // it stands in for the registry's dirq@<version>.
    const packed = join(work, "packed");
    mkdirSync(packed);
    const { stdout } = await exec("npm", ["pack", "--silent", "--pack-destination", packed], {
      cwd: fileURLToPath(new URL("../..", import.meta.url)),
      maxBuffer: 1 << 24,
    });
    tarball = join(packed, stdout.trim().split("\n").pop() ?? "");
    const launcher = copySource(LAUNCHER_SOURCE, join(work, "launcher"));
    const record = { name: "dirq", version: "0.1.0", integrity: integrityOf(tarball) };
    writeFileSync(
      join(launcher, "src", "dirq_launcher", "npm-package.json"),
      JSON.stringify(record),
    );
    const plugin = copySource(PLUGIN_SOURCE, join(work, "plugin"));
    await pip("install", launcher, plugin);
    data = writeFiles(join(work, "data"), {
      "app.ini": "[server]\nport = 80\nhost = x\n[client]\nretries = 3\n",
      "user.toml": `[[table]]\nname = "ini"\nglob = "*.ini"\non-file = "cat {path}"\n`,
    });
    baseEnv = {
      ...process.env,
      // The venv first, as an activated venv would be: the plugin's hook runs its python3.
      PATH: [venvBin, NODE_DIR, process.env.PATH ?? ""].join(":"),
      DIRQ_BIN,
      DIRQ_PROGRESS: "never",
    };
    delete baseEnv.DIRQ_NO_PLUGIN;
    delete baseEnv.DIRQ_NODE;
  });
  after(() => removeTree(work));

  test("the command line is composed as the npm launcher composes it (shared cases)", async () => {
    const cases = fileURLToPath(
      new URL("../../test/fixtures/plugin-args-cases.json", import.meta.url),
    );
    const check = `import json, sys
from dirq_launcher.plugins import take_no_plugin_flag, with_plugin_configs
data = json.load(open(sys.argv[1]))
for argv, expected in data["cases"]:
    got = with_plugin_configs(argv, data["fragments"])
    assert got == expected, (argv, got, expected)
assert take_no_plugin_flag(["SELECT 1", "--no-plugin"]) == (["SELECT 1"], True)
assert take_no_plugin_flag(["query", "--", "--no-plugin"]) == (["query", "--", "--no-plugin"], False)
print(len(data["cases"]))
`;
    const { stdout } = await exec(join(venvBin, "python"), ["-c", check, cases]);
    assert.ok(Number(stdout) >= 10, stdout);
  });

  test("a plugin's table is there, from its dirq.toml and its own hook", async () => {
    const outcome = await dirq(["SELECT section, key, value FROM ini ORDER BY section, key"]);
    assert.equal(outcome.code, 0, outcome.stderr);
    assert.deepEqual(JSON.parse(outcome.stdout), [
      { section: "client", key: "retries", value: "3" },
      { section: "server", key: "host", value: "x" },
      { section: "server", key: "port", value: "80" },
    ]);
  });

  test("fragments come after the user's -c; --no-plugin and DIRQ_NO_PLUGIN=1 turn them off", async () => {
    const clash = await dirq(["query", "SELECT 1", "-c", "user.toml"]);
    assertLauncherError(
      clash,
      /dirq\.toml: table\[0\]\.name: table 'ini' is already defined at user\.toml: table\[0\]/,
    );
    const mine = await dirq([
      "query",
      "SELECT count(*) AS n FROM ini",
      "-c",
      "user.toml",
      "--no-plugin",
    ]);
    // user.toml's own `ini` table: its hook (cat) prints INI, not JSON, so a partial scan.
    assert.equal(mine.code, 23, mine.stderr);
    assert.equal(mine.stdout, '[{"n":0}]\n');
    for (const [args, env] of [
      [["SELECT * FROM ini", "--no-plugin"], {}],
      [["SELECT * FROM ini"], { DIRQ_NO_PLUGIN: "1" }],
    ] as const) {
      assertLauncherError(await dirq([...args], env), /^dirq: no such table: ini\n$/);
    }
  });

  test("--no-plugin reaches the npm CLI too: its npm plugins are not discovered either", async () => {
    const withNpmPlugin = writeFiles(join(work, "npm-plugin-here"), {
      "node_modules/dirq-broken/package.json": JSON.stringify({
        name: "dirq-broken",
        dirq: { config: "gone.toml" },
      }),
    });
    const discovered = await dirq(["SELECT 1 AS one"], {}, withNpmPlugin);
    assertLauncherError(discovered, /plugin dirq-broken .*gone\.toml is missing/);
    const off = await dirq(["SELECT 1 AS one", "--no-plugin"], {}, withNpmPlugin);
    assert.equal(off.code, 0, off.stderr);
    assert.equal(off.stdout, '[{"one":1}]\n');
  });

  test("a plugin's python3 hook runs with the launcher's interpreter (installed as pipx does)", async () => {
    // pipx and uv link the console script into a folder on PATH; the venv's bin is not on
    // PATH, so `python3` there is the system's, which cannot import the plugin.
    const linked = join(work, "pipx-bin");
    mkdirSync(linked);
    symlinkSync(join(venvBin, "dirq"), join(linked, "dirq"));
    const pipxPath = [linked, NODE_DIR, "/usr/bin", "/bin"].join(":");
    const systemPython = await exec("python3", ["-c", "import dirq_plugin_demo"], {
      env: { ...baseEnv, PATH: pipxPath },
    }).then(
      () => "imports it",
      () => "cannot import it",
    );
    assert.equal(systemPython, "cannot import it", "the test needs a python3 without the plugin");
    const { stdout, stderr } = await exec(join(linked, "dirq"), ["SELECT count(*) AS n FROM ini"], {
      cwd: data,
      env: { ...baseEnv, PATH: pipxPath },
    });
    assert.equal(stdout, '[{"n":3}]\n', stderr);
    // The user's own python3 hooks keep the python3 on PATH, beside the plugin's.
    const own = await dirq(
      ["SELECT (SELECT exe FROM mine) AS exe, (SELECT count(*) FROM ini) AS n", "-c", "own.toml"],
      { PATH: pipxPath },
      writeFiles(join(work, "own-hook"), {
        "a.ini": "[s]\nk = v\n",
        "exe.py": "import json, sys\nprint(json.dumps([{'exe': sys.executable}]))\n",
        "own.toml": `[[table]]\nname = "mine"\nglob = "*.ini"\non-file = "python3 exe.py"\n`,
      }),
    );
    assert.equal(own.code, 0, own.stderr);
    const [row] = JSON.parse(own.stdout) as { exe: string; n: number }[];
    assert.equal(row?.n, 1);
    assert.ok(!row?.exe.startsWith(work), `the user's hook ran ${row?.exe}`);
  });

  /** A first run's environment: no dirq on PATH, the tarball `from` standing in for npm's. */
  const firstRunEnv = (cache: string, from: string) => ({
    DIRQ_BIN: "",
    PATH: [venvBin, NODE_DIR, "/usr/bin", "/bin"].join(":"),
    DIRQ_CACHE_DIR: cache,
    // Dependencies from npm's cache where it has them; npm ci caches tarballs but not the
    // registry's metadata, which a fresh machine's install still asks the registry for.
    DIRQ_NPM_PACKAGE: from,
    npm_config_prefer_offline: "true",
  });

  test("one install is enough: the first run installs the pinned npm package into the cache", async () => {
    const cache = join(work, "user-cache");
    const env = firstRunEnv(cache, tarball);
    const first = await dirq(["SELECT 1 AS one", "--no-plugin"], env);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stdout, '[{"one":1}]\n');
    assert.match(
      first.stderr,
      /^dirq: first run: installing the dirq CLI \(npm package .*\) into /,
    );
    assert.ok(existsSync(join(cache, "npm", "0.1.0", "node_modules", "dirq", "bin", "dirq.cjs")));
    const second = await dirq(["SELECT 2 AS two", "--no-plugin"], env);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stdout, '[{"two":2}]\n');
    assert.equal(second.stderr, "", "installed once");
    // Plugins work through the installed CLI too.
    const plugin = await dirq(["SELECT count(*) AS n FROM ini"], env);
    assert.equal(plugin.stdout, '[{"n":3}]\n', plugin.stderr);
  });

  test("other bytes than the pinned tarball's are refused, and nothing is installed", async () => {
    // The same package, gzipped again: another integrity, as from a mirror that rebuilt it.
    const other = join(work, "packed", "other.tgz");
    writeFileSync(other, gzipSync(gunzipSync(readFileSync(tarball)), { level: 1 }));
    const cache = join(work, "tampered-cache");
    const outcome = await dirq(["SELECT 1", "--no-plugin"], firstRunEnv(cache, other));
    assertLauncherError(
      outcome,
      new RegExp(
        `tarball whose integrity is ${escapeRegExp(integrityOf(other))}, not ${escapeRegExp(integrityOf(tarball))}, the release this launcher was built for; nothing was installed`,
      ),
    );
    assert.ok(!existsSync(join(cache, "npm", "0.1.0")), "nothing installed");
    assert.deepEqual(readdirSync(join(cache, "npm")), [], "no staging folder left");
  });

  test("a launcher without the record of its npm release installs nothing", async () => {
    const { stdout } = await exec(join(venvBin, "python"), [
      "-c",
      "import dirq_launcher, os; print(os.path.dirname(dirq_launcher.__file__))",
    ]);
    const record = join(stdout.trim(), "npm-package.json");
    const kept = readFileSync(record);
    rmSync(record);
    try {
      const outcome = await dirq(
        ["SELECT 1", "--no-plugin"],
        firstRunEnv(join(work, "unpinned-cache"), tarball),
      );
      assertLauncherError(
        outcome,
        /this launcher was built without the record of the npm release it installs \(dirq_launcher\/npm-package\.json\), so it installs nothing: set DIRQ_BIN/,
      );
    } finally {
      writeFileSync(record, kept);
    }
  });

  test("packaged with its license (in the wheel and the sdist) and its project URLs", async () => {
    const metadata = await exec(join(venvBin, "python"), [
      "-c",
      `import importlib.metadata as m, json
d = m.distribution("dirq")
print(json.dumps({"license": d.metadata["License"], "files": d.metadata.get_all("License-File"),
  "urls": d.metadata.get_all("Project-URL"),
  "shipped": [str(f) for f in d.files if f.name == "LICENSE"]}))`,
    ]);
    const found = JSON.parse(metadata.stdout) as Record<string, unknown>;
    assert.equal(found.license, "MIT");
    assert.deepEqual(found.files, ["LICENSE"]);
    assert.deepEqual(found.shipped, ["dirq-0.1.0.dist-info/LICENSE"]);
    assert.ok(
      (found.urls as string[]).some((url) => url.startsWith("Source, https://github.com/")),
      JSON.stringify(found.urls),
    );
    const sdists = join(work, "sdist");
    await exec(
      join(venvBin, "python"),
      ["-c", "import sys, setuptools.build_meta as b; b.build_sdist(sys.argv[1])", sdists],
      { cwd: join(work, "launcher") },
    );
    const { stdout: listing } = await exec("tar", ["tzf", join(sdists, "dirq-0.1.0.tar.gz")]);
    assert.ok(listing.split("\n").includes("dirq-0.1.0/LICENSE"), listing);
  });

  test("the CLI: DIRQ_BIN, else dirq on PATH (never the launcher itself), else a clear error", async () => {
    const nothing = await dirq(["SELECT 1"], {
      DIRQ_BIN: "",
      PATH: venvBin,
      DIRQ_CACHE_DIR: join(work, "empty-cache"),
    });
    assertLauncherError(
      nothing,
      /Node\.js not found \(no node on PATH\): dirq's CLI needs Node\.js 20\.11 or later, with npm: install Node\.js 20\.11 or later \(the LTS from https:\/\/nodejs\.org/,
    );
    const noNpm = join(work, "node-only");
    mkdirSync(noNpm);
    symlinkSync(process.execPath, join(noNpm, "node"));
    const withoutNpm = await dirq(["SELECT 1"], {
      DIRQ_BIN: "",
      PATH: [venvBin, noNpm].join(":"),
      DIRQ_CACHE_DIR: join(work, "empty-cache"),
    });
    assertLauncherError(withoutNpm, /npm not found: on its first run dirq installs its CLI/);
    const onPath = join(work, "on-path");
    mkdirSync(onPath);
    symlinkSync(DIRQ_BIN, join(onPath, "dirq"));
    const found = await dirq(["SELECT 2 AS two", "--no-plugin"], {
      DIRQ_BIN: "",
      PATH: [venvBin, onPath, NODE_DIR].join(":"),
    });
    assert.equal(found.code, 0, found.stderr);
    assert.equal(found.stdout, '[{"two":2}]\n');
    const missing = await dirq(["SELECT 1"], { DIRQ_BIN: join(work, "nope.js") });
    assertLauncherError(missing, /DIRQ_BIN is set to .*nope\.js, which is not a file/);
  });

  test("Node.js missing or too old is a clear error", async () => {
    const noNode = await dirq(["SELECT 1", "--no-plugin"], { PATH: venvBin });
    assertLauncherError(
      noNode,
      /Node\.js not found \(no node on PATH\): dirq's CLI needs Node\.js 20\.11 or later, with npm: install/,
    );
    const gone = await dirq(["SELECT 1"], { DIRQ_NODE: join(work, "no-node") });
    assertLauncherError(gone, /Node\.js not found \(DIRQ_NODE \(.*no-node\) does not exist\)/);
    // A stand-in for an old Node.js: it only answers --version.
    const old = join(work, "old-node");
    writeFileSync(old, "#!/bin/sh\necho v18.19.0\n");
    chmodSync(old, 0o755);
    const tooOld = await dirq(["SELECT 1"], { DIRQ_NODE: old });
    assertLauncherError(
      tooOld,
      /Node\.js 18\.19\.0 at .*old-node is too old: dirq's CLI needs 20\.11 or later/,
    );
  });

  test("a plugin missing its fragment or its module is an error naming the package", async () => {
    const noFragment = brokenPlugin(
      join(work, "p1"),
      "dirq-plugin-nofragment",
      "nofragment_mod",
      "nofragment_mod",
    );
    const noModule = brokenPlugin(
      join(work, "p2"),
      "dirq-plugin-nomodule",
      "gone_mod",
      "present_mod",
    );
    await pip("install", noFragment, noModule);
    try {
      const first = await dirq(["SELECT 1"]);
      assertLauncherError(
        first,
        /^dirq: plugin dirq-plugin-nofragment \(entry point broken = nofragment_mod\): module nofragment_mod ships no dirq\.toml/,
      );
      const off = await dirq(["SELECT 1 AS one"], { DIRQ_NO_PLUGIN: "1" });
      assert.equal(off.stdout, '[{"one":1}]\n');
      // Commands that read no config never discover, so a broken plugin cannot break them.
      for (const args of [["--help"], ["server", "--help"], ["query", "-h"], ["--version"]]) {
        const outcome = await dirq(args);
        assert.equal(outcome.code, 0, `${args.join(" ")}: ${outcome.stderr}`);
        assert.notEqual(outcome.stdout, "");
      }
      const init = await dirq(["init", "--output", join(work, "starter.toml")]);
      assert.equal(init.code, 0, init.stderr);
      assert.ok(existsSync(join(work, "starter.toml")));
      await pipUninstall("dirq-plugin-nofragment");
      const second = await dirq(["SELECT 1"]);
      assertLauncherError(
        second,
        /^dirq: plugin dirq-plugin-nomodule \(entry point broken = gone_mod\): module gone_mod is not installed/,
      );
    } finally {
      await pipUninstall("dirq-plugin-nofragment").catch(() => undefined);
      await pipUninstall("dirq-plugin-nomodule").catch(() => undefined);
    }
    const healed = await dirq(["SELECT count(*) AS n FROM ini"]);
    assert.equal(healed.stdout, '[{"n":3}]\n');
  });
});
