import { missingScopes } from "../workflows/permissions.js";
import {
  describeJob,
  isExpression,
  type PublishingJob,
  WORKFLOWS_DIR,
  type WorkflowScan,
} from "../workflows/scan-workflows.js";
import { type Check, type Phase, phaseStatus } from "./report.js";

function permissionMessage(job: PublishingJob): { ok: boolean; message: string } {
  const where = `trust-policy: ${describeJob(job)}`;
  const { permissions } = job;
  const missing = missingScopes(permissions.levels);
  if (missing.length === 0) {
    return {
      ok: true,
      message: `${where} has id-token: write and contents: write (${permissions.source})`,
    };
  }
  const lacks = missing.map((scope) => `${scope}: write`).join(" and ");
  if (permissions.isDefault) {
    return {
      ok: false,
      message:
        `${where} has no permissions key; the repository default applies, which is not enough ` +
        `(it never grants id-token: write). Add permissions: { id-token: write, contents: write }`,
    };
  }
  let detail = `${where} lacks ${lacks} (${permissions.source})`;
  if (permissions.replacedWorkflowGrant) {
    detail += "; job-level permissions replace the workflow-level ones entirely";
  }
  return { ok: false, message: detail };
}

/** Phase 1: the publishing workflow, its permissions, its environment, its step. */
export function localPhase(scan: WorkflowScan): Phase {
  const found: Check = {
    id: "workflow",
    label: "publishing workflow",
    status: "pass",
    messages: [],
  };
  const permissions: Check = {
    id: "permissions",
    label: "permissions id-token: write and contents: write",
    status: "pass",
    messages: [],
  };
  const environment: Check = {
    id: "environment",
    label: "environment",
    status: "pass",
    messages: [],
  };
  const active: Check = {
    id: "step-active",
    label: "publishing step not commented out",
    status: "pass",
    messages: [],
  };
  const checks = [found, permissions, environment, active];

  for (const error of scan.errors) {
    found.status = "fail";
    found.messages.push(`trust-policy: ${error.file}: ${error.message}`);
  }
  // A commented-out publishing step fails (d) when its workflow file has no active one; next
  // to an active publishing job in the same file it is only mentioned.
  const activeFiles = new Set(scan.jobs.map((job) => job.file));
  const onlyCommented = scan.commented.filter((step) => !activeFiles.has(step.file));

  if (scan.jobs.length === 0) {
    found.status = "fail";
    if (onlyCommented.length > 0) {
      for (const step of onlyCommented) {
        const job = step.job === null ? "" : ` job ${step.job}:`;
        found.messages.push(
          `trust-policy: ${step.file}:${job} the only publishing step (line ${step.line}) is commented out`,
        );
      }
    } else if (!scan.dirExists) {
      found.messages.push(`trust-policy: no ${WORKFLOWS_DIR} directory`);
    } else {
      found.messages.push(
        `trust-policy: no workflow in ${WORKFLOWS_DIR} runs \`pubtool publish\` or uses the pubtool action with command: publish`,
      );
      for (const call of scan.external) {
        found.messages.push(
          `trust-policy: ${call.file}: job ${call.job} calls ${call.uses}, a reusable workflow of another repository that doctor cannot read; if it publishes, run doctor there`,
        );
      }
    }
    const reason =
      onlyCommented.length > 0
        ? "not checked: no active publishing step"
        : "not checked: no publishing job";
    permissions.status = "neutral";
    permissions.messages.push(reason);
    environment.status = "neutral";
    environment.messages.push(reason);
  } else {
    let expressions = 0;
    for (const job of scan.jobs) {
      const how =
        job.stepKind === "run"
          ? "runs `pubtool publish`"
          : "uses the pubtool action (command: publish)";
      const at = job.callerJob === null ? `line ${job.line}` : `${job.file} line ${job.line}`;
      found.messages.push(`trust-policy: ${describeJob(job)} ${how} (${at})`);
      const result = permissionMessage(job);
      if (!result.ok) permissions.status = "fail";
      permissions.messages.push(result.message);
      if (job.environment !== null && isExpression(job.environment)) {
        environment.messages.push(
          `trust-policy: ${describeJob(job)} takes its environment from an expression (${job.environment}); it cannot be evaluated locally, not checked`,
        );
        expressions++;
      } else if (job.environment === null) {
        environment.status = "fail";
        environment.messages.push(
          `trust-policy: ${describeJob(job)} has no environment: key; a registry policy that pins an environment rejects its OIDC token`,
        );
      } else {
        environment.messages.push(
          `trust-policy: ${describeJob(job)} uses environment ${job.environment}`,
        );
      }
    }
    if (expressions === scan.jobs.length) environment.status = "neutral";
  }

  if (onlyCommented.length > 0) {
    active.status = "fail";
    for (const step of onlyCommented) {
      const job = step.job === null ? "" : ` job ${step.job}:`;
      active.messages.push(
        `trust-policy: ${step.file}:${job} publishing step at line ${step.line} is commented out`,
      );
    }
  } else if (scan.jobs.length === 0) {
    active.status = "neutral";
    active.messages.push("not checked: no publishing job");
  }
  for (const step of scan.commented) {
    if (onlyCommented.includes(step)) continue;
    const job = step.job === null ? "" : ` job ${step.job}:`;
    active.messages.push(
      `trust-policy: ${step.file}:${job} a further publishing step at line ${step.line} is commented out (the workflow also has an active one)`,
    );
  }
  return { id: "local", heading: "trust policy (local)", status: phaseStatus(checks), checks };
}
