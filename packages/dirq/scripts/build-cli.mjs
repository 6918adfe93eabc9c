#!/usr/bin/env node
// Bundles the CLI into CommonJS files in dist/src/cli-bundle, which bin/dirq.cjs loads: dirq.cjs
// (the launcher, argument parsing, the query engine: what a one-shot statement runs) and a chunk
// per part a command loads on demand: the REPL, the server, the config loader, `init`, `completion`
// and string-width (CHUNKS). Why: start-up (`dirq "SELECT 1"`, bench/dirq-startup.mjs). Node 20's
// ES module loader pays an async resolve, read, link and compile per module, and starting the
// loader at all costs time `node -e 0` never pays; unbundled, the CLI is about eighty modules,
// and an ESM bundle split into chunks still pays the loader for a dozen. A CommonJS
// file is one synchronous read and compile (V8 compiles function bodies lazily, so code a command
// never calls costs little, but not nothing: see CHUNKS). Node built-ins a statement rarely needs
// (child processes, crypto, worker threads) load on first use (src/lazy-module.ts), so `SELECT 1`
// pays for none of them. No V8 code cache ships beside the bundle: one made here crashes the code
// under another Node 20 patch release (same V8 version, so V8 takes it), and bin/dirq.cjs makes one
// per Node build on the user's machine instead.
import { build } from "esbuild";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const srcDir = join(packageDir, "dist", "src");
const outdir = join(srcDir, "cli-bundle");

/** The function Node wraps a CommonJS module in (bin/dirq.cjs calls it as Node would). */
const CJS_WRAPPER_HEAD = "(function (exports, require, module, __filename, __dirname) { ";
const CJS_WRAPPER_TAIL = "\n})";

/**
 * The chunks, by name, and the module each is made from: a command that needs one loads it when it
 * runs (`import()` in the sources, `require("./<name>.cjs")` in the bundle, which bin/dirq.cjs
 * answers with the chunk compiled from its own code cache). Out of dirq.cjs, the code they take
 * is neither read nor deserialized by a one-shot statement, which starts faster for it (with or
 * without a config). A chunk holds its own copy of every
 * module it imports, so it is a part that takes what it needs as arguments and keeps no state
 * another part shares: the REPL and the server run their own index (the modules dirq.cjs has
 * already run hand them a command and the process's streams), the config loader and the rest are
 * functions of their arguments. Their errors are told by `isDirqError`, which does not rely on the
 * class being the same one. Table output stays in dirq.cjs (a terminal's default), all but
 * string-width: its Unicode tables are loaded only for a cell that is not plain text.
 */
const CHUNKS = {
  repl: join(srcDir, "repl", "run-repl.js"),
  server: join(srcDir, "server", "run-server.js"),
  config: join(srcDir, "config", "load-config.js"),
  init: join(srcDir, "config", "starter-config.js"),
  completion: join(srcDir, "cli", "completion.js"),
  width: join(srcDir, "output", "string-width.js"),
  sdk: join(srcDir, "sdk-stdio", "run-sdk-stdio.js"),
};

/**
 * Programs of their own that dirq starts as Node child processes, bundled beside the CLI: the
 * query process of a server, a REPL, `watch` and `sdk`. bin/dirq.cjs runs one, compiled from a
 * V8 code cache of its own, when its first argument names it (see startedThroughLauncher).
 */
const PROCESSES = {
  "query-process": join(srcDir, "runner", "query-process.js"),
};

/** The npm launcher, from the bundle's folder (the `__dirname` bin/dirq.cjs gives the bundle). */
const LAUNCHER_FROM_BUNDLE = JSON.stringify(relative(outdir, join(packageDir, "bin", "dirq.cjs")));

/**
 * The bundle's query processes are started as `node bin/dirq.cjs --dirq-query-process …`: the
 * launcher runs the bundled program (PROCESSES) from its code cache. The library's own line
 * starts the ES module (src/runner/pooled-process.ts), which costs Node's ES module loader and
 * a compile of every module at each start.
 */
const startedThroughLauncher = {
  name: "started-through-launcher",
  setup(build) {
    build.onLoad({ filter: /[\\/]runner[\\/]pooled-process\.js$/ }, (args) => {
      const source = readFileSync(args.path, "utf8");
      const contents = source.replace(
        /const QUERY_PROCESS_START = \[[^\]]*\];/,
        `const QUERY_PROCESS_START = [require("node:path").join(__dirname, ${LAUNCHER_FROM_BUNDLE}), "--dirq-query-process"];`,
      );
      if (contents === source)
        throw new Error(
          "build-cli: pooled-process.js no longer says how it starts a query process",
        );
      return { contents: relocated(contents, args.path), loader: "js" };
    });
  },
};

/** Marks the resolve that chunkImports asks esbuild for, so that it does not answer itself. */
const CHUNK_PROBE = Symbol("chunk probe");

/**
 * A dynamic import of a chunk's module becomes a module of one line, `module.exports =
 * require("./<name>.cjs")`, which bin/dirq.cjs answers (left as `import()`, esbuild would keep
 * it one, which V8 cannot run in a script compiled without a module loader).
 */
const chunkImports = {
  name: "chunk-imports",
  setup(build) {
    const byPath = new Map(Object.entries(CHUNKS).map(([name, path]) => [path, name]));
    build.onResolve({ filter: /.*/ }, async (args) => {
      if (args.kind !== "dynamic-import" || args.pluginData === CHUNK_PROBE) return undefined;
      const { path } = await build.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: CHUNK_PROBE,
      });
      const name = byPath.get(path);
      return name === undefined ? undefined : { path: name, namespace: "chunk" };
    });
    build.onLoad({ filter: /.*/, namespace: "chunk" }, (args) => ({
      contents: `module.exports = require("./${args.path}.cjs");`,
      loader: "js",
    }));
    build.onResolve({ filter: /^\.\/\w+\.cjs$/, namespace: "chunk" }, (args) => ({
      path: args.path,
      external: true,
    }));
  },
};

/** A path relative to the bundle's folder, as an import specifier. */
function fromBundle(absolute) {
  const path = relative(outdir, absolute).split("\\").join("/");
  return path.startsWith(".") ? path : `./${path}`;
}

/**
 * Keeps a module's relative references right from the bundle's folder:
 * `new URL("./x.js", import.meta.url)` (worker scripts, child process scripts, the package
 * manifest, the web console, the native calls' host) is rebased from the module's folder to
 * the bundle's.
 */
function relocated(source, path) {
  return (
    source
      .replace(/new URL\((["'])(\.\.?\/[^"']*)\1, import\.meta\.url\)/g, (_, quote, to) => {
        // A folder's URL keeps its trailing slash (`resolve` drops it).
        const slash = to.endsWith("/") ? "/" : "";
        const rebased = fromBundle(resolve(dirname(path), to)) + slash;
        return `new URL(${quote}${rebased}${quote}, import.meta.url)`;
      })
      // The module's folder, as a path from the bundle's (`join` reads either separator).
      .replaceAll(
        "import.meta.dirname",
        `(__dirname + ${JSON.stringify(`/${fromBundle(dirname(path))}`)})`,
      )
  );
}

const relocate = {
  name: "relocate",
  setup(build) {
    build.onLoad({ filter: /\.js$/ }, (args) => {
      if (!args.path.startsWith(srcDir)) return undefined;
      return { contents: relocated(readFileSync(args.path, "utf8"), args.path), loader: "js" };
    });
  },
};

/**
 * Bundles SQLite's JavaScript too (better-sqlite3's API in zero-sqlite3: ten modules, and
 * node-gyp-build), which the modules load through `createRequire` (outside a bundle, an ES
 * module's `import` of it would go through Node's ES-to-CommonJS bridge). In the bundle that
 * `require` becomes the bundle's own, and the package finds its native addon from its own
 * folder, not the bundle's. Bundled, `dirq "SELECT 1"` starts faster.
 */
const bundledSqlite = {
  name: "bundled-sqlite",
  setup(build) {
    // The lazily loaded built-ins too: the bundle's own `require` loads them, and
    // `createRequire` of the bundle's URL would be a cost at every start.
    build.onLoad({ filter: /[\\/](indexer[\\/]database|lazy-module)\.js$/ }, (args) => {
      const source = readFileSync(args.path, "utf8");
      const contents = source.replace("const require = createRequire(import.meta.url);", "");
      if (contents === source)
        throw new Error(`build-cli: ${args.path} no longer makes its require as expected`);
      // This plugin's answer is the module's only one: relocate never sees it.
      return { contents: relocated(contents, args.path), loader: "js" };
    });
    build.onLoad({ filter: /zero-sqlite3[\\/]lib[\\/]database\.js$/ }, (args) => {
      const source = readFileSync(args.path, "utf8");
      const folder = 'path.dirname(require.resolve("@rocicorp/zero-sqlite3/package.json"))';
      const located = source.replaceAll("path.resolve(__dirname, '..')", folder);
      if (located === source)
        throw new Error("build-cli: zero-sqlite3 no longer loads its addon as expected");
      // The module loads the addon at its top level (for its SQLITE_SCANSTAT_* constants)
      // without keeping it, so the first `new Database` looked for it again: node-gyp-build
      // re-reads the package's manifest and lists its prebuilds folders (two readdirs, a
      // stat) on every start. Kept, the first connection takes the same addon object.
      // And it is first taken from where install recorded it (src/indexer/sqlite-addon.ts):
      // resolving the package and node-gyp-build's search are a cost at every start.
      const addonAt = "const nativeAddon = DEFAULT_ADDON || require(";
      const recorded = `require(${JSON.stringify(join(srcDir, "indexer", "sqlite-addon.js"))}).recordedSqliteAddon()`;
      const contents = located.replace(
        addonAt,
        `const nativeAddon = DEFAULT_ADDON ||= ${recorded} ?? require(`,
      );
      if (contents === located)
        throw new Error("build-cli: zero-sqlite3 no longer loads its addon at its top level");
      return { contents, loader: "js" };
    });
    // `backup` promisifies `fs.access` at its module's top level: `promisify`'s first call
    // costs every start time (Node compiles it then), for a method dirq never calls.
    // `fs.promises.access` is the same promise, made when called.
    build.onLoad({ filter: /zero-sqlite3[\\/]lib[\\/]methods[\\/]backup\.js$/ }, (args) => {
      const source = readFileSync(args.path, "utf8");
      const contents = source.replace(
        "const fsAccess = promisify(fs.access);",
        "const fsAccess = (...args) => fs.promises.access(...args);",
      );
      if (contents === source)
        throw new Error("build-cli: zero-sqlite3's backup no longer promisifies fs.access");
      return { contents, loader: "js" };
    });
  },
};

// A previous build's files (the former chunked layout included) would linger.
rmSync(outdir, { recursive: true, force: true });

const built = await build({
  entryPoints: {
    dirq: join(srcDir, "launcher", "launch.js"),
    ...CHUNKS,
    ...PROCESSES,
  },
  outdir,
  // Metafile paths are relative to it, whatever folder the build is run from.
  absWorkingDir: packageDir,
  outExtension: { ".js": ".cjs" },
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  // Dependencies are bundled too (smol-toml alone is seven modules); only SQLite's native
  // addon loads from its package, found at run time (see bundledSqlite).
  external: ["@rocicorp/zero-sqlite3/package.json"],
  // The modules locate their neighbours (worker scripts, the package manifest, the web
  // console) from `import.meta.url`, which a CommonJS file spells through `__filename`: made
  // on first use (`pathToFileURL` would be a cost at every start), and by hand for a POSIX
  // path of characters a file URL never escapes.
  define: { "import.meta.url": "__dirqBundle.url" },
  banner: {
    js: [
      "let __dirqBundleUrl;",
      "const __dirqBundle = { get url() {",
      '  return (__dirqBundleUrl ??= /^\\/[\\w./-]*$/.test(__filename) ? "file://" + __filename : require("node:url").pathToFileURL(__filename).href);',
      "} };",
    ].join("\n"),
  },
  // Off: keeping names wraps every function and class in a call that defines its `name` (some
  // hundreds in this bundle), also each closure made at run time, one per request among them
  // (a measurable part of the server's own time under load). Nothing reads a function's name:
  // errors name themselves (DirqError sets `name`).
  keepNames: false,
  // Minified: the launcher reads and compiles the whole file on every start (with the code
  // cache, V8 still gets the source and keeps it for lazy compiles): minified, that read and
  // compile take less time and memory. Unminified, the kept comments could also hold non-ASCII
  // characters, which make the whole source a two-byte string (twice the memory, a slower
  // decode). Renamed identifiers change nothing seen: no message is built from a function's
  // name, errors name themselves (above).
  minify: true,
  // Non-ASCII characters in strings and regular expressions are escaped, so the source stays a
  // one-byte string (checked below).
  charset: "ascii",
  sourcemap: false,
  legalComments: "none",
  logLevel: "warning",
  plugins: [chunkImports, bundledSqlite, startedThroughLauncher, relocate],
  metafile: true,
});

// A chunk's module bundled into dirq.cjs as well would run as two copies (see CHUNKS).
const mainInputs = Object.values(built.metafile.outputs).find(
  (output) => output.entryPoint === relative(packageDir, join(srcDir, "launcher", "launch.js")),
).inputs;
for (const path of Object.values(CHUNKS)) {
  if (relative(packageDir, path).split("\\").join("/") in mainInputs) {
    throw new Error(`build-cli: ${path} is a chunk, but dirq.cjs imports it statically`);
  }
}

for (const name of ["dirq", ...Object.keys(CHUNKS), ...Object.keys(PROCESSES)]) {
  const path = join(outdir, `${name}.cjs`);
  const bundled = readFileSync(path);
  // A single non-ASCII character would make V8 hold the source as a two-byte string.
  const wide = bundled.findIndex((byte) => byte > 0x7f);
  if (wide !== -1) throw new Error(`build-cli: ${name}.cjs has a non-ASCII byte at offset ${wide}`);
  // The file holds the bundle already inside the function Node wraps a CommonJS module in, so
  // the launcher compiles the text exactly as it reads it. Wrapped at every start, the source
  // was a string made of three, which V8 copies into one flat string before it compiles: 0.1
  // ms of every start. (`require` of the file still works: it evaluates the function
  // expression and returns an empty object.)
  writeFileSync(
    path,
    `${CJS_WRAPPER_HEAD}${bundled.toString("latin1")}${CJS_WRAPPER_TAIL}`,
    "latin1",
  );
}
