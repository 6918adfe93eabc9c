// Where `npm install -g` puts the packages' man pages, with npm 10.2.4 (the npm of Node
// 20.11.0, the floor of engines) and with this machine's npm: from the packed tarballs, and
// from a registry on loopback that answers npm's request for abbreviated metadata as the npm
// registry does (no `man` field in it). npm 10.2.4 links no page in that last case, as
// packages/dirq/docs/cli.md says; the check holds the docs to it.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { delimiter, dirname, join } from "node:path";
import { gunzipSync } from "node:zlib";

const NPM_10 = "10.2.4";
/** The man page each package ships, as `man <name>` finds it under `<prefix>/share/man`. */
const PAGES = { dirq: "man1/dirq.1", pubtool: "man1/pubtool.1" };

function run(file, args, { cwd, env }) {
  return new Promise((resolvePromise) => {
    const child = spawn(file, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (output += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (output += chunk));
    child.on("error", (error) => resolvePromise({ code: -1, output: output + error.message }));
    child.on("close", (code) => resolvePromise({ code, output }));
  });
}

/** npm 10.2.4's CLI script, installed from the registry into `.cache/npm/` once. */
async function npm10(cacheRoot, env) {
  const folder = join(cacheRoot, NPM_10);
  const script = join(folder, "node_modules", "npm", "bin", "npm-cli.js");
  if (existsSync(script)) return script;
  const staging = `${folder}.${process.pid}.tmp`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const installed = await run(
    "npm",
    ["install", "--prefix", staging, "--no-save", "--no-package-lock", "--ignore-scripts"].concat([
      "--no-audit",
      "--no-fund",
      "--loglevel=warn",
      `npm@${NPM_10}`,
    ]),
    { cwd: staging, env },
  );
  if (installed.code !== 0)
    throw new Error(`npm could not install npm@${NPM_10}:\n${installed.output}`);
  rmSync(folder, { recursive: true, force: true });
  renameSync(staging, folder);
  return script;
}

/** The `package/package.json` of a .tgz (ustar: 512-byte headers, name in the first 100). */
function manifestOf(tarball) {
  const tar = gunzipSync(readFileSync(tarball));
  for (let at = 0; at + 512 <= tar.length;) {
    const name = tar
      .subarray(at, at + 100)
      .toString("utf8")
      .replace(/\0.*$/s, "");
    const size =
      Number.parseInt(
        tar
          .subarray(at + 124, at + 136)
          .toString("utf8")
          .trim(),
        8,
      ) || 0;
    if (name === "package/package.json") {
      return JSON.parse(tar.subarray(at + 512, at + 512 + size).toString("utf8"));
    }
    if (name === "") break;
    at += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error(`${tarball}: no package/package.json`);
}

/** The version fields of the registry's abbreviated metadata (docs of the npm registry). */
const ABBREVIATED = [
  "name",
  "version",
  "deprecated",
  "bin",
  "directories",
  "dist",
  "engines",
  "_hasShrinkwrap",
  "hasInstallScript",
  "cpu",
  "os",
];

/**
 * A registry on 127.0.0.1 serving the tarballs: the abbreviated document when npm asks for it
 * (`application/vnd.npm.install-v1+json`), else the full one. Dependencies are left out of
 * both, so installing needs nothing else: only where npm links the man pages is under test.
 */
async function startRegistry(tarballs) {
  const packages = new Map();
  for (const tarball of tarballs) {
    const bytes = readFileSync(tarball);
    const manifest = manifestOf(tarball);
    delete manifest.dependencies;
    delete manifest.optionalDependencies;
    packages.set(manifest.name, {
      manifest,
      bytes,
      file: `${manifest.name}-${manifest.version}.tgz`,
    });
  }
  const server = createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url, "http://x").pathname).slice(1);
    for (const { manifest, bytes, file } of packages.values()) {
      if (path === `${manifest.name}/-/${file}`) return response.end(bytes);
    }
    const entry = packages.get(path);
    if (!entry) {
      response.statusCode = 404;
      return response.end('{"error":"not found"}');
    }
    const abbreviated = (request.headers.accept ?? "").includes(
      "application/vnd.npm.install-v1+json",
    );
    const integrity = `sha512-${createHash("sha512").update(entry.bytes).digest("base64")}`;
    const shasum = createHash("sha1").update(entry.bytes).digest("hex");
    const tarballUrl = `http://${request.headers.host}/${path}/-/${entry.file}`;
    let version = { ...entry.manifest, dist: { tarball: tarballUrl, integrity, shasum } };
    if (abbreviated) {
      version = Object.fromEntries(
        Object.entries(version).filter(([key]) => ABBREVIATED.includes(key)),
      );
    }
    response.setHeader("content-type", "application/json");
    response.end(
      JSON.stringify({
        name: path,
        "dist-tags": { latest: version.version },
        versions: { [version.version]: version },
      }),
    );
  });
  await new Promise((resolvePromise) => server.listen(0, "127.0.0.1", resolvePromise));
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => server.close() };
}

/** The pages `npm install -g` linked under `prefix`, and what `man -w` says of them. */
async function linkedPages(prefix, env) {
  const pages = {};
  for (const [name, page] of Object.entries(PAGES)) {
    const linked = existsSync(join(prefix, "share", "man", page));
    let found = null;
    if (linked && env.HAS_MAN) {
      const located = await run("man", ["-w", name], {
        cwd: prefix,
        env: { ...env, MANPATH: join(prefix, "share", "man") },
      });
      found = located.code === 0;
    }
    pages[name] = { linked, found };
  }
  return pages;
}

/**
 * Installs dirq and pubtool globally four ways (npm 10.2.4 and this machine's npm, each from
 * the tarballs and from the loopback registry) and returns the problems: a page not linked
 * where it must be, or linked where the docs say npm 10.2.4 does not link it.
 */
export async function checkManPages({ tarballs, work, node2011, cacheRoot }) {
  const wanted = tarballs.filter((path) => /[\\/](dirq|pubtool)-[^\\/]*\.tgz$/.test(path));
  const hasMan = (await run("man", ["-w", "man"], { cwd: work, env: process.env })).code === 0;
  const baseEnv = { ...process.env, HAS_MAN: hasMan ? "1" : "" };
  const npmScript = await npm10(cacheRoot, baseEnv);
  const registry = await startRegistry(wanted);
  try {
    const npms = [
      {
        label: `npm ${NPM_10} on Node 20.11.0`,
        command: [node2011, npmScript],
        env: { ...baseEnv, PATH: `${dirname(node2011)}${delimiter}${process.env.PATH}` },
        linksFromRegistry: false,
      },
      { label: "this machine's npm", command: ["npm"], env: baseEnv, linksFromRegistry: true },
    ];
    const cases = npms.flatMap((npm) => [
      { npm, from: "the tarballs", specs: wanted, mustLink: true },
      {
        npm,
        from: "a registry (abbreviated metadata)",
        specs: ["dirq", "pubtool"],
        extra: ["--registry", registry.url],
        mustLink: npm.linksFromRegistry,
      },
    ]);
    const results = await Promise.all(
      cases.map(async (entry, index) => {
        const prefix = join(work, `man-prefix-${index}`);
        mkdirSync(prefix, { recursive: true });
        const [file, ...first] = entry.npm.command;
        const installed = await run(
          file,
          [...first, "install", "--global", "--prefix", prefix, "--ignore-scripts"]
            .concat(["--prefer-offline", "--no-audit", "--no-fund", "--loglevel=warn"])
            .concat(entry.extra ?? [], entry.specs),
          { cwd: prefix, env: entry.npm.env },
        );
        const what = `npm install -g with ${entry.npm.label} from ${entry.from}`;
        if (installed.code !== 0) return [`${what} exited ${installed.code}:\n${installed.output}`];
        const problems = [];
        for (const [name, { linked, found }] of Object.entries(
          await linkedPages(prefix, baseEnv),
        )) {
          if (entry.mustLink && !linked)
            problems.push(`${what}: no ${PAGES[name]} in <prefix>/share/man`);
          if (entry.mustLink && found === false)
            problems.push(`${what}: man -w ${name} finds no page`);
          if (!entry.mustLink && linked) {
            problems.push(
              `${what}: ${PAGES[name]} is linked now; packages/dirq/docs/cli.md says it is not: update it`,
            );
          }
        }
        return problems;
      }),
    );
    return results.flat();
  } finally {
    registry.close();
  }
}
