#!/usr/bin/env node
// Records where SQLite's native addon (inside @rocicorp/zero-sqlite3) is for the Node that
// installs dirq, in native/build/sqlite-addon.json, at install and at build. The CLI then
// loads that file directly (src/indexer/sqlite-addon.ts) instead of resolving the package and
// letting node-gyp-build list its prebuilds folders on every start (a cost `dirq "SELECT 1"`
// would pay). Under another Node ABI, platform or architecture, or with any of
// node-gyp-build's overrides set, the CLI searches as before. Optional like the native
// extension: a failure leaves no record and never fails an install.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const record = join(packageDir, "native", "build", "sqlite-addon.json");

try {
  rmSync(record, { force: true });
  const fromDirq = createRequire(join(packageDir, "package.json"));
  const sqliteDir = dirname(fromDirq.resolve("@rocicorp/zero-sqlite3/package.json"));
  // node-gyp-build is zero-sqlite3's dependency: resolved from its folder, as it loads it.
  const nodeGypBuild = createRequire(join(sqliteDir, "package.json"))("node-gyp-build");
  const addon = nodeGypBuild.resolve(sqliteDir);
  mkdirSync(dirname(record), { recursive: true });
  const entry = {
    abi: process.versions.modules,
    platform: process.platform,
    arch: process.arch,
    // Relative, so a moved install (a copied prefix) still finds it.
    path: relative(packageDir, addon).split("\\").join("/"),
  };
  writeFileSync(record, `${JSON.stringify(entry)}\n`);
} catch (error) {
  process.stderr.write(
    `dirq: SQLite's addon was not recorded (${error?.message ?? error}); dirq finds it at ` +
      "each start instead\n",
  );
}
