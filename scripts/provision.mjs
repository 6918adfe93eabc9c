#!/usr/bin/env node
// The first step of `npm test`: the system packages its tests drive, installed when missing.
// The tests run real tools nobody here wrote (Chromium for the web console, sqlite3 and
// Python's parsers as references, pytest and mypy for the Python SDK, gcc for SQLite
// extensions, cargo for the Rust launcher, zsh and fish for completions), so a fresh machine
// needs them before the first test. On Debian (what CI and this project's machines run) the
// missing ones are installed with apt-get as root, or with sudo when it needs no password;
// otherwise this stops at once with the exact line to run, so that no test fails or skips
// later for want of a package.
//
// `node scripts/provision.mjs --check` only reports (exit 1 when something is missing).
import { spawnSync } from "node:child_process";
import { pathToFileURL } from "node:url";

/**
 * What the tests need, each as a Debian package with how to tell it is there. A `command`
 * is enough for tools that may come from elsewhere (cargo from rustup, Chromium from a
 * download); the rest are checked with dpkg.
 */
export const NEEDS = [
  { package: "chromium", command: "chromium", why: "the web console's browser tests" },
  { package: "python3", command: "python3", why: "the REPL's terminal tests and references" },
  { package: "python3-venv", why: "the Python launcher's install tests" },
  { package: "python3-setuptools", why: "the Python launcher's build" },
  { package: "python3-wheel", why: "the Python launcher's build" },
  { package: "python3-yaml", why: "the YAML reader's reference (PyYAML)" },
  { package: "python3-pytest", why: "the Python SDK's own tests" },
  { package: "python3-mypy", why: "the Python SDK's type check" },
  { package: "gcc", command: "gcc", why: "the SQLite extension tests" },
  { package: "libc6-dev", why: "the SQLite extension tests" },
  { package: "libsqlite3-dev", why: "sqlite3ext.h, for the SQLite extension tests" },
  { package: "sqlite3", command: "sqlite3", why: "the sqlite3 shell as a reference" },
  { package: "zsh", command: "zsh", why: "the zsh completion test" },
  { package: "fish", command: "fish", why: "the fish completion test" },
  // Debian's cargo 0.66 predates sparse registries (1.68); cargo-web is 1.85.
  { package: "cargo-web", command: "cargo", why: "the Rust launcher's release test" },
];

/** Whether a command runs (found on PATH). */
function hasCommand(command) {
  return spawnSync("sh", ["-c", `command -v "$1" >/dev/null`, "sh", command]).status === 0;
}

/** Whether dpkg knows the package as installed. */
function hasDebianPackage(name) {
  const query = spawnSync("dpkg-query", ["-W", "-f=${Status}", name], { encoding: "utf8" });
  return query.status === 0 && query.stdout.includes("install ok installed");
}

/** The needs not met on this machine, checked with the given probes. */
export function missingNeeds(needs, probes = { hasCommand, hasDebianPackage }) {
  return needs.filter((need) =>
    need.command === undefined
      ? !probes.hasDebianPackage(need.package)
      : !probes.hasCommand(need.command),
  );
}

/**
 * apt-get's options for the install. The tests drive each package itself, not what Debian
 * recommends beside it (Chromium's recommends alone bring udev, upower, Perl's web modules and
 * an upgrade of systemd), and those took more than half of a fresh machine's install.
 */
const INSTALL_OPTIONS = ["-y", "--no-install-recommends"];

/** The command line that installs these packages, as this user would type it. */
export function installLine(packages, isRoot) {
  const sudo = isRoot ? "" : "sudo ";
  return `${sudo}apt-get update && ${sudo}apt-get install ${INSTALL_OPTIONS.join(" ")} ${packages.join(" ")}`;
}

/** How this machine can install Debian packages: as root, through sudo, or not at all. */
function installer() {
  if (!hasCommand("apt-get")) return null;
  if (process.getuid?.() === 0) return [];
  if (hasCommand("sudo") && spawnSync("sudo", ["-n", "true"]).status === 0) return ["sudo", "-n"];
  return null;
}

function run(prefix, args) {
  const [command, ...rest] = [...prefix, ...args];
  const result = spawnSync(command, rest, {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  return result.status === 0;
}

function describe(missing) {
  return missing.map((need) => `  ${need.package}: ${need.why}`).join("\n");
}

function main() {
  const missing = missingNeeds(NEEDS);
  if (missing.length === 0) return 0;
  const packages = missing.map((need) => need.package);
  const line = installLine(packages, process.getuid?.() === 0);
  const prefix = process.argv.includes("--check") ? null : installer();
  if (prefix === null) {
    process.stderr.write(
      `npm test: the tests need packages this machine lacks:\n${describe(missing)}\n` +
        `Install them, then run npm test again:\n  ${line}\n`,
    );
    return 1;
  }
  process.stderr.write(`npm test: installing what the tests need: ${packages.join(" ")}\n`);
  const installed =
    run(prefix, ["apt-get", "update", "-qq"]) &&
    run(prefix, ["apt-get", "install", ...INSTALL_OPTIONS, "-qq", ...packages]);
  const still = missingNeeds(missing);
  if (!installed || still.length > 0) {
    process.stderr.write(
      `npm test: could not install:\n${describe(still.length > 0 ? still : missing)}\n` +
        `Install them by hand, then run npm test again:\n  ${line}\n`,
    );
    return 1;
  }
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) process.exitCode = main();
