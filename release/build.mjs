#!/usr/bin/env node
// Builds everything a release publishes (`npm run release:build`), into dist/release/ of the
// repository:
//
//   dirq-<v>.tgz, pubtool-<v>.tgz, lmclient-<v>.tgz   the npm packages (`npm pack`)
//   dirq-npm.json                                    the record of the dirq tarball's integrity
//   dirq-<v>-py3-none-any.whl, dirq-<v>.tar.gz        the Python launcher (also in python/dist/)
//   dirq-<v>.crate                                   the Rust launcher (`cargo package`)
//   crate/                                           the crate's sources as packaged
//
// The two launchers install exactly the dirq npm release built here: the record holds the
// sha512 integrity of dirq-<v>.tgz, and the build gives it to each launcher (the crate's
// `npm-package.json`, read by its build.rs). The crate is packaged from crate/, a copy of rust/
// with the record: cargo refuses to package a file git does not track from inside the
// repository, and the record is made here, not kept in git. `pubtool publish` then publishes
// from the package folders that pubtool.toml names; npm packs each package again there, to
// the same bytes.
//
// `--skip-npm-build` leaves out `npm run build` (for a caller that has just built them).
// `--pin-published` (the release workflow) asks the registry npm is set up for whether dirq of
// this version is there already (a release run again after it published dirq and failed on a
// later package): then the launchers pin the tarball the registry has, which is what their
// users will download, whether or not this build made the same bytes.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { readVersions } from "./versions.mjs";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const OUT = join(REPO, "dist", "release");
const NPM_PACKAGES = ["dirq", "pubtool", "lmclient"];
/** What the crate packages (rust/Cargo.toml `include`), less the record made here. */
const CRATE_FILES = ["Cargo.toml", "Cargo.lock", "build.rs", "src", "README.md", "LICENSE"];

class BuildError extends Error {}

/** Runs a program with its output shown; throws naming it when it fails. */
function run(file, args, { cwd = REPO, capture = false } = {}) {
  const result = spawnSync(file, args, {
    cwd,
    stdio: ["ignore", capture ? "pipe" : "inherit", "inherit"],
    encoding: "utf8",
  });
  if (result.error) throw new BuildError(`cannot run ${file}: ${result.error.message}`);
  if (result.status !== 0) {
    throw new BuildError(`${file} ${args.join(" ")} exited with ${result.status} (in ${cwd})`);
  }
  return result.stdout ?? "";
}

/** The Python that builds the launcher: RELEASE_PYTHON, else Debian's python3, else python3. */
function python() {
  if (process.env.RELEASE_PYTHON) return process.env.RELEASE_PYTHON;
  return existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

function integrityOf(file) {
  return `sha512-${createHash("sha512").update(readFileSync(file)).digest("base64")}`;
}

function packNpm() {
  const workspaces = NPM_PACKAGES.flatMap((name) => ["-w", `packages/${name}`]);
  const packed = JSON.parse(
    run("npm", ["pack", "--json", "--pack-destination", OUT, "--loglevel=warn", ...workspaces], {
      capture: true,
    }),
  );
  return packed.map((entry) => join(OUT, entry.filename));
}

/** The integrity of dirq@version on npm's registry; null when that version is not there. */
function publishedIntegrity(version) {
  const view = spawnSync("npm", ["view", `dirq@${version}`, "dist.integrity"], {
    cwd: REPO,
    encoding: "utf8",
  });
  if (view.status === 0) return view.stdout.trim() || null;
  if (/E404|404 Not Found/.test(view.stderr)) return null;
  throw new BuildError(`npm view dirq@${version} failed: ${view.stderr.trim()}`);
}

/** dist/release/dirq-npm.json: which dirq tarball the launchers install. */
function recordDirqTarball(tarballs, version, pinPublished) {
  const tarball = tarballs.find((file) => basename(file) === `dirq-${version}.tgz`);
  if (!tarball) throw new BuildError(`npm pack made no dirq-${version}.tgz`);
  const built = integrityOf(tarball);
  const published = pinPublished ? publishedIntegrity(version) : null;
  if (published !== null && published !== built) {
    process.stdout.write(
      `dirq@${version} is published already, with other bytes than this build's tarball: ` +
        `the launchers pin the published ${published} (this build's is ${built})\n`,
    );
  }
  const record = { name: "dirq", version, integrity: published ?? built };
  const text = `${JSON.stringify(record, null, 2)}\n`;
  writeFileSync(join(OUT, "dirq-npm.json"), text);
  return text;
}

/**
 * The wheel and sdist, with PEP 517's hooks of the project's own backend (setuptools). Both
 * carry `record` as dirq_launcher/npm-package.json: the npm release the launcher installs.
 */
function buildPython(record) {
  const dist = join(REPO, "python", "dist");
  rmSync(dist, { recursive: true, force: true });
  const pinned = join(REPO, "python", "src", "dirq_launcher", "npm-package.json");
  writeFileSync(pinned, record);
  const script = [
    "import sys, setuptools.build_meta as backend",
    // The backend rewrites sys.argv as it runs: read the folder first.
    "out = sys.argv[1]",
    "print(backend.build_sdist(out))",
    "print(backend.build_wheel(out))",
  ].join("\n");
  try {
    run(python(), ["-c", script, dist], { cwd: join(REPO, "python") });
  } finally {
    // A checkout's launcher pins nothing: only a release build's does.
    rmSync(pinned, { force: true });
    rmSync(join(REPO, "python", "build"), { recursive: true, force: true });
  }
  const built = readdirSync(dist).map((name) => join(dist, name));
  for (const file of built) cpSync(file, join(OUT, basename(file)));
  return built;
}

/** crate/ (rust/ and the record) and its .crate, packaged and built by cargo offline. */
function packageCrate(record, version) {
  const staged = join(OUT, "crate");
  for (const file of CRATE_FILES) {
    cpSync(join(REPO, "rust", file), join(staged, file), { recursive: true });
  }
  writeFileSync(join(staged, "npm-package.json"), record);
  run("cargo", ["package", "--offline", "--quiet"], { cwd: staged });
  const crate = join(staged, "target", "package", `dirq-${version}.crate`);
  cpSync(crate, join(OUT, basename(crate)));
  return join(OUT, basename(crate));
}

function main() {
  const skipNpmBuild = process.argv.includes("--skip-npm-build");
  const pinPublished = process.argv.includes("--pin-published");
  const versions = readVersions(REPO);
  const distinct = new Set(Object.values(versions));
  if (distinct.size !== 1) {
    const listed = Object.entries(versions).map(([where, version]) => `${where} ${version}`);
    throw new BuildError(`versions differ: ${listed.join(", ")}; make them one`);
  }
  const [version] = distinct;
  if (!skipNpmBuild) run("npm", ["run", "build"]);
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  const tarballs = packNpm();
  const record = recordDirqTarball(tarballs, version, pinPublished);
  const wheels = buildPython(record);
  const crate = packageCrate(record, version);
  process.stdout.write(`\nrelease ${version} built in ${OUT}:\n`);
  for (const file of [...tarballs, ...wheels.map((f) => join(OUT, basename(f))), crate]) {
    const bytes = readFileSync(file);
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    process.stdout.write(`  ${basename(file)}  ${bytes.length} bytes  sha256 ${sha256}\n`);
  }
  process.stdout.write(`  dirq-npm.json  ${JSON.parse(record).integrity}\n`);
}

try {
  main();
} catch (error) {
  if (!(error instanceof BuildError)) throw error;
  process.stderr.write(`release build: ${error.message}\n`);
  process.exitCode = 1;
}
