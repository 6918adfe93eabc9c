#!/usr/bin/env node
// The npm launcher: plugin discovery (see docs/plugins.md), then the CLI. CommonJS, like the
// bundle it requires (see scripts/build-cli.mjs): start-up counts, and Node's ES module loader
// costs more to start than a query needing no table does to run.
"use strict";
const { join } = require("node:path");
const { launch } = require("../dist/src/cli-bundle/dirq.cjs");

// A reader that goes away (`dirq ... | head`) is not an error; any other failure to write
// stdout (`> /dev/full`) is one diagnostic line, never a stack trace.
process.stdout.on("error", (error) => {
  if (error.code === "EPIPE") process.exit(0);
  process.stderr.write(`dirq: cannot write the output: ${error.message}\n`);
  process.exit(1);
});

launch(
  process.argv.slice(2),
  { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd() },
  { env: process.env, launcherPackage: join(__dirname, "..") },
).then((code) => {
  process.exitCode = code;
});
