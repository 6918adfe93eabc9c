import type { Writable } from "node:stream";
import { loadConfig, requireConfig, selectPackages } from "../config/load-config.js";
import { isPubtoolError, type PubtoolErrorCode } from "../errors.js";
import { findRepositoryRoot } from "../repository.js";
import { knownSecrets, MaskingWriter } from "../publish/secret-mask.js";
import { readVersion } from "../version.js";
import { type Command, helpText, parseCommandLine } from "./args.js";

/** The process streams and settings the CLI runs with. */
export interface CliIo {
  stdout: Writable;
  stderr: Writable;
  cwd: string;
  env: NodeJS.ProcessEnv;
}

/** Exit codes: the only table that maps error codes to process statuses. */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

const EXIT_CODES: Record<PubtoolErrorCode, number> = {
  USAGE: EXIT_USAGE,
  CONFIG_NOT_FOUND: EXIT_USAGE,
  CONFIG_INVALID: EXIT_USAGE,
  MANIFEST_INVALID: EXIT_FAILED,
  REPOSITORY_UNKNOWN: EXIT_FAILED,
  NOT_LOGGED_IN: EXIT_FAILED,
  AUTH_FAILED: EXIT_FAILED,
  HTTP_FAILED: EXIT_FAILED,
  PUBLISH_FAILED: EXIT_FAILED,
};

async function dispatch(command: Command, io: CliIo): Promise<number> {
  switch (command.name) {
    case "help":
      io.stdout.write(helpText(command.topic));
      return EXIT_OK;
    case "version":
      io.stdout.write(`${readVersion()}\n`);
      return EXIT_OK;
    case "doctor": {
      const config = loadConfig(io.cwd, command.config);
      const { runDoctor, renderReport } = await import("../doctor/doctor-command.js");
      const report = await runDoctor({ root: findRepositoryRoot(io.cwd), config, env: io.env });
      io.stdout.write(command.json ? `${JSON.stringify(report, null, 2)}\n` : renderReport(report));
      return report.ok ? EXIT_OK : EXIT_FAILED;
    }
    case "preflight": {
      const config = requireConfig(io.cwd, command.config);
      const { runPreflight, renderPreflight } = await import("../publish/preflight.js");
      const report = await runPreflight(selectPackages(config, command.packages, io.cwd), io.env);
      io.stdout.write(
        command.json ? `${JSON.stringify(report, null, 2)}\n` : renderPreflight(report),
      );
      return report.ok ? EXIT_OK : EXIT_FAILED;
    }
    case "publish": {
      const config = requireConfig(io.cwd, command.config);
      const { runPublish } = await import("../publish/publish.js");
      const ok = await runPublish(selectPackages(config, command.packages, io.cwd), io.env, {
        dryRun: command.dryRun,
        out: io.stdout,
        err: io.stderr,
      });
      return ok ? EXIT_OK : EXIT_FAILED;
    }
    case "status":
    case "verify":
      return readOnlyReport(command, io);
    case "token-list": {
      const { runTokenList } = await import("../token/token-list.js");
      const config = command.config === undefined ? null : loadConfig(io.cwd, command.config);
      return runTokenList({
        secrets: command.secrets,
        cwd: config?.root ?? io.cwd,
        env: io.env,
        out: io.stdout,
        err: io.stderr,
      });
    }
    case "auth-login": {
      const { runLogin } = await import("../auth/login.js");
      await runLogin({ clientId: command.clientId, env: io.env, out: io.stdout });
      return EXIT_OK;
    }
    case "auth-logout": {
      const { runLogout } = await import("../auth/login.js");
      runLogout(io.env, io.stdout);
      return EXIT_OK;
    }
    case "auth-status": {
      const { runStatus } = await import("../auth/login.js");
      return runStatus(io.env, io.stdout) ? EXIT_OK : EXIT_FAILED;
    }
  }
}

/** `status` and `verify`: read the registries' public records for the config's packages. */
async function readOnlyReport(
  command: Extract<Command, { name: "status" | "verify" }>,
  io: CliIo,
): Promise<number> {
  const config = selectPackages(requireConfig(io.cwd, command.config), command.packages, io.cwd);
  const report =
    command.name === "status"
      ? await import("../status/status.js").then(async ({ runStatus, renderStatus }) => {
          const result = await runStatus(config, findRepositoryRoot(io.cwd), io.env);
          return { ok: result.ok, json: result, text: () => renderStatus(result) };
        })
      : await import("../status/verify.js").then(async ({ runVerify, renderVerify }) => {
          const result = await runVerify(config, io.env);
          return { ok: result.ok, json: result, text: () => renderVerify(result) };
        });
  io.stdout.write(command.json ? `${JSON.stringify(report.json, null, 2)}\n` : report.text());
  return report.ok ? EXIT_OK : EXIT_FAILED;
}

/** Runs the CLI; the only place that prints diagnostics and decides the exit status. */
export async function run(argv: readonly string[], given: CliIo): Promise<number> {
  // Every message (a registry's error text, a subprocess's output) passes a masker of every
  // credential in the environment, so a server that echoes a token cannot get it printed.
  const secrets = knownSecrets(given.env);
  const stdout = new MaskingWriter(given.stdout, secrets);
  const stderr = new MaskingWriter(given.stderr, secrets);
  const io: CliIo = { ...given, stdout, stderr };
  try {
    return await runMasked(argv, io);
  } finally {
    stdout.flush();
    stderr.flush();
  }
}

async function runMasked(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    return await dispatch(parseCommandLine(argv), io);
  } catch (error) {
    if (isPubtoolError(error)) {
      const speaker = error.speaker ?? "pubtool";
      for (const line of error.message.split("\n")) io.stderr.write(`${speaker}: ${line}\n`);
      return EXIT_CODES[error.code] ?? EXIT_FAILED;
    }
    const message = error instanceof Error ? error.message : String(error);
    io.stderr.write(`pubtool: internal error: ${message}\n`);
    return EXIT_FAILED;
  }
}
