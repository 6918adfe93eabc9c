import type { Config } from "../config/load-config.js";
import type { PackageEntry, RegistryKind } from "../config/schema.js";
import type { Status } from "../doctor/report.js";
import { isPubtoolError } from "../errors.js";
import { authModeFor, type FirstPublish, firstPublishAuth } from "./auth-mode.js";
import { MIN_NPM_FOR_OIDC, npmOidcProblem, provenanceBlocker } from "./jsreg-support.js";
import { dependencyOrder, type Manifest, readManifest } from "./manifest.js";
import { type PublishedState, readPublished } from "./registry-read.js";

/** One line of a package's preflight report. */
export interface PreflightCheck {
  label: string;
  status: Status;
  message: string;
}

/** One package's report. */
export interface PackageReport {
  name: string;
  kind: string;
  path: string;
  version: string | null;
  alreadyPublished: boolean;
  ok: boolean;
  checks: PreflightCheck[];
}

/** The whole preflight run, as printed by `--json`. */
export interface PreflightReport {
  ok: boolean;
  packages: PackageReport[];
}

/** A package of the config with its manifest, or why the manifest could not be read. */
export interface LoadedPackage {
  entry: PackageEntry;
  manifest: Manifest | null;
  error: string | null;
}

/** Reads every manifest (keeping errors) and orders the packages by their dependencies. */
export function loadPackages(config: Config): LoadedPackage[] {
  const items = config.packages.map((entry) => {
    try {
      return { entry, manifest: readManifest(config, entry), error: null };
    } catch (error) {
      if (!isPubtoolError(error)) throw error;
      return { entry, manifest: null, error: error.message };
    }
  });
  return dependencyOrder(items);
}

/** `pubtool preflight`: reads only, publishes nothing. */
export async function runPreflight(
  config: Config,
  env: NodeJS.ProcessEnv,
): Promise<PreflightReport> {
  const packages: PackageReport[] = [];
  for (const item of loadPackages(config)) packages.push(await packageReport(item, env));
  return { ok: packages.every((report) => report.ok), packages };
}

/** One package: its manifest, whether its version is out already, how publish would log in. */
async function packageReport(
  { entry, manifest, error }: LoadedPackage,
  env: NodeJS.ProcessEnv,
): Promise<PackageReport> {
  const checks: PreflightCheck[] = [];
  const report: PackageReport = {
    name: entry.name,
    kind: entry.kind,
    path: entry.path,
    version: manifest?.version ?? null,
    alreadyPublished: false,
    ok: true,
    checks,
  };
  let firstPublish: FirstPublish | null = null;
  if (manifest === null) {
    checks.push({ label: "manifest", status: "fail", message: error ?? "unreadable" });
  } else {
    checks.push(...manifestChecks(entry, manifest));
    const published = await readPublished(entry.kind, manifest.name, manifest.version, env);
    report.alreadyPublished = published.state === "published";
    checks.push(versionCheck(entry.kind, manifest.version, published));
    if (published.state === "unpublished" && published.packageExists === false) {
      firstPublish = firstPublishAuth(entry.kind, env);
    }
  }
  checks.push(...authChecks(entry.kind, firstPublish, env));
  report.ok = checks.every((check) => check.status !== "fail");
  return report;
}

/** The manifest was read, and names the package as the config does. */
function manifestChecks(entry: PackageEntry, manifest: Manifest): PreflightCheck[] {
  const checks: PreflightCheck[] = [
    {
      label: "manifest",
      status: "pass",
      message: `${manifest.file}: ${manifest.name} ${manifest.version}`,
    },
  ];
  if (manifest.name !== entry.name) {
    checks.push({
      label: "name",
      status: "fail",
      message: `${manifest.file} names the package ${manifest.name}, pubtool.toml says ${entry.name}`,
    });
  }
  return checks;
}

/** Whether the version is on the registry already (publish skips it then). */
function versionCheck(
  kind: RegistryKind,
  version: string,
  published: PublishedState,
): PreflightCheck {
  if (published.state === "published") {
    return {
      label: "version",
      status: "neutral",
      message: `${version} is already published on ${kind}; publish will skip it`,
    };
  }
  if (published.state === "unpublished") {
    return { label: "version", status: "pass", message: `${version} is not published yet` };
  }
  return {
    label: "version",
    status: "neutral",
    message: `could not ask ${kind} whether ${version} exists (${published.reason})`,
  };
}

/** How publish would authenticate: for a package's first publish, as that needs. */
function authChecks(
  kind: RegistryKind,
  firstPublish: FirstPublish | null,
  env: NodeJS.ProcessEnv,
): PreflightCheck[] {
  const checks: PreflightCheck[] = [];
  const auth = firstPublish?.auth ?? authModeFor(kind, env);
  if (firstPublish !== null) {
    checks.push({
      label: "first publish",
      status: firstPublish.problem ? "fail" : "neutral",
      message: firstPublish.message,
    });
  }
  checks.push({
    label: "auth",
    status: auth.mode === "none" ? "fail" : "pass",
    message: auth.detail,
  });
  if (kind === "jsreg" && auth.mode === "oidc") checks.push(...npmOidcChecks(env));
  return checks;
}

/** What trusted publishing to jsreg needs of npm, and whether provenance can be attached. */
function npmOidcChecks(env: NodeJS.ProcessEnv): PreflightCheck[] {
  const problem = npmOidcProblem(env);
  const checks: PreflightCheck[] = [
    {
      label: "npm",
      status: problem === null ? "pass" : "fail",
      message: problem ?? `npm is ${MIN_NPM_FOR_OIDC} or newer, as trusted publishing needs`,
    },
  ];
  const blocker = provenanceBlocker(env);
  if (blocker !== null) {
    checks.push({
      label: "provenance",
      status: "neutral",
      message: `skipped: ${blocker}; the registry accepts provenance only from public repositories on the host's own runners`,
    });
  }
  return checks;
}

const MARKS: Record<Status, string> = { pass: "✓", fail: "✗", neutral: "-" };

/** Renders the preflight report for people. */
export function renderPreflight(report: PreflightReport): string {
  const lines: string[] = [];
  if (report.packages.length === 0) lines.push("no [[package]] entries in the config");
  for (const pkg of report.packages) {
    lines.push(`package ${pkg.name} (${pkg.kind}, ${pkg.path}):`);
    for (const check of pkg.checks)
      lines.push(`  ${MARKS[check.status]} ${check.label}: ${check.message}`);
  }
  const failed = report.packages.filter((pkg) => !pkg.ok).length;
  lines.push(
    failed === 0
      ? "preflight: ok"
      : `preflight: ${failed} package${failed === 1 ? "" : "s"} not ready`,
  );
  return `${lines.join("\n")}\n`;
}
