#!/usr/bin/env node
// Bundles the CLI (launcher, argument parsing, the query engine, the server, the REPL and the
// rest of what commands load) into one CommonJS file, dist/src/cli-bundle/dirq.cjs, which
// bin/dirq.cjs requires. Why, measured on `dirq "SELECT 1"` (bench/dirq-walk.mjs, start-up):
// Node 20's ES module loader pays an async resolve, read, link and compile per module, and
// starting the loader at all costs milliseconds `node -e 0` never pays; the unbundled CLI
// loaded about eighty modules, and an ESM bundle split into chunks still paid the loader for
// a dozen. One CommonJS file is one synchronous read and compile (V8 compiles function bodies
// lazily, so code a command never calls costs little) and every module has exactly one
// instance (its state, such as the running hooks or prestarted workers, is one). Node built-ins
// a statement rarely needs (child processes, crypto, worker threads) load on first use
// (src/lazy-module.ts), so `SELECT 1` pays for none of them.
import { build } from "esbuild";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { Script } from "node:vm";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const srcDir = join(packageDir, "dist", "src");
const outdir = join(srcDir, "cli-bundle");

/** A path relative to the bundle's folder, as an import specifier. */
function fromBundle(absolute) {
  const path = relative(outdir, absolute).split("\\").join("/");
  return path.startsWith(".") ? path : `./${path}`;
}

/**
 * Keeps the modules' relative references right from the bundle's folder:
 * `new URL("./x.js", import.meta.url)` (worker scripts, child process scripts, the package
 * manifest, the web console) is rebased from the module's folder to the bundle's.
 */
const relocate = {
  name: "relocate",
  setup(build) {
    build.onLoad({ filter: /\.js$/ }, (args) => {
      if (!args.path.startsWith(srcDir)) return undefined;
      const source = readFileSync(args.path, "utf8");
      const contents = source.replace(
        /new URL\((["'])(\.\.?\/[^"']*)\1, import\.meta\.url\)/g,
        (_, quote, path) => {
          // A folder's URL keeps its trailing slash (`resolve` drops it).
          const slash = path.endsWith("/") ? "/" : "";
          const rebased = fromBundle(resolve(dirname(args.path), path)) + slash;
          return `new URL(${quote}${rebased}${quote}, import.meta.url)`;
        },
      );
      return { contents, loader: "js" };
    });
  },
};

/**
 * Bundles SQLite's JavaScript too (better-sqlite3's API in zero-sqlite3: ten modules, and
 * node-gyp-build), which the modules load through `createRequire` (outside a bundle, an ES
 * module's `import` of it would go through Node's ES-to-CommonJS bridge). In the bundle that
 * `require` becomes the bundle's own, and the package finds its native addon from its own
 * folder, not the bundle's. Measured on `dirq "SELECT 1"`, four sets of 41–61 alternating
 * runs: 3.5–6 ms less in three (90.1 to 84.0 ms, with `node -e 0` at 68.6), none in one.
 */
const bundledSqlite = {
  name: "bundled-sqlite",
  setup(build) {
    build.onLoad({ filter: /[\\/]indexer[\\/]database\.js$/ }, (args) => {
      const source = readFileSync(args.path, "utf8");
      const contents = source.replace("const require = createRequire(import.meta.url);", "");
      if (contents === source)
        throw new Error("build-cli: database.js no longer loads SQLite as expected");
      return { contents, loader: "js" };
    });
    build.onLoad({ filter: /zero-sqlite3[\\/]lib[\\/]database\.js$/ }, (args) => {
      const source = readFileSync(args.path, "utf8");
      const folder = 'path.dirname(require.resolve("@rocicorp/zero-sqlite3/package.json"))';
      const contents = source.replaceAll("path.resolve(__dirname, '..')", folder);
      if (contents === source)
        throw new Error("build-cli: zero-sqlite3 no longer loads its addon as expected");
      return { contents, loader: "js" };
    });
  },
};

// A previous build's files (the former chunked layout included) would linger.
rmSync(outdir, { recursive: true, force: true });

await build({
  entryPoints: { dirq: join(srcDir, "launcher", "launch.js") },
  outdir,
  outExtension: { ".js": ".cjs" },
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  // Dependencies are bundled too (smol-toml alone is seven modules); only SQLite's native
  // addon loads from its package, found at run time (see bundledSqlite).
  external: ["@rocicorp/zero-sqlite3/package.json"],
  // The modules locate their neighbours (worker scripts, the package manifest, the web
  // console) from `import.meta.url`, which a CommonJS file spells through `__filename`.
  define: { "import.meta.url": "__dirqBundleUrl" },
  banner: { js: 'const __dirqBundleUrl = require("node:url").pathToFileURL(__filename).href;' },
  // Off: keeping names wraps every function and class in a call that defines its `name` (514
  // in this bundle), also each closure made at run time, one per request among them (about 1%
  // of the server's own time under load). Nothing reads a function's name: errors name
  // themselves (DirqError sets `name`).
  keepNames: false,
  sourcemap: false,
  legalComments: "none",
  logLevel: "warning",
  plugins: [bundledSqlite, relocate],
});

await writeCodeCache(join(outdir, "dirq.cjs"));

/**
 * Writes V8's code cache for the bundle beside it (`dirq.cjs.v8cache`), which bin/dirq.cjs
 * hands to V8 so a start compiles nothing it compiled here (measured: about 8 ms of
 * `dirq "SELECT 1"`, a quarter of what dirq adds to `node -e 0`). The cache is taken after
 * running two small queries (plugins off: the build must not depend on what is installed), so
 * it holds the functions a query calls, not only the top level.
 * V8 rejects a cache from another Node version or with other V8 flags, and then the bundle just
 * compiles as without one. Node 22's module.enableCompileCache() does this natively; the CLI
 * supports Node 20.
 */
async function writeCodeCache(bundle) {
  const script = new Script(commonJsWrapper(readFileSync(bundle, "utf8")), { filename: bundle });
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(bundle), module, bundle, dirname(bundle));
  const tree = mkdtempSync(join(tmpdir(), "dirq-code-cache-"));
  try {
    writeFileSync(join(tree, "a.json"), '{"a": 1}\n');
    const discard = new Writable({ write: (_chunk, _encoding, done) => done() });
    const io = { stdout: discard, stderr: discard, cwd: tree };
    for (const sql of ["SELECT 1", "SELECT path, size FROM './' ORDER BY size DESC LIMIT 10"]) {
      const code = await module.exports.launch([sql], io, {
        env: { DIRQ_NO_PLUGIN: "1" },
        launcherPackage: packageDir,
      });
      if (code !== 0) throw new Error(`build-cli: the warm-up query ${sql} exited ${code}`);
    }
  } finally {
    rmSync(tree, { recursive: true, force: true });
  }
  writeFileSync(`${bundle}.v8cache`, script.createCachedData());
}

/** The function Node wraps a CommonJS module in (bin/dirq.cjs uses the same). */
function commonJsWrapper(source) {
  return `(function (exports, require, module, __filename, __dirname) { ${source}\n})`;
}
