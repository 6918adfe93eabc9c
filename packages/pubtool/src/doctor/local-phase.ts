import { selects } from "../config/load-config.js";
import type { RegistryKind } from "../config/schema.js";
import { type EffectivePermissions, missingScopes } from "../workflows/permissions.js";
import type { RustregTokenWiring, StepAt } from "../workflows/rustreg-token.js";
import { describeTarget, type StepConfigs, type StepTarget } from "../workflows/step-target.js";
import {
  type CommentedStep,
  describeJob,
  type ExternalCall,
  isExpression,
  type PublishingJob,
  WORKFLOWS_DIR,
  type WorkflowScan,
} from "../workflows/scan-workflows.js";
import { type Check, type PackageSteps, type Phase, phaseStatus, passingCheck } from "./report.js";

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
    if (wiring.problem !== null) {
      check.status = "fail";
      check.messages.push(`${where}: ${describeSourceProblem(wiring)}`);
      continue;
    }
    if (wiring.authStep === null) {
      check.messages.push(
        `${where} reads ${wiring.read.map((entry) => entry.name).join(", ")} from a step that is not the registry's auth action; not judged`,
      );
      continue;
    }
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

/** `the step with id auth (rust-lang/crates-io-auth-action, line 12)`. */
function describeStepAt(step: StepAt): string {
  const what = step.uses ?? "a run step";
  return `${step.id === null ? "the step" : `the step with id ${step.id}`} (${what}, line ${step.line})`;
}

/** Why the publishing step's rustreg token is empty when it runs, naming both steps. */
function describeSourceProblem(wiring: RustregTokenWiring): string {
  const problem = wiring.problem;
  const publish = `the publishing step (line ${wiring.publishLine})`;
  const empty =
    "so the variable is empty when pubtool publish runs and the crate fails for want of credentials, after the other registries' packages are out";
  if (problem === null) return "";
  if (problem.kind === "missing") {
    return `${publish} reads ${problem.variable} from ${problem.reference}, but no step of the workflow has that id (the registry's auth action, rust-lang/crates-io-auth-action, is missing or named otherwise), ${empty}. Add the auth action with that id before the publishing step`;
  }
  if (problem.kind === "later") {
    const reads =
      problem.variable === "" ? "" : ` reads ${problem.variable} from ${problem.reference}, but`;
    return `${publish}${reads} runs before ${describeStepAt(problem.source)}, ${empty}. Move the auth step before the publishing step`;
  }
  return `${publish} reads ${problem.variable} from ${problem.reference}, made by ${describeStepAt(problem.source)} in job ${problem.job}; a step's output reaches only later steps of its own job, and the host drops a masked token from job outputs, ${empty}. Run the auth action in the publishing job, before the publishing step`;
}

/** Events whose OIDC tokens a registry's exchange refuses, and the registry's reason. */
const REFUSED_EVENTS: Readonly<Record<RegistryKind, readonly { event: string; why: string }[]>> = {
  rustreg: [
    {
      event: "workflow_run",
      why: "crates.io's trusted publishing refuses tokens of workflow_run runs",
    },
    {
      event: "pull_request_target",
      why: "crates.io's trusted publishing refuses tokens of pull_request_target runs",
    },
  ],
  pyreg: [],
  jsreg: [],
};

/** The kinds a publishing job can publish, from the configs its steps read. */
function kindsPublished(job: PublishingJob, configs: StepConfigs): Set<RegistryKind> {
  const kinds = new Set<RegistryKind>();
  if (job.rustregToken !== null) kinds.add("rustreg");
  for (const target of job.targets) {
    const config = target.config === null ? undefined : configs.get(target.config);
    if (config === undefined || "problem" in config) continue;
    for (const entry of config.packages) {
      const chosen =
        target.packages.length === 0 ||
        target.packages.some((selector) => selects(selector, entry));
      if (chosen) kinds.add(entry.kind);
    }
  }
  return kinds;
}

/**
 * A registry whose token exchange refuses a run's trigger fails that package in every run so
 * triggered, whatever else the workflow gets right.
 */
function triggerCheck(jobs: readonly PublishingJob[], configs: StepConfigs): Check | null {
  const check = passingCheck("triggers", "triggers the registries' token exchanges accept");
  let judged = false;
  for (const job of jobs) {
    for (const kind of kindsPublished(job, configs)) {
      const refused = REFUSED_EVENTS[kind];
      if (refused.length === 0) continue;
      judged = true;
      const hits = refused.filter((rule) => job.triggers.includes(rule.event));
      const where = `trust-policy: ${describeJob(job)}`;
      if (hits.length === 0) {
        check.messages.push(
          `${where} publishes to ${kind} on ${job.triggers.join(", ") || "no trigger"}`,
        );
        continue;
      }
      check.status = "fail";
      for (const hit of hits) {
        check.messages.push(
          `${where} publishes to ${kind}, and ${job.entryFile} runs on ${hit.event}: ${hit.why}, so its ${kind} packages fail in those runs. Trigger the release on push of a tag, release or workflow_dispatch instead`,
        );
      }
    }
  }
  return judged ? check : null;
}

/** The checks of phase 1. */
interface LocalChecks {
  found: Check;
  permissions: Check;
  environment: Check;
  active: Check;
}

/**
 * Which jobs publish a package doctor's config declares. Without a config every publishing job
 * counts; with one, a job that publishes none of its packages is named but not judged, and a
 * reusable workflow of another repository is judged only while a declared package has no
 * publishing job here (it might be the one that publishes it).
 */
export interface DeclaredScope {
  /** The packages of doctor's config and the steps that publish each; `null` without a config. */
  packages: readonly PackageSteps[] | null;
  /** What each registry gets of each declared version, when any manifest could be read. */
  versions?: Check | null;
}

function publishesDeclared(job: PublishingJob, scope: DeclaredScope): boolean {
  if (scope.packages === null) return true;
  const via = describeJob(job);
  return scope.packages.some((entry) =>
    [...entry.steps, ...entry.undetermined].some((step) => step.via === via),
  );
}

/** True when every declared package has a publishing step here, so an unread call adds none. */
function everyDeclaredPublishedHere(scope: DeclaredScope): boolean {
  return (
    scope.packages !== null &&
    scope.packages.length > 0 &&
    scope.packages.every((entry) => entry.steps.length + entry.undetermined.length > 0)
  );
}

/** Phase 1: the publishing workflow, its permissions, its environment, its step. */
export function localPhase(
  scan: WorkflowScan,
  configs: StepConfigs = new Map(),
  scope: DeclaredScope = { packages: null },
): Phase {
  const local: LocalChecks = {
    found: passingCheck("workflow", "publishing workflow"),
    permissions: passingCheck("permissions", "permissions id-token: write and contents: write"),
    environment: passingCheck("environment", "environment"),
    active: passingCheck("step-active", "publishing step not commented out"),
  };
  for (const error of scan.errors) {
    local.found.status = "fail";
    local.found.messages.push(`trust-policy: ${error.file}: ${error.message}`);
  }
  // A commented-out publishing step fails (d) when its workflow file has no active one; next
  // to an active publishing job in the same file it is only mentioned.
  const activeFiles = new Set(scan.jobs.map((job) => job.file));
  const onlyCommented = scan.commented.filter((step) => !activeFiles.has(step.file));

  if (scan.jobs.length === 0) {
    noteNoPublishingJob(local, scan, onlyCommented);
  } else {
    notePublishingJobs(local, scan.jobs, configs, scope);
  }
  if (everyDeclaredPublishedHere(scope)) noteUnreadCalls(local.found, scan.external);
  else noteExternalCalls(local, scan.external);
  noteCommentedSteps(local.active, scan, onlyCommented);
  const checks = [local.found, local.permissions, local.environment, local.active];
  const token = rustregTokenCheck(scan);
  if (token !== null) checks.push(token);
  const triggers = triggerCheck(scan.jobs, configs);
  if (triggers !== null) checks.push(triggers);
  if (scope.versions) checks.push(scope.versions);
  return { id: "local", heading: "trust policy (local)", status: phaseStatus(checks), checks };
}

/** `trust-policy: release.yml: job publish:`, the start of a message about a commented step. */
function commentedStepWhere(step: CommentedStep): string {
  const job = step.job === null ? "" : ` job ${step.job}:`;
  return `trust-policy: ${step.file}:${job}`;
}

/** No job publishes: says what was found instead, and leaves what depends on a job unchecked. */
function noteNoPublishingJob(
  { found, permissions, environment }: LocalChecks,
  scan: WorkflowScan,
  onlyCommented: readonly CommentedStep[],
): void {
  // Reusable workflows of another repository: doctor cannot read them, so it says what it can
  // (what the caller grants, see noteExternalCalls) and what to check there, instead of "no
  // job publishes".
  const onlyExternal = scan.external.length > 0 && onlyCommented.length === 0;
  found.status = onlyExternal && scan.errors.length === 0 ? "neutral" : "fail";
  if (onlyCommented.length > 0) {
    for (const step of onlyCommented) {
      found.messages.push(
        `${commentedStepWhere(step)} the only publishing step (line ${step.line}) is commented out`,
      );
    }
  } else if (!scan.dirExists) {
    found.messages.push(`trust-policy: no ${WORKFLOWS_DIR} directory`);
  } else if (!onlyExternal) {
    found.messages.push(
      `trust-policy: no workflow in ${WORKFLOWS_DIR} runs \`pubtool publish\` or uses the pubtool action with command: publish`,
    );
  }
  const reason =
    onlyCommented.length > 0
      ? "not checked: no active publishing step"
      : "not checked: no publishing job";
  permissions.status = "neutral";
  if (!onlyExternal) permissions.messages.push(reason);
  environment.status = "neutral";
  environment.messages.push(reason);
}

function notePublishingJobs(
  { found, permissions, environment }: LocalChecks,
  jobs: readonly PublishingJob[],
  configs: StepConfigs,
  scope: DeclaredScope,
): void {
  for (const job of jobs) {
    const how =
      job.stepKind === "run"
        ? "runs `pubtool publish`"
        : "uses the pubtool action (command: publish)";
    const at = job.callerJob === null ? `line ${job.line}` : `${job.file} line ${job.line}`;
    found.messages.push(
      `trust-policy: ${describeJob(job)} ${how} (${at})${targetNote(job, configs)}`,
    );
  }
  const judged = jobs.filter((job) => publishesDeclared(job, scope));
  for (const job of jobs) {
    if (judged.includes(job)) continue;
    permissions.messages.push(
      `trust-policy: ${describeJob(job)} publishes no package of the config; its permissions and environment are not judged`,
    );
  }
  if (judged.length === 0) {
    permissions.status = "neutral";
    environment.status = "neutral";
    environment.messages.push("not checked: no job publishes a package of the config");
    return;
  }
  for (const job of judged) {
    const result = permissionMessage(job);
    if (!result.ok) permissions.status = "fail";
    permissions.messages.push(result.message);
  }
  noteJobEnvironments(environment, judged);
}

/**
 * Calls of another repository's reusable workflows when every declared package is published
 * here: a dependency review or a website deploy publishes nothing of the config, so the call is
 * named and never judged.
 */
function noteUnreadCalls(found: Check, calls: readonly ExternalCall[]): void {
  // A workflow reached directly and through a caller makes the same call twice: named once.
  const named = new Set<string>();
  for (const call of calls) {
    const where = `${call.file}: job ${call.job}`;
    if (named.has(`${where} ${call.uses}`)) continue;
    named.add(`${where} ${call.uses}`);
    found.messages.push(
      `trust-policy: ${where}: not read: ${call.uses} (another repository's reusable workflow; every package of the config is published by a job here, so it is not judged)`,
    );
  }
}

/**
 * A job without an environment fails, since a registry policy that pins one rejects its token;
 * one taken from an expression is named, not judged.
 */
function noteJobEnvironments(check: Check, jobs: readonly PublishingJob[]): void {
  let expressions = 0;
  for (const job of jobs) {
    if (job.environment !== null && isExpression(job.environment)) {
      check.messages.push(
        `trust-policy: ${describeJob(job)} takes its environment from an expression (${job.environment}); it cannot be evaluated locally, not checked`,
      );
      expressions++;
    } else if (job.environment === null) {
      check.status = "fail";
      check.messages.push(
        `trust-policy: ${describeJob(job)} has no environment: key; a registry policy that pins an environment rejects its OIDC token`,
      );
    } else {
      check.messages.push(`trust-policy: ${describeJob(job)} uses environment ${job.environment}`);
    }
  }
  if (expressions === jobs.length) check.status = "neutral";
}

/** Jobs that call a reusable workflow of another repository: what doctor can and cannot say. */
function noteExternalCalls(
  { found, permissions }: LocalChecks,
  calls: readonly ExternalCall[],
): void {
  for (const call of calls) {
    const grant = grantNote(call.grant);
    const where =
      call.entryFile === call.file
        ? `${call.file}: job ${call.job}`
        : `${call.entryFile} → ${call.file}: job ${call.job}`;
    found.messages.push(
      `trust-policy: ${where} calls ${call.uses}, a reusable workflow in another repository; doctor cannot read it, so it cannot judge it locally. Check in that repository that its publishing job has an environment: and that the trusted publisher names the workflow the registry matches (rustreg and jsreg: ${call.entryFile}; pyreg: the called file). PyPI does not accept trusted publishing from another repository's reusable workflow (its token's repository and workflow do not match one publisher), so publish a pyreg package from a job of this repository`,
    );
    permissions.messages.push(`trust-policy: ${where} (calls ${call.uses}): ${grant.text}`);
    if (!grant.ok) permissions.status = "fail";
  }
}

/** Commented-out publishing steps: failed where nothing else publishes, else only mentioned. */
function noteCommentedSteps(
  check: Check,
  scan: WorkflowScan,
  onlyCommented: readonly CommentedStep[],
): void {
  if (onlyCommented.length > 0) {
    check.status = "fail";
    for (const step of onlyCommented) {
      check.messages.push(
        `${commentedStepWhere(step)} publishing step at line ${step.line} is commented out`,
      );
    }
  } else if (scan.jobs.length === 0) {
    check.status = "neutral";
    check.messages.push("not checked: no publishing job");
  }
  for (const step of scan.commented) {
    if (onlyCommented.includes(step)) continue;
    check.messages.push(
      `${commentedStepWhere(step)} a further publishing step at line ${step.line} is commented out (the workflow also has an active one)`,
    );
  }
}
