#!/usr/bin/env node
// Bundles the SDK (dist/src/index.js, after tsc) into dist/cjs/index.cjs, the CommonJS entry
// `require("dirq")` gets (package.json `exports`, condition "require"): Node 20 before 20.17
// cannot `require` an ES module at all, and Node 22.12 warns when it does. Its dependencies
// are bundled too (string-width, for one, is ESM only), all but SQLite's binding, which loads
// its native addon from its own package. Worker threads and child processes still run the ES
// modules of dist/src: a module's `new URL("./x.js", import.meta.url)` is rebased to point
// there from dist/cjs. A program that both imports and requires dirq gets two copies of its
// modules; errors are told apart by `isDirqError` and their `code`, not by class identity.
import { build } from "esbuild";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const srcDir = join(packageDir, "dist", "src");
const outdir = join(packageDir, "dist", "cjs");

/** A path from dist/cjs, as a relative URL or import specifier. */
function fromOut(absolute) {
  const path = relative(outdir, absolute).split("\\").join("/");
  return path.startsWith(".") ? path : `./${path}`;
}

/** Rebases a module's references to its neighbours from its folder to dist/cjs. */
const relocate = {
  name: "relocate",
  setup(esbuild) {
    esbuild.onLoad({ filter: /\.js$/ }, (args) => {
      if (!args.path.startsWith(srcDir)) return undefined;
      const here = dirname(args.path);
      const contents = readFileSync(args.path, "utf8")
        .replace(/new URL\((["'])(\.\.?\/[^"']*)\1, import\.meta\.url\)/g, (_, quote, to) => {
          const slash = to.endsWith("/") ? "/" : "";
          return `new URL(${quote}${fromOut(resolve(here, to))}${slash}${quote}, import.meta.url)`;
        })
        .replaceAll("import.meta.dirname", `(__dirname + ${JSON.stringify(`/${fromOut(here)}`)})`);
      return { contents, loader: "js" };
    });
  },
};

await build({
  absWorkingDir: packageDir,
  entryPoints: [join(srcDir, "index.js")],
  outfile: join(outdir, "index.cjs"),
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  external: ["@rocicorp/zero-sqlite3"],
  define: { "import.meta.url": "__dirqModuleUrl" },
  banner: { js: 'const __dirqModuleUrl = require("node:url").pathToFileURL(__filename).href;' },
  // Whitespace and syntax only: names stay, so a stack trace still reads.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: "none",
  logLevel: "warning",
  plugins: [relocate],
});
// The ES module's declarations serve both: the API is the same.
writeFileSync(join(outdir, "index.d.cts"), 'export * from "../src/index.js";\n');
