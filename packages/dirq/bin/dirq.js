#!/usr/bin/env node
// The npm launcher: plugin discovery (see docs/plugins.md), then the CLI.
import { fileURLToPath } from "node:url";
// One bundled module (see scripts/build-cli.mjs): start-up counts.
import { launch } from "../dist/src/cli-bundle/launch.js";

// A reader that goes away (`dirq ... | head`) is not an error; any other failure to write
// stdout (`> /dev/full`) is one diagnostic line, never a stack trace.
process.stdout.on("error", (error) => {
  if (error.code === "EPIPE") process.exit(0);
  process.stderr.write(`dirq: cannot write the output: ${error.message}\n`);
  process.exit(1);
});

process.exitCode = await launch(
  process.argv.slice(2),
  { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd() },
  { env: process.env, launcherPackage: fileURLToPath(new URL("..", import.meta.url)) },
);
