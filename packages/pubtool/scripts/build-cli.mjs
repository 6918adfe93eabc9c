#!/usr/bin/env node
// Bundles the CLI (dist/src/cli/main.js and what it imports, dependencies included) into
// dist/cli, which bin/pubtool.js loads. Why: every run of `pubtool` paid Node's ES module loader
// for about a hundred files before doing anything, a large share of each run's CPU. The
// commands loaded on demand (publish, preflight, token, auth) stay chunks of their own. The
// library entry (dist/src/index.js) is not bundled.
import { build } from "esbuild";
import { rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const outdir = join(packageDir, "dist", "cli");
rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: { pubtool: join(packageDir, "dist", "src", "cli", "main.js") },
  outdir,
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node20.11",
  outExtension: { ".js": ".mjs" },
  logLevel: "warning",
  // Dependencies written as CommonJS (yaml) require Node built-ins; an ES module has no `require`.
  banner: {
    js: 'import { createRequire as pubtoolCreateRequire } from "node:module"; const require = pubtoolCreateRequire(import.meta.url);',
  },
});
