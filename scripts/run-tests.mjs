#!/usr/bin/env node
// The step of `npm test` after the build: the checks and every suite, in two lanes that run side
// by side. dirq's suite (the longest, its files three at a time), then lmclient's, have the first
// lane; lint, the web console's type check (the build checks the rest), pubtool's suite, the
// repository's own tests (the README's Quick start in a fresh copy), the release's tests and the
// packed-install matrix run one after another in the second, so the two lanes take about as
// long. Many tests wait (for servers, timers, child processes)
// rather than compute, so the two lanes share two cores well; run one after the other they took
// longer than CI's time limit allows.
//
// Every step runs even when an earlier one failed, so one failure hides no other. dirq's output
// streams as it comes; the second lane's is printed whole as each of its steps ends, so the two
// never interleave. The summary at the end gives each step's exit code and time.
import { spawn } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");

const LANES = [
  [
    { name: "dirq", args: ["run", "test", "-w", "packages/dirq"], stream: true },
    // After dirq's suite, so the two lanes end about together.
    { name: "lmclient", args: ["run", "test", "-w", "packages/lmclient"] },
  ],
  [
    { name: "lint", args: ["run", "lint"] },
    // The build type-checks every package's sources and tests; the web console is bundled
    // without a type check, so it has a step of its own.
    { name: "typecheck web", args: ["run", "typecheck:web", "-w", "packages/dirq"] },
    { name: "pubtool", args: ["run", "test", "-w", "packages/pubtool"] },
    // The README's Quick start in a fresh copy, and npm test's own provisioning.
    { name: "repository", args: ["run", "test:repository"] },
    { name: "release", args: ["run", "test:release"] },
    { name: "packed-install", args: ["run", "test:packed"] },
  ],
];

/**
 * The environment of every step. Node.js reads and parses NODE_EXTRA_CA_CERTS at each start
 * (a whole system bundle, a real share of its start-up), and the suites start Node.js
 * thousands of times; nothing in them opens a TLS connection but npm, which reads its own
 * `cafile`. So the certificates are handed to npm that way (unless it has one) and left out of
 * Node's start.
 */
function stepEnvironment(env) {
  const { NODE_EXTRA_CA_CERTS: certificates, ...rest } = env;
  if (certificates === undefined || certificates === "") return env;
  return { npm_config_cafile: certificates, ...rest };
}

/** Runs one step with npm; resolves with its exit code and seconds. */
function runStep(step) {
  const started = Date.now();
  return new Promise((resolveStep) => {
    const child = spawn("npm", step.args, {
      cwd: REPO,
      env: stepEnvironment(process.env),
      stdio: step.stream ? "inherit" : ["ignore", "pipe", "pipe"],
    });
    const output = [];
    child.stdout?.on("data", (chunk) => output.push(chunk));
    child.stderr?.on("data", (chunk) => output.push(chunk));
    const finish = (code) => {
      if (!step.stream) {
        process.stdout.write(`\n===== ${step.name} (npm ${step.args.join(" ")}) =====\n`);
        process.stdout.write(Buffer.concat(output));
      }
      resolveStep({ name: step.name, code, seconds: (Date.now() - started) / 1000 });
    };
    child.on("error", (error) => {
      output.push(Buffer.from(`${error.message}\n`));
      finish(-1);
    });
    child.on("close", (code, signal) => finish(code ?? `killed by ${signal}`));
  });
}

async function runLane(steps) {
  const results = [];
  for (const step of steps) results.push(await runStep(step));
  return results;
}

const results = (await Promise.all(LANES.map(runLane))).flat();
process.stdout.write("\n===== tests =====\n");
for (const { name, code, seconds } of results) {
  process.stdout.write(
    `${code === 0 ? "ok  " : "FAIL"} ${name}: exit ${code}, ${seconds.toFixed(1)} s\n`,
  );
}
process.exitCode = results.every((result) => result.code === 0) ? 0 : 1;
