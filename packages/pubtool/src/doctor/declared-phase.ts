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
import { type Check, type Phase, phaseStatus, type Status, passingCheck } from "./report.js";

type Declared = PackageEntry & { trust_policy: TrustPolicy };

/** Packages that carry a `[package.trust_policy]` block. */
export function declaredPackages(packages: readonly PackageEntry[]): Declared[] {
  return packages.filter((entry): entry is Declared => entry.trust_policy !== undefined);
}

/** The bare workflow file name in a `GITHUB_WORKFLOW_REF` (`o/r/.github/workflows/x.yml@ref`). */
export function workflowFromRef(ref: string): string | null {
  const match = /\.github\/workflows\/([^/@]+)@/.exec(ref);
  return match ? (match[1] ?? null) : null;
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
    const checks: Check[] = [
      {
        id: "declared",
        label: "not declared: no package has a [package.trust_policy] block",
        status: "neutral",
        messages: [],
      },
    ];
    return { id: "declared", heading, status: "neutral", checks };
  }
  const workflow = passingCheck("workflow-file", "declared workflow");
  const environment = passingCheck("environment", "declared environment");
  const ref = passingCheck("workflow-ref", "running workflow");
  const outcomes = new Map<Check, Status[]>([
    [workflow, []],
    [environment, []],
    [ref, []],
  ]);
  const note = (check: Check, status: Status, message: string) => {
    outcomes.get(check)?.push(status);
    check.messages.push(message);
  };
  const running =
    env.GITHUB_ACTIONS === "true" && env.GITHUB_WORKFLOW_REF
      ? workflowFromRef(env.GITHUB_WORKFLOW_REF)
      : null;
  const runningJobs = running === null ? [] : scan.jobs.filter((job) => job.entryFile === running);

  const judged = judgedRegistries(
    scan.jobs.flatMap((job) => job.targets),
    env,
  );
  for (const entry of declared) {
    const policy = entry.trust_policy;
    const file = policy.workflow;
    const matchesFile = (job: PublishingJob) => matchedFile(entry.kind, job) === file;
    // Each package is judged only against the steps that publish it (the packages of the config
    // they read, narrowed by --package, to the registry doctor judges), whichever config names
    // it; a step whose target needs an expression is named, not guessed.
    const answers = new Map(
      scan.jobs.map((job) => [job, publishesAny(job, entry, configs, judged)]),
    );
    const own = scan.jobs.filter((job) => answers.get(job)?.answer === "yes");
    const unknown = scan.jobs.filter((job) => answers.get(job)?.answer === "unknown");
    const touches = (job: PublishingJob) => job.entryFile === file || job.file === file;
    const jobs = own.filter(matchesFile);
    const elsewhere = own.filter((job) => !matchesFile(job));
    const where = `trust-policy: ${file}: package ${entry.name} (${entry.kind})`;
    const why = (job: PublishingJob) => {
      const answer = answers.get(job);
      return answer !== undefined && answer.answer !== "yes" ? answer.why : "";
    };
    const cannotTell = (job: PublishingJob) =>
      `trust-policy: ${describeJob(job)}: cannot tell locally whether it publishes package ${entry.name} (${why(job)}); not judged`;
    if (!existsSync(join(root, WORKFLOWS_DIR, file))) {
      const other = file.endsWith(".yml")
        ? `${file.slice(0, -4)}.yaml`
        : file.replace(/\.yaml$/, ".yml");
      const hint = existsSync(join(root, WORKFLOWS_DIR, other)) ? ` (there is ${other})` : "";
      note(
        workflow,
        "fail",
        `${where} declares it, but ${WORKFLOWS_DIR}/${file} does not exist${hint}`,
      );
    } else if (jobs.length === 0) {
      // The file publishes, but the registry matches the other end of a reusable-workflow call.
      const other = own.filter((job) => otherFile(entry.kind, job) === file);
      const external = scan.external.filter(
        (call) => call.entryFile === file || call.file === file,
      );
      const unknownHere = unknown.filter(touches);
      const othersHere = scan.jobs.filter(
        (job) => touches(job) && answers.get(job)?.answer === "no",
      );
      const right = [...new Set(other.map((job) => matchedFile(entry.kind, job)))];
      if (other.length > 0 && entry.kind === "pyreg") {
        note(
          workflow,
          "fail",
          `${where} declares it, but its publishing job is in ${right.join(", ")} (a reusable workflow it calls); pyreg matches the file that contains the publishing job: declare ${right.join(" or ")}`,
        );
      } else if (other.length > 0) {
        note(
          workflow,
          "fail",
          `${where} declares it, but it only publishes when called from ${right.join(", ")}; ${entry.kind} matches the top-level (calling) workflow: declare ${right.join(" or ")}`,
        );
      } else if (unknownHere.length > 0) {
        for (const job of unknownHere) note(workflow, "neutral", cannotTell(job));
      } else if (external.length > 0) {
        for (const call of external) {
          note(
            workflow,
            "neutral",
            `${where}: ${call.file}: job ${call.job} calls ${call.uses}, a reusable workflow in another repository; whether it publishes package ${entry.name} cannot be judged locally (check that repository's workflow and the registration)`,
          );
        }
      } else if (othersHere.length > 0) {
        const detail = othersHere.map((job) => `${describeJob(job)}: ${why(job)}`).join("; ");
        note(
          workflow,
          "fail",
          `${where} declares it, but no job in it publishes package ${entry.name} (${detail})`,
        );
      } else {
        note(workflow, "fail", `${where} declares it, but no job in it publishes`);
      }
    } else {
      for (const job of jobs) {
        note(
          workflow,
          "pass",
          `trust-policy: ${describeJob(job)} publishes package ${entry.name} as declared`,
        );
      }
    }
    // A second workflow that publishes the same package to the same registry (nightly.yml
    // calling publish.yml, or a release-all.yml reading the root config): the registry matches
    // another file there and rejects the token, whichever run doctor is in.
    if (jobs.length > 0) {
      for (const job of elsewhere) {
        const actual = matchedFile(entry.kind, job);
        note(
          workflow,
          "fail",
          `trust-policy: ${describeJob(job)} also publishes package ${entry.name}, but ${entry.kind} matches ${actual} there, not the declared ${file}: the registry will reject that run's OIDC token. Register ${actual} as a further trusted publisher for ${entry.name}, or publish it only through ${file}`,
        );
      }
      for (const job of unknown.filter(touches)) note(workflow, "neutral", cannotTell(job));
    }

    if (policy.environment === undefined) {
      note(environment, "neutral", `${where} declares no environment; not compared`);
    } else if (jobs.length === 0) {
      note(
        environment,
        "neutral",
        `${where}: not compared, no publishing job matches the declared workflow`,
      );
    } else {
      for (const job of jobs) {
        if (job.environment !== null && isExpression(job.environment)) {
          note(
            environment,
            "neutral",
            `trust-policy: ${describeJob(job)} takes its environment from an expression (${job.environment}); cannot be evaluated locally, not compared with ${policy.environment}`,
          );
        } else if (job.environment === null) {
          note(
            environment,
            "fail",
            `trust-policy: ${describeJob(job)} has no environment: key, but package ${entry.name} declares environment ${policy.environment}`,
          );
        } else if (job.environment.toLowerCase() !== policy.environment.toLowerCase()) {
          note(
            environment,
            "fail",
            `trust-policy: ${describeJob(job)} uses environment ${job.environment}, but package ${entry.name} declares ${policy.environment}`,
          );
        } else {
          note(
            environment,
            "pass",
            `trust-policy: ${describeJob(job)} uses environment ${job.environment} as declared`,
          );
        }
      }
    }

    if (env.GITHUB_ACTIONS !== "true") continue;
    if (running === null) {
      note(
        ref,
        "neutral",
        `${where}: GITHUB_WORKFLOW_REF is not set or not readable; not compared`,
      );
    } else if (runningJobs.length === 0) {
      note(
        ref,
        "neutral",
        `${where}: this run is ${running} (GITHUB_WORKFLOW_REF), which does not publish; not compared`,
      );
    } else if (!runningJobs.some((job) => answers.get(job)?.answer === "yes")) {
      const unsure = runningJobs.filter((job) => answers.get(job)?.answer === "unknown");
      note(
        ref,
        "neutral",
        unsure.length > 0
          ? `${where}: this run is ${running} (GITHUB_WORKFLOW_REF); whether it publishes package ${entry.name} cannot be known locally (${unsure.map(why).join("; ")}); not compared`
          : `${where}: this run is ${running} (GITHUB_WORKFLOW_REF), which does not publish package ${entry.name} (${[...new Set(runningJobs.map(why))].join("; ")}); not compared`,
      );
    } else if (runningJobs.some((job) => answers.get(job)?.answer === "yes" && matchesFile(job))) {
      note(
        ref,
        "pass",
        entry.kind === "pyreg" && running !== file
          ? `${where}: this run is ${running} (GITHUB_WORKFLOW_REF), which publishes through ${file} as declared`
          : `${where}: this run is the declared workflow (GITHUB_WORKFLOW_REF)`,
      );
    } else {
      const actual = [
        ...new Set(
          runningJobs
            .filter((job) => answers.get(job)?.answer === "yes")
            .map((job) => matchedFile(entry.kind, job)),
        ),
      ];
      note(
        ref,
        "fail",
        `${where} declares it, but this run is ${running} (GITHUB_WORKFLOW_REF)${entry.kind === "pyreg" ? `, which publishes from ${actual.join(", ")}` : ""}; the registry will reject the OIDC token`,
      );
    }
  }
  if (env.GITHUB_ACTIONS !== "true") {
    note(ref, "neutral", "not inside a workflow run (GITHUB_ACTIONS is not true); not compared");
  }
  for (const [check, statuses] of outcomes) {
    check.status = statuses.includes("fail")
      ? "fail"
      : statuses.includes("pass")
        ? "pass"
        : "neutral";
  }
  const checks = [workflow, environment, ref];
  return { id: "declared", heading, status: phaseStatus(checks), checks };
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
