#!/usr/bin/env node
// Compiles dirq's SQLite extension (native/dirq-fs.c: file system calls and fill rows;
// native/dirq-csv.c: CSV records as rows; native/dirq-jsonl.c: JSON Lines lines as rows) into
// native/build/ (or the folder given with --out). `npm run build` runs it, and so does dirq's first
// query, REPL or server run after an install (src/cli/native-notice.ts): the package has no install
// script, so npm's install-script approvals (npm 11) never concern it. The extension is optional:
// without a C compiler (or on Windows) dirq lists folders and stats files with Node's fs and reads
// CSV with csv-parse and JSON Lines in JavaScript, with the same results and more CPU
// (bench/notes/walk.md, "Native file system calls"; bench/notes/formats.md).
// So a failure here warns, leaves its reason in not-built.txt beside where the library would
// be, and exits 0. Nothing is downloaded: the headers are SQLite's own, inside
// @rocicorp/zero-sqlite3.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";

const USAGE = "usage: node scripts/build-native.mjs [--out <folder>]";

let options;
try {
  ({ values: options } = parseArgs({ options: { out: { type: "string" } } }));
} catch (error) {
  process.stderr.write(`build-native: ${error.message}\n${USAGE}\n`);
  process.exit(2);
}

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const sources = ["dirq-fs.c", "dirq-csv.c", "dirq-jsonl.c"].map((name) =>
  join(packageDir, "native", name),
);
const outDir = options.out ? resolve(options.out) : join(packageDir, "native", "build");
const library = join(outDir, process.platform === "darwin" ? "dirq_fs.dylib" : "dirq_fs.so");
// Why the build failed, for the CLI to say once (src/cli/native-notice.ts).
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

/**
 * One level only: the folder above exists (native/, or the cache folder the CLI made), and
 * Node's recursive mkdir spins for ever where mkdir says ENOENT under a folder that exists.
 */
function makeOutDir() {
  try {
    mkdirSync(outDir);
  } catch (error) {
    if (error.code !== "EEXIST") throw error;
  }
}

function upToDate() {
  if (!existsSync(library)) return false;
  const built = statSync(library).mtimeMs;
  return sources.every((source) => built >= statSync(source).mtimeMs);
}

/** Compiles to a file of its own, renamed into place: a run loading it meanwhile sees all or none. */
function compile() {
  const compiler = process.env.CC || "cc";
  const shared = process.platform === "darwin" ? ["-dynamiclib"] : ["-shared", "-fPIC", "-pthread"];
  makeOutDir();
  const temporary = `${library}.${process.pid}.tmp`;
  try {
    execFileSync(
      compiler,
      ["-O2", "-Wall", ...shared, "-I", sqliteHeaders(), "-o", temporary, ...sources],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    renameSync(temporary, library);
  } finally {
    rmSync(temporary, { force: true });
  }
}

if (process.platform === "win32") {
  warn("no compiler is assumed on Windows");
} else if (!upToDate()) {
  try {
    compile();
    rmSync(notBuilt, { force: true });
  } catch (error) {
    const detail = error?.stderr?.toString().trim().split("\n")[0] || error?.message || error;
    const reason = `compiling ${sources.join(" and ")} with ${process.env.CC || "cc"} failed: ${detail}`;
    warn(reason);
    try {
      makeOutDir();
      writeFileSync(notBuilt, `${reason}\n`);
    } catch {
      // A folder that cannot be written: the warning above is all there is.
    }
  }
}
