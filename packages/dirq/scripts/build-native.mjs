#!/usr/bin/env node
// Compiles dirq's SQLite extension for file system calls (native/dirq-fs.c) into native/build/,
// at install and at build. It is optional: without a C compiler (or on Windows) dirq lists
// folders and stats files with Node's fs, with the same results and more CPU (bench/README.md,
// "Native file system calls"). So a failure here warns and exits 0; it never fails an
// install. Nothing is downloaded: the headers are SQLite's own, inside @rocicorp/zero-sqlite3.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const source = join(packageDir, "native", "dirq-fs.c");
const outDir = join(packageDir, "native", "build");
const library = join(outDir, process.platform === "darwin" ? "dirq_fs.dylib" : "dirq_fs.so");
// Why the build failed, for the CLI to say once on a first run (src/cli/native-notice.ts):
// npm hides an install script's stderr unless the script fails, and this one never does.
const notBuilt = join(outDir, "not-built.txt");

function warn(reason) {
  process.stderr.write(
    `dirq: the native file system extension was not built (${reason}); dirq works without it, ` +
      "its fills use more CPU\n",
  );
}

function sqliteHeaders() {
  const require = createRequire(import.meta.url);
  const sqlitePackage = dirname(require.resolve("@rocicorp/zero-sqlite3/package.json"));
  return join(sqlitePackage, "deps", "sqlite3");
}

function upToDate() {
  if (!existsSync(library)) return false;
  return statSync(library).mtimeMs >= statSync(source).mtimeMs;
}

function compile() {
  const compiler = process.env.CC || "cc";
  const shared = process.platform === "darwin" ? ["-dynamiclib"] : ["-shared", "-fPIC", "-pthread"];
  mkdirSync(outDir, { recursive: true });
  execFileSync(
    compiler,
    ["-O2", "-Wall", ...shared, "-I", sqliteHeaders(), "-o", library, source],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
}

if (process.platform === "win32") {
  warn("no compiler is assumed on Windows");
} else if (process.env.DIRQ_SKIP_NATIVE === "1") {
  warn("DIRQ_SKIP_NATIVE=1");
} else if (!upToDate()) {
  try {
    compile();
    rmSync(notBuilt, { force: true });
  } catch (error) {
    const detail = error?.stderr?.toString().trim().split("\n")[0] || error?.message || error;
    const reason = `compiling ${source} with ${process.env.CC || "cc"} failed: ${detail}`;
    warn(reason);
    try {
      mkdirSync(outDir, { recursive: true });
      writeFileSync(notBuilt, `${reason}\n`);
    } catch {
      // A read-only package folder: the warning above is all there is.
    }
  }
}
