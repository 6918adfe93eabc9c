import { type EffectivePermissions, missingScopes } from "../workflows/permissions.js";
import { describeTarget, type StepConfigs, type StepTarget } from "../workflows/step-target.js";
import {
  describeJob,
  isExpression,
  type PublishingJob,
  WORKFLOWS_DIR,
  type WorkflowScan,
} from "../workflows/scan-workflows.js";
import { type Check, type Phase, phaseStatus, passingCheck } from "./report.js";

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

/** What a publishing job publishes, when that is more than "every package of pubtool.toml". */
function targetNote(job: PublishingJob, configs: StepConfigs): string {
  const problem = (target: StepTarget) => {
    const config = target.config === null ? undefined : configs.get(target.config);
    return config !== undefined && "problem" in config
      ? ` (${target.config ?? ""} ${config.problem}, so this step cannot publish)`
      : "";
  };
  const notes = job.targets
    .filter(
      (target) =>
        target.unknown !== null ||
        (target.config !== "pubtool.toml" && target.config !== null) ||
        target.packages.length > 0 ||
        describeTarget(target).includes(", to ") ||
        problem(target) !== "",
    )
    .map((target) => `${describeTarget(target)}${problem(target)}`);
  if (notes.length === 0) return "";
  const shown = [...new Set(notes)].map((note) =>
    note.startsWith("what it publishes") ? note : `publishes ${note}`,
  );
  return `; ${shown.join("; and ")}`;
}

/** What the caller of an external reusable workflow grants, which its jobs cannot exceed. */
function grantNote(grant: EffectivePermissions): { ok: boolean; text: string } {
  const missing = missingScopes(grant.levels);
  if (missing.length === 0) {
    return { ok: true, text: `it grants id-token: write and contents: write (${grant.source})` };
  }
  const lacks = missing.map((scope) => `${scope}: write`).join(" and ");
  return {
    ok: false,
    text: `it does not grant ${lacks} (${grant.source}), and a called workflow cannot raise what its caller grants`,
  };
}

/**
 * How the registry's auth action's token reaches `pubtool publish`. pubtool reads
 * RUST_REGISTRY_TOKEN, then CARGO_REGISTRY_TOKEN (as cargo does); a token passed under any other
 * name, or not passed at all, fails the publish, so doctor fails it first.
 */
function rustregTokenCheck(scan: WorkflowScan): Check | null {
  const jobs = scan.jobs.filter((job) => job.rustregToken !== null);
  if (jobs.length === 0) return null;
  const check = passingCheck(
    "rustreg-token",
    "rustreg token from the auth action reaches pubtool publish",
  );
  for (const job of jobs) {
    const wiring = job.rustregToken;
    if (wiring === null) continue;
    const where = `trust-policy: ${describeJob(job)}`;
    const fix = (id: string) =>
      `pass it as env: RUST_REGISTRY_TOKEN: \${{ steps.${id}.outputs.token }} on the publishing step (CARGO_REGISTRY_TOKEN works too)`;
    if (wiring.authStepId === null) {
      check.status = "fail";
      check.messages.push(
        `${where} runs the registry's auth action without an id:, so its token output cannot reach pubtool publish; give it an id (id: auth) and ${fix("auth")}`,
      );
      continue;
    }
    const used = wiring.read[0];
    const readNames = wiring.read.map((entry) => entry.name);
    const wired = wiring.wiredAs.filter((name) => readNames.includes(name));
    if (used !== undefined && wired.includes(used.name)) {
      const order =
        used.name === "CARGO_REGISTRY_TOKEN"
          ? " (pubtool reads it after RUST_REGISTRY_TOKEN, as cargo does)"
          : "";
      check.messages.push(
        `${where} passes the auth action's token (steps.${wiring.authStepId}) as ${used.name}${order}`,
      );
      continue;
    }
    check.status = "fail";
    if (used !== undefined && wired.length > 0) {
      check.messages.push(
        `${where} passes the auth action's token as ${wired.join(", ")}, but ${used.name} is also set (to ${used.value}) and pubtool reads it first; remove ${used.name} from the step`,
      );
    } else if (wiring.wiredAs.length > 0) {
      check.messages.push(
        `${where} passes the auth action's token as ${wiring.wiredAs.join(", ")}, which pubtool does not read; ${fix(wiring.authStepId)}`,
      );
    } else {
      check.messages.push(
        `${where} runs the registry's auth action (id ${wiring.authStepId}), but its token output does not reach pubtool publish; ${fix(wiring.authStepId)}`,
      );
    }
  }
  return check;
}

/** Phase 1: the publishing workflow, its permissions, its environment, its step. */
export function localPhase(scan: WorkflowScan, configs: StepConfigs = new Map()): Phase {
  const found = passingCheck("workflow", "publishing workflow");
  const permissions = passingCheck(
    "permissions",
    "permissions id-token: write and contents: write",
  );
  const environment = passingCheck("environment", "environment");
  const active = passingCheck("step-active", "publishing step not commented out");
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
      found.messages.push(
        `trust-policy: ${describeJob(job)} ${how} (${at})${targetNote(job, configs)}`,
      );
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
  // Reusable workflows of another repository: doctor cannot read them, so it says what it can
  // (what the caller grants) and what to check there, instead of "no job publishes".
  const onlyExternal = scan.jobs.length === 0 && scan.external.length > 0;
  if (onlyExternal && onlyCommented.length === 0) {
    found.status = scan.errors.length > 0 ? "fail" : "neutral";
    found.messages = found.messages.filter(
      (message) => !message.includes(`no workflow in ${WORKFLOWS_DIR} runs`),
    );
    permissions.status = "neutral";
    permissions.messages = [];
  }
  for (const call of scan.external) {
    const grant = grantNote(call.grant);
    const where =
      call.entryFile === call.file
        ? `${call.file}: job ${call.job}`
        : `${call.entryFile} → ${call.file}: job ${call.job}`;
    found.messages.push(
      `trust-policy: ${where} calls ${call.uses}, a reusable workflow in another repository; doctor cannot read it, so it cannot judge it locally. Check in that repository that its publishing job has an environment: and that the trusted publisher names the workflow the registry matches (rustreg and jsreg: ${call.entryFile}; pyreg: the called file)`,
    );
    permissions.messages.push(`trust-policy: ${where} (calls ${call.uses}): ${grant.text}`);
    if (!grant.ok) permissions.status = "fail";
  }
  const token = rustregTokenCheck(scan);
  if (token !== null) checks.push(token);
  for (const step of scan.commented) {
    if (onlyCommented.includes(step)) continue;
    const job = step.job === null ? "" : ` job ${step.job}:`;
    active.messages.push(
      `trust-policy: ${step.file}:${job} a further publishing step at line ${step.line} is commented out (the workflow also has an active one)`,
    );
  }
  return { id: "local", heading: "trust policy (local)", status: phaseStatus(checks), checks };
}
