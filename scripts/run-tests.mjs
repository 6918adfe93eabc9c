#!/usr/bin/env node
// The step of `npm test` after the build: the checks and every suite, on two runners side by
// side that take the steps from one queue. dirq's suite (the longest, its files three at a
// time) is the first runner's first step; the second takes the rest in order (the packed-install
// matrix first: it is the longest of them), and the first joins it once dirq's suite ends, so
// neither runner sits idle while the other still has steps queued. Many tests wait (for
// servers, timers, child processes) rather than compute, so two runners share two cores well;
// one after the other the steps took longer than CI's time limit allows.
//
// Every step runs even when an earlier one failed, so one failure hides no other. dirq's output
// streams as it comes; the other steps' output is printed whole as each ends, so the two never
// interleave. The summary at the end gives each step's exit code and time, in the queue's order.
import { spawn } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** dirq's suite streams its output, so it runs first and alone on the first runner. */
const FIRST = { name: "dirq", args: ["run", "test", "-w", "packages/dirq"], stream: true };
/** The other steps, longest first, so that the short ones fill the end of the run. */
const QUEUE = [
  // Installs under each Node version of the matrix, one after another: the longest step.
  { name: "packed-install", args: ["run", "test:packed"] },
  { name: "pubtool", args: ["run", "test", "-w", "packages/pubtool"] },
  { name: "release", args: ["run", "test:release"] },
  { name: "lint", args: ["run", "lint"] },
  // The README's Quick start in a fresh copy, and npm test's own provisioning.
  { name: "repository", args: ["run", "test:repository"] },
  { name: "lmclient", args: ["run", "test", "-w", "packages/lmclient"] },
  // The build type-checks every package's sources and tests; the web console is bundled
  // without a type check, so it has a step of its own.
  { name: "typecheck web", args: ["run", "typecheck:web", "-w", "packages/dirq"] },
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

/** Runs `first` (if any), then steps taken from `queue` until it is empty. */
async function runner(first, queue, results) {
  if (first !== undefined) results.set(first.name, await runStep(first));
  for (let step = queue.shift(); step !== undefined; step = queue.shift()) {
    results.set(step.name, await runStep(step));
  }
}

const queue = [...QUEUE];
const finished = new Map();
await Promise.all([runner(FIRST, queue, finished), runner(undefined, queue, finished)]);
const results = [FIRST, ...QUEUE].map((step) => finished.get(step.name));
process.stdout.write("\n===== tests =====\n");
for (const { name, code, seconds } of results) {
  process.stdout.write(
    `${code === 0 ? "ok  " : "FAIL"} ${name}: exit ${code}, ${seconds.toFixed(1)} s\n`,
  );
}
process.exitCode = results.every((result) => result.code === 0) ? 0 : 1;
