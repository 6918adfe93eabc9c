#!/usr/bin/env node
// Bundles the CLI (launcher, argument parsing, the one-shot query engine, and what commands
// load on demand) into dist/src/cli-bundle/, which bin/dirq.js loads. Why: Node 20's ESM loader
// pays an async open, read and compile per module, and a query loads about eighty of them;
// measured, that was most of `dirq "SELECT 1"`'s time beyond Node's own start-up. Code
// splitting keeps what a command loads on demand (the engine, the server, the REPL, the config
// loader, the table renderer) in chunks of their own, so it costs nothing when unused, and
// every module has exactly one instance: a module the start path and a lazy chunk both use
// lives in a shared chunk (its state, such as the running hooks or prestarted workers, is one).
import { build } from "esbuild";
import { readFileSync, rmSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

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

// Chunk names carry content hashes: the previous build's would linger.
rmSync(outdir, { recursive: true, force: true });

await build({
  entryPoints: { launch: join(srcDir, "launcher", "launch.js") },
  outdir,
  bundle: true,
  splitting: true,
  chunkNames: "[name]-[hash]",
  format: "esm",
  platform: "node",
  target: "node20",
  // Pure-JavaScript dependencies are bundled too (smol-toml alone is seven modules); SQLite
  // loads a native addon.
  external: ["@rocicorp/zero-sqlite3"],
  // Bundled CommonJS dependencies (shell-quote) call `require`, which ES modules lack.
  banner: {
    js: 'import { createRequire as __createRequire } from "node:module";\nconst require = __createRequire(import.meta.url);',
  },
  keepNames: true,
  sourcemap: false,
  legalComments: "none",
  logLevel: "warning",
  plugins: [relocate],
});
