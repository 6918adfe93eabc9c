// Shared by the release tests: running programs, and the npm registry's view of third-party
// packages for a local registry.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const NODE_DIR = dirname(process.execPath);

/** Runs a program to its end; never throws on a non-zero exit. */
export function exec(file, args, { cwd = REPO, env = process.env, input, timeout = 600_000 } = {}) {
  return new Promise((resolvePromise) => {
    const child = spawn(file, args, { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
    child.stdin.on("error", () => undefined);
    child.stdin.end(input ?? "");
    const timer = setTimeout(() => child.kill("SIGKILL"), timeout);
    child.on("error", (error) => {
      clearTimeout(timer);
      resolvePromise({ code: -1, signal: null, stdout, stderr: `${stderr}${error.message}\n` });
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr, pid: child.pid });
    });
  });
}

/** Where rustup keeps its toolchains, for a cargo run with another HOME. */
export function rustupHome() {
  if (process.env.RUSTUP_HOME) return process.env.RUSTUP_HOME;
  const home = join(homedir(), ".rustup");
  return existsSync(home) ? home : undefined;
}

/** npm's cache folder: the one the repository's `npm ci` filled. */
export async function npmCache() {
  const { stdout } = await exec("npm", ["config", "get", "cache"]);
  return stdout.trim();
}

/** The registry npm uses (the public one, unless configured otherwise). */
async function upstreamRegistry() {
  const { stdout } = await exec("npm", ["config", "get", "registry"]);
  return (stdout.trim() || "https://registry.npmjs.org/").replace(/\/?$/, "/");
}

function compareVersions(a, b) {
  const parts = (version) => version.split(/[.+-]/).map((part) => Number(part) || 0);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  }
  return 0;
}

const MANIFEST_FIELDS = [
  "dependencies",
  "optionalDependencies",
  "peerDependencies",
  "peerDependenciesMeta",
  "engines",
  "os",
  "cpu",
  "libc",
  "bin",
  "license",
  "deprecated",
  // Without it npm takes a package with a binding.gyp for one to build with node-gyp.
  "hasInstallScript",
];

/**
 * Third-party packages as a registry would serve them, from the repository's package-lock.json:
 * for each package, the versions locked there, with their dependencies and integrity. A local
 * registry serves these, so `npm install` of dirq, pubtool and lmclient resolves to the locked
 * versions, and npm takes their tarballs from its cache by integrity (filled by `npm ci`).
 * A tarball npm asks for anyway is fetched from the upstream registry and counted.
 */
export async function lockedThirdParty(registryUrl) {
  const lock = JSON.parse(readFileSync(join(REPO, "package-lock.json"), "utf8"));
  const upstream = await upstreamRegistry();
  const versions = new Map();
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (!path.includes("node_modules/") || entry.link || !entry.version || !entry.integrity)
      continue;
    const name = path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
    const file = `${name}/-/${name.split("/").pop()}-${entry.version}.tgz`;
    const manifest = { name, version: entry.version };
    for (const field of MANIFEST_FIELDS) if (entry[field]) manifest[field] = entry[field];
    manifest.dist = { tarball: `${registryUrl()}/${file}`, integrity: entry.integrity };
    if (!versions.has(name)) versions.set(name, new Map());
    versions.get(name).set(entry.version, manifest);
  }
  const fetchedUpstream = [];
  return {
    fetchedUpstream,
    packument(name) {
      const known = versions.get(name);
      if (!known) return undefined;
      const latest = [...known.keys()].sort(compareVersions).pop();
      return { name, "dist-tags": { latest }, versions: Object.fromEntries(known) };
    },
    async tarball(path) {
      fetchedUpstream.push(path);
      const response = await globalThis.fetch(`${upstream}${path.slice(1)}`);
      return response.ok ? Buffer.from(await response.arrayBuffer()) : undefined;
    },
  };
}
