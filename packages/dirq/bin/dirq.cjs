#!/usr/bin/env node
// The npm launcher: plugin discovery (see docs/plugins.md), then the CLI. CommonJS, like the
// bundle it loads (see scripts/build-cli.mjs): start-up counts, and Node's ES module loader
// costs more to start than a query needing no table does to run.
"use strict";
const { readFileSync } = require("node:fs");
const { createRequire } = require("node:module");
const { dirname, join } = require("node:path");
const { Script } = require("node:vm");

/**
 * The CLI bundle, loaded as `require` would, but compiled with the V8 code cache the build
 * wrote beside it (scripts/build-cli.mjs) when this Node accepts it.
 */
function loadCli() {
  const bundle = join(__dirname, "..", "dist", "src", "cli-bundle", "dirq.cjs");
  let cachedData;
  try {
    cachedData = readFileSync(`${bundle}.v8cache`);
  } catch {
    cachedData = undefined; // a build without one: compile as usual
  }
  // The function Node wraps a CommonJS module in (the build script uses the same).
  const wrapped = `(function (exports, require, module, __filename, __dirname) { ${readFileSync(bundle, "utf8")}\n})`;
  const script = new Script(wrapped, { filename: bundle, cachedData });
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(bundle), module, bundle, dirname(bundle));
  return module.exports;
}

// A reader that goes away (`dirq ... | head`) is not an error; any other failure to write
// stdout (`> /dev/full`) is one diagnostic line, never a stack trace.
process.stdout.on("error", (error) => {
  if (error.code === "EPIPE") process.exit(0);
  process.stderr.write(`dirq: cannot write the output: ${error.message}\n`);
  process.exit(1);
});

loadCli()
  .launch(
    process.argv.slice(2),
    { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd() },
    { env: process.env, launcherPackage: join(__dirname, "..") },
  )
  .then((code) => {
    process.exitCode = code;
  });
