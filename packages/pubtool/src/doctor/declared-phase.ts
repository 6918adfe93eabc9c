import { existsSync } from "node:fs";
import { join } from "node:path";
import type { PackageEntry, TrustPolicy } from "../config/schema.js";
import { describeJob, WORKFLOWS_DIR, type WorkflowScan } from "../workflows/scan-workflows.js";
import { type Check, type Phase, phaseStatus } from "./report.js";

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
  const workflow: Check = {
    id: "workflow-file",
    label: "declared workflow",
    status: "pass",
    messages: [],
  };
  const environment: Check = {
    id: "environment",
    label: "declared environment",
    status: "pass",
    messages: [],
  };
  const ref: Check = {
    id: "workflow-ref",
    label: "running workflow",
    status: "pass",
    messages: [],
  };

  for (const entry of declared) {
    const policy = entry.trust_policy;
    const file = policy.workflow;
    const jobs = scan.jobs.filter((job) => job.entryFile === file);
    if (!existsSync(join(root, WORKFLOWS_DIR, file))) {
      workflow.status = "fail";
      const other = file.endsWith(".yml")
        ? `${file.slice(0, -4)}.yaml`
        : file.replace(/\.yaml$/, ".yml");
      const hint = existsSync(join(root, WORKFLOWS_DIR, other)) ? ` (there is ${other})` : "";
      workflow.messages.push(
        `trust-policy: ${file}: package ${entry.name} declares it, but ${WORKFLOWS_DIR}/${file} does not exist${hint}`,
      );
    } else if (jobs.length === 0) {
      workflow.status = "fail";
      workflow.messages.push(
        `trust-policy: ${file}: package ${entry.name} declares it, but no job in it publishes`,
      );
    } else {
      for (const job of jobs) {
        workflow.messages.push(
          `trust-policy: ${describeJob(job)} publishes package ${entry.name} as declared`,
        );
      }
    }

    if (policy.environment === undefined) {
      environment.messages.push(
        `trust-policy: ${file}: package ${entry.name} declares no environment; not compared`,
      );
    } else if (jobs.length === 0) {
      environment.status = environment.status === "fail" ? "fail" : "neutral";
      environment.messages.push(
        `trust-policy: ${file}: package ${entry.name}: not compared, no publishing job in the declared workflow`,
      );
    } else {
      for (const job of jobs) {
        if (job.environment === null) {
          environment.status = "fail";
          environment.messages.push(
            `trust-policy: ${describeJob(job)} has no environment: key, but package ${entry.name} declares environment ${policy.environment}`,
          );
        } else if (job.environment.toLowerCase() !== policy.environment.toLowerCase()) {
          environment.status = "fail";
          environment.messages.push(
            `trust-policy: ${describeJob(job)} uses environment ${job.environment}, but package ${entry.name} declares ${policy.environment}`,
          );
        } else {
          environment.messages.push(
            `trust-policy: ${describeJob(job)} uses environment ${job.environment} as declared`,
          );
        }
      }
    }

    if (env.GITHUB_ACTIONS !== "true") continue;
    const running = env.GITHUB_WORKFLOW_REF ? workflowFromRef(env.GITHUB_WORKFLOW_REF) : null;
    if (running === null) {
      ref.messages.push(
        `trust-policy: ${file}: package ${entry.name}: GITHUB_WORKFLOW_REF is not set or not readable; not compared`,
      );
    } else if (running !== file) {
      ref.status = "fail";
      ref.messages.push(
        `trust-policy: ${file}: package ${entry.name} declares it, but this run is ${running} (GITHUB_WORKFLOW_REF); the registry will reject the OIDC token`,
      );
    } else {
      ref.messages.push(
        `trust-policy: ${file}: this run is the declared workflow (GITHUB_WORKFLOW_REF)`,
      );
    }
  }
  if (env.GITHUB_ACTIONS !== "true") {
    ref.status = "neutral";
    ref.messages.push("not inside a workflow run (GITHUB_ACTIONS is not true); not compared");
  } else if (ref.status !== "fail" && ref.messages.every((m) => m.includes("not compared"))) {
    ref.status = "neutral";
  }
  if (
    environment.status !== "fail" &&
    environment.messages.every((m) => m.includes("not compared"))
  ) {
    environment.status = "neutral";
  }
  const checks = [workflow, environment, ref];
  return { id: "declared", heading, status: phaseStatus(checks), checks };
}
