import { existsSync } from "node:fs";
import { join } from "node:path";
import type { PackageEntry, RegistryKind, TrustPolicy } from "../config/schema.js";
import {
  describeJob,
  isExpression,
  type PublishingJob,
  WORKFLOWS_DIR,
  type WorkflowScan,
} from "../workflows/scan-workflows.js";
import {
  judgedRegistries,
  type Publishes,
  publishesPackage,
  type StepConfigs,
} from "../workflows/step-target.js";
import {
  type Check,
  combinedStatus,
  neutralPhase,
  type Phase,
  phaseStatus,
  type Status,
  passingCheck,
} from "./report.js";

/** A package with a trust policy. */
export type Declared = PackageEntry & { trust_policy: TrustPolicy };

/** Packages that carry a `[package.trust_policy]` block. */
export function declaredPackages(packages: readonly PackageEntry[]): Declared[] {
  return packages.filter((entry): entry is Declared => entry.trust_policy !== undefined);
}

/** The bare workflow file name in a `GITHUB_WORKFLOW_REF` (`o/r/.github/workflows/x.yml@ref`). */
export function workflowFromRef(ref: string): string | null {
  const match = /\.github\/workflows\/([^/@]+)@/.exec(ref);
  return match ? (match[1] ?? null) : null;
}

/**
 * A check of this phase, which every declared package adds findings to: it fails when any
 * finding fails, passes when any passes, and is neutral otherwise (or without findings).
 */
class TalliedCheck {
  readonly check: Check;
  private readonly statuses: Status[] = [];

  constructor(id: string, label: string) {
    this.check = passingCheck(id, label);
  }

  note(status: Status, message: string): void {
    this.statuses.push(status);
    this.check.messages.push(message);
  }

  /** The check, its status settled from every finding. */
  settled(): Check {
    this.check.status = combinedStatus(this.statuses);
    return this.check;
  }
}

/** How the scanned publishing jobs stand to one declared package. */
interface PackageJobs {
  entry: Declared;
  /** The workflow file the trust policy names. */
  file: string;
  /** `trust-policy: <file>: package <name> (<kind>)`, the start of most findings. */
  where: string;
  answers: Map<PublishingJob, Publishes>;
  /** Jobs that publish the package. */
  own: PublishingJob[];
  /** Jobs whose target needs an expression, so whether they publish it is not known locally. */
  unknown: PublishingJob[];
  /** Jobs that publish it, for which the registry matches the declared file. */
  matching: PublishingJob[];
  /** Jobs that publish it, for which the registry matches another file. */
  elsewhere: PublishingJob[];
}

/** The workflow file this run is (from `GITHUB_WORKFLOW_REF`), with its publishing jobs. */
interface RunningWorkflow {
  file: string;
  jobs: PublishingJob[];
}

/** Phase 2: declarations against the local workflow files and the running workflow. */
export function declaredPhase(
  root: string,
  packages: readonly PackageEntry[],
  scan: WorkflowScan,
  env: NodeJS.ProcessEnv,
  configs: StepConfigs,
): Phase {
  const declared = declaredPackages(packages);
  const heading = "trust policy (declared)";
  if (declared.length === 0) {
    return neutralPhase(
      "declared",
      heading,
      "not declared: no package has a [package.trust_policy] block",
    );
  }
  const workflow = new TalliedCheck("workflow-file", "declared workflow");
  const environment = new TalliedCheck("environment", "declared environment");
  const ref = new TalliedCheck("workflow-ref", "running workflow");
  const inWorkflowRun = env.GITHUB_ACTIONS === "true";
  const running = inWorkflowRun ? runningWorkflow(env, scan) : null;
  const judged = judgedRegistries(
    scan.jobs.flatMap((job) => job.targets),
    env,
  );
  for (const entry of declared) {
    const pkg = packageJobs(entry, scan, configs, judged);
    noteWorkflowFile(workflow, pkg, root, scan);
    noteOtherPublishers(workflow, pkg);
    noteEnvironment(environment, pkg);
    if (inWorkflowRun) noteRunningWorkflow(ref, pkg, running);
  }
  if (!inWorkflowRun) {
    ref.note("neutral", "not inside a workflow run (GITHUB_ACTIONS is not true); not compared");
  }
  const checks = [workflow.settled(), environment.settled(), ref.settled()];
  return { id: "declared", heading, status: phaseStatus(checks), checks };
}

/** `null` when `GITHUB_WORKFLOW_REF` is not set or names no workflow file. */
function runningWorkflow(env: NodeJS.ProcessEnv, scan: WorkflowScan): RunningWorkflow | null {
  const file = env.GITHUB_WORKFLOW_REF ? workflowFromRef(env.GITHUB_WORKFLOW_REF) : null;
  if (file === null) return null;
  return { file, jobs: scan.jobs.filter((job) => job.entryFile === file) };
}

function packageJobs(
  entry: Declared,
  scan: WorkflowScan,
  configs: StepConfigs,
  judged: Readonly<Record<RegistryKind, string | null>>,
): PackageJobs {
  const file = entry.trust_policy.workflow;
  // Each package is judged only against the steps that publish it (the packages of the config
  // they read, narrowed by --package, to the registry doctor judges), whichever config names
  // it; a step whose target needs an expression is named, not guessed.
  const answers = new Map(scan.jobs.map((job) => [job, publishesAny(job, entry, configs, judged)]));
  const own = scan.jobs.filter((job) => answers.get(job)?.answer === "yes");
  const matches = (job: PublishingJob) => matchedFile(entry.kind, job) === file;
  return {
    entry,
    file,
    where: `trust-policy: ${file}: package ${entry.name} (${entry.kind})`,
    answers,
    own,
    unknown: scan.jobs.filter((job) => answers.get(job)?.answer === "unknown"),
    matching: own.filter(matches),
    elsewhere: own.filter((job) => !matches(job)),
  };
}

/** Whether `job` sits in the declared file, or is reached from it. */
function touchesDeclared(pkg: PackageJobs, job: PublishingJob): boolean {
  return job.entryFile === pkg.file || job.file === pkg.file;
}

/** Why `job` does not (or may not) publish the package; empty when it does. */
function whyNot(pkg: PackageJobs, job: PublishingJob): string {
  const answer = pkg.answers.get(job);
  return answer !== undefined && answer.answer !== "yes" ? answer.why : "";
}

function cannotTell(pkg: PackageJobs, job: PublishingJob): string {
  return `trust-policy: ${describeJob(job)}: cannot tell locally whether it publishes package ${pkg.entry.name} (${whyNot(pkg, job)}); not judged`;
}

/** The declared workflow file exists and holds a job that publishes the package. */
function noteWorkflowFile(
  check: TalliedCheck,
  pkg: PackageJobs,
  root: string,
  scan: WorkflowScan,
): void {
  const { entry, file, where } = pkg;
  if (!existsSync(join(root, WORKFLOWS_DIR, file))) {
    check.note(
      "fail",
      `${where} declares it, but ${WORKFLOWS_DIR}/${file} does not exist${otherSpellingHint(root, file)}`,
    );
  } else if (pkg.matching.length === 0) {
    noteNoMatchingJob(check, pkg, scan);
  } else {
    for (const job of pkg.matching) {
      check.note(
        "pass",
        `trust-policy: ${describeJob(job)} publishes package ${entry.name} as declared`,
      );
    }
  }
}

/** ` (there is x.yaml)` when the declared `x.yml` is missing but the other spelling exists. */
function otherSpellingHint(root: string, file: string): string {
  const other = file.endsWith(".yml")
    ? `${file.slice(0, -4)}.yaml`
    : file.replace(/\.yaml$/, ".yml");
  return existsSync(join(root, WORKFLOWS_DIR, other)) ? ` (there is ${other})` : "";
}

/**
 * The declared file exists, but no job in it publishes the package where the registry looks:
 * says why, the most telling reason first.
 */
function noteNoMatchingJob(check: TalliedCheck, pkg: PackageJobs, scan: WorkflowScan): void {
  const { entry, file, where } = pkg;
  // The file publishes, but the registry matches the other end of a reusable-workflow call.
  const otherEnd = pkg.own.filter((job) => otherFile(entry.kind, job) === file);
  const unknownHere = pkg.unknown.filter((job) => touchesDeclared(pkg, job));
  const external = scan.external.filter((call) => call.entryFile === file || call.file === file);
  const othersHere = scan.jobs.filter(
    (job) => touchesDeclared(pkg, job) && pkg.answers.get(job)?.answer === "no",
  );
  if (otherEnd.length > 0) {
    check.note("fail", otherEndMessage(pkg, otherEnd));
  } else if (unknownHere.length > 0) {
    for (const job of unknownHere) check.note("neutral", cannotTell(pkg, job));
  } else if (external.length > 0) {
    for (const call of external) {
      check.note(
        "neutral",
        `${where}: ${call.file}: job ${call.job} calls ${call.uses}, a reusable workflow in another repository; whether it publishes package ${entry.name} cannot be judged locally (check that repository's workflow and the registration)`,
      );
    }
  } else if (othersHere.length > 0) {
    const detail = othersHere.map((job) => `${describeJob(job)}: ${whyNot(pkg, job)}`).join("; ");
    check.note(
      "fail",
      `${where} declares it, but no job in it publishes package ${entry.name} (${detail})`,
    );
  } else {
    check.note("fail", `${where} declares it, but no job in it publishes`);
  }
}

/** The declared file is the wrong end of the reusable-workflow calls of `otherEnd`. */
function otherEndMessage(pkg: PackageJobs, otherEnd: readonly PublishingJob[]): string {
  const { entry, where } = pkg;
  const right = [...new Set(otherEnd.map((job) => matchedFile(entry.kind, job)))];
  return entry.kind === "pyreg"
    ? `${where} declares it, but its publishing job is in ${right.join(", ")} (a reusable workflow it calls); pyreg matches the file that contains the publishing job: declare ${right.join(" or ")}`
    : `${where} declares it, but it only publishes when called from ${right.join(", ")}; ${entry.kind} matches the top-level (calling) workflow: declare ${right.join(" or ")}`;
}

/**
 * A second workflow that publishes the same package to the same registry (nightly.yml
 * calling publish.yml, or a release-all.yml reading the root config): the registry matches
 * another file there and rejects the token, whichever run doctor is in.
 */
function noteOtherPublishers(check: TalliedCheck, pkg: PackageJobs): void {
  if (pkg.matching.length === 0) return;
  const { entry, file } = pkg;
  for (const job of pkg.elsewhere) {
    const actual = matchedFile(entry.kind, job);
    check.note(
      "fail",
      `trust-policy: ${describeJob(job)} also publishes package ${entry.name}, but ${entry.kind} matches ${actual} there, not the declared ${file}: the registry will reject that run's OIDC token. Register ${actual} as a further trusted publisher for ${entry.name}, or publish it only through ${file}`,
    );
  }
  for (const job of pkg.unknown.filter((job) => touchesDeclared(pkg, job))) {
    check.note("neutral", cannotTell(pkg, job));
  }
}

/** The declared environment against the environment of each job that matches the declaration. */
function noteEnvironment(check: TalliedCheck, pkg: PackageJobs): void {
  const declared = pkg.entry.trust_policy.environment;
  if (declared === undefined) {
    check.note("neutral", `${pkg.where} declares no environment; not compared`);
  } else if (pkg.matching.length === 0) {
    check.note(
      "neutral",
      `${pkg.where}: not compared, no publishing job matches the declared workflow`,
    );
  } else {
    for (const job of pkg.matching) noteJobEnvironment(check, job, pkg.entry.name, declared);
  }
}

function noteJobEnvironment(
  check: TalliedCheck,
  job: PublishingJob,
  name: string,
  declared: string,
): void {
  if (job.environment !== null && isExpression(job.environment)) {
    check.note(
      "neutral",
      `trust-policy: ${describeJob(job)} takes its environment from an expression (${job.environment}); cannot be evaluated locally, not compared with ${declared}`,
    );
  } else if (job.environment === null) {
    check.note(
      "fail",
      `trust-policy: ${describeJob(job)} has no environment: key, but package ${name} declares environment ${declared}`,
    );
  } else if (job.environment.toLowerCase() !== declared.toLowerCase()) {
    check.note(
      "fail",
      `trust-policy: ${describeJob(job)} uses environment ${job.environment}, but package ${name} declares ${declared}`,
    );
  } else {
    check.note(
      "pass",
      `trust-policy: ${describeJob(job)} uses environment ${job.environment} as declared`,
    );
  }
}

/** Inside a workflow run: whether this run is the workflow the registry will match. */
function noteRunningWorkflow(
  check: TalliedCheck,
  pkg: PackageJobs,
  running: RunningWorkflow | null,
): void {
  const { entry, file, where } = pkg;
  if (running === null) {
    check.note("neutral", `${where}: GITHUB_WORKFLOW_REF is not set or not readable; not compared`);
    return;
  }
  const publishing = running.jobs.filter((job) => pkg.answers.get(job)?.answer === "yes");
  if (running.jobs.length === 0) {
    check.note(
      "neutral",
      `${where}: this run is ${running.file} (GITHUB_WORKFLOW_REF), which does not publish; not compared`,
    );
  } else if (publishing.length === 0) {
    check.note("neutral", notPublishingRunMessage(pkg, running));
  } else if (publishing.some((job) => matchedFile(entry.kind, job) === file)) {
    check.note(
      "pass",
      entry.kind === "pyreg" && running.file !== file
        ? `${where}: this run is ${running.file} (GITHUB_WORKFLOW_REF), which publishes through ${file} as declared`
        : `${where}: this run is the declared workflow (GITHUB_WORKFLOW_REF)`,
    );
  } else {
    const actual = [...new Set(publishing.map((job) => matchedFile(entry.kind, job)))];
    check.note(
      "fail",
      `${where} declares it, but this run is ${running.file} (GITHUB_WORKFLOW_REF)${entry.kind === "pyreg" ? `, which publishes from ${actual.join(", ")}` : ""}; the registry will reject the OIDC token`,
    );
  }
}

/** This run has publishing jobs, but none that is known to publish the package. */
function notPublishingRunMessage(pkg: PackageJobs, running: RunningWorkflow): string {
  const { entry, where } = pkg;
  const why = (job: PublishingJob) => whyNot(pkg, job);
  const unsure = running.jobs.filter((job) => pkg.answers.get(job)?.answer === "unknown");
  return unsure.length > 0
    ? `${where}: this run is ${running.file} (GITHUB_WORKFLOW_REF); whether it publishes package ${entry.name} cannot be known locally (${unsure.map(why).join("; ")}); not compared`
    : `${where}: this run is ${running.file} (GITHUB_WORKFLOW_REF), which does not publish package ${entry.name} (${[...new Set(running.jobs.map(why))].join("; ")}); not compared`;
}

/** Whether any publishing step of `job` publishes `entry`: yes over unknown over no. */
function publishesAny(
  job: PublishingJob,
  entry: PackageEntry,
  configs: StepConfigs,
  judged: Readonly<Record<RegistryKind, string | null>>,
): Publishes {
  const answers = job.targets.map((target) => publishesPackage(target, entry, configs, judged));
  return (
    answers.find((answer) => answer.answer === "yes") ??
    answers.find((answer) => answer.answer === "unknown") ??
    answers[0] ?? { answer: "no", why: "it has no publishing step" }
  );
}

/** The file a registry's trust policy names: pyreg the called file, rustreg and jsreg the caller. */
export function matchedFile(kind: RegistryKind, job: PublishingJob): string {
  return kind === "pyreg" ? job.file : job.entryFile;
}

function otherFile(kind: RegistryKind, job: PublishingJob): string {
  return kind === "pyreg" ? job.entryFile : job.file;
}
