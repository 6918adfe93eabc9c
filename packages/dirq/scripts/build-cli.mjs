#!/usr/bin/env node
// Bundles the CLI's start path (launcher, argument parsing, the one-shot query engine) into
// one module, dist/src/cli-bundle.js, which bin/dirq.js loads. Why: Node 20's ESM loader pays
// an async open, read and compile per module, and the one-shot path has about fifty of them;
// measured, that was most of `dirq "SELECT 1"`'s time beyond Node's own start-up. What a
// command loads on demand (the server, the REPL, the config loader, the table renderer) stays
// a dynamic import of the unbundled modules beside it, so it costs nothing when unused.
import { build } from "esbuild";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const srcDir = join(packageDir, "dist", "src");
const bundle = join(srcDir, "cli-bundle.js");

/** A path relative to the bundle's folder, as an import specifier. */
function fromBundle(absolute) {
  const path = relative(dirname(bundle), absolute).split("\\").join("/");
  return path.startsWith(".") ? path : `./${path}`;
}

/**
 * Keeps the modules' relative references right from the bundle's folder: dynamic imports stay
 * external (loaded on demand), and `new URL("./x.js", import.meta.url)` (worker scripts, the
 * package manifest) is rebased from the module's folder to the bundle's.
 */
const relocate = {
  name: "relocate",
  setup(build) {
    build.onResolve({ filter: /^\.\.?\//, namespace: "file" }, (args) => {
      if (args.kind !== "dynamic-import") return undefined;
      return { path: fromBundle(resolve(args.resolveDir, args.path)), external: true };
    });
    build.onLoad({ filter: /\.js$/ }, (args) => {
      const source = readFileSync(args.path, "utf8");
      const contents = source.replace(
        /new URL\((["'])(\.\.?\/[^"']*)\1, import\.meta\.url\)/g,
        (_, quote, path) =>
          `new URL(${quote}${fromBundle(resolve(dirname(args.path), path))}${quote}, import.meta.url)`,
      );
      return { contents, loader: "js" };
    });
  },
};

await build({
  entryPoints: [join(srcDir, "launcher", "launch.js")],
  outfile: bundle,
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  keepNames: true,
  sourcemap: false,
  legalComments: "none",
  logLevel: "warning",
  plugins: [relocate],
});
