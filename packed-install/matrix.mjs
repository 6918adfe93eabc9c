#!/usr/bin/env node
// The packed-install matrix (`npm run test:packed`, the last step of `npm test`): packs dirq,
// pubtool and lmclient as `npm publish` would, installs the three tarballs into a clean prefix
// per Node version (dependencies from the npm registry or npm's cache), and runs the smoke
// suite (smoke.test.mjs) under each of those Nodes. It checks the tarballs' contents once.
//
// Node binaries come from the npm registry only: the `node-<platform>-<arch>` package of each
// version (the package `npm i node@X` installs), kept in .cache/node/ of this checkout (made on
// first use, git-ignored) so a second run downloads nothing. The versions are in
// node-versions.json; `node packed-install/matrix.mjs 22.23.3` runs the given ones only. Each
// tarball is also checked by publint --strict and arethetypeswrong (lintTarball), and
// man-pages.mjs installs dirq and pubtool globally with npm 10.2.4 (Node 20.11's) and this
// machine's npm to see where their man pages go.
// Versions install, and their suites run, one after another, and so do the man-page installs:
// each install unpacks SQLite's binding package (about 120 MB with every platform's prebuilt
// addon), and on a 2-core machine that runs the other suites beside this one, installs side by
// side cost several times their CPU time alone (bench/notes/ci-time.md). The
// `--ignore-scripts` install is made on the floor and the newest version only: what it checks
// (the addon found with no install script run) does not change between them.
//
// Expects the packages built (`npm run build`), as `npm test` does before it.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, posix, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { checkManPages } from "./man-pages.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, "..");
const NODE_CACHE = join(REPO, ".cache", "node");
const PACKAGES = ["dirq", "pubtool", "lmclient"];
const STEP_TIMEOUT_MS = 15 * 60_000;

const versions =
  process.argv.length > 2
    ? process.argv.slice(2)
    : JSON.parse(readFileSync(join(HERE, "node-versions.json"), "utf8")).versions;

/** Runs a program to its end; never throws on a non-zero exit. */
function exec(file, args, { cwd = REPO, env = process.env } = {}) {
  return new Promise((resolvePromise) => {
    const child = spawn(file, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), STEP_TIMEOUT_MS);
    child.on("error", (error) => {
      clearTimeout(timer);
      resolvePromise({ code: -1, stdout, stderr: `${stderr}${error.message}\n` });
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code: code ?? `killed by ${signal}`, stdout, stderr });
    });
  });
}

const npmArgs = ["--no-audit", "--no-fund", "--loglevel=warn"];

const nodeBinaries = new Map();
/** The Node binary of one version, fetched at most once per run (see fetchNodeBinary). */
function nodeBinary(version) {
  if (!nodeBinaries.has(version)) nodeBinaries.set(version, fetchNodeBinary(version));
  return nodeBinaries.get(version);
}

/** The Node binary of one version: this one when it matches, else the npm registry's. */
async function fetchNodeBinary(version) {
  if (process.version === `v${version}`) return process.execPath;
  const platformPackage = `node-${process.platform}-${process.arch}`;
  const folder = join(NODE_CACHE, version);
  const binary = join(folder, "node_modules", platformPackage, "bin", "node");
  if (existsSync(binary)) {
    const probe = await exec(binary, ["--version"]);
    if (probe.stdout.trim() === `v${version}`) return binary;
  }
  // Installed beside its final place and renamed, so an interrupted run leaves no half binary.
  const staging = `${folder}.${process.pid}.tmp`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const installed = await exec("npm", [
    "install",
    "--prefix",
    staging,
    "--no-save",
    "--no-package-lock",
    "--ignore-scripts",
    ...npmArgs,
    `${platformPackage}@${version}`,
  ]);
  if (installed.code !== 0) {
    rmSync(staging, { recursive: true, force: true });
    throw new Error(`npm could not install ${platformPackage}@${version}:\n${installed.stderr}`);
  }
  rmSync(folder, { recursive: true, force: true });
  renameSync(staging, folder);
  return binary;
}

/** `npm pack` of the three packages: their tarballs and file lists. */
async function pack(destination) {
  const workspaces = PACKAGES.flatMap((name) => ["-w", `packages/${name}`]);
  const packed = await exec("npm", [
    "pack",
    "--json",
    "--pack-destination",
    destination,
    ...workspaces,
    ...npmArgs,
  ]);
  if (packed.code !== 0) throw new Error(`npm pack failed:\n${packed.stderr}`);
  return JSON.parse(packed.stdout).map((entry) => ({
    name: entry.name,
    tarball: join(destination, entry.filename),
    files: entry.files.map((file) => file.path),
    size: entry.size,
    unpackedSize: entry.unpackedSize,
  }));
}

/**
 * What every tarball must hold and must not: its license, no source map naming a source that
 * is not shipped beside it, and no file pointing at a map that is not (a debugger would show
 * nothing, a bundler would warn).
 */
function tarballProblems({ name, files }) {
  const problems = [];
  const shipped = new Set(files);
  if (!shipped.has("LICENSE")) problems.push(`${name}: no LICENSE in the tarball`);
  for (const file of files.filter((path) => path.endsWith(".map"))) {
    const map = JSON.parse(readFileSync(join(REPO, "packages", name, file), "utf8"));
    for (const source of map.sources ?? []) {
      const path = posix.normalize(posix.join(posix.dirname(file), map.sourceRoot ?? "", source));
      if (!shipped.has(path)) problems.push(`${name}: ${file} names ${source}, not shipped`);
    }
  }
  // A `//# sourceMappingURL=` whose map is not shipped (a debugger or bundler looks for it).
  for (const file of files.filter((path) => /\.(c|m)?js$|\.d\.(c|m)?ts$/.test(path))) {
    const text = readFileSync(join(REPO, "packages", name, file), "latin1");
    for (const [, url] of text.matchAll(/^\/\/# sourceMappingURL=(\S+)\s*$/gm)) {
      const map = posix.normalize(posix.join(posix.dirname(file), url));
      if (!url.startsWith("data:") && !shipped.has(map)) {
        problems.push(`${name}: ${file} points at ${url}, not shipped`);
      }
    }
  }
  const manifest = JSON.parse(readFileSync(join(REPO, "packages", name, "package.json"), "utf8"));
  for (const field of ["repository", "bugs", "homepage"]) {
    if (!manifest[field]) problems.push(`${name}: package.json has no ${field}`);
  }
  return problems;
}

/**
 * What each package's tarball is checked with: publint --strict (its manifest, `exports` and
 * files) and arethetypeswrong (its types under each module resolution). pubtool is an ES
 * module only, as its README says: attw's esm-only profile, which does not ask for a CommonJS
 * entry. dirq and lmclient ship one.
 */
const ATTW_PROFILE = { dirq: "strict", pubtool: "esm-only", lmclient: "strict" };

/** publint and attw on one tarball: the problems they report (empty when both pass). */
async function lintTarball({ name, tarball }) {
  const bin = (tool) => join(REPO, "node_modules", ".bin", tool);
  const [publint, attw] = await Promise.all([
    exec(bin("publint"), ["run", "--strict", tarball]),
    exec(bin("attw"), [tarball, "--profile", ATTW_PROFILE[name], "--format", "ascii"]),
  ]);
  const problems = [];
  if (publint.code !== 0)
    problems.push(`${name}: publint --strict:\n${publint.stdout}${publint.stderr}`);
  if (attw.code !== 0) problems.push(`${name}: attw:\n${attw.stdout}${attw.stderr}`);
  return problems;
}

/**
 * Installs the tarballs into a clean prefix as a user of this Node would, then the suite.
 * `withIgnoreScripts`: dirq is also installed alone with install scripts skipped.
 */
async function runVersion(version, binary, tarballs, work, codeCacheHome, withIgnoreScripts) {
  const prefix = join(work, `prefix-${version}`);
  mkdirSync(prefix, { recursive: true });
  writeFileSync(join(prefix, "package.json"), '{ "name": "smoke", "private": true }\n');
  // This Node first on PATH: npm (its `#!/usr/bin/env node`), the install scripts and the
  // packages' bins all run on it, and npm checks engines against it. npm is this machine's
  // (the Node packages carry none), so under 20.11 it is newer than the npm 20.11 came with.
  const env = { ...process.env, PATH: `${dirname(binary)}${delimiter}${process.env.PATH}` };
  const install = await exec("npm", ["install", "--prefer-offline", ...npmArgs, ...tarballs], {
    cwd: prefix,
    env,
  });
  const installLog = join(work, `install-${version}.log`);
  writeFileSync(installLog, install.stdout + install.stderr);
  if (install.code !== 0) {
    return { ok: false, output: `npm install exited ${install.code}:\n${install.stderr}` };
  }
  const suiteEnv = {
    ...env,
    SMOKE_PREFIX: prefix,
    SMOKE_NODE_VERSION: version,
    SMOKE_INSTALL_LOG: installLog,
    // One code cache folder for every Node of the matrix: each must find only its own.
    XDG_CACHE_HOME: codeCacheHome,
    NODE_OPTIONS: "",
  };
  if (withIgnoreScripts) {
    // dirq alone once more, with install scripts skipped (as pnpm, bun and npm's
    // strict-allow-scripts do), into a prefix of its own: the suite's --ignore-scripts case.
    const skipping = join(work, `prefix-${version}-ignore-scripts`);
    mkdirSync(skipping, { recursive: true });
    writeFileSync(join(skipping, "package.json"), '{ "name": "smoke", "private": true }\n');
    const dirqTarball = tarballs.find((path) => /[\\/]dirq-[^\\/]*\.tgz$/.test(path));
    const installed = await exec(
      "npm",
      ["install", "--prefer-offline", "--ignore-scripts", ...npmArgs, dirqTarball],
      { cwd: skipping, env },
    );
    if (installed.code !== 0) {
      const output = `npm install --ignore-scripts exited ${installed.code}:\n${installed.stderr}`;
      return { ok: false, output };
    }
    suiteEnv.SMOKE_IGNORE_SCRIPTS_PREFIX = skipping;
  }
  const suite = await exec(
    binary,
    ["--test", "--test-reporter=spec", join(HERE, "smoke.test.mjs")],
    { cwd: prefix, env: suiteEnv },
  );
  return { ok: suite.code === 0, output: suite.stdout + suite.stderr };
}

const started = Date.now();
const work = mkdtempSync(join(tmpdir(), "packed-matrix-"));
let failed = false;
try {
  const tarballsDir = join(work, "tarballs");
  mkdirSync(tarballsDir);
  const packing = pack(tarballsDir);
  // A failed pack is reported where the packs are awaited below.
  const linting = packing.then(
    async (packs) => (await Promise.all(packs.map(lintTarball))).flat(),
    () => [],
  );
  const results = [];
  for (const version of versions) {
    const begun = Date.now();
    const withIgnoreScripts = version === versions[0] || version === versions.at(-1);
    try {
      const [binary, packs] = await Promise.all([nodeBinary(version), packing]);
      const tarballs = packs.map((entry) => entry.tarball);
      const cache = join(work, "cache");
      const result = await runVersion(version, binary, tarballs, work, cache, withIgnoreScripts);
      results.push({ version, ...result, seconds: (Date.now() - begun) / 1000 });
    } catch (error) {
      results.push({
        version,
        ok: false,
        output: String(error),
        seconds: (Date.now() - begun) / 1000,
      });
    }
  }
  // `npm install -g` links the man pages, with Node 20.11's npm and with this machine's.
  const manPages = await packing
    .then(
      async (packs) =>
        checkManPages({
          tarballs: packs.map((entry) => entry.tarball),
          work,
          node2011: await nodeBinary("20.11.0"),
          cacheRoot: join(REPO, ".cache", "npm"),
        }),
      () => [],
    )
    .catch((error) => [`man pages: ${error.message}`]);
  const packs = await packing;
  const problems = [...packs.flatMap(tarballProblems), ...(await linting), ...manPages];
  for (const result of results) {
    process.stdout.write(`\n=== Node ${result.version}: ${result.ok ? "ok" : "FAILED"}\n`);
    if (!result.ok) process.stdout.write(result.output);
  }
  process.stdout.write("\n=== tarballs\n");
  for (const entry of packs) {
    const kb = (bytes) => `${Math.round(bytes / 1024)} kB`;
    process.stdout.write(
      `${entry.name}: ${kb(entry.size)} packed, ${kb(entry.unpackedSize)} unpacked, ${entry.files.length} files\n`,
    );
  }
  for (const problem of problems) process.stdout.write(`problem: ${problem}\n`);
  failed = problems.length > 0 || results.some((result) => !result.ok);
  const summary = results.map((r) => `${r.version} ${r.ok ? "ok" : "FAILED"} ${r.seconds}s`);
  process.stdout.write(
    `\npacked-install matrix: ${summary.join(", ")}; ${(Date.now() - started) / 1000}s in all\n`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;
