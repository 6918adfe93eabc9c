#!/usr/bin/env node
// Builds the web console (web/) into dist/web: one JavaScript and one CSS bundle with content
// hashes in their names (so the server may let browsers cache them for good) and index.html,
// which names them. Everything the page needs is bundled here; nothing is fetched at run time.
import { build } from "esbuild";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const sourceDir = join(packageDir, "web");
const outDir = join(packageDir, "dist", "web");
const assetDir = join(outDir, "assets");
/** The URL prefix the server serves assets under (src/server/console.ts). */
const ASSET_PREFIX = "/_console/";

rmSync(outDir, { recursive: true, force: true });
mkdirSync(assetDir, { recursive: true });

const result = await build({
  entryPoints: { console: join(sourceDir, "main.ts") },
  bundle: true,
  format: "esm",
  target: ["chrome110", "firefox115", "safari16"],
  minify: true,
  sourcemap: false,
  entryNames: "[name]-[hash]",
  outdir: assetDir,
  metafile: true,
  legalComments: "none",
  logLevel: "warning",
  tsconfig: join(sourceDir, "tsconfig.json"),
});

const outputs = Object.keys(result.metafile.outputs).map((path) => basename(path));
const script = outputs.find((name) => name.endsWith(".js"));
const style = outputs.find((name) => name.endsWith(".css"));
if (script === undefined || style === undefined) {
  console.error(`build-web: expected one .js and one .css bundle, got ${outputs.join(", ")}`);
  process.exit(1);
}

const template = readFileSync(join(sourceDir, "index.html"), "utf8");
const html = template
  .replace("{{script}}", `${ASSET_PREFIX}${script}`)
  .replace("{{style}}", `${ASSET_PREFIX}${style}`);
if (html.includes("{{")) {
  console.error("build-web: web/index.html has a placeholder this script does not fill");
  process.exit(1);
}
writeFileSync(join(outDir, "index.html"), html);
