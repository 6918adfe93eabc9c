import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, relative } from "node:path";
import type { Writable } from "node:stream";
import type { Config } from "../config/load-config.js";
import type { PackageEntry } from "../config/schema.js";
import { endpointsFrom, envValue } from "../endpoints.js";
import { isPubtoolError, PubtoolError } from "../errors.js";
import { authModeFor, type AuthMode, firstPublishAuth } from "./auth-mode.js";
import {
  explainNpmFailure,
  findPackedTarball,
  packedFileName,
  NPM_OIDC_VARIABLES,
  npmOidcProblem,
  provenanceBlocker,
} from "./jsreg-support.js";
import { childEnv, runProgram } from "./child-env.js";
import { readDistributionMetadata } from "./dist-metadata.js";
import type { Manifest } from "./manifest.js";
import { loadPackages } from "./preflight.js";
import {
  DEFAULT_DIST_GLOBS,
  findDistributions,
  mintPyregToken,
  uploadDistribution,
} from "./pyreg-upload.js";
import { describeRelease, registryRelease } from "./prerelease.js";
import { readPublished } from "./registry-read.js";
import { knownSecrets } from "./secret-mask.js";

interface PublishContext {
  env: NodeJS.ProcessEnv;
  dryRun: boolean;
  out: Writable;
  err: Writable;
}

const CARGO_VARIABLES = ["CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "CARGO_TARGET_DIR"];

/** What each registry's own tool prints when the version is on the registry already. */
const ALREADY_PUBLISHED = {
  cargo: /already (exists|uploaded)/i,
  npm: /cannot publish over the previously published versions|EPUBLISHCONFLICT/i,
};

/** What a registry's tool runs with: its environment, and the credential that is in it. */
interface ToolRun {
  env: Record<string, string>;
  token: string;
}

/**
 * Runs `<program> publish ...` in the package's folder; its output is masked (the token and
 * every credential value of pubtool's environment). A version the registry has already counts
 * as published.
 */
async function runPublishTool(
  program: keyof typeof ALREADY_PUBLISHED,
  args: readonly string[],
  run: ToolRun,
  manifest: Manifest,
  context: PublishContext,
): Promise<void> {
  const result = await runProgram(program, args, {
    cwd: manifest.dir,
    env: run.env,
    log: context.err,
    secrets: knownSecrets(context.env, [run.token]),
  });
  if (result.code === 0 || ALREADY_PUBLISHED[program].test(result.tail)) return;
  const failed = `${program} publish exited with ${result.code}`;
  if (program !== "npm") throw new PubtoolError("PUBLISH_FAILED", failed);
  const explained = explainNpmFailure(result.tail, manifest.name, run.token === "");
  if (explained?.kind === "explained") {
    throw new PubtoolError("PUBLISH_FAILED", `${failed}: ${explained.message}`);
  }
  if (explained?.kind === "tlog-duplicate") {
    await settleTlogDuplicate(manifest, context, failed);
    return;
  }
  throw new PubtoolError("PUBLISH_FAILED", failed);
}

/**
 * npm retries a publish whose answer got lost; the retry's provenance entry is then refused by
 * the transparency log as a duplicate (409, TLOG_CREATE_ENTRY_ERROR). The 409 alone does not
 * prove the first attempt reached the registry, so the registry decides, as `npm view` would.
 */
async function settleTlogDuplicate(
  manifest: Manifest,
  context: PublishContext,
  failed: string,
): Promise<void> {
  const state = await readPublished("jsreg", manifest.name, manifest.version, context.env);
  if (state.state === "published") {
    context.out.write(
      `    npm's retried publish was refused by the transparency log as a duplicate (409, TLOG_CREATE_ENTRY_ERROR), and the registry has ${manifest.name}@${manifest.version}: the first attempt went through, counted as published\n`,
    );
    return;
  }
  const seen =
    state.state === "unknown" ? `could not be read (${state.reason})` : "does not have it";
  throw new PubtoolError(
    "PUBLISH_FAILED",
    `${failed}: the transparency log refused npm's provenance entry as a duplicate (409, TLOG_CREATE_ENTRY_ERROR) and the registry ${seen}; run the release again, which makes a fresh provenance entry`,
  );
}

async function publishRustreg(
  manifest: Manifest,
  auth: AuthMode,
  context: PublishContext,
): Promise<void> {
  const { env } = context;
  const token = auth.mode === "token" ? (envValue(env, auth.variable) ?? "") : "";
  const index = endpointsFrom(env).rustregIndex;
  const extra: Record<string, string> = {};
  const args = ["publish"];
  if (index !== null) {
    // A private or test registry: an ad-hoc named registry, configured only for this run.
    extra.CARGO_REGISTRIES_PUBTOOL_INDEX = index;
    args.push("--registry", "pubtool");
    if (!context.dryRun) extra.CARGO_REGISTRIES_PUBTOOL_TOKEN = token;
  } else if (!context.dryRun) {
    extra.CARGO_REGISTRY_TOKEN = token;
  }
  if (context.dryRun) args.push("--dry-run");
  const run: ToolRun = { env: childEnv(env, CARGO_VARIABLES, extra), token };
  await runPublishTool("cargo", args, run, manifest, context);
}

async function publishPyreg(
  entry: PackageEntry,
  manifest: Manifest,
  auth: AuthMode,
  context: PublishContext,
): Promise<void> {
  const { env, out } = context;
  const files = findDistributions(
    manifest.dir,
    entry.paths ?? DEFAULT_DIST_GLOBS,
    manifest.name,
    manifest.version,
  );
  if (files.length === 0) {
    throw new PubtoolError(
      "PUBLISH_FAILED",
      `no built distributions of ${manifest.name} ${manifest.version} matching ${(entry.paths ?? DEFAULT_DIST_GLOBS).join(", ")}; build them first (python -m build)`,
    );
  }
  if (context.dryRun) {
    for (const file of files) {
      const fields = await readDistributionMetadata(file, manifest);
      out.write(
        `    would upload ${relative(manifest.dir, file)} with ${fields.length} metadata fields\n`,
      );
    }
    return;
  }
  const token =
    auth.mode === "oidc"
      ? await mintPyregToken(env)
      : (envValue(env, (auth as { variable: string }).variable) ?? "");
  for (const file of files) {
    const state = await uploadDistribution(file, manifest, token, env);
    out.write(
      `    ${state === "uploaded" ? "uploaded" : "already on pyreg, skipped"} ${basename(file)}\n`,
    );
  }
}

async function publishJsreg(
  entry: PackageEntry,
  manifest: Manifest,
  auth: AuthMode,
  context: PublishContext,
): Promise<void> {
  const { env } = context;
  const registry = endpointsFrom(env).jsreg;
  const args = [
    "publish",
    ...packedTarball(entry, manifest, context),
    "--registry",
    `${registry}/`,
  ];
  // npm refuses a prerelease without --tag (it would otherwise move `latest` onto it).
  const release = registryRelease(entry, manifest.version);
  if (release.prerelease && release.distTag !== null) args.push("--tag", release.distTag);
  const extra: Record<string, string> = {};
  const names: (string | RegExp)[] = [];
  let scratch: string | null = null;
  let token = "";
  if (context.dryRun) {
    args.push("--dry-run");
  } else if (auth.mode === "oidc") {
    // npm (11.5.1 or newer) performs the OIDC exchange itself; it gets only the variables it
    // needs, never GITHUB_TOKEN.
    const problem = npmOidcProblem(env);
    if (problem !== null) throw new PubtoolError("PUBLISH_FAILED", problem);
    names.push(...NPM_OIDC_VARIABLES);
    const blocker = provenanceBlocker(env);
    if (blocker === null) {
      args.push("--provenance");
    } else {
      extra.NPM_CONFIG_PROVENANCE = "false";
      context.out.write(`    provenance skipped: ${blocker}\n`);
    }
  } else if (auth.mode === "token") {
    token = envValue(env, auth.variable) ?? "";
    // The token stays in the environment; the temporary npmrc only references it.
    scratch = mkdtempSync(join(tmpdir(), "pubtool-npm-"));
    const host = registry.replace(/^https?:/, "");
    writeFileSync(join(scratch, "npmrc"), `${host}/:_authToken=\${PUBTOOL_JSREG_TOKEN}\n`, {
      mode: 0o600,
    });
    extra.PUBTOOL_JSREG_TOKEN = token;
    extra.NPM_CONFIG_USERCONFIG = join(scratch, "npmrc");
  }
  try {
    const run: ToolRun = { env: childEnv(env, names, extra), token };
    await runPublishTool("npm", args, run, manifest, context);
  } finally {
    if (scratch !== null) rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * With `paths`, a jsreg package is published from the tarball the build packed (`npm publish
 * <file>`), so a publishing job needs only the built files; without, npm packs the folder.
 */
function packedTarball(entry: PackageEntry, manifest: Manifest, context: PublishContext): string[] {
  if (entry.paths === undefined) return [];
  const file = findPackedTarball(manifest.dir, entry.paths, manifest.name, manifest.version);
  if (file === null) {
    throw new PubtoolError(
      "PUBLISH_FAILED",
      `no ${packedFileName(manifest.name, manifest.version)} matching ${entry.paths.join(", ")}; pack it first (npm pack)`,
    );
  }
  context.out.write(`    from ${relative(manifest.dir, file)}\n`);
  return [file];
}

/** `pubtool publish [--dry-run]`: every package in dependency order; stops at the first failure. */
export async function runPublish(
  config: Config,
  env: NodeJS.ProcessEnv,
  options: { dryRun: boolean; out: Writable; err: Writable },
): Promise<boolean> {
  const context: PublishContext = { env, ...options };
  const { out, err } = options;
  const items = loadPackages(config);
  let failed = false;
  for (const { entry, manifest, error } of items) {
    const label = `${entry.name} (${entry.kind})`;
    if (failed) {
      out.write(`${label}: not attempted (an earlier package failed)\n`);
      continue;
    }
    try {
      if (manifest === null)
        throw new PubtoolError("MANIFEST_INVALID", error ?? "unreadable manifest");
      const published = await readPublished(entry.kind, manifest.name, manifest.version, env);
      if (published.state === "published") {
        out.write(`${label}: ${manifest.version} is already published, skipped\n`);
        continue;
      }
      let auth = authModeFor(entry.kind, env);
      if (published.state === "unpublished" && published.packageExists === false) {
        const first = firstPublishAuth(entry.kind, env);
        out.write(`${label}: first publish: ${first.message}\n`);
        auth = first.auth;
        if (first.problem && !options.dryRun)
          throw new PubtoolError("PUBLISH_FAILED", first.message);
      }
      if (auth.mode === "none" && !options.dryRun) {
        throw new PubtoolError("PUBLISH_FAILED", `no credentials: ${auth.detail}`);
      }
      const how = auth.mode === "none" ? "no credentials (dry run)" : auth.detail;
      const gets = describeRelease(registryRelease(entry, manifest.declared ?? manifest.version));
      out.write(
        `${label}: ${options.dryRun ? "dry run of" : "publishing"} ${manifest.version} with ${how}; ${entry.kind} gets ${gets}\n`,
      );
      if (entry.kind === "rustreg") await publishRustreg(manifest, auth, context);
      else if (entry.kind === "pyreg") await publishPyreg(entry, manifest, auth, context);
      else await publishJsreg(entry, manifest, auth, context);
      out.write(`${label}: ${options.dryRun ? "dry run ok" : `published ${manifest.version}`}\n`);
    } catch (caught) {
      if (!isPubtoolError(caught)) throw caught;
      failed = true;
      err.write(`pubtool: ${label}: ${caught.message}\n`);
      out.write(`${label}: failed\n`);
    }
  }
  return !failed;
}
