#!/usr/bin/env node
// The CLI bundled (scripts/build-cli.mjs): one file to load, not a hundred modules.
import { run } from "../dist/cli/pubtool.mjs";

// A reader that goes away (`pubtool ... | head`) is not an error.
process.stdout.on("error", (error) => {
  if (error.code === "EPIPE") process.exit(0);
  throw error;
});

process.exitCode = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  cwd: process.cwd(),
  env: process.env,
});
